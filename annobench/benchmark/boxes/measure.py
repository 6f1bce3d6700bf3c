"""The localisation measure of ImageCLEF 2015/2016 subtask 1 (Gilbert et al. 2016, section 2.5,
equation 2), with the PASCAL VOC devkit's matching and AP (Everingham et al. 2010).

IoU = |A ∩ B| / |A ∪ B| with the VOC "+1" convention (model.iou). For each
concept, the run's boxes of that concept over all test images are ranked by
confidence, descending; ties keep the run's order (a stable sort), and a run
without scores is ranked in its own order.

- At a threshold t > 0 (the VOC devkit's rule) a box is compared with every
  ground-truth box of its concept in its image; if the one of highest IoU
  (the first in source order among equals) has IoU >= t and no
  higher-ranked box has matched it, the box is a true positive and matches
  it; otherwise it is a false positive, so a second detection of a matched
  object is a false positive.
- At t = 0 the box is ignored ("equivalent to an image level annotation"):
  it is a true positive while its image still has an unmatched ground-truth
  box of its concept, and matches one of them; so the k-th ranked box of a
  concept in an image is a true positive when the image has at least k
  ground-truth boxes of it.

AP per concept, from precision P_r and recall R_r at each rank r:

- "all" (VOC 2010 and later): the area under the precision/recall curve with
  precision made monotone: sum over the ranks r where recall rises of
  (R_r - R_{r-1}) * max_{r' >= r} P_{r'}.
- "11" (VOC 2007): the mean over recall levels 0, 0.1, ..., 1 of the highest
  precision at any rank whose recall is at least the level (0 if none).
  Levels are compared exactly (R >= l/10 as 10 TP >= l n), as the 2012
  measures do; implementations that compare with the float 0.1 * l (numpy's
  arange or linspace, MATLAB's 0:0.1:1) leave a point whose recall is
  exactly 0.3 (and in numpy also 0.6 or 0.7) below its level.

MAP is the mean AP over every concept with a ground-truth box among the
evaluated images; a concept the run never predicts has AP 0. A run box on
an image without ground truth, or of a concept without ground truth, is a
false positive of its concept (the second affects no AP of the mean).
Restricted to images with at least n ground-truth boxes (Gilbert et al. 2016,
Figure 4), only those images' truth and run boxes count.

The matching does not depend on t except through one comparison: each
run box's best truth box and IoU are computed once (vectorised, in blocks
of box pairs), then each threshold takes, among the boxes whose best IoU
reaches it, the first in rank order per truth box.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

import numpy as np
import pandas as pd

from annobench.benchmark.boxes.model import COORDINATES, iou
from annobench.core.errors import AnnobenchError

DEFAULT_THRESHOLDS = ("0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9")
INTERPOLATIONS = ("all", "11")
# Box pairs (run box x truth box of its concept and image) whose IoU is computed at once.
PAIRS_PER_BLOCK = 1 << 22


class BoxMeasureError(AnnobenchError):
    """Inputs the localisation measure cannot be computed on."""


def threshold_key(text: str) -> str:
    """A threshold as the JSON writes it: the shortest decimal ("0", "0.5", "0.75"); in [0, 1]."""
    try:
        value = Decimal(str(text).strip())
    except InvalidOperation:
        raise BoxMeasureError(f"threshold {text!r} is not a number") from None
    if not value.is_finite() or not 0 <= value <= 1:
        raise BoxMeasureError(f"threshold {text!r} is not in [0, 1]")
    return format(value.normalize(), "f")


def parse_thresholds(text: str) -> tuple[str, ...]:
    """Comma-separated thresholds -> their keys, in the given order; a repeat is refused."""
    keys = tuple(threshold_key(part) for part in text.split(","))
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise BoxMeasureError(f"threshold(s) given twice: {', '.join(repeated)}")
    return keys


@dataclass(frozen=True)
class _Ranked:
    """The run's boxes of evaluated concepts, in rank order (concept, then score, then run order)."""

    concept: np.ndarray  # concept code per ranked box (ascending)
    best_iou: np.ndarray  # IoU with the best truth box of its concept in its image (0 without one)
    best_truth: np.ndarray  # that truth box's index (-1 without one)
    rank_in_image: np.ndarray  # 0 for the image's highest-ranked box of the concept, 1 for the next, ...
    truth_in_image: np.ndarray  # ground-truth boxes of the concept in the box's image


