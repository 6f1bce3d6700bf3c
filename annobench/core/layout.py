"""Where every output lives under the build's output folder.

The Snakefile and the code both take paths from here, so they cannot drift.
Paths stored inside tables are relative to the output folder: a build moved
or rebuilt elsewhere holds the same bytes.
"""

from __future__ import annotations

SHARD_WIDTH = 5


def shard_name(shard: int) -> str:
    return f"shard-{shard:0{SHARD_WIDTH}d}"


def shard_ids(n_shards: int) -> list[str]:
    """Shard labels as they appear in file names (the `shard` wildcard)."""
    return [f"{k:0{SHARD_WIDTH}d}" for k in range(n_shards)]


def table_file(table: str, shard: int | str) -> str:
    label = shard if isinstance(shard, str) else f"{shard:0{SHARD_WIDTH}d}"
    return f"tables/{table}/shard-{label}.parquet"


def work_file(name: str, shard: int | str) -> str:
    """A shard's intermediate file under work/ (not released)."""
    label = shard if isinstance(shard, str) else f"{shard:0{SHARD_WIDTH}d}"
    return f"work/{name}/shard-{label}.parquet"


def resized_dir(shard: int | str) -> str:
    label = shard if isinstance(shard, str) else f"{shard:0{SHARD_WIDTH}d}"
    return f"resized/shard-{label}"


def log_file(stage: str, shard: int | str) -> str:
    label = shard if isinstance(shard, str) else f"{shard:0{SHARD_WIDTH}d}"
    return f"logs/{stage}/shard-{label}.log"
