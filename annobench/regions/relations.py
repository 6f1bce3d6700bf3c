"""Spatial relations between the regions of an image (Escalante et al. 2008, section 4.5).

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
of the 8 are the same pairs seen from the other side), and the pairs of
different regions are marked in an n x n matrix.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pyarrow as pa

from annobench.core.tables import field
from annobench.regions.segmentation import DenseLabelMap, key_columns, renumber_regions

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
    return relations_of_regions(renumber_regions(label_map), stripe_fraction)


def relations_of_regions(regions: DenseLabelMap, stripe_fraction: float = DEFAULT_STRIPE_FRACTION) -> Relations:
    """spatial_relations of a map renumbered already (the stage renumbers once for features and relations)."""
    height, width = regions.dense.shape
    ids, n = regions.ids, regions.ids.size
    cx, cy = _centroids(regions)
    adjacency = np.zeros((n + 1, n + 1), dtype=bool)  # row and column 0, the unlabelled, go unread
    for here, there in _touching(regions.dense):
        adjacency[here, there] = True
    adjacency |= adjacency.T
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


def _centroids(regions: DenseLabelMap) -> tuple[np.ndarray, np.ndarray]:
    """Mean column and row of each region, 0-based (integer sums: exact, whatever the order)."""
    height, width = regions.dense.shape
    counts = regions.counts[1:]
    return (regions.coordinate_counts(1) @ np.arange(width) / counts,
            regions.coordinate_counts(0) @ np.arange(height) / counts)


def adjacent_pairs(label_map: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct unordered pairs (a < b) of regions > 0 that are 8-neighbours somewhere."""
    top = int(label_map.max(initial=0)) + 1
    keys = []
    for here, there in _touching(label_map):
        a, b = here.astype(np.int64), there.astype(np.int64)
        both = (a > 0) & (b > 0)
        a, b = a[both], b[both]
        keys.append(np.minimum(a, b) * top + np.maximum(a, b))
    unique = np.unique(np.concatenate(keys))
    return unique // top, unique % top


def _touching(labels: np.ndarray):
    """Yield (label, neighbour's label) arrays of the 8-neighbours with different labels,
    for the right, lower, lower-right and lower-left neighbours (the other four are the
    same pairs seen from the other side)."""
    shifts = (
        (labels[:, :-1], labels[:, 1:]),
        (labels[:-1, :], labels[1:, :]),
        (labels[:-1, :-1], labels[1:, 1:]),
        (labels[:-1, 1:], labels[1:, :-1]),
    )
    for here, there in shifts:
        differ = here != there  # region borders are few: work on them only
        yield here[differ], there[differ]


def _ordered_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """All (i, j), i != j, of 0..n-1: i-major, j ascending (MATLAB's topo(i, j) read row by row)."""
    first, second = np.divmod(np.arange(n * n), n)
    off_diagonal = first != second
    return first[off_diagonal], second[off_diagonal]


def relations_table(image_id: str, annotator: int, relations: Relations) -> pa.Table:
    return stacked_relations_table([(image_id, annotator, relations)])


def stacked_relations_table(parts: list[tuple[str, int, Relations]]) -> pa.Table:
    """SPATIAL_RELATIONS_SCHEMA rows of many label maps, each given as (image_id, annotator, relations)."""
    relations = [rel for *_, rel in parts]
    stacked = {name: np.concatenate([np.zeros(0, dtype)] + [getattr(rel, name) for rel in relations])
               for name, dtype in (("region_i", np.int32), ("region_j", np.int32), ("adjacent", bool),
                                   ("x_aligned", bool), ("vertical", np.int8))}
    columns = {
        **key_columns([(image_id, annotator) for image_id, annotator, _ in parts], [len(rel) for rel in relations]),
        "region_i": stacked["region_i"],
        "region_j": stacked["region_j"],
        "topology": _names(TOPOLOGY, np.where(stacked["adjacent"], 0, 1)),
        "horizontal": _names(HORIZONTAL, stacked["x_aligned"].astype(np.int8)),
        "vertical": _names(VERTICAL, stacked["vertical"]),
    }
    return pa.Table.from_pydict(columns, schema=SPATIAL_RELATIONS_SCHEMA)


def _names(names: tuple[str, ...], index: np.ndarray) -> pa.Array:
    return pa.array(names, pa.string()).take(index)


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
    """Share of ordered pairs per relation (Escalante et al. 2008, section 4.5; its Table 6 for
    SAIAPR)."""
    total = counts["pairs"]
    rows = [
        {"axis": axis, "relation": name, "saiapr_code": SAIAPR_CODES[name], "pairs": counts[name],
         "share": counts[name] / total if total else 0.0}
        for axis, names in RELATION_AXES.items()
        for name in names
    ]
    return pa.Table.from_pylist(rows, schema=RELATION_FREQUENCY_SCHEMA)
