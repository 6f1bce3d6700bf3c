"""Our exact neighbour search against FAISS's exact IndexFlatL2, same vectors and k, side by side.

    pip install -e '.[bench]'     # faiss-cpu, threadpoolctl
    python3 perf/bench_neighbours_faiss.py                              # 2,000 x 100,000 x 5,000-d
    python3 perf/bench_neighbours_faiss.py --test 10000 --train 500000  # full size: 10 GB of vectors held

Vectors as in bench_baselines.py: the Mulan scene features tiled up to --dim values, rows cycled,
each copy perturbed (seeded), held in memory. For 1 and 2 threads, prints queries per second of
  ours (threads): nearest_squared with that many BLAS threads in one process;
  ours (jobs):    the training set split into as many parts as threads, searched by separate
                  processes of one BLAS thread each and merged exactly (what --cores does);
  faiss:          IndexFlatL2's exact search (faiss.knn, its kernel without the index's copy of
                  the training set), faiss.omp_set_num_threads;
the float32 GEMM rate of the search's own product shape (query_block x d by d x reference_block,
numpy, same threads) and the share of it each search reaches (2 n m d flops: FAISS's kernel is
that product and a heap; ours adds the exact recomputation of the candidates within the float32
error bound, so the share is the work around the products, whatever the machine's rate), the agreement of the
neighbour lists (identical lists, and the mean overlap of the neighbour sets, which sets ties
aside) and whether each search gives the same bytes on 1 and 2 threads.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time

import numpy as np

try:
    import faiss
    from threadpoolctl import threadpool_limits
except ImportError as missing:
    sys.exit(f"needs the bench extra (pip install -e '.[bench]'): {missing}")

from common import peak_rss_mb  # noqa: E402 (first: puts the checkout on sys.path)
from bench_baselines import perturbed_rows, scene_rows, tiled  # noqa: E402

from annobench.bench import machine_speed  # noqa: E402
from annobench.benchmark.neighbours.search import nearest_squared  # noqa: E402

GENERATION_BLOCK = 10_000
_SHARED: dict = {}  # the vectors, inherited by forked workers


def make_vectors(base: np.ndarray, rows: int, seed: int) -> np.ndarray:
    out = np.empty((rows, base.shape[1]), dtype=np.float32)
    for start in range(0, rows, GENERATION_BLOCK):  # no full-size temporaries
        part = out[start:start + GENERATION_BLOCK]
        part[:] = perturbed_rows(base, start, len(part), seed)
    return out


def timed(work):
    began = time.perf_counter()
    result = work()
    return result, time.perf_counter() - began


def ours_threads(queries, train, k, threads, search):
    with threadpool_limits(threads):
        return nearest_squared(queries, [train], k, **search)


def _search_range(bounds):
    start, stop, k, search = bounds
    with threadpool_limits(1):
        rows, squared = nearest_squared(_SHARED["queries"], [_SHARED["train"][start:stop]], k, **search)
    return rows + start, squared


def ours_jobs(queries, train, k, jobs, search):
    """The training set in `jobs` consecutive parts, one process each, merged by (distance, index)."""
    _SHARED.update(queries=queries, train=train)
    edges = np.linspace(0, len(train), jobs + 1).astype(int)
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        parts = pool.map(_search_range, [(a, b, k, search) for a, b in zip(edges[:-1], edges[1:])])
    rows = np.concatenate([p[0] for p in parts], axis=1)
    squared = np.concatenate([p[1] for p in parts], axis=1)
    order = np.lexsort((rows, squared), axis=1)[:, :k]
    return np.take_along_axis(rows, order, axis=1), np.take_along_axis(squared, order, axis=1)


def faiss_search(queries, train, k, threads):
    """IndexFlatL2's search without the index: faiss.knn runs the same exact L2 kernel
    (knn_L2sqr) on the training array where it lies, so the full-size set is not held twice."""
    faiss.omp_set_num_threads(threads)
    squared, rows = faiss.knn(queries, train, k, metric=faiss.METRIC_L2)
    return rows, squared


def gemm_gflops(query_block: int, dimension: int, reference_block: int, threads: int, repeats: int = 3) -> float:
    rng = np.random.default_rng(0)
    left = rng.random((query_block, dimension), dtype=np.float32)
    right = rng.random((reference_block, dimension), dtype=np.float32)
    with threadpool_limits(threads):
        best = min(timed(lambda: left @ right.T)[1] for _ in range(repeats))
    return 2 * query_block * dimension * reference_block / best / 1e9


def agreement(ours: np.ndarray, theirs: np.ndarray) -> tuple[float, float]:
    same_lists = float((ours == theirs).all(axis=1).mean())
    overlap = np.mean([len(set(a) & set(b)) / len(a) for a, b in zip(ours.tolist(), theirs.tolist())])
    return same_lists, float(overlap)


def run(args) -> None:
    queries = make_vectors(tiled(scene_rows("test"), args.dim), args.test, seed=2)
    train = make_vectors(tiled(scene_rows("train"), args.dim), args.train, seed=1)
    search = {"query_block": args.query_block, "reference_block": args.reference_block}
    flops = 2.0 * args.test * args.train * args.dim
    print(f"{args.test:,} test x {args.train:,} training x {args.dim:,}-d, k = {args.k}; "
          f"blocks {args.query_block} x {args.reference_block}; numpy product 2,048x384x1,000 on one core: "
          f"{machine_speed()['gemm_gflops']:.0f} GFLOP/s")
    results = {}
    for threads in args.threads:
        gemm = gemm_gflops(args.query_block, args.dim, args.reference_block, threads)
        print(f"{threads} thread(s): float32 GEMM {args.query_block}x{args.dim}x{args.reference_block} "
              f"{gemm:.0f} GFLOP/s")
        for name, work in (("ours (threads)", lambda: ours_threads(queries, train, args.k, threads, search)),
                           ("ours (jobs)", lambda: ours_jobs(queries, train, args.k, threads, search)),
                           ("faiss", lambda: faiss_search(queries, train, args.k, threads))):
            if name == "ours (jobs)" and threads == 1:
                continue  # the same as ours (threads) on one thread
            (rows, squared), seconds = timed(work)
            results[name, threads] = rows, squared
            print(f"  {name:15s} {seconds:8.1f} s  {args.test / seconds:8.1f} queries/s  "
                  f"{flops / seconds / 1e9:6.1f} GFLOP/s = {flops / seconds / 1e9 / gemm:.0%} of GEMM")
    report_agreement(results, args.threads)
    print(f"peak RSS {peak_rss_mb():.0f} MiB (training vectors {train.nbytes / 2**20:.0f} MiB)")


def report_agreement(results: dict, threads: list[int]) -> None:
    ours_rows, ours_squared = results["ours (threads)", threads[0]]
    for (name, count), (rows, squared) in results.items():
        same, overlap = agreement(ours_rows, rows)
        gap = np.abs(np.sqrt(np.maximum(squared, 0)) - np.sqrt(ours_squared)).max()
        print(f"  {name} on {count}: identical lists {same:.2%}, neighbour sets overlap {overlap:.4%}, "
              f"largest distance gap {gap:.2e}")
    for name in ("ours (threads)", "faiss"):
        runs = [results[name, count] for count in threads if (name, count) in results]
        same = all(np.array_equal(runs[0][0], r[0]) and np.array_equal(runs[0][1], r[1]) for r in runs)
        print(f"  {name}: same bytes on {', '.join(map(str, threads))} threads: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", type=int, default=2000)
    parser.add_argument("--train", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=5000)
    parser.add_argument("--k", type=int, default=32)
    parser.add_argument("--query-block", type=int, default=1024)
    parser.add_argument("--reference-block", type=int, default=8192)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    run(parser.parse_args())


if __name__ == "__main__":
    main()
