"""How long `snakemake -n` takes to plan a build of many images, and its memory.

    python3 benchmarks/bench_dag.py [--images 500000]

Writes an image list of N ids that cycle through the 200 real BSDS500
photos (so every path exists), then times a dry run of the whole workflow.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from common import REPO, bsds_photos, peak_rss_mb, write_repeated_list


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=500_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        image_list = write_repeated_list(Path(work, "images.csv"), args.images, bsds_photos())
        config = Path(work, "config.yaml")
        config.write_text(yaml.safe_dump({"input": {"image_list": str(image_list), "page_map": "", "segmentations": ""},
                                           "output": "out"}))
        command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", work,
                   "--cores", "32", "--configfile", str(config), "-n"]
        started = time.perf_counter()
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        elapsed = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(result.stdout[-3000:])
    total = re.search(r"^total\s+(\d+)", result.stdout, re.MULTILINE)
    print(f"snakemake -n for {args.images} images: {elapsed:.1f} s wall, "
          f"peak memory {peak_rss_mb(children=True):.0f} MiB, {total.group(1) if total else '?'} jobs planned")


if __name__ == "__main__":
    main()
