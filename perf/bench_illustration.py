"""Text illustration (the ImageCLEF 2016 teaser, Gilbert et al. 2016): seconds and peak memory of
R@k and of the run checker, one core.

    python3 perf/bench_illustration.py [--queries 180000] [--candidates 200000]

The 2016 teaser's size: 180,000 query documents, 200,000 candidate images,
a run of 100 ranks per query (18 million lines). Synthetic, seeded run:
query q ranks the images (b_q + j s_q) mod M for j = 0..99, with b_q
random and s_q a random step coprime with M (so a query never repeats an
image); its ground-truth image is at rank 1 + Geometric(0.2) when that is at
most 100, else outside its ranking (about 10 % of the queries miss), and a
query in twenty is not in the run at all.

Printed: R@k on the run in memory (best and slowest of three, wall and CPU),
then, in a child process so its peak memory is its own, reading the CSV with
every check of `check-illustration-run` (truth queries and candidates given)
followed by R@k, wall and CPU time and the child's peak resident memory.
"""

from __future__ import annotations

import os

# One core: the figures are per core. Must be set before numpy loads BLAS.
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from common import REPO, peak_rss_mb  # noqa: E402

REPEATS = 3  # the machine may be shared: best and slowest of three
DEPTH = 100


def coprime_steps(rng: np.random.Generator, n: int, modulus: int) -> np.ndarray:
    pool = np.array([s for s in range(1, 10_000) if math.gcd(s, modulus) == 1])
    return rng.choice(pool, size=n)


def synthetic(rng: np.random.Generator, n_queries: int, n_candidates: int):
    """The run (in memory) and the truth (query -> image) over ids q0000000... and img0000000..."""
    from annobench.benchmark.illustration.measure import IllustrationTruth
    from annobench.benchmark.illustration.runs import RankingRun

    base = rng.integers(0, n_candidates, n_queries)
    step = coprime_steps(rng, n_queries, n_candidates)
    truth_rank = rng.geometric(0.2, n_queries)  # 1, 2, ... with P(1) = 0.2
    truth_code = (base + (np.minimum(truth_rank, DEPTH + 1) - 1) * step) % n_candidates
    in_run = np.flatnonzero(rng.random(n_queries) >= 0.05)
    codes = (base[in_run, None] + np.arange(DEPTH)[None, :] * step[in_run, None]) % n_candidates
    query_ids = np.array([f"q{k:07d}" for k in range(n_queries)], dtype=object)
    image_ids = np.array([f"img{k:07d}" for k in range(n_candidates)], dtype=object)
    run = RankingRun(query_ids, np.repeat(in_run, DEPTH).astype(np.int32),
                     np.tile(np.arange(1, DEPTH + 1, dtype=np.int32), len(in_run)), image_ids,
                     codes.reshape(-1).astype(np.int32))
    return run, IllustrationTruth(query_ids, image_ids[truth_code])


def timed(function, repeats: int = REPEATS):
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = function()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return result, walls, cpus


def own_peak_mib() -> float:
    """This process's peak resident memory since its exec (VmHWM): unlike ru_maxrss, Linux does
    not carry it over from the parent that forked it."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return peak_rss_mb()


def child(truth_path: str, run_path: str, n_candidates: int) -> None:
    """Read and check the run from CSV, then R@k; one JSON line."""
    sys.path.insert(0, str(REPO))
    from annobench.benchmark.illustration.measure import read_truth, recall_at_k
    from annobench.benchmark.illustration.runs import read_ranking_run

    truth = read_truth(truth_path)
    candidates = {f"img{k:07d}" for k in range(n_candidates)}
    wall, cpu = time.perf_counter(), time.process_time()
    run = read_ranking_run(run_path, set(truth.query_ids), candidates)
    read = (time.perf_counter() - wall, time.process_time() - cpu)
    wall, cpu = time.perf_counter(), time.process_time()
    recall = recall_at_k(truth, run)
    measure = (time.perf_counter() - wall, time.process_time() - cpu)
    print(json.dumps({"read": read, "measure": measure, "peak_mib": own_peak_mib(), "recall": recall,
                      "lines": len(run)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=180_000)
    parser.add_argument("--candidates", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", nargs=3, metavar=("TRUTH", "RUN", "CANDIDATES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return
    sys.path.insert(0, str(REPO))
    from annobench.benchmark.illustration.measure import recall_at_k, write_truth
    from annobench.benchmark.illustration.runs import write_ranking_run

    run, truth = synthetic(np.random.default_rng(args.seed), args.queries, args.candidates)
    recall, walls, cpus = timed(lambda: recall_at_k(truth, run))
    print(f"{args.queries} queries x {DEPTH} ranks ({len(run)} lines), {args.candidates} candidates")
    print(f"R@k in memory: {min(walls):.2f} s wall (slowest {max(walls):.2f}), {min(cpus):.2f} s CPU")
    print("R@k: " + ", ".join(f"{k} {v:.4f}" for k, v in recall.items()))
    with tempfile.TemporaryDirectory(prefix="bench-illustration-") as work:
        folder = Path(work)
        started = time.perf_counter()
        write_ranking_run(run, folder / "run.csv")
        write_truth(dict(zip(truth.query_ids, truth.image_ids)), folder / "truth.csv")
        size = (folder / "run.csv").stat().st_size / 2**20
        print(f"writing the run: {time.perf_counter() - started:.1f} s, {size:.0f} MiB of CSV")
        done = subprocess.run([sys.executable, __file__, "--child", str(folder / "truth.csv"),
                               str(folder / "run.csv"), str(args.candidates)],
                              capture_output=True, text=True, check=True)
    figures = json.loads(done.stdout)
    assert figures["recall"] == recall, "R@k from the CSV differs from R@k in memory"
    (read_wall, read_cpu), (measure_wall, measure_cpu) = figures["read"], figures["measure"]
    print(f"from CSV: reading and checking {read_wall:.2f} s wall ({read_cpu:.2f} s CPU), then R@k "
          f"{measure_wall:.2f} s wall ({measure_cpu:.2f} s CPU): {read_wall + measure_wall:.2f} s in all; "
          f"peak memory of the child {figures['peak_mib']:.0f} MiB")
    print(f"peak memory of this process (building, measuring, writing): {peak_rss_mb():.0f} MiB")


if __name__ == "__main__":
    main()
