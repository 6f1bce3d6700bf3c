"""Train/dev/test splits that depend only on an image's id and the seed.

An image's split is decided by a hash of (seed, image_id) mapped to [0, 1)
and compared with the cumulative fractions, so it never depends on shards,
cores or which other images are in the collection: adding images does not
move the ones already assigned. The region-level splits are in
annobench.benchmark.region_annotation.splits.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from annobench.core.errors import AnnobenchError
from annobench.core.tables import field

SPLITS_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "key of the image"),
        field("split", pa.string(), "train, dev or test"),
    ]
)

SPLIT_NAMES = ("train", "dev", "test")


class SplitError(AnnobenchError):
    """Split settings or id lists that cannot be used."""


def unit_hash(seed: int, key: str) -> float:
    """A number in [0, 1) from the seed and a key: stable across machines and Python versions."""
    digest = hashlib.sha256(f"{seed}\x00{key}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def assign_splits(image_ids: list[str], fractions: dict[str, float], seed: int) -> list[str]:
    """Each image's split from its hash and the cumulative fractions, in SPLIT_NAMES order."""
    bounds, total = [], 0.0
    for name in SPLIT_NAMES:
        total += float(fractions.get(name, 0.0))
        bounds.append((total, name))
    if abs(total - 1.0) > 1e-9:
        raise SplitError(f"split fractions must add up to 1, got {total:g} ({fractions})")
    splits = []
    for image_id in image_ids:
        u = unit_hash(seed, image_id)
        splits.append(next(name for bound, name in bounds if u < bound or bound == total))
    return splits


def splits_from_lists(image_ids: list[str], lists: dict[str, str | Path]) -> list[str | None]:
    """Splits given as id lists (one id a line per split). An image in two lists is an error; an
    image in none gets None (left out of the benchmark; the caller reports how many)."""
    given: dict[str, str] = {}
    for name, path in lists.items():
        if name not in SPLIT_NAMES:
            raise SplitError(f"unknown split {name!r} in benchmark.split.lists (use {', '.join(SPLIT_NAMES)})")
        try:
            ids = [line.strip() for line in Path(path).read_text(encoding="utf-8-sig").splitlines() if line.strip()]
        except OSError as error:
            raise SplitError(f"cannot read the {name} id list {path}: {error.strerror}") from None
        for image_id in ids:
            if given.setdefault(image_id, name) != name:
                raise SplitError(f"image {image_id!r} is in both the {given[image_id]} and the {name} list")
    return [given.get(i) for i in image_ids]


def splits_table(image_ids: list[str], splits: list[str]) -> pa.Table:
    order = sorted((k for k in range(len(image_ids)) if splits[k] is not None), key=image_ids.__getitem__)
    return pa.Table.from_pydict(
        {"image_id": [image_ids[k] for k in order], "split": [splits[k] for k in order]}, schema=SPLITS_SCHEMA
    )


def split_ids(splits_path: str, split: str | None = None) -> list[str]:
    """The benchmark's images in the `splits` table (any split, or one), sorted."""
    # ParquetFile, not read_table: the dataset reader read_table goes through imports pandas,
    # which the neighbour jobs keep out.
    table = pq.ParquetFile(splits_path).read(columns=["image_id", "split"])
    column = table.column("split")
    chosen = pc.is_valid(column) if split is None else pc.equal(column, split)
    return sorted(table.filter(chosen).column("image_id").to_pylist())
