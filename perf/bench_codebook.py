"""Codebook training at full scale: bounded Lloyd against plain and exact Lloyd.

    python3 perf/bench_codebook.py [--rows 1250000] [--threads 2]

The sample is OpponentSIFT descriptors (384-d) of the real photos in
../shared/data/real, each also mirrored, until --rows (the full-size
sample is 1.25 M). Each training runs in a fresh process on --threads
threads with 1,000 words and 20 iterations, the defaults:

- plain: training as it ran before issue 15 (commit d1db16f, copied here):
  every distance of every step in float32, near ties going to whichever
  word BLAS's rounding favours, word sums made afresh at each step;
- exact: every distance of every step, near ties ordered by float64
  distances (what training computes, without the bounds);
- cold: training as it runs but without the warm start on a tenth of the
  sample (warm_start_iterations 0: k-means++ centres straight into the
  full steps, as before the warm start);
- bounded: training as it runs.

The script prints their CPU and wall time and peak memory, whether the
bounded and exact codebooks are the same bytes (they must be), the share
of the sample's descriptors that the plain codebook and each other assign
to the same word, and how well each fits the sample (mean squared distance
of a descriptor to its nearest word: what k-means lowers).

    python3 perf/bench_codebook.py --rows 180000 --kernels Haswell,Sandybridge,SkylakeX

instead trains plain and bounded codebooks under each OpenBLAS kernel
(OPENBLAS_CORETYPE: this machine computes as those CPUs would) and prints,
per method, whether each kernel's codebook is the first kernel's bytes and
the share of the sample given the same word (the kernels must be ones this
CPU can run).
"""

from __future__ import annotations

import os

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import argparse  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from common import SHARED, peak_rss_mb  # noqa: E402

WORDS, ITERATIONS, SEED = 1000, 20, 1
PHOTO_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp"}


def write_sample(path: Path, n_rows: int) -> None:
    import numpy as np

    from annobench.images.decode import DecodeLimits, decode_image
    from annobench.images.resize import resize_area
    from annobench.visual.dsift import DsiftParams, describe

    real = SHARED / "data" / "real"
    if not real.is_dir():
        sys.exit(f"needs the real photos at {real} (../shared next to the checkout)")
    parts, total = [], 0
    for photo in sorted(p for p in real.rglob("*") if p.suffix.lower() in PHOTO_SUFFIXES):
        try:
            rgb = resize_area(decode_image(photo.read_bytes(), DecodeLimits(10**8, 64, 64)).pixels, 240)
        except Exception:  # noqa: BLE001 - too small or unreadable: the sample takes the next photo
            continue
        for image in (rgb, np.ascontiguousarray(rgb[:, ::-1])):
            parts.append(describe(image, "opponentsift", DsiftParams())[1])
            total += len(parts[-1])
        if total >= n_rows:
            break
    if total < n_rows:
        sys.exit(f"the real photos give {total} descriptors, fewer than --rows {n_rows}")
    np.save(path, np.concatenate(parts)[:n_rows])


def plain_lloyd(sample, threads: int):
    """Training as it ran before issue 15 (commit d1db16f), kept here as the baseline:
    k-means++ by whole-subsample passes, every distance of every step in float32 (near
    ties to whichever word the product's rounding favours), word sums as float64 copies
    of each block summed by reduceat, all of them again at each step."""
    import contextlib
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    rng = np.random.default_rng(SEED)
    subsample = sample[np.sort(rng.choice(len(sample), min(len(sample), max(20000, WORDS)), replace=False))]
    centres = _old_kmeans_plus_plus(subsample, WORDS, rng)
    labels = np.full(len(sample), -1, dtype=np.int64)
    with ThreadPoolExecutor(threads) if threads > 1 else contextlib.nullcontext() as pool:
        for _ in range(ITERATIONS):
            new_labels, distances = float32_nearest(sample, centres, pool)
            changed = int((new_labels != labels).sum())
            labels = new_labels
            centres = _old_cluster_means(sample, labels, distances, pool)
            if changed == 0:
                break
    return centres


