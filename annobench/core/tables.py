"""Parquet tables: schemas, and the one writer every table goes through."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from annobench import FORMAT_VERSION
from annobench.core.fsutil import atomic_path

META_ARTEFACT = b"annobench.artefact"
META_FORMAT_VERSION = b"annobench.format_version"
META_PARAMS_HASH = b"annobench.params_hash"
META_PARAMS = b"annobench.params"
ROW_GROUP_ROWS = 64 * 1024


def field(name: str, type_: pa.DataType, description: str, nullable: bool = False) -> pa.Field:
    return pa.field(name, type_, nullable=nullable, metadata={"description": description})


IMAGES_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "key of the image everywhere"),
        field("source_path", pa.string(), "raw file, relative to the image folder or as listed"),
        field("sha256", pa.string(), "sha256 of the raw file's bytes"),
        field("file_size", pa.int64(), "raw file size in bytes"),
        field("width", pa.int32(), "width after EXIF orientation"),
        field("height", pa.int32(), "height after EXIF orientation"),
        field("mode", pa.string(), "pixel mode as stored (Pillow's name)"),
        field("format", pa.string(), "file format (Pillow's name)"),
        field("exif_orientation", pa.int8(), "EXIF orientation applied (1 = none)"),
        field("conversion", pa.string(), "';'-separated steps taken to reach 8-bit sRGB"),
        field("resized_path", pa.string(), "stored resized image, relative to the output folder"),
        field("resized_width", pa.int32(), "width of the stored resized image"),
        field("resized_height", pa.int32(), "height of the stored resized image"),
        field("resized_sha256", pa.string(), "sha256 of the stored resized image file"),
        field("shard", pa.int32(), "shard the image belongs to"),
    ]
)

REJECTS_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "id the file would have had"),
        field("source_path", pa.string(), "raw file, relative to the image folder or as listed"),
        field("sha256", pa.string(), "sha256 of the raw file (null if unreadable)", nullable=True),
        field("reason", pa.string(), "why the file is not in the dataset"),
        field("shard", pa.int32(), "shard the image belongs to"),
    ]
)


def rows_to_table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    columns = {field.name: [row[field.name] for row in rows] for field in schema}
    return pa.Table.from_pydict(columns, schema=schema)


def vector_column(values: np.ndarray, value_type: pa.DataType = pa.float32()) -> pa.FixedSizeListArray:
    """A (rows, dimension) array as a fixed_size_list column (the tables' vector type)."""
    dimension = values.shape[1]
    flat = np.ascontiguousarray(values, dtype=value_type.to_pandas_dtype()).reshape(-1)
    return pa.FixedSizeListArray.from_arrays(pa.array(flat, type=value_type), dimension)


def provenance_metadata(artefact: str, params_hash: str | None = None, params: dict | None = None) -> dict:
    """The key-value metadata every file carries (docs/artefacts.md, Storage conventions); with
    `params`, the parameters themselves are stored too (as JSON) and their hash is computed here."""
    from annobench.core.fingerprint import params_hash as hash_of

    metadata = {}
    if params is not None:
        metadata[META_PARAMS] = json.dumps(params, sort_keys=True).encode()
        params_hash = hash_of(params)
    metadata.update(
        {
            META_ARTEFACT: artefact.encode(),
            META_FORMAT_VERSION: str(FORMAT_VERSION).encode(),
            META_PARAMS_HASH: params_hash.encode(),
        }
    )
    return metadata


def write_table(
    table: pa.Table, path: Path | str, artefact: str, params_hash: str | None = None, params: dict | None = None
) -> None:
    """Write atomically with zstd and the provenance keys every table carries."""
    metadata = {**(table.schema.metadata or {}), **provenance_metadata(artefact, params_hash, params)}
    table = table.replace_schema_metadata(metadata)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", row_group_size=ROW_GROUP_ROWS)


def write_table_blocks(blocks, schema: pa.Schema, path: Path | str, artefact: str, params: dict) -> None:
    """As write_table, for a table given as a stream of blocks (tables of `schema`), so a large
    table is never whole in memory."""
    schema = schema.with_metadata({**(schema.metadata or {}), **provenance_metadata(artefact, params=params)})
    with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        for block in blocks:
            writer.write_table(block.replace_schema_metadata(schema.metadata), row_group_size=ROW_GROUP_ROWS)


def image_ids(paths: list[Path] | list[str]) -> set[str]:
    """The image ids of tables keyed by image_id, read from that column alone."""
    return {i for path in paths for i in pq.read_table(path, columns=["image_id"]).column(0).to_pylist()}


def rows_of_images(path: Path | str, columns: list[str], wanted: pa.Array) -> pa.Table:
    """The rows of a table keyed by image_id whose image is among `wanted` (image ids as an
    Arrow string array, made once for all the files a job reads), filtered as the file is read."""
    import pyarrow.compute as pc

    table = pq.read_table(path, columns=columns)
    return table.filter(pc.is_in(table.column("image_id"), value_set=wanted))


def read_metadata(path: Path | str) -> dict[str, str]:
    raw = pq.read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in raw.items() if k.startswith(b"annobench.")}
