"""Bag of visual words over dense SIFT (Villegas and Paredes 2014, section 2.3; van de Sande et al.
2010; Lazebnik et al. 2006): sampling, codebooks, encoding.

Every random choice is a function of the configured seed and the image id,
never of the shard, the order of work or the number of cores: the same
inputs and seed give byte-identical samples, codebooks and vectors.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import threading
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
    """Index of the nearest word and the squared distance, block by block. The word is
    the exactly nearest (near ties by float64 distances, see settle_near_ties; exact
    ties: lowest index).

    Blocks are fixed slices, each computed alone (BLAS on one thread): with a
    thread pool they run side by side and give the same bits as without.
    """
    if codebook_sq is None:
        codebook_sq = np.einsum("ij,ij->i", codebook, codebook)
    longest_word_sq = float(codebook_sq.max(initial=0.0))
    labels = np.empty(len(descriptors), dtype=np.int64)
    distances = np.empty(len(descriptors), dtype=np.float32)

    def one_block(start: int) -> None:
        block = descriptors[start : start + BLOCK_ROWS]
        scores = codebook_sq[None, :] - 2.0 * (block @ codebook.T)  # |x - c|^2 - |x|^2
        block_sq = np.einsum("ij,ij->i", block, block)
        best = settle_near_ties(scores, np.argmin(scores, axis=1), block, codebook,
                                assignment_tolerance(block, longest_word_sq, block_sq=block_sq))
        labels[start : start + len(block)] = best
        distances[start : start + len(block)] = np.maximum(scores[np.arange(len(block)), best] + block_sq, 0.0)

    for _ in _each_block(one_block, len(descriptors), pool):
        pass
    return labels, distances


def _each_block(work, n_rows: int, pool: Executor | None, block_rows: int = BLOCK_ROWS) -> Iterator:
    """work(start) for every block, results in block order as they come (not all held at once)."""
    starts = range(0, n_rows, block_rows)
    return pool.map(work, starts) if pool else map(work, starts)


def kmeans_plus_plus(data: np.ndarray, k: int, rng: np.random.Generator, pool: Executor | None = None
                     ) -> np.ndarray:
    """k-means++ seeding (Arthur and Vassilvitskii 2007). Each new centre's distances
    are taken by blocks of rows on the pool's threads (a row's distance is the same
    bits in any block, so the picks are the same on any number of threads)."""
    centres = np.empty((k, data.shape[1]), dtype=np.float32)
    centres[0] = data[rng.integers(len(data))]
    closest = np.full(len(data), np.inf)

    def update(start: int) -> None:
        part = slice(start, start + SEEDING_BLOCK_ROWS)
        np.minimum(closest[part], _squared_distances(data[part], centres[i]), out=closest[part])

    for i in range(k):
        if i > 0:
            total = closest.sum()
            pick = rng.choice(len(data), p=closest / total) if total > 0 else rng.integers(len(data))
            centres[i] = data[pick]
        _run_blocks(update, len(data), pool, SEEDING_BLOCK_ROWS)
    return centres


def _squared_distances(data: np.ndarray, point: np.ndarray, chunk_rows: int = 1024) -> np.ndarray:
    """|row - point|^2 per row, by chunks small enough to stay in cache (the same
    bits as one subtraction over all rows, without writing a copy of the data)."""
    distances = np.empty(len(data), dtype=np.float32)
    difference = np.empty((min(chunk_rows, len(data)), data.shape[1]), dtype=np.float32)
    for start in range(0, len(data), chunk_rows):
        chunk = np.subtract(data[start : start + chunk_rows], point, out=difference[: len(data) - start])
        distances[start : start + len(chunk)] = np.einsum("ij,ij->i", chunk, chunk)
    return distances


def train_codebook(
    sample: np.ndarray, k: int, iterations: int, seed: int, init_size: int = 20000, log=lambda line: None,
    threads: int = 1, warm_start_share: float = 0.1, warm_start_iterations: int = 10,
) -> np.ndarray:
    """k-means (Lloyd) on the sample, seeded by k-means++ on a subsample of it, then
    warmed by Lloyd steps on a larger subsample (see warm_start_rows).

    Lloyd's steps skip the distances that bounds prove useless (see _Lloyd):
    the assignments of recomputing them all, each row to its nearest
    word by exact distance (float32 where it decides, float64 where rounding
    could), faster.
    Memory is a few blocks of KMEANS_BLOCK_ROWS x k and a few numbers per
    descriptor besides the sample itself (the warm start moves its rows to the
    front of the sample for its steps and back after, rather than copy them).
    The steps run on `threads` threads over fixed blocks; the codebook is the
    same bytes for any number of threads.
    """
    sample = np.ascontiguousarray(sample, dtype=np.float32)
    if len(sample) < k:
        raise ValueError(
            f"{len(sample)} sampled descriptors cannot make {k} words: lower features.bow.words "
            "(the collection is too small for this codebook)"
        )
    with thread_pool(threads) as pool:
        centres = seed_centres(sample, k, seed, init_size, pool)
        warm_rows = warm_start_rows(len(sample), k, seed, init_size, warm_start_share, warm_start_iterations)
        if warm_rows is not None:
            with rows_in_front(sample, warm_rows) as warm_sample:
                centres = _lloyd_steps(warm_sample, centres, warm_start_iterations, pool,
                                       lambda line: log(f"warm start on {len(warm_rows)} rows: {line}"))
        return _lloyd_steps(sample, centres, iterations, pool, log)


# Rows whose float64 differences to their words are held at once when measuring a fit (50 MB at 384-d).
FIT_ROWS = 16384


def thread_pool(threads: int):
    """A pool of `threads` for the block work of training and assignment (none for one thread)."""
    return ThreadPoolExecutor(threads) if threads > 1 else contextlib.nullcontext()


def codebook_fit(sample: np.ndarray, codebook: np.ndarray, threads: int = 1) -> float:
    """How well a codebook fits its sample, what k-means lowers: the mean over the rows of the
    squared distance to the nearest word. The word is the exactly nearest (nearest) and the
    distance is summed in float64 in fixed blocks, so the value is the same bits on any threads."""
    with thread_pool(threads) as pool:
        labels, _ = nearest(sample, codebook, pool=pool)
    total = 0.0
    for start in range(0, len(sample), FIT_ROWS):
        rows = slice(start, start + FIT_ROWS)
        difference = np.subtract(sample[rows], codebook[labels[rows]], dtype=np.float64)
        total += float(np.square(difference, out=difference).sum(axis=1).sum())
    return total / len(sample)


def seed_centres(sample: np.ndarray, k: int, seed: int, init_size: int = 20000, pool: Executor | None = None
                 ) -> np.ndarray:
    """Training's first centres: k-means++ on a seeded subsample of init_size rows."""
    rng = np.random.default_rng(seed)
    subsample = sample[np.sort(rng.choice(len(sample), min(len(sample), max(init_size, k)), replace=False))]
    return kmeans_plus_plus(subsample, k, rng, pool)


