"""Bag of visual words over dense SIFT (SPEC 3): sampling, codebooks, encoding.

Every random choice is a function of the configured seed and the image id,
never of the shard, the order of work or the number of cores: the same
inputs and seed give byte-identical samples, codebooks and vectors.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Iterator

import numpy as np

# Rows per block when comparing descriptors with the codebook: bounds the
# memory of the distance matrix whatever the sample size.
BLOCK_ROWS = 8192


def seeded_fraction(seed: int, image_id: str) -> float:
    """A number in [0, 1) fixed by the seed and the id."""
    digest = hashlib.sha256(f"{seed}:{image_id}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def image_rng(seed: int, image_id: str) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.sha256(f"{seed}/{image_id}".encode()).digest()[:8], "big"))


def sampling_plan(sample_descriptors: int, sample_images: int, n_images: int) -> dict:
    """Which share of the images to sample, and how many descriptors from each.

    At full scale 12,500 of 500,000 images give 100 descriptors each; a small
    collection gives all its images and up to all their descriptors.
    """
    n_sampled = max(1, min(n_images, sample_images))
    return {
        "fraction": 1.0 if n_images <= sample_images else sample_images / n_images,
        "per_image": math.ceil(sample_descriptors / n_sampled),
    }


def is_sampled(seed: int, image_id: str, fraction: float) -> bool:
    return fraction >= 1.0 or seeded_fraction(seed, image_id) < fraction


def sample_rows(descriptors: np.ndarray, per_image: int, seed: int, image_id: str) -> np.ndarray:
    """Up to `per_image` rows, chosen by the image's own random stream, in their original order."""
    if len(descriptors) <= per_image:
        return descriptors
    chosen = np.sort(image_rng(seed, image_id).choice(len(descriptors), per_image, replace=False))
    return descriptors[chosen]


def nearest(
    descriptors: np.ndarray, codebook: np.ndarray, codebook_sq: np.ndarray | None = None, pool: Executor | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Index of the nearest word (ties: lowest index) and the squared distance, block by block.

    Blocks are fixed slices, each computed alone (BLAS on one thread): with a
    thread pool they run side by side and give the same bits as without.
    """
    if codebook_sq is None:
        codebook_sq = np.einsum("ij,ij->i", codebook, codebook)
    labels = np.empty(len(descriptors), dtype=np.int64)
    distances = np.empty(len(descriptors), dtype=np.float32)

    def one_block(start: int) -> None:
        block = descriptors[start : start + BLOCK_ROWS]
        scores = codebook_sq[None, :] - 2.0 * (block @ codebook.T)  # |x - c|^2 - |x|^2
        best = np.argmin(scores, axis=1)
        labels[start : start + len(block)] = best
        block_sq = np.einsum("ij,ij->i", block, block)
        distances[start : start + len(block)] = np.maximum(scores[np.arange(len(block)), best] + block_sq, 0.0)

    for _ in _each_block(one_block, len(descriptors), pool):
        pass
    return labels, distances


def _each_block(work, n_rows: int, pool: Executor | None) -> Iterator:
    """work(start) for every block, results in block order as they come (not all held at once)."""
    starts = range(0, n_rows, BLOCK_ROWS)
    return pool.map(work, starts) if pool else map(work, starts)


def kmeans_plus_plus(data: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding (Arthur and Vassilvitskii 2007)."""
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


def train_codebook(
    sample: np.ndarray, k: int, iterations: int, seed: int, init_size: int = 20000, log=lambda line: None,
    threads: int = 1,
) -> np.ndarray:
    """k-means (Lloyd) on the sample, seeded by k-means++ on a subsample of it.

    Memory is a few blocks of BLOCK_ROWS x k besides the sample itself. The
    Lloyd steps run on `threads` threads, block by block; the codebook is the
    same bytes for any number of threads.
    """
    sample = np.ascontiguousarray(sample, dtype=np.float32)
    if len(sample) < k:
        raise ValueError(
            f"{len(sample)} sampled descriptors cannot make {k} words: lower features.bow.words "
            "(the collection is too small for this codebook)"
        )
    rng = np.random.default_rng(seed)
    subsample = sample[np.sort(rng.choice(len(sample), min(len(sample), max(init_size, k)), replace=False))]
    centres = kmeans_plus_plus(subsample, k, rng)
    labels = np.full(len(sample), -1, dtype=np.int64)
    with ThreadPoolExecutor(threads) if threads > 1 else contextlib.nullcontext() as pool:
        for iteration in range(iterations):
            new_labels, distances = nearest(sample, centres, pool=pool)
            changed = int((new_labels != labels).sum())
            labels = new_labels
            centres = _cluster_means(sample, labels, distances, k, pool)
            log(f"k-means iteration {iteration + 1}/{iterations}: {changed} assignments changed, "
                f"mean squared distance {distances.mean():.6f}")
            if changed == 0:
                break
    return centres


def _cluster_means(sample: np.ndarray, labels: np.ndarray, distances: np.ndarray, k: int,
                   pool: Executor | None = None) -> np.ndarray:
    # Per block, rows sorted by word and summed run by run in float64: linear in the
    # sample (a one-hot product costs as much as the distances). Blocks' sums are
    # added in block order, so threads change nothing.
    def block_sums(start: int) -> tuple[np.ndarray, np.ndarray]:
        block_labels = labels[start : start + BLOCK_ROWS]
        order = np.argsort(block_labels, kind="stable")
        ordered = block_labels[order]
        runs = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        rows = sample[start : start + BLOCK_ROWS][order].astype(np.float64)
        return ordered[runs], np.add.reduceat(rows, runs, axis=0)

    sums = np.zeros((k, sample.shape[1]), dtype=np.float64)
    for words, word_sums in _each_block(block_sums, len(sample), pool):
        sums[words] += word_sums
    counts = np.bincount(labels, minlength=k)
    centres = (sums / np.maximum(counts, 1)[:, None]).astype(np.float32)
    empty = np.flatnonzero(counts == 0)
    if len(empty):
        # Re-seed empty words with the worst-fitting descriptors (stable order: deterministic).
        worst = np.argsort(-distances, kind="stable")[: len(empty)]
        centres[empty] = sample[worst]
    return centres


def pyramid_histogram(
    points: np.ndarray, words: np.ndarray, width: int, height: int, k: int, levels: list[int]
) -> np.ndarray:
    """Concatenated word histograms of the pyramid cells, each L1-normalised (empty cell: zeros).

    Level L splits the image into L x L cells (row-major) at floor(i * W / L);
    a descriptor belongs to the cell holding its centre.
    """
    parts = []
    for level in levels:
        col = np.minimum(points[:, 0] * level // width, level - 1)
        row = np.minimum(points[:, 1] * level // height, level - 1)
        cells = np.bincount((row * level + col) * k + words, minlength=level * level * k)
        cells = cells.reshape(level * level, k).astype(np.float64)
        totals = cells.sum(axis=1, keepdims=True)
        parts.append((cells / np.where(totals > 0, totals, 1.0)).reshape(-1))
    return np.concatenate(parts).astype(np.float32)
