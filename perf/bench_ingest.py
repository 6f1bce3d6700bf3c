"""Ingest + resize throughput and peak memory on the 200 BSDS500 photos.

    python3 perf/bench_ingest.py [--repeat 3]

Runs one shard in this process (one core) and prints images per second per
core and the peak resident memory; then the same 200 photos through
Snakemake with --cores 2 (4 shards) for the wall-clock figure.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from common import REPO, bsds_photos, peak_rss_mb


def in_process(photos: list[Path], repeat: int) -> None:
    from annobench.core.config import load_config
    from annobench.images.ingest import ingest_shard
    from annobench.sources.listing import ImageSource

    sources = [ImageSource(p.stem, p.name, str(p)) for p in photos]
    config = load_config()
    best = float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as out:
            started = time.perf_counter()
            result = ingest_shard(sources, 0, Path(out), config, "bench", log=lambda line: None)
            best = min(best, time.perf_counter() - started)
    assert len(result.images) == len(photos), result.rejects
    print(f"in-process, 1 core: {len(photos)} images in {best:.2f} s (best of {repeat}) = "
          f"{len(photos) / best:.1f} images/s/core, {1000 * best / len(photos):.1f} ms/image")
    print(f"in-process peak memory: {peak_rss_mb():.0f} MiB")


def through_snakemake(photos: list[Path], cores: int) -> None:
    with tempfile.TemporaryDirectory() as work:
        config = Path(work, "config.yaml")
        config.write_text(yaml.safe_dump({"input": {"images": str(photos[0].parent), "page_map": "", "segmentations": ""},
                                          "output": "out",
                                          "sharding": {"images_per_shard": 50}}))
        command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", work,
                   "--cores", str(cores), "--configfile", str(config), "--quiet", "all"]
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elapsed = time.perf_counter() - started
    print(f"snakemake --cores {cores} (4 shards, incl. ~2 s start-up): {len(photos)} images in {elapsed:.2f} s = "
          f"{len(photos) / elapsed / cores:.1f} images/s/core")
    print(f"peak memory of any job or snakemake itself: {peak_rss_mb(children=True):.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    photos = bsds_photos()
    in_process(photos, args.repeat)
    through_snakemake(photos, args.cores)


if __name__ == "__main__":
    main()