def warm_start_rows(n_rows: int, k: int, seed: int, init_size: int, share: float, iterations: int
                    ) -> np.ndarray | None:
    """The seeded subsample (share of the rows, in sample order) on which Lloyd steps first
    move the k-means++ centres, or None when there is no warm start: no iterations, or
    no more rows than seeding had (it would start no warmer).

    Why: a full step costs in proportion to the rows whose word the bounds cannot
    prove, and in the first steps from k-means++ centres that is nearly all of
    them. Steps on a tenth of the rows do that moving at a tenth of the cost;
    the full steps then start near a fixed point, where bounds prove more
    (measured at 1.25 M rows: 11% less CPU time, and a lower mean squared
    distance after the same number of full steps)."""
    rows = round(share * n_rows)
    if iterations == 0 or rows <= max(init_size, k):
        return None
    # A stream of its own: seeding's draws stay those of training without a warm start.
    return np.sort(np.random.default_rng([seed, 1]).choice(n_rows, rows, replace=False))


@contextlib.contextmanager
def rows_in_front(sample: np.ndarray, rows: np.ndarray) -> Iterator[np.ndarray]:
    """sample[:len(rows)] holding these rows (sorted, distinct indices), made by swapping
    each chosen row behind that front with an unchosen one in it, and swapped back on
    leaving, even on an error. A chosen row already in front keeps its place, so
    the order is a function of `rows` alone. At full size this spares the warm start
    a 190 MB copy of its rows, about a tenth of the job's peak memory."""
    m = len(rows)
    in_front = np.zeros(m, dtype=bool)
    in_front[rows[rows < m]] = True
    places, comers = np.flatnonzero(~in_front), rows[rows >= m]

    def swap() -> None:  # its own inverse: the pairs are disjoint
        for start in range(0, len(places), KMEANS_BLOCK_ROWS):
            front, back = places[start : start + KMEANS_BLOCK_ROWS], comers[start : start + KMEANS_BLOCK_ROWS]
            held = sample[front]
            sample[front] = sample[back]
            sample[back] = held

    swap()
    try:
        yield sample[:m]
    finally:
        swap()


