"""Spatial relations between the regions of an image (SPEC 6).

One row per ordered pair (i, j), i != j, of the regions present in a label
map, with three relations read as "j relative to i":

- topology: `adjacent` when some pixel of i and some pixel of j are
  8-neighbours, else `disjoint` (a label map has no overlaps);
- horizontal: `x_aligned` when j's centroid lies in the vertical stripe
  centred on i's centroid whose width is `stripe_fraction` of the image
  width (|x_j - x_i| <= fraction * W / 2, edge included), else `beside`;
- vertical: `y_aligned` the same way in a horizontal stripe whose height is
  `stripe_fraction` of the image height, else `above` when j's centroid has
  the smaller y (j is higher in the picture than i), else `below`.

So (i, j) is `above` exactly when (j, i) is `below`, and adjacency and both
alignments are symmetric. Centroids are the mean pixel coordinates.

Adjacency comes from one pass over the label map: each pixel is compared
with its right, lower, lower-right and lower-left neighbours (the other four
of the 8 are the same pairs seen from the other side), and the distinct
pairs of different regions are kept.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pyarrow as pa

from annobench.segmentations import dense_label_map
from annobench.tables import field

DEFAULT_STRIPE_FRACTION = 0.2

TOPOLOGY = ("adjacent", "disjoint")
HORIZONTAL = ("beside", "x_aligned")
VERTICAL = ("above", "below", "y_aligned")
RELATION_AXES = {"topology": TOPOLOGY, "horizontal": HORIZONTAL, "vertical": VERTICAL}

# The SAIAPR TC-12 numeric codes of the legacy export.
SAIAPR_CODES = {
    "adjacent": 1, "disjoint": 2,
    "beside": 3, "x_aligned": 4,
    "above": 5, "below": 6, "y_aligned": 7,
}

SPATIAL_RELATIONS_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "key of the image"),
        field("annotator", pa.int16(), "which segmentation of the image (1 when the source has one)"),
        field("region_i", pa.int32(), "first region of the ordered pair"),
        field("region_j", pa.int32(), "second region; the relations say where j is relative to i"),
        field("topology", pa.string(), "adjacent | disjoint (8-neighbourhood contact)"),
        field("horizontal", pa.string(), "x_aligned | beside"),
        field("vertical", pa.string(), "y_aligned | above | below (j above i = j's centroid higher)"),
    ]
)

RELATION_FREQUENCY_SCHEMA = pa.schema(
    [
        field("axis", pa.string(), "topology | horizontal | vertical"),
        field("relation", pa.string(), "relation name"),
        field("saiapr_code", pa.int8(), "SAIAPR TC-12 numeric code"),
        field("pairs", pa.int64(), "ordered pairs with this relation"),
        field("share", pa.float64(), "pairs / all ordered pairs (0 when there are none)"),
    ]
)


@dataclass(frozen=True)
class Relations:
    """The relations of every ordered pair of regions of one label map."""

    region_i: np.ndarray  # int32 region ids
    region_j: np.ndarray
    adjacent: np.ndarray  # bool
    x_aligned: np.ndarray  # bool
    vertical: np.ndarray  # int8 index into VERTICAL: 0 above, 1 below, 2 y_aligned

    def __len__(self) -> int:
        return int(self.region_i.size)

    def names(self) -> dict[str, np.ndarray]:
        """Relation names per pair: topology, horizontal, vertical (object arrays)."""
        return {
            "topology": np.where(self.adjacent, "adjacent", "disjoint").astype(object),
            "horizontal": np.where(self.x_aligned, "x_aligned", "beside").astype(object),
            "vertical": np.asarray(VERTICAL, dtype=object)[self.vertical],
        }

    def saiapr_codes(self) -> dict[str, np.ndarray]:
        """SAIAPR codes per pair: topo 1/2, x 3 beside/4 x_aligned, y 5 above/6 below/7 y_aligned."""
        return {
            "topo": np.where(self.adjacent, 1, 2).astype(np.int8),
            "x": np.where(self.x_aligned, 4, 3).astype(np.int8),
            "y": (self.vertical + 5).astype(np.int8),
        }


def spatial_relations(label_map: np.ndarray, stripe_fraction: float = DEFAULT_STRIPE_FRACTION) -> Relations:
    """Relations of all ordered pairs of the regions (ids > 0) present in label_map."""
    height, width = label_map.shape
    ids, dense = dense_label_map(label_map)
    n = ids.size
    cx, cy = _centroids(dense, n)
    adjacency = np.zeros((n + 1, n + 1), dtype=bool)
    low, high = adjacent_pairs(dense)
    adjacency[low, high] = adjacency[high, low] = True
    first, second = _ordered_pairs(n)
    dx, dy = cx[second] - cx[first], cy[second] - cy[first]
    y_aligned = np.abs(dy) <= stripe_fraction * height / 2
    return Relations(
        region_i=ids[first].astype(np.int32),
        region_j=ids[second].astype(np.int32),
        adjacent=adjacency[first + 1, second + 1],
        x_aligned=np.abs(dx) <= stripe_fraction * width / 2,
        vertical=np.where(y_aligned, 2, np.where(dy < 0, 0, 1)).astype(np.int8),
    )


def _centroids(dense: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean column and row of regions 1..n of a dense map, as arrays of n."""
    height, width = dense.shape
    flat = dense.ravel()
    counts = np.bincount(flat, minlength=n + 1)[1:]
    cols = np.tile(np.arange(width, dtype=np.float64), height)
    rows = np.repeat(np.arange(height, dtype=np.float64), width)
    cx = np.bincount(flat, cols, minlength=n + 1)[1:] / counts
    cy = np.bincount(flat, rows, minlength=n + 1)[1:] / counts
    return cx, cy


