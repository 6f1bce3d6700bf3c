"""Region features (Escalante et al. 2008, section 4.4; Carbonetto's code) and spatial relations
(Escalante et al. 2008, section 4.5): regions per second and peak memory, one core.

    python3 perf/bench_regions.py

Runs on the real segmentations in ../shared: MSRC-v2 (296 photos, one
segmentation each) and BSDS500 (200 photos, all 4-9 annotators, the Lab
image computed once per photo and shared by its annotators), streamed one
photo at a time as the workflow would. Each data set runs in a fresh
process so its peak memory is its own. Import (.mat reading) and photo
decoding are timed apart from the computation.
"""

from __future__ import annotations

import os

# One core: the figures are per core. Must be set before numpy loads BLAS.
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import argparse  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from common import SHARED, peak_rss_mb  # noqa: E402

SEGMENTATIONS = SHARED / "data" / "real" / "segmentations"
PHOTOS = {
    "msrc_v2": SEGMENTATIONS / "msrc_v2" / "Images",
    "bsds500": SHARED / "data" / "real" / "images" / "bsds500" / "train",
}


def child(source: str) -> None:
    """Runs in a fresh process: stream the segmentations as the workflow would,
    one photo (and its Lab image) in memory at a time."""
    from annobench.images.decode import DecodeLimits, decode_image
    from annobench.regions.features import region_features, rgb_to_lab
    from annobench.regions.importers import import_segmentations
    from annobench.regions.relations import spatial_relations
    from annobench.regions.segmentation import Segmentation

    limits = DecodeLimits(max_pixels=10**8, min_width=1, min_height=1)
    files = {p.stem: p for p in PHOTOS[source].iterdir() if p.suffix.lower() in (".png", ".bmp", ".jpg")}
    seconds = dict.fromkeys(("import", "decode", "features", "relations"), 0.0)
    counts = dict.fromkeys(("segmentations", "photos", "regions", "pairs", "rejects", "pixels"), 0)
    current, rgb, lab = None, None, None
    items = import_segmentations(source, SEGMENTATIONS / source)
    while True:
        started = time.perf_counter()
        item = next(items, None)
        seconds["import"] += time.perf_counter() - started
        if item is None:
            break
        if not isinstance(item, Segmentation):
            counts["rejects"] += 1
            continue
        if item.image_id != current:
            started = time.perf_counter()
            current, rgb = item.image_id, decode_image(files[item.image_id].read_bytes(), limits).pixels
            seconds["decode"] += time.perf_counter() - started
            started = time.perf_counter()
            lab = rgb_to_lab(rgb)  # shared by the photo's annotators
            seconds["features"] += time.perf_counter() - started
            counts["photos"] += 1
        started = time.perf_counter()
        ids, _ = region_features(rgb, item.label_map, lab=lab)
        seconds["features"] += time.perf_counter() - started
        started = time.perf_counter()
        counts["pairs"] += len(spatial_relations(item.label_map))
        seconds["relations"] += time.perf_counter() - started
        counts["segmentations"] += 1
        counts["regions"] += ids.size
        counts["pixels"] += item.label_map.size

    regions, both = counts["regions"], seconds["features"] + seconds["relations"]
    print(f"{source}: {counts['segmentations']} segmentations of {counts['photos']} photos, {regions} regions, "
          f"{counts['pairs']} ordered pairs, {counts['rejects']} rejects")
    print(f"  import {seconds['import']:.2f} s, decode {seconds['decode']:.2f} s (not in the rates below)")
    print(f"  features  {regions / seconds['features']:8.0f} regions/s  "
          f"{1000 * seconds['features'] / counts['segmentations']:6.1f} ms/segmentation  "
          f"{counts['pixels'] / 1e6 / seconds['features']:5.1f} Mpixel/s")
    print(f"  relations {regions / seconds['relations']:8.0f} regions/s  "
          f"{counts['pairs'] / seconds['relations']:8.0f} pairs/s")
    print(f"  both      {regions / both:8.0f} regions/s  peak {peak_rss_mb():.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", metavar="SOURCE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    if not SEGMENTATIONS.is_dir():
        sys.exit(f"needs the real segmentations at {SEGMENTATIONS} (../shared next to the checkout)")
    for source in ("msrc_v2", "bsds500"):
        subprocess.run([sys.executable, __file__, "--child", source], check=True)


if __name__ == "__main__":
    main()