def _lloyd_steps(sample: np.ndarray, centres: np.ndarray, iterations: int, pool: Executor | None, log
                ) -> np.ndarray:
    """Up to `iterations` Lloyd steps from these centres (fewer if no row changes word)."""
    lloyd = _Lloyd(sample, len(centres), pool)
    for iteration in range(iterations):
        step = lloyd.step(centres)
        centres = step.centres
        log(f"k-means iteration {iteration + 1}/{iterations}: {step.changed} assignments changed, "
            f"mean squared distance {step.mean_squared_distance:.6f} "
            f"({step.recomputed} descriptors' distances recomputed)")
        if step.changed == 0:
            break
    return centres


# Rows per block of k-means++ seeding's distances to a new centre: 3 MB at 384
# dimensions, ten blocks of its 20,000 rows for the threads to share.
SEEDING_BLOCK_ROWS = 2048
# Rows per block of k-means work: the 4096 x k float32 distances of a block
# (16 MB at 1,000 words) stay nearer the cache than BLOCK_ROWS' would.
KMEANS_BLOCK_ROWS = 4096
# Words are split into this many groups of nearby centres, each with its own
# lower bound per row: 20 float32 a row, 100 MB at 1.25 M rows. More groups
# prove more rows but cost memory, and their products run slower.
BOUND_GROUPS = 10
# A product over a few groups' words runs at about 60 % of the speed of one
# over all words: rows needing more than this share of the words get the latter.
GROUPED_SHARE = 0.6
# Share of the words, the fastest-moving, whose distances every row gets at each step.
FAST_SHARE = 0.05
FLOAT32_ROUNDOFF = 2.0**-24


@dataclasses.dataclass
class _Step:
    centres: np.ndarray
    changed: int
    recomputed: int
    mean_squared_distance: float


class _WordGroups:
    """Words grouped by the nearness of their first centres (Yinyang: a row far from
    a group is then far from all its words, and the group's bound stays useful).
    Products take the centres in group order: `order[position]` is the word."""

    def __init__(self, centres: np.ndarray, n_groups: int):
        group_of_word = _cluster_rows(centres, n_groups)
        self.order = np.argsort(group_of_word, kind="stable")
        sizes = np.bincount(group_of_word)
        self.starts = np.r_[0, np.cumsum(sizes)[:-1]]
        self.ends = self.starts + sizes
        self.sizes = sizes
        self.of_word = group_of_word
        self.position_of_word = np.argsort(self.order)

    def __len__(self) -> int:
        return len(self.sizes)


def _cluster_rows(rows: np.ndarray, n_groups: int, iterations: int = 5) -> np.ndarray:
    """Group of each row after a few plain Lloyd steps (groups numbered from 0, none empty)."""
    centres = kmeans_plus_plus(rows, n_groups, np.random.default_rng(0))
    for _ in range(iterations):
        group = nearest(rows, centres)[0]
        filled = np.unique(group)
        centres = np.stack([rows[group == g].mean(axis=0) for g in filled]).astype(np.float32)
    return np.unique(nearest(rows, centres)[0], return_inverse=True)[1]


