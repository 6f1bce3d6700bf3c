"""The localisation measure (Gilbert et al. 2016, section 2.5; Everingham et al. 2010): seconds and
peak memory of evaluate-boxes, one core.

    python3 perf/bench_boxes.py [--images 10000] [--concepts 251] [--boxes-per-image 20]

Synthetic but realistic, seeded inputs. Ground truth: each image has a size
between 300 and 1024 pixels a side and 1 + Poisson(2) boxes; concepts
follow a Zipf law over the vocabulary (a few concepts are common, most are
rare, as in the ImageCLEF 2015/2016 boxes); a box spans 5 % to 80 % of each
side (log-uniform). The run has exactly --boxes-per-image boxes per image:
about 80 % of the truth boxes are found (corners moved by up to 15 % of the
box), one in ten of those twice (a duplicate detection), and the rest are
false positives of random concepts at random places. Scores are rounded to
three decimals, so ties are common, as with real detectors.

The evaluation (`evaluate_boxes` at the ten thresholds 0, 0.1, ..., 0.9,
all-points AP) runs in a child process that reads the truth and run from
Parquet: its best and slowest wall time of three, CPU time and peak resident
memory (ru_maxrss of the child) are printed, with the time to read and check
the run in its three forms (what evaluate-boxes does before measuring).
"""

from __future__ import annotations

import os

# One core: the figures are per core. Must be set before numpy loads BLAS.
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from common import REPO, peak_rss_mb  # noqa: E402

REPEATS = 3  # the machine may be shared: best and slowest of three


def zipf_concepts(rng: np.random.Generator, n: int, n_concepts: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, n_concepts + 1)
    return rng.choice(n_concepts, size=n, p=weights / weights.sum())


def build_truth(rng: np.random.Generator, n_images: int, n_concepts: int):
    sizes = rng.integers(300, 1025, size=(n_images, 2))  # width, height
    per_image = 1 + rng.poisson(2.0, n_images)
    image = np.repeat(np.arange(n_images), per_image)
    extent = np.exp(rng.uniform(np.log(0.05), np.log(0.8), size=(len(image), 2))) * sizes[image]
    extent = np.maximum(extent.astype(np.int64), 1)
    start = (rng.random((len(image), 2)) * (sizes[image] - extent + 1)).astype(np.int64)
    return sizes, image, zipf_concepts(rng, len(image), n_concepts), np.hstack([start, start + extent - 1])


def build_run(rng: np.random.Generator, truth, n_concepts: int, per_image: int):
    sizes, image, concept, boxes = truth
    found = rng.random(len(image)) < 0.8
    twice = found & (rng.random(len(image)) < 0.1)
    pick = np.r_[np.flatnonzero(found), np.flatnonzero(twice)]
    extent = boxes[pick, 2:] - boxes[pick, :2] + 1
    moved = boxes[pick] + (rng.uniform(-0.15, 0.15, (len(pick), 4)) * np.tile(extent, 2)).astype(np.int64)
    moved[:, 2:] = np.maximum(moved[:, 2:], moved[:, :2])
    hit_image, hit_concept = image[pick], concept[pick]
    hit_score = rng.beta(5, 2, len(pick))
    # Fill every image up to per_image boxes with false positives (an image with more hits keeps them all).
    hits_per_image = np.bincount(hit_image, minlength=len(sizes))
    fill = np.maximum(per_image - hits_per_image, 0)
    false_image = np.repeat(np.arange(len(sizes)), fill)
    extent = np.maximum((rng.uniform(0.05, 0.6, (len(false_image), 2)) * sizes[false_image]).astype(np.int64), 1)
    start = (rng.random((len(false_image), 2)) * (sizes[false_image] - extent + 1)).astype(np.int64)
    all_image = np.r_[hit_image, false_image]
    order = np.argsort(all_image, kind="stable")  # the run lists each image's boxes together
    return pd.DataFrame({
        "image_id": np.char.add("img", all_image.astype(str))[order].astype(object),
        "concept": np.char.add("c", np.r_[hit_concept, zipf_concepts(rng, len(false_image), n_concepts)]
                               .astype(str))[order].astype(object),
        "score": np.round(np.r_[hit_score, rng.beta(2, 5, len(false_image))], 3)[order],
        **{name: np.r_[moved[:, k], np.hstack([start, start + extent - 1])[:, k]][order]
           for k, name in enumerate(("xmin", "ymin", "xmax", "ymax"))},
    })


