"""Byte-identical raw files under different ids (same sha256).

They are reported, not removed: which copy a benchmark keeps is the
maintainer's decision, and every id keeps its own features meanwhile.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from annobench.core.jobs import Job
from annobench.core.tables import field, rows_to_table, write_table

DUPLICATES_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "an image whose raw file has a byte-identical copy"),
        field("sha256", pa.string(), "the shared sha256"),
        field("duplicate_of", pa.string(), "smallest image_id of the group"),
        field("group_size", pa.int32(), "number of ids sharing these bytes"),
    ]
)


def find_duplicates(image_tables: list[Path | str]) -> pa.Table:
    ids, hashes = [], []
    for path in image_tables:
        table = pq.read_table(path, columns=["image_id", "sha256"])
        ids.extend(table.column("image_id").to_pylist())
        hashes.extend(table.column("sha256").to_pylist())
    groups: dict[str, list[str]] = {}
    for image_id, sha in zip(ids, hashes):
        groups.setdefault(sha, []).append(image_id)
    rows = []
    for sha, members in groups.items():
        if len(members) > 1:
            members.sort()
            rows.extend(
                {"image_id": m, "sha256": sha, "duplicate_of": members[0], "group_size": len(members)}
                for m in members
            )
    rows.sort(key=lambda r: r["image_id"])
    return rows_to_table(rows, DUPLICATES_SCHEMA)


def write_duplicates(image_tables: list[Path | str], out_path: Path | str, params_hash: str) -> int:
    table = find_duplicates(image_tables)
    write_table(table, out_path, "duplicates", params_hash)
    return table.num_rows


def duplicates_job(job: Job) -> None:
    """Rule duplicates: over the images tables of every shard."""
    found = write_duplicates(job.input_list("images"), job.output_files[0], job.params["params_hash"])
    job.log(f"{found} images share their bytes with another image")