class _Centres:
    """What the distances of one step need from the centres, computed once."""

    def __init__(self, centres: np.ndarray, groups: _WordGroups, previous: np.ndarray | None):
        self.centres = centres
        self.sq = np.einsum("ij,ij->i", centres, centres, dtype=np.float64)
        self.gap = _nearest_other_centre(centres)
        self.drift = np.zeros(len(centres)) if previous is None else np.linalg.norm(
            centres.astype(np.float64) - previous, axis=1)
        # The fastest-moving words get exact distances from every row, so that they do
        # not drag their groups' bounds down; the groups drop by their other words' drift.
        fastest = np.argsort(-self.drift, kind="stable")[: int(FAST_SHARE * len(centres))]
        self.fast = fastest[np.lexsort((fastest, groups.of_word[fastest]))]
        self.fast_column = np.full(len(centres), -1)
        self.fast_column[self.fast] = np.arange(len(self.fast))
        fast_groups = groups.of_word[self.fast]
        self.fast_group_starts = np.flatnonzero(np.r_[True, fast_groups[1:] != fast_groups[:-1]])[: len(self.fast)]
        self.fast_group = fast_groups[self.fast_group_starts]
        slow_drift = self.drift.copy()
        slow_drift[self.fast] = 0.0
        self.group_drift = np.maximum.reduceat(slow_drift[groups.order], groups.starts)
        # Products take the centres in group order; -2 is exact: the product then
        # holds -2 x.c, no extra pass.
        self.grouped_minus_twice = -2.0 * centres[groups.order]
        sq32 = self.sq.astype(np.float32)
        self.grouped_sq = sq32[groups.order]
        self.fast_minus_twice = self.grouped_minus_twice[groups.position_of_word[self.fast]]
        self.fast_sq = sq32[self.fast]


