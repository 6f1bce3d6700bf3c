"""How long `snakemake -n` takes to plan a build of many images, and its memory.

    python3 perf/bench_dag.py [--images 510123] [--pages-per-image 2]

Writes an image list of N ids that cycle through the 200 real BSDS500
photos (so every path exists) and a page map putting every image on
--pages-per-image web pages, two images a page; the page files are hard
links to the real kiwix pages (so each one is a distinct file to stat, as
in a real crawl). Then times a dry run of the whole workflow: ingest, the
visual features, the bags of words, text and the release.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from common import REPO, SHARED, bsds_photos, peak_rss_mb, write_repeated_list


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=510_123)
    parser.add_argument("--pages-per-image", type=int, default=2, help="0: no text stage")
    parser.add_argument("--slurm", action="store_true",
                        help="plan with config/profiles/slurm and count the cluster jobs its groups make")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        image_list = write_repeated_list(Path(work, "images.csv"), args.images, bsds_photos())
        page_map = write_page_map(Path(work), args.images, args.pages_per_image) if args.pages_per_image else ""
        config = Path(work, "config.yaml")
        config.write_text(yaml.safe_dump({
            "input": {"image_list": str(image_list), "page_map": str(page_map), "pages": str(Path(work, "pages")),
                      "segmentations": ""},
            "output": "out"}))
        command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", work,
                   "--cores", "32", "--configfile", str(config), "-n"]
        if args.slurm:
            command += ["--workflow-profile", str(REPO / "config" / "profiles" / "slurm"), "--executor", "slurm"]
        started = time.perf_counter()
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        elapsed = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(result.stdout[-3000:])
    total = re.search(r"^total\s+(\d+)", result.stdout, re.MULTILINE)
    print(f"snakemake -n for {args.images} images on {args.pages_per_image} pages each: {elapsed:.1f} s wall, "
          f"peak memory {peak_rss_mb(children=True):.0f} MiB, {total.group(1) if total else '?'} jobs planned")
    if args.slurm:
        groups = re.findall(r"Group job (\w+)", result.stdout)
        single = re.findall(r"^rule (\w+):", result.stdout, re.MULTILINE)  # group members are indented
        print(f"  cluster jobs: {len(groups) + len(single)} = {len(single)} single ({', '.join(sorted(single))}) + "
              + " + ".join(f"{groups.count(g)} of group {g}" for g in sorted(set(groups))))
    first_table = result.stdout[: total.end()] if total else ""  # Snakemake prints the table twice
    for rule, count in re.findall(r"^(\w+)\s+(\d+)$", first_table, re.MULTILINE):
        print(f"  {rule:28s} {count:>6s}")


def write_page_map(work: Path, n_images: int, pages_per_image: int) -> Path:
    """Image k sits on pages (k // 2) * pages_per_image + j: two images share each page."""
    real_pages = sorted((SHARED / "data" / "real" / "pages" / "kiwix_wikipedia").rglob("*.html"))
    if not real_pages:
        sys.exit("needs the real kiwix pages under ../shared/data/real/pages")
    pages = work / "pages"
    pages.mkdir()
    n_pages = ((n_images + 1) // 2) * pages_per_image
    for p in range(n_pages):
        os.link(real_pages[p % len(real_pages)], pages / f"p{p:08d}.html")
    with open(work / "page_map.csv", "w", encoding="utf-8") as handle:
        handle.write("image_id,page_id,img_src\n")
        for k in range(n_images):
            for j in range(pages_per_image):
                handle.write(f"img{k:07d},p{(k // 2) * pages_per_image + j:08d}.html,img{k:07d}.jpg\n")
    return work / "page_map.csv"


if __name__ == "__main__":
    main()
