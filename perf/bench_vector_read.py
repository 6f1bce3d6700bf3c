"""What a neighbour search spends reading vectors, and gathering a test block, per vector value.

Reads every feature table of a finished build (its shards, as a search part reads a block) and
prints the CPU time per value: read and decoded with all images wanted, read with 2 % of the
images wanted (WEBUPV 2014's share of test images), and gathered (read, kept, written again with
zstd, as rule benchmark_neighbour_queries does). The projection's VECTOR_READ_RATE and
VECTOR_WRITE_RATE (annobench/projection/costs.py) come from these figures. Best of three.
Usage: python3 perf/bench_vector_read.py BUILD_DIR   (e.g. the wide build of `annobench bench`)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from annobench.benchmark.neighbours.blocks import gather_queries
from annobench.benchmark.neighbours.search import vector_blocks
from annobench.visual.stage import FEATURES

BOW = ("bow_sift", "bow_csift", "bow_opponentsift", "bow_rgbsift")


def best_cpu(work, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def read_all(tables: list[str], wanted: set[str]) -> None:
    for _ in vector_blocks(tables, wanted):
        pass


def main(build: Path) -> None:
    tables_dir = build / "out" / "tables"
    totals = {"read": 0.0, "sparse": 0.0, "written": 0.0, "values": 0}
    print(f"{'feature':18s} {'images':>7s} {'dim':>5s} {'read ns/value':>14s} {'2 % wanted':>11s} "
          f"{'gather ns/value':>16s} {'write ns/value':>15s}")
    with tempfile.TemporaryDirectory() as folder:
        for feature in [*FEATURES, *BOW]:
            tables = sorted(str(path) for path in (tables_dir / feature).glob("shard-*.parquet"))
            if not tables:
                continue
            ids = sorted({i for t in tables for i in pq.read_table(t, columns=["image_id"]).column(0).to_pylist()})
            few = set(ids[::50])
            dimension = pq.read_schema(tables[0]).field("vector").type.list_size
            values = len(ids) * dimension
            read = best_cpu(lambda: read_all(tables, set(ids)))
            sparse = best_cpu(lambda: read_all(tables, few))
            gathered = best_cpu(lambda: gather_queries(tables, set(ids), f"{folder}/{feature}.parquet"))
            write = max(0.0, gathered - read) / values
            print(f"{feature:18s} {len(ids):7d} {dimension:5d} {1e9 * read / values:14.1f} "
                  f"{1e9 * sparse / values:11.1f} {1e9 * gathered / values:16.1f} {1e9 * write:15.1f}")
            totals["read"] += read
            totals["sparse"] += sparse
            totals["written"] += max(0.0, gathered - read)
            totals["values"] += values
    print(f"all features, per value: read {1e9 * totals['read'] / totals['values']:.1f} ns, with 2 % wanted "
          f"{1e9 * totals['sparse'] / totals['values']:.1f} ns, written again {1e9 * totals['written'] / totals['values']:.1f} ns")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