def evaluate_boxes(truth: pd.DataFrame, run: pd.DataFrame, thresholds=DEFAULT_THRESHOLDS,
                   interpolation: str = "all", min_boxes: int = 0, image_ids=None) -> dict:
    """MAP and per-concept AP of a box run at each threshold, with the settings and counts.

    truth: columns image_id, concept, xmin, ymin, xmax, ymax (the boxes table);
    run: the same and score (NaN for every box of a run without scores), rows
    in the run's order. image_ids: the test images, when the truth lists
    them (images without boxes included). min_boxes: only images with at
    least that many ground-truth boxes count (0: every image).
    Returns {"MAP": {t: value}, "AP": {t: {concept: value}}, "settings": ..., "counts": ...}
    with t the threshold keys; a mean over no concept is NaN.
    """
    keys = tuple(threshold_key(t) for t in thresholds)
    if not keys or len(set(keys)) != len(keys):
        raise BoxMeasureError("give at least one threshold, each once")
    if interpolation not in INTERPOLATIONS:
        raise BoxMeasureError(f"interpolation must be one of {', '.join(INTERPOLATIONS)}, not {interpolation!r}")
    prepared = _prepare(truth, run, image_ids, min_boxes)
    hits = np.stack([_true_positives(prepared.ranked, float(Decimal(key))) for key in keys])
    ap = _average_precisions(hits, prepared.ranked.concept, prepared.positives, interpolation)
    concepts = prepared.concepts
    return {
        "MAP": {key: float(ap[k].mean()) if len(concepts) else float("nan") for k, key in enumerate(keys)},
        "AP": {key: dict(zip(concepts.tolist(), ap[k].tolist())) for k, key in enumerate(keys)},
        "settings": {"thresholds": list(keys), "interpolation": interpolation, "min_boxes": int(min_boxes)},
        "counts": prepared.counts,
    }