def _old_kmeans_plus_plus(data, k: int, rng):
    import numpy as np

    centres = np.empty((k, data.shape[1]), dtype=np.float32)
    centres[0] = data[rng.integers(len(data))]
    closest = np.einsum("ij,ij->i", data - centres[0], data - centres[0]).astype(np.float64)
    for i in range(1, k):
        total = closest.sum()
        pick = rng.choice(len(data), p=closest / total) if total > 0 else rng.integers(len(data))
        centres[i] = data[pick]
        diff = data - centres[i]
        np.minimum(closest, np.einsum("ij,ij->i", diff, diff), out=closest)
    return centres


def float32_nearest(sample, centres, pool):
    """Each row's nearest centre and squared distance, near ties to whichever word the
    float32 product's rounding favours (as training assigned rows before the near-tie rule)."""
    import numpy as np

    from annobench.visual import bow

    centres_sq = np.einsum("ij,ij->i", centres, centres)
    labels = np.empty(len(sample), dtype=np.int64)
    distances = np.empty(len(sample), dtype=np.float32)

    def one_block(start: int) -> None:
        block = sample[start : start + bow.BLOCK_ROWS]
        scores = centres_sq[None, :] - 2.0 * (block @ centres.T)
        best = np.argmin(scores, axis=1)
        labels[start : start + len(block)] = best
        block_sq = np.einsum("ij,ij->i", block, block)
        distances[start : start + len(block)] = np.maximum(scores[np.arange(len(block)), best] + block_sq, 0.0)

    bow._run_blocks(one_block, len(sample), pool, bow.BLOCK_ROWS)
    return labels, distances


def _old_cluster_means(sample, labels, distances, pool):
    import numpy as np

    from annobench.visual import bow

    def block_sums(start: int):
        block_labels = labels[start : start + bow.BLOCK_ROWS]
        order = np.argsort(block_labels, kind="stable")
        ordered = block_labels[order]
        runs = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        rows = sample[start : start + bow.BLOCK_ROWS][order].astype(np.float64)
        return ordered[runs], np.add.reduceat(rows, runs, axis=0)

    sums = np.zeros((WORDS, sample.shape[1]), dtype=np.float64)
    for words, word_sums in (pool.map if pool else map)(block_sums, range(0, len(sample), bow.BLOCK_ROWS)):
        sums[words] += word_sums
    counts = np.bincount(labels, minlength=WORDS)
    centres = (sums / np.maximum(counts, 1)[:, None]).astype(np.float32)
    empty = np.flatnonzero(counts == 0)
    if len(empty):
        centres[empty] = sample[np.argsort(-distances, kind="stable")[: len(empty)]]
    return centres


def _every_row_class():
    import numpy as np

    from annobench.visual import bow

    class EveryRow(bow._Lloyd):
        """Training's steps with no row proven: all distances, near ties exact."""

        def _unproven(self, geometry):
            return np.arange(len(self.sample))

        def _assign(self, rows, geometry):
            self._assign_fully(rows, geometry)

    return EveryRow


def child(method: str, sample_path: str, threads: int, out: str) -> None:
    import numpy as np

    from annobench.visual import bow

    sample = np.load(sample_path)
    cpu, wall = time.process_time(), time.perf_counter()
    if method == "plain":
        codebook = plain_lloyd(sample, threads)
    elif method == "exact":
        bow._Lloyd = _every_row_class()
        codebook = bow.train_codebook(sample, WORDS, ITERATIONS, SEED, threads=threads)
    elif method == "cold":
        codebook = bow.train_codebook(sample, WORDS, ITERATIONS, SEED, threads=threads, warm_start_iterations=0)
    else:
        codebook = bow.train_codebook(sample, WORDS, ITERATIONS, SEED, threads=threads)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    np.save(out, codebook)
    print(f"{method:>7} Lloyd: {cpu:6.1f} CPU-s, {wall:6.1f} s wall, peak {peak_rss_mb():.0f} MiB", flush=True)


