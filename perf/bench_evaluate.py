"""Evaluation measures (ImageCLEF 2012 task page; Villegas and Paredes 2014, section 2.5; Dutta et
al. 2018, section 3.2): seconds and peak memory of `evaluate`, one core.

    python3 perf/bench_evaluate.py [--images 10000] [--concepts 1000]

The score and decision matrices are built from the two real ImageCLEF 2014
development runs in ../shared (random and co-occurrence baselines, 1,940
lines each, each with its own number of concepts): image i takes line
i mod 3,880 of the two runs together, its pairs repeated to fill the
concepts; every copy after the first is perturbed (seeded, Gaussian with
sd 0.01, clipped to [0, 1], rounded to 6 decimals as the runs are, so ties
stay as common as in the runs). The ground truth is synthetic and seeded:
present with probability 0.02, or 0.25 where the run decided the concept.
Three cases are timed: every concept listed, per-image concept lists (each
image listing a random 60% of the concepts), and the lists with top_k=5
predictions for the per-label/per-image measures, each three times (best
and slowest printed).
"""

from __future__ import annotations

import os

# One core: the figures are per core. Must be set before numpy loads BLAS.
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402

from common import SHARED, peak_rss_mb  # noqa: E402

REPEATS = 3  # the machine may be shared: best and slowest of three
RUNS = SHARED / "data" / "real" / "runs" / "imageclef2014_devel"


def read_run_lines(path) -> list[tuple[np.ndarray, np.ndarray]]:
    """(scores, decisions) of every line `id s d s d ...` of a 2014 run."""
    lines = []
    for line in path.read_text().splitlines():
        fields = line.split()
        pairs = np.array(fields[1:], dtype=np.float64).reshape(-1, 2)
        lines.append((pairs[:, 0], pairs[:, 1] == 1))
    return lines


def build_matrices(n_images: int, n_concepts: int, seed: int = 0):
    if not RUNS.is_dir():
        sys.exit(f"needs the real ImageCLEF 2014 runs at {RUNS} (../shared next to the checkout)")
    lines = [line for path in sorted(RUNS.glob("*.res")) for line in read_run_lines(path)]
    rng = np.random.default_rng(seed)
    scores = np.empty((n_images, n_concepts))
    decisions = np.empty((n_images, n_concepts), dtype=bool)
    lengths = np.empty(n_images, dtype=np.int64)
    for i in range(n_images):  # building the input only; not timed
        line_scores, line_decisions = lines[i % len(lines)]
        scores[i] = np.resize(line_scores, n_concepts)
        decisions[i] = np.resize(line_decisions, n_concepts)
        lengths[i] = line_scores.size
    copies = np.arange(n_concepts)[None, :] >= lengths[:, None]  # every repeat after the first
    noise = rng.normal(0, 0.01, scores.shape)
    scores = np.where(copies, np.round(np.clip(scores + noise, 0, 1), 6), scores)
    truth = rng.random(scores.shape) < np.where(decisions, 0.25, 0.02)
    listed = rng.random(scores.shape) < 0.6
    return truth, scores, decisions, listed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=10_000)
    parser.add_argument("--concepts", type=int, default=1_000)
    args = parser.parse_args()

    from annobench.benchmark.annotation.measure import evaluate

    truth, scores, decisions, listed = build_matrices(args.images, args.concepts)
    ties = float(np.mean(np.diff(np.sort(scores, axis=1), axis=1) == 0))
    print(f"{args.images} images x {args.concepts} concepts from {RUNS.name}; "
          f"{truth.mean():.3f} truth density, {decisions.mean():.3f} decided, "
          f"{ties:.3f} of adjacent sorted scores tied within a row")
    print(f"peak memory of the process after building the inputs: {peak_rss_mb():.0f} MiB "
          f"(inputs {sum(a.nbytes for a in (truth, scores, decisions, listed)) / 2**20:.0f} MiB)")
    cases = [
        ("all concepts listed", {}),
        ("per-image concept lists", {"listed": listed}),
        ("concept lists, top_k=5", {"listed": listed, "top_k": 5}),
    ]
    for name, options in cases:
        seconds = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            result = evaluate(truth, scores, decisions, seed=0, **options)
            seconds.append(time.perf_counter() - started)
        # Again under tracemalloc (numpy reports its buffers to it): the most
        # memory evaluate holds at once beyond its inputs. Not timed.
        tracemalloc.start()
        evaluate(truth, scores, decisions, seed=0, **options)
        working = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(f"{name:26s} {min(seconds):5.2f} s (slowest {max(seconds):5.2f})   working memory {working:4.0f} MiB   "
              f"MAP-samples {result['MAP-samples']:.4f}  MiAP {result['MiAP']:.4f}  "
              f"MF1-concepts {result['MF1-concepts']:.4f}  F1_L {result['F1_L']:.4f}")
    print(f"peak memory of the process: {peak_rss_mb():.0f} MiB")


if __name__ == "__main__":
    main()