def adjacent_pairs(label_map: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct unordered pairs (a < b) of regions > 0 that are 8-neighbours somewhere."""
    labels = label_map
    # (this, neighbour) slices for the right, lower, lower-right and lower-left neighbours.
    shifts = (
        (labels[:, :-1], labels[:, 1:]),
        (labels[:-1, :], labels[1:, :]),
        (labels[:-1, :-1], labels[1:, 1:]),
        (labels[:-1, 1:], labels[1:, :-1]),
    )
    top = int(labels.max(initial=0)) + 1
    keys = []
    for here, there in shifts:
        differ = here != there  # region borders are few: work on them only
        a, b = here[differ].astype(np.int64), there[differ].astype(np.int64)
        both = (a > 0) & (b > 0)
        a, b = a[both], b[both]
        keys.append(np.minimum(a, b) * top + np.maximum(a, b))
    unique = np.unique(np.concatenate(keys))
    return unique // top, unique % top


def _ordered_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """All (i, j), i != j, of 0..n-1: i-major, j ascending (MATLAB's topo(i, j) read row by row)."""
    first, second = np.divmod(np.arange(n * n), n)
    off_diagonal = first != second
    return first[off_diagonal], second[off_diagonal]


def relation_rows(image_id: str, annotator: int, relations: Relations) -> dict[str, list]:
    """Columns for SPATIAL_RELATIONS_SCHEMA (pass to pa.Table.from_pydict)."""
    names = relations.names()
    return {
        "image_id": [image_id] * len(relations),
        "annotator": [annotator] * len(relations),
        "region_i": relations.region_i.tolist(),
        "region_j": relations.region_j.tolist(),
        **{axis: values.tolist() for axis, values in names.items()},
    }


def relations_table(image_id: str, annotator: int, relations: Relations) -> pa.Table:
    return pa.Table.from_pydict(relation_rows(image_id, annotator, relations), schema=SPATIAL_RELATIONS_SCHEMA)


def saiapr_matrices(relations: Relations, ids: np.ndarray) -> dict[str, np.ndarray]:
    """The legacy n x n `topo`, `x_rels`, `y_rels` matrices (0 on the diagonal),
    rows and columns in the order of ids."""
    n = ids.size
    i = np.searchsorted(ids, relations.region_i)
    j = np.searchsorted(ids, relations.region_j)
    matrices = {}
    for name, codes in zip(("topo", "x_rels", "y_rels"), relations.saiapr_codes().values()):
        matrix = np.zeros((n, n), dtype=np.int8)
        matrix[i, j] = codes
        matrices[name] = matrix
    return matrices


def relation_counts(relations: Iterable[Relations]) -> Counter:
    """Pairs per relation name over many images, plus the total under 'pairs'."""
    counts: Counter = Counter()
    for rel in relations:
        counts["pairs"] += len(rel)
        counts["adjacent"] += int(rel.adjacent.sum())
        counts["x_aligned"] += int(rel.x_aligned.sum())
        for index, name in enumerate(VERTICAL):
            counts[name] += int((rel.vertical == index).sum())
    counts["disjoint"] = counts["pairs"] - counts["adjacent"]
    counts["beside"] = counts["pairs"] - counts["x_aligned"]
    return counts


def relation_frequency_table(counts: Counter) -> pa.Table:
    """Share of ordered pairs per relation (SPEC 6; seed 000 Table 6 for SAIAPR)."""
    total = counts["pairs"]
    rows = [
        {"axis": axis, "relation": name, "saiapr_code": SAIAPR_CODES[name], "pairs": counts[name],
         "share": counts[name] / total if total else 0.0}
        for axis, names in RELATION_AXES.items()
        for name in names
    ]
    return pa.Table.from_pylist(rows, schema=RELATION_FREQUENCY_SCHEMA)
