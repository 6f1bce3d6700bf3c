"""Evaluation measures of the benchmark (ImageCLEF 2012 task page; Villegas and Paredes 2014,
section 2.5; Dutta et al. 2018, section 3.2): how good a run's scores and decisions are.

Inputs follow the shared data model: `truth` (bool), `scores` (float64),
`decisions` (bool), all (n_images, n_concepts), and `listed` (bool, or None
for "every concept listed"). An image is evaluated only on its listed
concepts: outside the list, truth and decisions count as absent and scores
are never read (they may be NaN). Inside it, scores must be finite.

Three families of measures, each from its own source:

- ImageCLEF 2013-2016 (Villegas and Paredes 2014, section 2.5, equations 2-3; the organisers'
  evalannotat.m):
  MF1-samples, MF1-concepts, MAP-samples.
- ImageCLEF 2012 (its Photo Annotation task page): MnAP, MiAP, GMnAP, GMiAP and
  six F1 variants.
- Dutta et al. 2018 (section 3.2): P_L, R_L, F1_L, N+, mAP_L (per label)
  and P_I, R_I, F1_I, mAP_I (per image).

Choices where the sources leave room (each is repeated where it applies):

- Any 0/0 in a precision, recall or F1 counts as 0 (evalannotat.m does so).
- Which images and concepts are evaluated: an image with at least one listed
  concept; a concept listed for at least one image. With `listed=None` that
  is every row and column. A concept listed nowhere has no F1 at all rather
  than an F1 of 0 (evalannotat.m, which has no such notion, would give 0).
- AP with tie groups (ImageCLEF 2012, Dutta's mAP_L and mAP_I): images (or
  concepts) with the same score enter the ranking together and give one
  precision/recall point, at the end of their group. Non-interpolated AP =
  sum over groups of (precision at the group's end) x (recall gained in the
  group). This is also what scikit-learn's average_precision_score computes.
- AP needs at least one positive: a concept (or, for mAP_I, an image) with
  no positive has no AP and is left out of the means of MnAP, MiAP, GMnAP,
  GMiAP, mAP_L and mAP_I; "concepts_without_positives" says how many
  concepts were left out. A mean over nothing is NaN.
- MAP-samples (2013) is the exception, following evalannotat.m: the AP of an
  image is the mean of k / rank_k over its ground-truth concepts, so an image
  with none has AP 0/0 = 0 and is kept in the mean. Its ties are ordered at
  random from a seed (see imageclef_2013_measures).

`evaluate` gives all of them at once; `per_concept_table` shows per concept
which are hard. The region labels' measures are in
annobench.benchmark.region_annotation.measure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from annobench.core.errors import AnnobenchError

# Rankings are computed on blocks of rows of about this many cells, which
# bounds the working memory without a Python loop over images or concepts.
CHUNK_CELLS = 1 << 20
# Added to every AP before its log in the geometric means (the ImageCLEF 2012
# task page asks for "a very small epsilon"); only an AP of exactly 0 makes it
# matter, and an AP with tie groups is never 0 once the concept has a positive.
DEFAULT_EPSILON = 1e-10
# Recall levels of the interpolated AP: 0, 0.1, ..., 1 (as tenths, kept exact).
RECALL_TENTHS = np.arange(11)

KEYS_2013 = ("MF1-samples", "MF1-concepts", "MAP-samples")
KEYS_2012 = (
    "MiAP", "MnAP", "GMiAP", "GMnAP",
    "F1-photos-instance", "F1-photos-micro", "F1-photos-macro",
    "F1-concepts-instance", "F1-concepts-micro", "F1-concepts-macro",
    "concepts_without_positives",
)
KEYS_DUTTA = ("P_L", "R_L", "F1_L", "mAP_L", "N+", "P_I", "R_I", "F1_I", "mAP_I")


class MeasureInputError(AnnobenchError):
    """Matrices (or labels) that the measures cannot be computed on."""


# --- input checking ---------------------------------------------------------------

@dataclass(frozen=True)
class _Inputs:
    truth: np.ndarray  # bool, False outside the lists
    scores: np.ndarray  # float64, -inf outside the lists (ranks after every listed concept)
    decisions: np.ndarray  # bool, False outside the lists
    listed: np.ndarray  # bool
    images: np.ndarray  # bool per row: evaluated (lists at least one concept)
    concepts: np.ndarray  # bool per column: evaluated (listed for at least one image)


def _matrix(name: str, value, shape: tuple[int, int] | None) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim != 2:
        raise MeasureInputError(f"{name} must be a 2-D array (images x concepts), got shape {array.shape}")
    if shape is not None and array.shape != shape:
        raise MeasureInputError(f"{name} has shape {array.shape} but truth has shape {shape}")
    return array


def _bool_matrix(name: str, value, shape: tuple[int, int] | None) -> np.ndarray:
    array = _matrix(name, value, shape)
    if array.dtype == bool:
        return array
    if np.issubdtype(array.dtype, np.integer) and np.isin(array, (0, 1)).all():
        return array.astype(bool)
    raise MeasureInputError(f"{name} must be boolean (or integers 0/1), got dtype {array.dtype}")


def _score_matrix(value, shape: tuple[int, int] | None) -> np.ndarray:
    array = _matrix("scores", value, shape)
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise MeasureInputError(f"scores must be real numbers, got dtype {array.dtype}")
    return array.astype(np.float64, copy=False)


def _listed_matrix(listed, shape: tuple[int, int]) -> np.ndarray:
    if listed is None:
        return np.ones(shape, dtype=bool)
    array = _matrix("listed", listed, shape)
    if array.dtype != bool:
        raise MeasureInputError(f"listed must be boolean, got dtype {array.dtype}")
    return array


def _masked_scores(scores: np.ndarray, listed: np.ndarray) -> np.ndarray:
    """Scores with -inf outside the lists; a listed score must be finite."""
    bad = listed & ~np.isfinite(scores)
    if bad.any():
        row, column = (int(i) for i in np.argwhere(bad)[0])
        raise MeasureInputError(
            f"scores has a non-finite value ({scores[row, column]}) at listed position (row {row}, column {column})"
        )
    return np.where(listed, scores, -np.inf)


def _prepare(truth, scores, decisions, listed) -> _Inputs:
    truth = _bool_matrix("truth", truth, None)
    shape = truth.shape
    if 0 in shape:
        raise MeasureInputError(f"nothing to evaluate: truth has shape {shape}")
    scores = _score_matrix(scores, shape)
    decisions = _bool_matrix("decisions", decisions, shape)
    listed = _listed_matrix(listed, shape)
    return _Inputs(
        truth=truth & listed, scores=_masked_scores(scores, listed), decisions=decisions & listed, listed=listed,
        images=listed.any(axis=1), concepts=listed.any(axis=0),
    )


# --- counts, precision, recall, F1 -------------------------------------------------

def _ratio(numerator, denominator) -> np.ndarray:
    """numerator / denominator elementwise, 0 where the denominator is 0."""
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    out = np.zeros(np.broadcast(numerator, denominator).shape)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def _f1(precision, recall) -> np.ndarray:
    return _ratio(2 * np.asarray(precision) * np.asarray(recall), np.asarray(precision) + np.asarray(recall))


@dataclass(frozen=True)
class _Counts:
    correct: np.ndarray  # |G & D|
    predicted: np.ndarray  # |D|
    positives: np.ndarray  # |G|

    @property
    def precision(self) -> np.ndarray:
        return _ratio(self.correct, self.predicted)

    @property
    def recall(self) -> np.ndarray:
        return _ratio(self.correct, self.positives)

    @property
    def f1(self) -> np.ndarray:
        return _f1(self.precision, self.recall)


def _counts(truth: np.ndarray, decisions: np.ndarray, axis: int) -> _Counts:
    """Per concept (axis=0, summing over images) or per image (axis=1)."""
    return _Counts(
        correct=np.count_nonzero(truth & decisions, axis=axis),
        predicted=np.count_nonzero(decisions, axis=axis),
        positives=np.count_nonzero(truth, axis=axis),
    )


# --- rankings --------------------------------------------------------------------

@dataclass(frozen=True)
class _RankedAP:
    """AP of each row of a (rows, items) score matrix ranking its items."""
    positives: np.ndarray  # int per row
    grouped: np.ndarray  # tie-group AP; NaN without positives
    interpolated: np.ndarray | None  # 11-point interpolated, tie groups; NaN without positives
    sequential: np.ndarray | None  # mean of k / rank_k, ties in seeded random order; 0 without positives


def _rank_rows(scores: np.ndarray, hits: np.ndarray, seed: int | None = None,
               interpolate: bool = False) -> _RankedAP:
    """Rank the items of every row by descending score and compute the APs.

    scores holds -inf where an item is not listed (those rank last, after
    every listed item, and are never hits). With a seed, the order within
    ties is random: rows take, in row order, one permutation each from
    numpy.random.default_rng(seed) (Generator.permuted along the row, which
    equals rng.permutation(n_items) per row), and a stable sort by
    descending score of the permuted row gives the ranking. The sequential
    AP is only computed then.
    """
    rng = None if seed is None else np.random.default_rng(seed)
    rows_per_chunk = max(1, CHUNK_CELLS // max(1, scores.shape[1]))
    parts = [
        _rank_chunk(np.ascontiguousarray(scores[start:start + rows_per_chunk]),
                    np.ascontiguousarray(hits[start:start + rows_per_chunk]), rng, interpolate)
        for start in range(0, scores.shape[0], rows_per_chunk)
    ]

    def joined(field: str) -> np.ndarray | None:
        pieces = [getattr(part, field) for part in parts]
        return None if pieces[0] is None else np.concatenate(pieces)

    return _RankedAP(joined("positives"), joined("grouped"), joined("interpolated"), joined("sequential"))


def _rank_chunk(scores: np.ndarray, hits: np.ndarray, rng: np.random.Generator | None,
                interpolate: bool) -> _RankedAP:
    n_rows, n_items = scores.shape
    # Gathers go through flat indices (row offset + column): np.take on a
    # flat array is several times faster than take_along_axis.
    row_start = (np.arange(n_rows) * n_items)[:, None]
    flat_scores, flat_hits = scores.ravel(), hits.ravel()
    if rng is not None:
        permutation = rng.permuted(np.broadcast_to(np.arange(n_items), scores.shape), axis=1) + row_start
        permuted_scores = np.take(flat_scores, permutation)
        by_score = np.argsort(-permuted_scores, axis=1, kind="stable") + row_start
        order = np.take(permutation.ravel(), by_score)
        sorted_scores = np.take(permuted_scores.ravel(), by_score)
    else:  # the order within ties does not change a tie-group AP
        order = np.argsort(-scores, axis=1) + row_start
        sorted_scores = np.take(flat_scores, order)
    sorted_hits = np.take(flat_hits, order)
    found = np.cumsum(sorted_hits, axis=1, dtype=np.int64)  # hits at or above each rank
    positives = found[:, -1]
    precision = found / np.arange(1, n_items + 1)  # precision at each rank
    per_positive = np.where(positives > 0, positives, 1)

    sequential = None
    if rng is not None:
        sequential = np.einsum("ij,ij->i", precision, sorted_hits) / per_positive

    # A tie group ends where the next score differs (or the row ends).
    group_end = np.ones(scores.shape, dtype=bool)
    np.not_equal(sorted_scores[:, 1:], sorted_scores[:, :-1], out=group_end[:, :-1])
    found_at_ends = np.where(group_end, found, 0)
    before_group = np.zeros_like(found)
    np.maximum.accumulate(found_at_ends[:, :-1], axis=1, out=before_group[:, 1:])
    group_gain = np.where(group_end, found - before_group, 0)  # hits gained by the group ending here
    no_positive = positives == 0
    grouped = np.einsum("ij,ij->i", precision, group_gain) / per_positive
    grouped[no_positive] = np.nan

    interpolated = None
    if interpolate:
        interpolated = _interpolated_ap(found, np.where(group_end, precision, 0.0), positives)
        interpolated[no_positive] = np.nan
    return _RankedAP(positives, grouped, interpolated, sequential)


def _interpolated_ap(found: np.ndarray, point_precision: np.ndarray, positives: np.ndarray) -> np.ndarray:
    """Mean over recall levels 0, 0.1, ..., 1 of the best precision at any
    point (tie-group end) whose recall is at least the level.

    Recall never decreases down the ranking, so the points at or above a
    level are those from the first rank reaching it on: a suffix maximum.
    Levels are compared exactly: recall >= l/10 <=> hits >= ceil(l * positives / 10).
    """
    n_rows, n_items = found.shape
    best_from_here = np.maximum.accumulate(point_precision[:, ::-1], axis=1)[:, ::-1]
    needed = (RECALL_TENTHS[None, :] * positives[:, None] + 9) // 10  # (rows, 11)
    # First rank with found >= needed, per row: one searchsorted on the rows
    # laid end to end, each row offset past the previous one's largest count.
    offset = (np.arange(n_rows) * (n_items + 1))[:, None]
    flat_index = np.searchsorted((found + offset).ravel(), (needed + offset).ravel())
    # needed <= positives = the row's last count, so the answer stays in the row.
    first_rank = flat_index.reshape(needed.shape) - (np.arange(n_rows) * n_items)[:, None]
    return np.take_along_axis(best_from_here, first_rank, axis=1).mean(axis=1)


def _rank_images_per_concept(inputs: _Inputs) -> _RankedAP:
    return _rank_rows(inputs.scores.T, inputs.truth.T, interpolate=True)


def _rank_concepts_per_image(inputs: _Inputs, seed: int | None) -> _RankedAP:
    return _rank_rows(inputs.scores, inputs.truth, seed=seed)


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise MeasureInputError(f"seed must be an integer >= 0, got {seed!r}")
    return int(seed)


def _mean(values: np.ndarray) -> float:
    values = np.asarray(values, dtype=np.float64)
    return float(values.mean()) if values.size else float("nan")


def _geometric_mean(values: np.ndarray, epsilon: float) -> float:
    values = np.asarray(values, dtype=np.float64)
    return float(np.exp(np.log(values + epsilon).mean()) - epsilon) if values.size else float("nan")


# --- the three families ------------------------------------------------------------

def _measures_2013(inputs: _Inputs, per_image: _RankedAP) -> dict:
    samples = _counts(inputs.truth, inputs.decisions, axis=1)
    concepts = _counts(inputs.truth, inputs.decisions, axis=0)
    return {
        "MF1-samples": _mean(samples.f1[inputs.images]),
        "MF1-concepts": _mean(concepts.f1[inputs.concepts]),
        "MAP-samples": _mean(per_image.sequential[inputs.images]),
    }


def _measures_2012(inputs: _Inputs, per_concept: _RankedAP, epsilon: float) -> dict:
    photos = _counts(inputs.truth, inputs.decisions, axis=1)
    concepts = _counts(inputs.truth, inputs.decisions, axis=0)
    ranked = inputs.concepts & (per_concept.positives > 0)
    pooled = _Counts(concepts.correct.sum(), concepts.predicted.sum(), concepts.positives.sum())
    return {
        "MiAP": _mean(per_concept.interpolated[ranked]),
        "MnAP": _mean(per_concept.grouped[ranked]),
        "GMiAP": _geometric_mean(per_concept.interpolated[ranked], epsilon),
        "GMnAP": _geometric_mean(per_concept.grouped[ranked], epsilon),
        **_f1_variants("photos", photos, inputs.images),
        **_f1_variants("concepts", concepts, inputs.concepts),
        # Pooled counts are the same summed by photo or by concept.
        "F1-photos-macro": float(pooled.f1),
        "F1-concepts-macro": float(pooled.f1),
        "concepts_without_positives": int(np.count_nonzero(inputs.concepts & (per_concept.positives == 0))),
    }


def _f1_variants(unit: str, counts: _Counts, evaluated: np.ndarray) -> dict:
    """The 2012 page's instance and "micro" F1 (its "macro" is pooled, see above)."""
    return {
        f"F1-{unit}-instance": _mean(counts.f1[evaluated]),
        f"F1-{unit}-micro": float(_f1(_mean(counts.precision[evaluated]), _mean(counts.recall[evaluated]))),
    }