def precision_recall(truth: pd.DataFrame, run: pd.DataFrame, threshold="0.5", min_boxes: int = 0,
                     image_ids=None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per concept with ground truth, precision and recall after each of its ranked run boxes."""
    prepared = _prepare(truth, run, image_ids, min_boxes)
    hits = _true_positives(prepared.ranked, float(Decimal(threshold_key(threshold))))
    bounds = np.searchsorted(prepared.ranked.concept, np.arange(len(prepared.concepts) + 1))
    curves = {}
    for c, concept in enumerate(prepared.concepts.tolist()):
        found = np.cumsum(hits[bounds[c]:bounds[c + 1]])
        curves[concept] = (found / np.arange(1, len(found) + 1), found / prepared.positives[c])
    return curves


@dataclass(frozen=True)
class _Prepared:
    ranked: _Ranked
    concepts: np.ndarray  # the evaluated concepts (with a ground-truth box), sorted
    positives: np.ndarray  # ground-truth boxes per evaluated concept
    counts: dict


def _prepare(truth: pd.DataFrame, run: pd.DataFrame, image_ids, min_boxes: int) -> _Prepared:
    if isinstance(min_boxes, bool) or not isinstance(min_boxes, (int, np.integer)) or min_boxes < 0:
        raise BoxMeasureError(f"min_boxes must be an integer >= 0, got {min_boxes!r}")
    truth, run, images = _restrict(_frame(truth, "truth", False), _frame(run, "run", True), image_ids, min_boxes)
    concepts = np.array(sorted(set(truth["concept"])), dtype=object)
    ranked, counts = _rank(truth, run, concepts, images)
    positives = np.bincount(_codes(truth["concept"], concepts), minlength=len(concepts))
    counts = {"images": len(images), "truth_boxes": len(truth), "concepts": len(concepts), **counts}
    return _Prepared(ranked, concepts, positives, counts)


def _frame(boxes: pd.DataFrame, name: str, scored: bool) -> pd.DataFrame:
    columns = ["image_id", "concept", *(["score"] if scored else []), *COORDINATES]
    missing = [c for c in columns if c not in boxes.columns]
    if missing:
        raise BoxMeasureError(f"{name} boxes lack the column(s) {', '.join(missing)}")
    frame = boxes[columns].reset_index(drop=True)
    coordinates = frame[list(COORDINATES)].to_numpy()
    if not np.issubdtype(coordinates.dtype, np.integer):
        raise BoxMeasureError(f"{name} box coordinates must be integers (inclusive pixels)")
    if ((coordinates[:, 2] < coordinates[:, 0]) | (coordinates[:, 3] < coordinates[:, 1])).any():
        raise BoxMeasureError(f"{name} has a box with xmax < xmin or ymax < ymin")
    if scored:
        score = frame["score"].to_numpy(dtype=np.float64)
        if np.isnan(score).any() and not np.isnan(score).all():
            raise BoxMeasureError("the run gives some boxes a score and others none")
        if np.isinf(score).any():
            raise BoxMeasureError("the run has an infinite score")
    return frame


def _restrict(truth: pd.DataFrame, run: pd.DataFrame, image_ids, min_boxes: int):
    """The truth and run boxes that count, and the evaluated images."""
    images = pd.Index(image_ids if image_ids is not None else []).union(pd.Index(truth["image_id"].unique()))
    if min_boxes > 0:
        per_image = truth["image_id"].value_counts()
        images = pd.Index(sorted(per_image.index[per_image >= min_boxes]))
        truth = truth[truth["image_id"].isin(images)].reset_index(drop=True)
        run = run[run["image_id"].isin(images)].reset_index(drop=True)
    return truth, run, images


def _rank(truth: pd.DataFrame, run: pd.DataFrame, concepts: np.ndarray, images: pd.Index):
    """Rank the run's boxes per concept and find each one's best truth box."""
    outside = int((~run["image_id"].isin(images)).sum())
    concept = _codes(run["concept"], concepts)
    evaluated = concept >= 0
    counts = {"run_boxes": len(run), "run_boxes_on_other_images": outside,
              "run_boxes_of_concepts_without_truth": int((~evaluated).sum())}
    run = run[evaluated]
    concept = concept[evaluated]
    image_codes, _ = pd.factorize(pd.concat([truth["image_id"], run["image_id"]], ignore_index=True))
    n_images = int(image_codes.max()) + 1 if len(image_codes) else 1
    truth_key = _codes(truth["concept"], concepts) * n_images + image_codes[:len(truth)]
    run_key = concept * n_images + image_codes[len(truth):]

    by_key = np.argsort(truth_key, kind="stable")  # a group's boxes stay in source order
    sorted_keys = truth_key[by_key]
    first = np.searchsorted(sorted_keys, run_key, side="left")
    in_image = np.searchsorted(sorted_keys, run_key, side="right") - first
    truth_boxes = truth[list(COORDINATES)].to_numpy(dtype=np.int64)[by_key]
    best_iou, best_sorted = _best_matches(run[list(COORDINATES)].to_numpy(dtype=np.int64), truth_boxes,
                                          first, in_image)
    best_truth = np.where(best_sorted >= 0, by_key[np.maximum(best_sorted, 0)], -1) if len(by_key) else best_sorted

    score = run["score"].to_numpy(dtype=np.float64)
    score = np.zeros_like(score) if np.isnan(score).all() else score
    order = np.lexsort((np.arange(len(run)), -score, concept))  # last key first: concept, score, run order
    return _Ranked(concept[order], best_iou[order], best_truth[order], _rank_in_group(run_key[order]),
                   in_image[order]), counts


def _codes(names: pd.Series, concepts: np.ndarray) -> np.ndarray:
    """Each name's position in the sorted concepts, -1 for a name not among them."""
    return pd.Index(concepts).get_indexer(names).astype(np.int64)


def _best_matches(boxes: np.ndarray, truth_boxes: np.ndarray, first: np.ndarray, count: np.ndarray):
    """Per run box, the highest IoU with the truth boxes first[i]:first[i] + count[i] and which one.

    The pairs are laid out run box by run box and computed in blocks of
    about PAIRS_PER_BLOCK; among equal IoUs the first truth box wins.
    """
    best_iou = np.zeros(len(boxes))
    best = np.full(len(boxes), -1, dtype=np.int64)
    ends = np.cumsum(count)
    start = 0
    while start < len(boxes):
        stop = max(start + 1, int(np.searchsorted(ends, ends[start] - count[start] + PAIRS_PER_BLOCK, "right")))
        stop = min(stop, len(boxes))
        block_counts = count[start:stop]
        total = int(block_counts.sum())
        if total:
            owner = np.repeat(np.arange(start, stop), block_counts)
            offset = np.arange(total) - np.repeat(np.cumsum(block_counts) - block_counts, block_counts)
            candidate = first[owner] + offset
            overlap = iou(boxes[owner], truth_boxes[candidate])
            starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
            owners = owner[starts]
            best_iou[owners] = np.maximum.reduceat(overlap, starts)
            ties = np.flatnonzero(overlap == best_iou[owner])
            _, first_tie = np.unique(owner[ties], return_index=True)
            best[owners] = candidate[ties[first_tie]]
        start = stop
    return best_iou, best


def _rank_in_group(keys: np.ndarray) -> np.ndarray:
    """For keys in rank order: how many earlier boxes share each box's key (its rank within the group)."""
    grouped = np.argsort(keys, kind="stable")
    sorted_keys = keys[grouped]
    position = np.arange(len(keys))
    new = np.r_[True, sorted_keys[1:] != sorted_keys[:-1]] if len(keys) else np.zeros(0, dtype=bool)
    group_start = np.maximum.accumulate(np.where(new, position, 0)) if len(keys) else position
    rank = np.empty(len(keys), dtype=np.int64)
    rank[grouped] = position - group_start
    return rank


def _true_positives(ranked: _Ranked, threshold: float) -> np.ndarray:
    """Which ranked boxes are true positives at one threshold (Gilbert et al. 2016, section 2.5;
    Everingham et al. 2010)."""
    if threshold == 0:
        return ranked.rank_in_image < ranked.truth_in_image
    hits = np.zeros(len(ranked.concept), dtype=bool)
    reaching = np.flatnonzero((ranked.best_truth >= 0) & (ranked.best_iou >= threshold))
    _, first = np.unique(ranked.best_truth[reaching], return_index=True)  # the highest-ranked box per truth box
    hits[reaching[first]] = True
    return hits


def _average_precisions(hits: np.ndarray, concept: np.ndarray, positives: np.ndarray, interpolation: str):
    """(thresholds, concepts) AP from the true-positive flags of the ranked boxes."""
    ap = np.zeros((hits.shape[0], len(positives)))
    bounds = np.searchsorted(concept, np.arange(len(positives) + 1))
    for c in range(len(positives)):
        start, stop = bounds[c], bounds[c + 1]
        if stop > start:  # a concept the run never predicts keeps AP 0
            ap[:, c] = _curve_ap(hits[:, start:stop], int(positives[c]), interpolation)
    return ap


def _curve_ap(hits: np.ndarray, positives: int, interpolation: str) -> np.ndarray:
    """AP of one concept's ranking at each threshold (rows of hits)."""
    found = np.cumsum(hits, axis=1)
    precision = found / np.arange(1, hits.shape[1] + 1)
    best_from_here = np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]
    if interpolation == "all":
        # Recall rises by 1/positives at each true positive, where the monotone precision is best_from_here.
        return (best_from_here * hits).sum(axis=1) / positives
    levels = np.arange(11)
    needed = (levels * positives + 9) // 10  # recall >= l/10  <=>  found >= ceil(l * positives / 10)
    values = np.zeros((hits.shape[0], len(levels)))
    for row in range(hits.shape[0]):
        rank = np.searchsorted(found[row], needed, side="left")
        reached = rank < hits.shape[1]
        values[row, reached] = best_from_here[row, rank[reached]]
    return values.mean(axis=1)