class _Lloyd:
    """Lloyd's k-means steps, skipping the distances that bounds prove useless
    (Yinyang k-means, Ding et al. 2015, after Hamerly 2010).

    Each row keeps its word, an upper bound on its distance to it and, per
    group of words, a lower bound on its distance to the group's other words.
    When centres move, the bounds move by at most as much (triangle
    inequality). A row whose bounds prove its word keeps it with no product
    computed; otherwise its distance to its own word is recomputed (tightening
    the upper bound), then its distances to the groups still unproven, as
    matrix products over blocks of rows. (One lower bound for all words, as in
    Hamerly's, proves almost nothing here: in 384 dimensions some centre
    always moves far.)

    Rounding: float32 distances are within `tolerance` of the exact ones, so
    bounds are widened by it and a word is proven only with twice that to
    spare. A row whose computed distances come that close (a near tie) gets
    all its distances from one product, and the words within rounding of the
    nearest are ordered by float64 distances, lowest index winning ties. So
    every row takes the word nearest by exact distance, whatever block,
    thread or BLAS kernel computed it: the steps are exact Lloyd's.
    """

    def __init__(self, sample: np.ndarray, k: int, pool: Executor | None):
        self.sample, self.k, self.pool = sample, k, pool
        self.sample_sq = np.einsum("ij,ij->i", sample, sample, dtype=np.float64)
        # Centres are means of rows or rows: none is longer than the longest row.
        self.tolerance = float32_tolerance(sample.shape[1], float(self.sample_sq.max()))
        self.labels = np.full(len(sample), -1, dtype=np.int32)
        self.upper = np.full(len(sample), np.inf)
        self.groups: _WordGroups | None = None  # with `lower`, from the first centres
        self.lower = np.empty((0, 0), dtype=np.float32)
        self.assigned_centres: np.ndarray | None = None
        self.word_sums = _WordSums(sample, k, pool)

    def step(self, centres: np.ndarray) -> _Step:
        """Assign every row to its nearest centre; the new centres are the words' means."""
        if self.groups is None:
            self.groups = _WordGroups(centres, min(self.k, BOUND_GROUPS))
            self.lower = np.zeros((len(self.sample), len(self.groups)), dtype=np.float32)
        geometry = _Centres(centres, self.groups, self.assigned_centres)
        if self.assigned_centres is None:
            rows, assign = np.arange(len(self.sample)), self._assign_fully
        else:
            rows, assign = self._unproven(geometry), self._assign
        previous_labels = self.labels[rows]
        _run_blocks(lambda start: assign(rows[start : start + KMEANS_BLOCK_ROWS], geometry), len(rows), self.pool)
        moved = np.flatnonzero(self.labels[rows] != previous_labels)
        self.assigned_centres = centres
        self.word_sums.move(rows[moved], previous_labels[moved], self.labels[rows[moved]])
        sums, counts = self.word_sums.float_sums(), self.word_sums.counts
        # Empty words need every row's distance, as `nearest` gives it (rare: one more pass).
        means = _means(sums, counts, self.sample, lambda: nearest(self.sample, centres, pool=self.pool)[1])
        return _Step(means, len(moved), len(rows), self._mean_squared_distance(centres, sums, counts))

    def _unproven(self, geometry: _Centres) -> np.ndarray:
        """Rows whose word the moved bounds do not prove, even after tightening the upper bound."""
        def filter_block(start: int) -> np.ndarray:
            rows = slice(start, start + KMEANS_BLOCK_ROWS)
            self.upper[rows] += geometry.drift[self.labels[rows]]
            self.lower[rows] = _round_down(self.lower[rows] - geometry.group_drift)
            self._bound_fast_words(rows, geometry)
            candidates = start + np.flatnonzero(~self._proven(rows, geometry.gap))
            self.upper[candidates] = np.sqrt(self._own_word_sq(candidates, geometry) + self.tolerance)
            return candidates[~self._proven(candidates, geometry.gap)]

        return np.concatenate(list(_each_block(filter_block, len(self.sample), self.pool, KMEANS_BLOCK_ROWS)))

    def _bound_fast_words(self, rows: slice, geometry: _Centres) -> None:
        """Fold the exact distances to the fastest words (but the own word) into their groups' bounds."""
        if len(geometry.fast) == 0:
            return
        scores = self.sample[rows] @ geometry.fast_minus_twice.T
        scores += geometry.fast_sq
        own_column = geometry.fast_column[self.labels[rows]]
        mine = np.flatnonzero(own_column >= 0)
        scores[mine, own_column[mine]] = np.inf
        nearest_sq = np.minimum.reduceat(scores, geometry.fast_group_starts, axis=1) + self.sample_sq[rows][:, None]
        fast_lower = np.sqrt(np.maximum(nearest_sq - self.tolerance, 0.0))
        groups = geometry.fast_group
        self.lower[rows, groups] = _round_down(np.minimum(self.lower[rows, groups], fast_lower))

    def _group_lower(self, rows, gap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lower bounds per group, upper bound) of the rows; every other word is also
        at least its centre's gap to the nearest other centre, minus upper, away."""
        upper = self.upper[rows]
        lower = np.maximum(self.lower[rows], (gap[self.labels[rows]] - upper)[:, None])
        return np.maximum(lower, 0.0), upper

    def _proven(self, rows, gap: np.ndarray) -> np.ndarray:
        lower, upper = self._group_lower(rows, gap)
        return lower.min(axis=1) ** 2 - upper**2 > 2.0 * self.tolerance

    def _unproven_groups(self, rows: np.ndarray, gap: np.ndarray) -> np.ndarray:
        lower, upper = self._group_lower(rows, gap)
        return lower**2 - (upper**2)[:, None] <= 2.0 * self.tolerance

    def _own_word_sq(self, rows: np.ndarray, geometry: _Centres) -> np.ndarray:
        """Squared distance of each row to its own word, by dot products."""
        words = self.labels[rows]
        dots = np.einsum("ij,ij->i", self.sample[rows], geometry.centres[words])
        return np.maximum(self.sample_sq[rows] - 2.0 * dots + geometry.sq[words], 0.0)

    def _assign(self, rows: np.ndarray, geometry: _Centres) -> None:
        """Words and bounds of a block of unproven rows: by their unproven groups, or all
        at once when these hold most words (one product is cheaper) or a tie is near."""
        groups = self._unproven_groups(rows, geometry.gap)
        by_groups = groups @ self.groups.sizes <= GROUPED_SHARE * self.k
        near_ties = self._assign_by_groups(rows[by_groups], groups[by_groups], geometry)
        self._assign_fully(np.concatenate([rows[~by_groups], near_ties]), geometry)

    def _assign_fully(self, rows: np.ndarray, geometry: _Centres) -> None:
        """All distances for these rows; nearest word, exactly (see settle_near_ties)."""
        if len(rows) == 0:
            return
        block = self.sample[rows]
        scores = block @ geometry.grouped_minus_twice.T
        scores += geometry.grouped_sq  # |x - c|^2 - |x|^2, words in group order
        positions = settle_near_ties(scores, np.argmin(scores, axis=1), block, geometry.centres, self.tolerance,
                                     self.groups.order)
        index = np.arange(len(rows))
        best = scores[index, positions]
        scores[index, positions] = np.inf
        others = np.minimum.reduceat(scores, self.groups.starts, axis=1)
        words = self.groups.order[positions]
        block_sq = self.sample_sq[rows]
        others_sq = others + block_sq[:, None]
        self._settle(rows, words, best + block_sq, np.sqrt(np.maximum(others_sq - self.tolerance, 0.0)))

    def _assign_by_groups(self, rows: np.ndarray, groups: np.ndarray, geometry: _Centres) -> np.ndarray:
        """Settle the rows whose nearest word wins by the margin among their unproven
        groups and their own word; return the others (near ties)."""
        own = self.labels[rows]
        # One column per group, and a last one for the own word (left out of the products).
        best_sq, best_words, second_sq = self._group_nearest(rows, groups, geometry)
        best_sq = np.c_[best_sq, self.upper[rows] ** 2 - self.tolerance]
        best_words = np.c_[best_words, own]
        second_sq = np.c_[second_sq, np.full(len(rows), np.inf)]
        index = np.arange(len(rows))
        winner = np.argmin(best_sq, axis=1)
        winner_sq = best_sq[index, winner]
        others_sq = best_sq  # nearest word other than the winner, per column
        others_sq[index, winner] = second_sq[index, winner]
        settled = others_sq.min(axis=1) - winner_sq > 4.0 * self.tolerance
        fresh = np.sqrt(np.maximum(others_sq - self.tolerance, 0.0))
        lower = np.where(groups, fresh[:, :-1], self.lower[rows])
        own_group = self.groups.of_word[own]
        # An own word that lost is one of its group's other words now.
        lower[index, own_group] = np.minimum(lower[index, own_group], fresh[:, -1])
        self._settle(rows[settled], best_words[index, winner][settled], winner_sq[settled], lower[settled])
        return rows[~settled]

    def _group_nearest(self, rows: np.ndarray, groups: np.ndarray, geometry: _Centres):
        """Per row and unproven group, but for the row's own word: squared distances of the
        nearest and second nearest words, and the nearest word (inf: proven group).
        One product per group."""
        best_sq, second_sq = np.full(groups.shape, np.inf), np.full(groups.shape, np.inf)
        best_words = np.zeros(groups.shape, dtype=np.int64)
        own_position = self.groups.position_of_word[self.labels[rows]]
        block, block_sq = self.sample[rows], self.sample_sq[rows]
        for group in np.flatnonzero(groups.any(axis=0)):
            members = np.flatnonzero(groups[:, group])
            start, end = self.groups.starts[group], self.groups.ends[group]
            scores = block[members] @ geometry.grouped_minus_twice[start:end].T
            scores += geometry.grouped_sq[start:end]
            own_at = own_position[members] - start
            mine = np.flatnonzero((own_at >= 0) & (own_at < end - start))
            scores[mine, own_at[mine]] = np.inf
            index = np.arange(len(members))
            nearest_here = np.argmin(scores, axis=1)
            best_sq[members, group] = scores[index, nearest_here] + block_sq[members]
            best_words[members, group] = self.groups.order[start + nearest_here]
            scores[index, nearest_here] = np.inf
            second_sq[members, group] = scores.min(axis=1) + block_sq[members]
        return best_sq, best_words, second_sq

    def _settle(self, rows: np.ndarray, words: np.ndarray, words_sq: np.ndarray, lower: np.ndarray) -> None:
        self.labels[rows] = words
        self.upper[rows] = np.sqrt(np.maximum(words_sq + self.tolerance, 0.0))
        self.lower[rows] = _round_down(lower)

    def _mean_squared_distance(self, centres: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> float:
        """Mean of |x - c|^2 over rows and their words, from the word sums: sum |x|^2 - 2 c.S + n |c|^2."""
        centres = centres.astype(np.float64)
        total = (self.sample_sq.sum() - 2.0 * np.einsum("ij,ij->", centres, sums)
                 + counts @ np.einsum("ij,ij->i", centres, centres))
        return max(total, 0.0) / len(self.sample)


def float32_tolerance(dimension: int, longest_sq: float) -> float:
    """Worst-case error of a float32 |x - c|^2 - |x|^2 = |c|^2 - 2 x.c, however BLAS sums it,
    for |x|^2 and |c|^2 at most `longest_sq` (Higham's gamma: d products, each within d
    units of roundoff, and the norms' own rounding)."""
    return (3 * dimension + 8) * FLOAT32_ROUNDOFF * longest_sq


def assignment_tolerance(descriptors: np.ndarray, longest_word_sq: float, extra_terms: int = 0,
                         block_sq: np.ndarray | None = None) -> float:
    """float32_tolerance of these descriptors' scores against words no longer than
    sqrt(longest_word_sq), summed over the dimension and `extra_terms` more
    (`block_sq`: the descriptors' squared norms, if the caller has them)."""
    if block_sq is None:
        block_sq = np.einsum("ij,ij->i", descriptors, descriptors)
    longest_sq = max(longest_word_sq, float(block_sq.max(initial=0.0)))
    return float32_tolerance(descriptors.shape[1] + extra_terms, longest_sq)


def settle_near_ties(scores: np.ndarray, columns: np.ndarray, rows: np.ndarray, centres: np.ndarray,
                     tolerance: float, word_of_column: np.ndarray | None = None) -> np.ndarray:
    """The chosen score columns, but where float32 scores (|x - c|^2 - |x|^2, within
    `tolerance` of exact) put another word within rounding of the chosen one, the column
    of the float64-nearest of those words. Any word exactly nearer than the chosen one
    scores within 2 tolerance of it, so the result is the exactly nearest word, whatever
    rounding BLAS gave the scores. Columns are words unless `word_of_column` maps them."""
    index = np.arange(len(columns))
    chosen = scores[index, columns].copy()
    # The best other score per row, by one reduction (no matrix of comparisons):
    # the chosen scores step aside for it and come back.
    scores[index, columns] = np.inf
    runner_up = scores.min(axis=1, initial=np.inf)
    scores[index, columns] = chosen
    limit = chosen + 2.0 * tolerance
    for row in np.flatnonzero(runner_up <= limit):
        candidates = np.flatnonzero(scores[row] <= limit[row])
        words = candidates if word_of_column is None else word_of_column[candidates]
        columns[row] = candidates[np.argmax(words == _exact_nearest(rows[row], centres, words))]
    return columns


def _exact_nearest(row: np.ndarray, centres: np.ndarray, words: np.ndarray) -> int:
    """The word nearest the row by float64 distances (ties: lowest index). Only for
    words whose float32 distances come within rounding of each other: which of them
    float32 calls nearest depends on how BLAS splits the product (the row's place in
    it, its size), so that choice would not be the same on every machine or block."""
    words = np.sort(words)
    distances = ((centres[words].astype(np.float64) - row.astype(np.float64)) ** 2).sum(axis=1)
    return int(words[np.argmin(distances)])


class _WordSums:
    """Each word's sum of rows and row count, kept exactly as rows change word.

    Rows are summed as fixed-point integers (scaled by 2^exponent and rounded: a
    step of 2^-40 for 1.25 M rows of unit length, far below float32's
    resolution of a mean), so a sum is the same whatever order its rows are
    added or removed in. A Lloyd step then updates the sums with the rows that
    changed word only (a few percent after the first steps) instead of summing
    the sample again, and threads change nothing.
    """

    def __init__(self, sample: np.ndarray, k: int, pool: Executor | None = None):
        self.sample, self.pool = sample, pool
        self.exponent = _fixed_point_exponent(sample)
        self.sums = np.zeros((k, sample.shape[1]), dtype=np.int64)
        self.counts = np.zeros(k, dtype=np.int64)

    def move(self, rows: np.ndarray, old_words: np.ndarray, new_words: np.ndarray) -> None:
        """Rows leave old_words (-1: not counted yet) for new_words."""
        scale = np.float32(2.0**self.exponent)  # exact: rows times a power of two
        lock = threading.Lock()

        def add_block(start: int) -> None:
            # Integer sums: blocks may add in any order, so each adds its own as it ends
            # (no block's sums wait in memory for the others).
            part = slice(start, start + KMEANS_BLOCK_ROWS)
            counted = old_words[part] >= 0
            for sign, (words, sums) in ((1, _fixed_point_sums(self.sample, rows[part], new_words[part], scale)),
                                        (-1, _fixed_point_sums(self.sample, rows[part][counted],
                                                               old_words[part][counted], scale))):
                with lock:
                    self.sums[words] += sign * sums

        _run_blocks(add_block, len(rows), self.pool)
        self.counts += np.bincount(new_words, minlength=len(self.counts))
        self.counts -= np.bincount(old_words[old_words >= 0], minlength=len(self.counts))

    def float_sums(self) -> np.ndarray:
        return self.sums.astype(np.float64) * 2.0**-self.exponent


def _fixed_point_exponent(sample: np.ndarray) -> int:
    """The largest e for which the sum of any of the sample's rows, scaled by 2^e and
    rounded, stays within int64 (below 2^62: n rows each below 2^(62 - bits of n))."""
    largest = max(float(sample.max(initial=0.0)), -float(sample.min(initial=0.0)))  # no |sample| copy
    if largest == 0.0:
        return 0
    return 62 - math.frexp(largest)[1] - max(len(sample), 1).bit_length()


def _fixed_point_sums(sample: np.ndarray, rows: np.ndarray, words: np.ndarray, scale: np.float32
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The distinct words and the sum of each one's rows, scaled and rounded to integers
    (exact: any order gives these sums). Words of equal row counts are summed together,
    so the cost is the additions, not a call per word."""
    order = np.argsort(words, kind="stable")
    ordered = words[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(words) else np.empty(0, int)
    lengths = np.diff(np.r_[starts, len(words)])
    sums = np.empty((len(starts), sample.shape[1]), dtype=np.int64)
    for length in np.unique(lengths):
        runs = np.flatnonzero(lengths == length)
        members = sample[rows[order[starts[runs, None] + np.arange(length)]]]
        np.rint(np.multiply(members, scale, out=members), out=members)  # exact scaling, then whole
        sums[runs] = members.sum(axis=1, dtype=np.int64)  # cast as added: no int64 copy
    return ordered[starts], sums


def _means(sums: np.ndarray, counts: np.ndarray, sample: np.ndarray, distances) -> np.ndarray:
    """The words' means; an empty word takes one of the worst-fitting rows
    (`distances()`: each row's squared distance to its word; stable order)."""
    centres = (sums / np.maximum(counts, 1)[:, None]).astype(np.float32)
    empty = np.flatnonzero(counts == 0)
    if len(empty):
        worst = np.argsort(-distances(), kind="stable")[: len(empty)]
        centres[empty] = sample[worst]
    return centres


def _round_down(values: np.ndarray) -> np.ndarray:
    """float32 no larger than the values: lower bounds stay bounds once stored."""
    return np.nextafter(values.astype(np.float32), np.float32(-np.inf))


def _nearest_other_centre(centres: np.ndarray) -> np.ndarray:
    """Distance from each centre to its nearest other centre (float64: far more exact than the tolerance)."""
    centres = centres.astype(np.float64)
    squared = np.einsum("ij,ij->i", centres, centres)
    between = squared[:, None] + squared[None, :] - 2.0 * (centres @ centres.T)
    np.fill_diagonal(between, np.inf)
    return np.sqrt(np.maximum(between.min(axis=1), 0.0))


def _run_blocks(work, n_rows: int, pool: Executor | None, block_rows: int = KMEANS_BLOCK_ROWS) -> None:
    for _ in _each_block(work, n_rows, pool, block_rows):
        pass


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