def _measures_dutta(inputs: _Inputs, decisions: np.ndarray, per_concept: _RankedAP,
                    per_image: _RankedAP) -> dict:
    labels = _counts(inputs.truth, decisions, axis=0)
    images = _counts(inputs.truth, decisions, axis=1)
    p_l, r_l = _mean(labels.precision[inputs.concepts]), _mean(labels.recall[inputs.concepts])
    p_i, r_i = _mean(images.precision[inputs.images]), _mean(images.recall[inputs.images])
    return {
        "P_L": p_l, "R_L": r_l, "F1_L": float(_f1(p_l, r_l)),
        "mAP_L": _mean(per_concept.grouped[inputs.concepts & (per_concept.positives > 0)]),
        "N+": int(np.count_nonzero(labels.correct > 0)),
        "P_I": p_i, "R_I": r_i, "F1_I": float(_f1(p_i, r_i)),
        "mAP_I": _mean(per_image.grouped[inputs.images & (per_image.positives > 0)]),
    }


# --- public API --------------------------------------------------------------------

def top_k_decisions(scores, k: int, listed=None) -> np.ndarray:
    """The k best-scoring listed concepts of every row (bool matrix).

    Ties are broken towards the lower column; a row listing fewer than k
    concepts gets all of them.
    """
    _check_k(k)
    scores = _score_matrix(scores, None)
    listed = _listed_matrix(listed, scores.shape)
    return _top_k(_masked_scores(scores, listed), listed, int(k))


