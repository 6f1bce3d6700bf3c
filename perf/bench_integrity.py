"""The integrity check's time against the collection's size, on synthetic tables of N images.

    python3 perf/bench_integrity.py [--images 20000 100000 510123] [--tables 3]

Writes, in a temporary folder, `images` and `--tables` tables keyed by image (one of them with
five rows an image, as text_terms) in shards of 2,000 images, then times
annobench.release.integrity.check_keys on them (process CPU, best of --repeats). A check that
grows with the images, not with shards x images, keeps the same time an image at every size.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from common import REPO  # noqa: F401 - puts the checkout on the path

SHARD_IMAGES = 2000


def write_tables(root: Path, n_images: int, n_tables: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = ["images"] + [f"keyed_{k}" for k in range(n_tables)]
    for name in names:
        (root / "tables" / name).mkdir(parents=True)
    for first in range(0, n_images, SHARD_IMAGES):
        ids = [f"img{k:07d}" for k in range(first, min(n_images, first + SHARD_IMAGES))]
        shard = f"shard-{first // SHARD_IMAGES:05d}.parquet"
        pq.write_table(pa.table({"image_id": ids}), root / "tables" / "images" / shard)
        for k, name in enumerate(names[1:]):
            rows = [i for i in ids for _ in range(5 if k == 0 else 1)]
            pq.write_table(pa.table({"image_id": rows, "value": [0] * len(rows)}), root / "tables" / name / shard)


def main() -> None:
    from annobench.release.integrity import check_keys

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, nargs="+", default=[20_000, 100_000, 510_123])
    parser.add_argument("--tables", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'images':>8s} {'shards':>6s} {'CPU s':>7s} {'us/image':>9s}")
    for n_images in args.images:
        with tempfile.TemporaryDirectory() as folder:
            write_tables(Path(folder), n_images, args.tables)
            best = float("inf")
            for _ in range(args.repeats):
                started = time.process_time()
                problems = check_keys(folder)
                best = min(best, time.process_time() - started)
            assert problems == [], problems
        shards = -(-n_images // SHARD_IMAGES)
        print(f"{n_images:8d} {shards:6d} {best:7.2f} {1e6 * best / n_images:9.1f}")


if __name__ == "__main__":
    main()