def child(truth_path: str, run_path: str) -> None:
    """Read the inputs and time the measure; print one JSON line."""
    sys.path.insert(0, str(REPO))
    from annobench.benchmark.boxes.measure import DEFAULT_THRESHOLDS, evaluate_boxes

    truth, run = pd.read_parquet(truth_path), pd.read_parquet(run_path)
    walls, cpus = [], []
    for _ in range(REPEATS):
        wall, cpu = time.perf_counter(), time.process_time()
        result = evaluate_boxes(truth, run, DEFAULT_THRESHOLDS)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    print(json.dumps({"walls": walls, "cpus": cpus, "peak_mib": peak_rss_mb(), "MAP": result["MAP"],
                      "counts": result["counts"]}))


def time_reading(run: pd.DataFrame, folder: Path) -> dict[str, float]:
    from annobench.benchmark.boxes.forms import read_box_run, write_box_run

    seconds = {}
    for form, name in (("parquet", "run.parquet"), ("text", "run.txt"), ("csv", "run.csv")):
        write_box_run(run, folder / name, form)
        started = time.perf_counter()
        read_box_run(folder / name)
        seconds[form] = time.perf_counter() - started
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=10_000)
    parser.add_argument("--concepts", type=int, default=251)
    parser.add_argument("--boxes-per-image", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-reading", action="store_true", help="skip timing the readers (large runs)")
    parser.add_argument("--child", nargs=2, metavar=("TRUTH", "RUN"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    sys.path.insert(0, str(REPO))
    rng = np.random.default_rng(args.seed)
    truth_arrays = build_truth(rng, args.images, args.concepts)
    run = build_run(rng, truth_arrays, args.concepts, args.boxes_per_image)
    _, image, concept, boxes = truth_arrays
    truth = pd.DataFrame({"image_id": np.char.add("img", image.astype(str)).astype(object),
                          "concept": np.char.add("c", concept.astype(str)).astype(object),
                          **{name: boxes[:, k] for k, name in enumerate(("xmin", "ymin", "xmax", "ymax"))}})
    tied = float(run.duplicated(["concept", "score"], keep=False).mean())
    print(f"{args.images} images, {args.concepts} concepts (Zipf): {len(truth)} truth boxes "
          f"({truth.concept.nunique()} concepts), {len(run)} run boxes ({len(run) / args.images:.1f} per image); "
          f"{tied:.3f} of them share their score with another box of their concept")
    with tempfile.TemporaryDirectory(prefix="bench-boxes-") as work:
        folder = Path(work)
        truth.to_parquet(folder / "truth.parquet")
        run.to_parquet(folder / "run.parquet")
        done = subprocess.run([sys.executable, __file__, "--child", str(folder / "truth.parquet"),
                               str(folder / "run.parquet")], capture_output=True, text=True, check=True)
        figures = json.loads(done.stdout)
        print(f"evaluate_boxes at 10 thresholds: {min(figures['walls']):.2f} s wall (slowest "
              f"{max(figures['walls']):.2f}), {min(figures['cpus']):.2f} s CPU; peak memory of the child "
              f"(inputs read from Parquet, then measured) {figures['peak_mib']:.0f} MiB")
        print("MAP: " + ", ".join(f"{k} {v:.4f}" for k, v in figures["MAP"].items()))
        if not args.no_reading:
            reading = time_reading(run, folder)
            print("reading and checking the run: " + ", ".join(f"{form} {s:.2f} s" for form, s in reading.items()))
    print(f"peak memory of this process (building, writing, reading): {peak_rss_mb():.0f} MiB")


if __name__ == "__main__":
    main()
