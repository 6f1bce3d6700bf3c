"""The box baselines (ImageCLEF 2016 subtask 1, Gilbert et al. 2016), built from the image-level
k-NN runs and neighbours.

One run of each per feature of benchmark.features:

- whole_image_FEATURE: for every test image and every concept the
  knn_FEATURE run decides (decision 1), one box covering the whole image,
  (0, 0, width - 1, height - 1) in the images table's size (the original,
  after EXIF orientation), with the run's score for that concept.
- knn_transfer_FEATURE: the test image's benchmark.knn.neighbours nearest
  training images on FEATURE (the neighbours the knn run used); every truth
  box of each neighbour is carried over, rescaled from the neighbour's size
  to the test image's (transfer_box), with score (k - r + 1) / k for the
  neighbour of rank r (1 = nearest) among k: nearer neighbours' boxes rank
  first, ties keep the run's order (neighbour rank, then box number).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from annobench.benchmark.boxes.model import BOX_RUN_COLUMNS


def whole_image_run(knn_run, sizes: dict[str, tuple[int, int]]) -> pd.DataFrame:
    """One whole-image box per decided concept of each image of an image-level run, with its score."""
    rows, columns = np.nonzero(knn_run.decisions)  # row-major: image order, then vocabulary order
    image_ids = [knn_run.image_ids[r] for r in rows]
    return pd.DataFrame({
        "image_id": image_ids,
        "concept": [knn_run.concepts[c] for c in columns],
        "score": np.clip(knn_run.scores[rows, columns].astype(np.float64), 0.0, 1.0),
        "xmin": np.zeros(len(rows), dtype=np.int32), "ymin": np.zeros(len(rows), dtype=np.int32),
        "xmax": np.array([sizes[i][0] - 1 for i in image_ids], dtype=np.int32),
        "ymax": np.array([sizes[i][1] - 1 for i in image_ids], dtype=np.int32),
    }, columns=list(BOX_RUN_COLUMNS))


def transfer_box(box: tuple[int, int, int, int], source: tuple[int, int], target: tuple[int, int]):
    """An inclusive box of an image of size `source` (width, height) rescaled to size `target`.

    Pixel columns xmin..xmax cover [xmin, xmax + 1) of the image's width; that
    interval is scaled by target/source and the pixels it touches are the new
    box, in exact integer arithmetic; the far side is kept within the target
    as box truth is (at most its width, as VOC's pixels from 1 allow).
    """
    return tuple(int(v) for v in transfer_boxes([box], [source], [target])[0])


def transfer_boxes(boxes: np.ndarray, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """transfer_box on many boxes at once, in exact int64 arithmetic: boxes (n, 4) xmin, ymin,
    xmax, ymax; sources and targets (n, 2) width, height."""
    boxes, sources, targets = (np.asarray(a, dtype=np.int64) for a in (boxes, sources, targets))
    moved = np.empty_like(boxes)
    for axis in (0, 1):
        before, after = sources[:, axis], targets[:, axis]
        first = boxes[:, axis] * after // before
        last = -(-(boxes[:, axis + 2] + 1) * after // before) - 1
        moved[:, axis] = first
        moved[:, axis + 2] = np.minimum(np.maximum(last, first), after)
    return moved


def knn_transfer_run(test_ids: list[str], neighbours: list[list[str]], truth: pd.DataFrame,
                     sizes: dict[str, tuple[int, int]], k: int) -> pd.DataFrame:
    """The k nearest neighbours' truth boxes on each test image (module docstring).

    Rows: test image, then neighbour rank, then the neighbour's boxes in instance order. Built as
    arrays (one (test, neighbour) pair per used neighbour, repeated by its box count), because a
    per-box loop takes hours at 500,000 test images."""
    ordered = truth.sort_values(["image_id", "instance"], kind="stable")
    # truth is sorted by image: each image's boxes are one run of rows, from its first row.
    images, firsts, box_counts = np.unique(ordered["image_id"].to_numpy(dtype=object), return_index=True,
                                           return_counts=True)
    starts, counts = dict(zip(images, firsts.tolist())), dict(zip(images, box_counts.tolist()))
    pair_test, pair_source, pair_score, pair_first, pair_count = [], [], [], [], []
    for image_id, row in zip(test_ids, neighbours):
        used = row[:k]
        for rank, neighbour in enumerate(used, 1):
            if neighbour in counts:
                pair_test.append(image_id)
                pair_source.append(neighbour)
                pair_score.append((len(used) - rank + 1) / len(used))
                pair_first.append(starts[neighbour])
                pair_count.append(counts[neighbour])
    repeats = np.asarray(pair_count, dtype=np.int64)
    pair_of_row = np.repeat(np.arange(len(repeats)), repeats)
    offsets = np.arange(len(pair_of_row)) - np.repeat(np.cumsum(repeats) - repeats, repeats)
    box_rows = np.asarray(pair_first, dtype=np.int64)[pair_of_row] + offsets
    corners = ordered[["xmin", "ymin", "xmax", "ymax"]].to_numpy(dtype=np.int64)[box_rows]
    source_sizes = np.array([sizes[i] for i in pair_source], dtype=np.int64).reshape(-1, 2)[pair_of_row]
    target_sizes = np.array([sizes[i] for i in pair_test], dtype=np.int64).reshape(-1, 2)[pair_of_row]
    moved = transfer_boxes(corners, source_sizes, target_sizes).astype(np.int32)
    frame = pd.DataFrame({
        "image_id": np.asarray(pair_test, dtype=object)[pair_of_row],
        "concept": ordered["concept"].to_numpy(dtype=object)[box_rows],
        "score": np.asarray(pair_score, dtype=np.float64)[pair_of_row],
        "xmin": moved[:, 0], "ymin": moved[:, 1], "xmax": moved[:, 2], "ymax": moved[:, 3],
    }, columns=list(BOX_RUN_COLUMNS))
    return frame.astype({c: np.int32 for c in ("xmin", "ymin", "xmax", "ymax")} | {"score": np.float64})
