"""Global visual features: ms per image and peak memory, one core.

    python3 perf/bench_features.py

1. Colour GIST on the 40 real 256x256 inputs of ../shared/reference/gist_lear
   (LEAR's C code: about 180 ms per image on one core of these machines;
   the target is 15 ms). The machines are shared: compare runs made at the
   same time, or take the best of several (--repeat).
2. Colorhist, GETLF and GIST on the 200 BSDS500 photos as the pipeline runs
   them: decode the stored resized image, compute, per image. Each feature
   runs in a fresh process so its peak memory is its own.
"""

from __future__ import annotations

import os

# One core: the figures are per core. Must be set before numpy loads BLAS.
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import argparse  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from common import SHARED, bsds_photos, peak_rss_mb  # noqa: E402

LEAR_MS = 180.0


def time_gist_on_lear_inputs(repeat: int) -> None:
    import cv2
    import numpy as np
    from PIL import Image

    from annobench.visual.gist import gist_from_square

    cv2.setNumThreads(1)
    inputs = sorted((SHARED / "reference" / "gist_lear" / "inputs").glob("*.png"))
    images = [np.asarray(Image.open(p)) for p in inputs]
    gist_from_square(images[0])  # builds the filters once per size
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for image in images:
            gist_from_square(image)
        best = min(best, (time.perf_counter() - started) / len(images) * 1000)
    print(f"colour GIST, 256x256, one core: {best:.1f} ms/image (best of {repeat} passes over {len(images)} "
          f"images); LEAR C ~{LEAR_MS:.0f} ms -> {LEAR_MS / best:.1f}x faster")


def child(feature: str, workdir: str) -> None:
    """Runs in a fresh process: time one feature over the stored resized images."""
    import cv2
    import pyarrow.parquet as pq

    from annobench.core.config import load_config
    from annobench.images.resize import read_stored
    from annobench.visual.stage import make_extractor

    cv2.setNumThreads(1)
    out = Path(workdir, "out")
    rows = pq.read_table(out / "tables" / "images").to_pydict()
    params = load_config()["features"][feature]
    projection = out / "artefacts" / "getlf_projection.parquet" if feature == "getlf" else None
    extract = make_extractor(feature, params, projection)
    extract(read_stored(out / rows["resized_path"][0]))
    started = time.perf_counter()
    for relative in rows["resized_path"]:
        extract(read_stored(out / relative))
    elapsed = time.perf_counter() - started
    n = len(rows["resized_path"])
    print(f"{feature:10s} {1000 * elapsed / n:7.2f} ms/image  {n / elapsed:8.1f} images/s  "
          f"peak {peak_rss_mb():.0f} MiB  ({n} BSDS500 photos, stored resized, decode included)")


def features_on_bsds() -> None:
    photos = bsds_photos()
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as work:
        config = Path(work, "config.yaml")
        config.write_text(f"input:\n  images: {photos[0].parent}\n  page_map: ''\n  segmentations: ''\noutput: out\n")
        # Targets first: --configfile would take them as more config files.
        subprocess.run([sys.executable, "-m", "snakemake", "ingest_all", "getlf_projection", "-s", str(repo / "Snakefile"),
                        "-d", work, "--cores", "2", "--configfile", str(config), "--quiet", "all"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for feature in ("colorhist", "getlf", "gist"):
            subprocess.run([sys.executable, __file__, "--child", feature, work], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("FEATURE", "WORKDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    time_gist_on_lear_inputs(args.repeat)
    features_on_bsds()


if __name__ == "__main__":
    main()