def mean_squared_distance(sample_path: Path, codebook) -> float:
    """Mean over the sample of a descriptor's squared distance to its nearest word."""
    import numpy as np

    from annobench.visual import bow

    sample = np.load(sample_path, mmap_mode="r")
    total = 0.0
    for start in range(0, len(sample), 100_000):
        total += float(bow.nearest(np.ascontiguousarray(sample[start : start + 100_000]), codebook)[1].sum(
            dtype=np.float64))
    return total / len(sample)


def same_words(sample_path: Path, first, second) -> float:
    """Share of the sample's descriptors that the two codebooks give the same word."""
    import numpy as np

    from annobench.visual.bow_stage import WordAssigner

    sample = np.load(sample_path, mmap_mode="r")
    assign_first, assign_second = WordAssigner(first), WordAssigner(second)
    same = 0
    for start in range(0, len(sample), 100_000):
        part = np.ascontiguousarray(sample[start : start + 100_000])
        same += int((assign_first(part) == assign_second(part)).sum())
    return same / len(sample)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_250_000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sample", type=Path, help="a sample saved by an earlier run (.npy), instead of a new one")
    parser.add_argument("--kernels", help="comma-separated OpenBLAS kernels: compare codebooks across them instead")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        method, path, out = args.child
        write_sample(Path(path), args.rows) if method == "sample" else child(method, path, args.threads, out)
        return
    import numpy as np

    def run_child(method: str, sample: Path, out: str, kernel: str | None = None) -> None:
        # Each step in its own process: Linux keeps a parent's peak memory across exec.
        env = {**os.environ, **({"OPENBLAS_CORETYPE": kernel} if kernel else {})}
        subprocess.run([sys.executable, __file__, "--rows", str(args.rows), "--threads", str(args.threads),
                        "--child", method, str(sample), out], check=True, env=env)

    with tempfile.TemporaryDirectory() as work:
        sample = args.sample or Path(work) / "sample.npy"
        if not args.sample:
            run_child("sample", sample, "")
        print(f"sample: {args.rows} x 384 OpponentSIFT descriptors; {WORDS} words, {ITERATIONS} iterations, "
              f"{args.threads} threads")
        if args.kernels:
            compare_kernels(args.kernels.split(","), sample, Path(work), run_child)
            return
        methods = ("plain", "exact", "cold", "bounded")
        for method in methods:
            run_child(method, sample, str(Path(work) / f"{method}.npy"))
        codebook = {method: np.load(Path(work) / f"{method}.npy") for method in methods}
        print(f"bounded and exact codebooks the same bytes: {codebook['exact'].tobytes() == codebook['bounded'].tobytes()}")
        for method in ("cold", "bounded"):
            print(f"descriptors given the same word by the plain and {method} codebooks: "
                  f"{same_words(sample, codebook['plain'], codebook[method]):.4%}")
        print("mean squared distance to the nearest word: " + ", ".join(
            f"{method} {mean_squared_distance(sample, codebook[method]):.6f}" for method in ("plain", "cold", "bounded")))


def compare_kernels(kernels: list[str], sample: Path, work: Path, run_child) -> None:
    """Plain and bounded codebooks under each kernel, against the first kernel's."""
    import numpy as np

    for method in ("plain", "bounded"):
        for kernel in kernels:
            run_child(method, sample, str(work / f"{method}-{kernel}.npy"), kernel)
        first = np.load(work / f"{method}-{kernels[0]}.npy")
        for kernel in kernels[1:]:
            other = np.load(work / f"{method}-{kernel}.npy")
            print(f"{method:>7}: {kernel} against {kernels[0]}: same bytes {first.tobytes() == other.tobytes()}, "
                  f"same word for {same_words(sample, first, other):.4%} of the sample")


if __name__ == "__main__":
    main()
