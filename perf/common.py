"""Shared helpers of the benchmark scripts (run from the checkout)."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
BSDS_TRAIN = SHARED / "data" / "real" / "images" / "bsds500" / "train"

sys.path.insert(0, str(REPO))


def bsds_photos() -> list[Path]:
    if not BSDS_TRAIN.is_dir():
        sys.exit(f"needs the real photos at {BSDS_TRAIN} (../shared next to the checkout)")
    return sorted(BSDS_TRAIN.glob("*.jpg"))


def peak_rss_mb(children: bool = False) -> float:
    """Peak resident memory in MiB (Linux reports ru_maxrss in KiB)."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024


def write_repeated_list(path: Path, n_images: int, photos: list[Path]) -> Path:
    """An image list of n_images ids, cycling through the real photos."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("image_id,path\n")
        for k in range(n_images):
            handle.write(f"img{k:07d},{photos[k % len(photos)]}\n")
    return path
