"""Dataset diagnostics of Dutta et al. 2018 (section 4.2).

How much a test set can be solved by remembering the training set: the
share of distinct and of never-seen label sets among the test images, each
test image's visual overlap with the training set (mean distance to its
nearest training images on one feature), and the label-frequency (Zipf)
plot; and the `visual_overlap` table of each test image's overlap.
"""

from __future__ import annotations

import math

import cv2
import numpy as np
import pyarrow as pa

from annobench.core.tables import field

OVERLAP_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "a test image"),
        field("overlap", pa.float64(), "mean distance to its nearest training images (smaller = more overlap)"),
        field("subset", pa.string(), "most_overlap or least_overlap, if in one", nullable=True),
    ]
)


def label_set_stats(train_sets: list[frozenset[str]], test_sets: list[frozenset[str]]) -> dict:
    """unique_label_sets = distinct test label sets / test images; novel_label_sets = test images
    whose label set never occurs in training / test images (Dutta et al. 2018, section 4.2.1, Table 8).
    Fractions; 0 with no test image."""
    n = len(test_sets)
    seen = set(train_sets)
    return {
        "test_images": n,
        "train_images": len(train_sets),
        "unique_label_sets": len(set(test_sets)) / n if n else 0.0,
        "novel_label_sets": sum(s not in seen for s in test_sets) / n if n else 0.0,
    }


def visual_overlap(neighbour_distances: np.ndarray, neighbours: int = 50) -> np.ndarray:
    """Mean Euclidean distance of each test image to its `neighbours` nearest training images
    (fewer when the training set is smaller). Smaller = more overlap with training."""
    return neighbour_distances[:, :neighbours].astype(np.float64).mean(axis=1)


def overlap_subsets(overlap: np.ndarray, share: float = 0.2) -> dict[str, np.ndarray]:
    """Row indices of the `share` most and least overlapping test images (at least one each when
    there is a test image). Ties in overlap are ordered by row, so the subsets are deterministic."""
    n = len(overlap)
    size = max(1, int(math.floor(share * n))) if n else 0
    order = np.lexsort((np.arange(n), overlap))  # by distance, then row
    return {"most_overlap": np.sort(order[:size]), "least_overlap": np.sort(order[n - size:])}


def overlap_table(test_ids: list[str], overlap: np.ndarray, share: float) -> pa.Table:
    """Each test image's visual overlap, and the subset (most or least overlapping) it falls in."""
    subset = [None] * len(test_ids)
    for name, rows in overlap_subsets(overlap, share).items():
        for row in rows:
            subset[row] = name
    return pa.Table.from_pydict({"image_id": test_ids, "overlap": overlap.astype(np.float64), "subset": subset},
                                schema=OVERLAP_SCHEMA)


def label_frequency_figure(frequencies: list[int], title: str, width: int = 900, height: int = 560) -> bytes:
    """PNG of the sorted label frequencies on log-log axes (rank vs images), as Dutta's Zipf plots."""
    canvas = np.full((height, width, 3), 255, np.uint8)
    left, top, right, bottom = 80, 50, width - 30, height - 60
    cv2.rectangle(canvas, (left, top), (right, bottom), (0, 0, 0), 1)
    _text(canvas, title, (left, 30), 0.6)
    counts = sorted((f for f in frequencies if f > 0), reverse=True)
    if not counts:
        _text(canvas, "no labels", (left + 20, top + 40), 0.6)
        return _png(canvas)
    max_rank, max_count = math.log10(max(len(counts), 2)), math.log10(max(counts[0], 2))

    def point(rank: int, count: int) -> tuple[int, int]:
        x = left + (right - left) * math.log10(rank) / max_rank
        y = bottom - (bottom - top) * math.log10(count) / max_count
        return int(round(x)), int(round(y))

    points = np.array([point(r, c) for r, c in enumerate(counts, 1)], np.int32)
    cv2.polylines(canvas, [points.reshape(-1, 1, 2)], False, (180, 110, 40), 2, cv2.LINE_AA)
    for x, y in points[:: max(1, len(points) // 60)]:
        cv2.circle(canvas, (int(x), int(y)), 3, (180, 110, 40), -1, cv2.LINE_AA)
    _text(canvas, f"label rank (1..{len(counts)}, log)", (left + (right - left) // 3, height - 20), 0.5)
    _text(canvas, f"images (max {counts[0]}, log)", (5, top - 8), 0.45)
    _text(canvas, "1", (left - 12, bottom + 18), 0.45)
    _text(canvas, str(len(counts)), (right - 30, bottom + 18), 0.45)
    return _png(canvas)


def _text(canvas: np.ndarray, text: str, origin: tuple[int, int], scale: float) -> None:
    cv2.putText(canvas, text, origin, cv2.FONT_HERSHEY_SIMPLEX, scale, (0, 0, 0), 1, cv2.LINE_AA)


def _png(canvas: np.ndarray) -> bytes:
    ok, png = cv2.imencode(".png", canvas)
    if not ok:
        raise RuntimeError("OpenCV could not encode the figure as PNG")
    return png.tobytes()