def _check_k(k) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise MeasureInputError(f"k must be a positive integer, got {k!r}")


def _top_k(masked_scores: np.ndarray, listed: np.ndarray, k: int) -> np.ndarray:
    rows_per_chunk = max(1, CHUNK_CELLS // max(1, masked_scores.shape[1]))
    chosen = np.zeros(masked_scores.shape, dtype=bool)
    for start in range(0, masked_scores.shape[0], rows_per_chunk):
        block = slice(start, start + rows_per_chunk)
        chosen[block] = _top_k_chunk(masked_scores[block], k) & listed[block]
    return chosen


def _top_k_chunk(scores: np.ndarray, k: int) -> np.ndarray:
    """Top k per row: every score above the k-th best, then the lowest
    columns among those equal to it until k are taken."""
    if k >= scores.shape[1]:
        return np.ones(scores.shape, dtype=bool)
    kth_best = -np.partition(-scores, k - 1, axis=1)[:, k - 1:k]
    above = scores > kth_best
    tied = scores == kth_best
    room = k - np.count_nonzero(above, axis=1, keepdims=True)
    return above | (tied & (np.cumsum(tied, axis=1) <= room))


def imageclef_2013_measures(truth, scores, decisions, listed=None, seed: int = 0) -> dict:
    """ImageCLEF 2013-2016 measures (Villegas and Paredes 2014, section 2.5, evalannotat.m).

    MF1-samples / MF1-concepts: mean F1 over evaluated images / concepts, each
    F1 = 2PR/(P+R) from that image's (concept's) counts, 0/0 counted as 0.
    MAP-samples: mean over evaluated images of AP = mean_k(k / rank_k) over
    the image's ground-truth concepts, its listed concepts ranked by
    descending score; ties take a random order from `seed` (one permutation
    per row, drawn in row order, then a stable sort by descending score), so
    the same seed gives the same value. An image without ground-truth
    concept has AP 0 and stays in the mean (0/0 counted as 0).
    """
    seed = _check_seed(seed)
    inputs = _prepare(truth, scores, decisions, listed)
    return _measures_2013(inputs, _rank_concepts_per_image(inputs, seed))


def imageclef_2013_samples(truth, scores, decisions, listed=None, seed: int = 0) -> dict[str, np.ndarray]:
    """The individual values the ImageCLEF 2013-2016 means average (Villegas and Paredes 2014,
    section 2.5): "MF1-samples" and "MAP-samples" hold one value per evaluated image (row order),
    "MF1-concepts" one per evaluated concept (column order). Their means are the measures of
    imageclef_2013_measures (the same ranking, ties in the same seeded order); the campaign's
    confidence intervals are computed from their spread."""
    seed = _check_seed(seed)
    inputs = _prepare(truth, scores, decisions, listed)
    per_image = _rank_concepts_per_image(inputs, seed)
    samples = _counts(inputs.truth, inputs.decisions, axis=1)
    concepts = _counts(inputs.truth, inputs.decisions, axis=0)
    return {
        "MF1-samples": samples.f1[inputs.images],
        "MF1-concepts": concepts.f1[inputs.concepts],
        "MAP-samples": per_image.sequential[inputs.images],
    }


def imageclef_2012_measures(truth, scores, decisions, listed=None, epsilon: float = DEFAULT_EPSILON) -> dict:
    """ImageCLEF 2012 measures (the ImageCLEF 2012 Photo Annotation task page).

    Per concept, images ranked by descending score, tied images entering
    together (one precision/recall point per tie group). MnAP: mean of the
    non-interpolated AP (sum over groups of precision at the group's end x
    recall gained); MiAP: mean of the 11-point interpolated AP (levels 0,
    0.1, ..., 1, each the best precision at any point of recall >= level).
    GMnAP / GMiAP: exp(mean(log(AP + epsilon))) - epsilon. Concepts without
    a positive image have no AP: they are left out of these four means and
    counted in "concepts_without_positives".

    F1, named as on the 2012 page, which is the OPPOSITE of common usage:
    "instance" = mean of each photo's (concept's) F1; "micro" = F1 of the
    mean precision and mean recall over photos (concepts); "macro" = F1 of
    the counts pooled over the whole matrix, i.e. what scikit-learn calls
    micro F1. Pooled counts do not depend on summing by photo or by concept,
    so F1-photos-macro == F1-concepts-macro. Every 0/0 counts as 0.
    """
    if not (isinstance(epsilon, (int, float)) and np.isfinite(epsilon) and epsilon >= 0):
        raise MeasureInputError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    inputs = _prepare(truth, scores, decisions, listed)
    return _measures_2012(inputs, _rank_images_per_concept(inputs), float(epsilon))


def label_image_measures(truth, scores, decisions, listed=None) -> dict:
    """The per-label and per-image measures of Dutta et al. 2018 (section 3.2).

    P_L, R_L: per-label precision and recall (0/0 counted as 0, so a label
    never predicted has P = 0 and one never present has R = 0) averaged over
    all evaluated labels of the vocabulary; F1_L = 2 P_L R_L / (P_L + R_L),
    the harmonic mean of the averages, not the mean of per-label F1. N+:
    labels with at least one correct prediction. P_I, R_I, F1_I: the same per
    image, averaged over evaluated images. mAP_L: mean over labels with at
    least one positive image of the tie-group AP of ranking the images by
    score; mAP_I: mean over images with at least one ground-truth label of
    the tie-group AP of ranking their listed labels. Predictions are
    `decisions` (see `evaluate` for top-k predictions).
    """
    inputs = _prepare(truth, scores, decisions, listed)
    return _measures_dutta(inputs, inputs.decisions, _rank_images_per_concept(inputs),
                           _rank_concepts_per_image(inputs, None))


def evaluate(truth, scores, decisions, listed=None, seed: int = 0, top_k: int | None = None) -> dict:
    """Every measure of the three families in one dict, rankings computed once.

    The 2013 and 2012 measures use the run's decisions; the Dutta measures
    use the top_k best-scoring listed concepts per image when top_k is given
    (Dutta et al. use 5 or 3), else the run's decisions. Adds "images" and
    "concepts": how many were evaluated (listed at least once). Fractions are
    Python floats (NaN for a mean over nothing), counts Python ints.
    """
    seed = _check_seed(seed)
    if top_k is not None:
        _check_k(top_k)
    inputs = _prepare(truth, scores, decisions, listed)
    per_image = _rank_concepts_per_image(inputs, seed)
    per_concept = _rank_images_per_concept(inputs)
    dutta_decisions = inputs.decisions
    if top_k is not None:
        dutta_decisions = _top_k(inputs.scores, inputs.listed, int(top_k))
    return {
        **_measures_2013(inputs, per_image),
        **_measures_2012(inputs, per_concept, DEFAULT_EPSILON),
        **_measures_dutta(inputs, dutta_decisions, per_concept, per_image),
        "images": int(np.count_nonzero(inputs.images)),
        "concepts": int(np.count_nonzero(inputs.concepts)),
    }


def per_concept_table(truth, scores, decisions, concepts: Sequence[str], listed=None) -> pd.DataFrame:
    """One row per concept of the vocabulary, in its order: on how many images
    it was evaluated, its positives, predictions and correct predictions,
    precision / recall / F1 (0/0 counted as 0), and its tie-group AP,
    non-interpolated and 11-point interpolated (NaN without positives)."""
    inputs = _prepare(truth, scores, decisions, listed)
    if len(concepts) != inputs.truth.shape[1]:
        raise MeasureInputError(f"{len(concepts)} concept names for {inputs.truth.shape[1]} columns")
    counts = _counts(inputs.truth, inputs.decisions, axis=0)
    ranked = _rank_images_per_concept(inputs)
    return pd.DataFrame({
        "concept": [str(c) for c in concepts],
        "images": np.count_nonzero(inputs.listed, axis=0),
        "positives": counts.positives,
        "predicted": counts.predicted,
        "correct": counts.correct,
        "precision": counts.precision,
        "recall": counts.recall,
        "f1": counts.f1,
        "ap": ranked.grouped,
        "ap_interpolated": ranked.interpolated,
    })
