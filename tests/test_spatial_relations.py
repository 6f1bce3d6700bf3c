"""Spatial relations (Escalante et al. 2008, section 4.5) on constructed masks and the real MSRC-v2 maps."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from annobench.regions.importers import import_segmentations, split_imported
from annobench.regions.relations import (
    SPATIAL_RELATIONS_SCHEMA,
    adjacent_pairs,
    relation_counts,
    relation_frequency_table,
    relations_table,
    saiapr_matrices,
    spatial_relations,
    stacked_relations_table,
)
from helpers import REAL, require_shared


def relation_of(relations, i: int, j: int) -> dict[str, str]:
    names = relations.names()
    (k,) = np.flatnonzero((relations.region_i == i) & (relations.region_j == j))
    return {axis: values[k] for axis, values in names.items()}


def scene() -> np.ndarray:
    """100 x 100, a stripe half-width of 10 px at the default 0.2. Centroids (x, y):
    1 sky band (49.5, 14.5); 2 tree under it on the left (14.5, 59.5); 3 car (69.5, 69.5);
    4 one pixel touching the car diagonally (80, 80); 5 a stone at the bottom (49.5, 97)."""
    label_map = np.zeros((100, 100), dtype=np.int32)
    label_map[0:30, :] = 1
    label_map[30:90, 0:30] = 2
    label_map[60:80, 60:80] = 3
    label_map[80, 80] = 4
    label_map[95:100, 45:55] = 5
    return label_map


def test_each_relation_on_a_constructed_scene():
    rel = spatial_relations(scene())
    assert len(rel) == 5 * 4
    # The tree touches the sky band and lies below it: read (i, j) as "j relative to i".
    assert relation_of(rel, 1, 2) == {"topology": "adjacent", "horizontal": "beside", "vertical": "below"}
    assert relation_of(rel, 2, 1) == {"topology": "adjacent", "horizontal": "beside", "vertical": "above"}
    # The car's centroid is exactly 10 px lower than the tree's: the stripe's edge is inside.
    assert relation_of(rel, 2, 3) == {"topology": "disjoint", "horizontal": "beside", "vertical": "y_aligned"}
    # A diagonal touch is an 8-neighbourhood contact; 10.5 px apart in x is beside.
    assert relation_of(rel, 3, 4) == {"topology": "adjacent", "horizontal": "beside", "vertical": "below"}
    # The stone is right under the sky's centroid, far away.
    assert relation_of(rel, 1, 5) == {"topology": "disjoint", "horizontal": "x_aligned", "vertical": "below"}
    assert relation_of(rel, 5, 1) == {"topology": "disjoint", "horizontal": "x_aligned", "vertical": "above"}
    assert relation_of(rel, 1, 3)["horizontal"] == "beside"  # 20 px apart


def test_stripe_fraction_and_inclusive_edges():
    label_map = np.zeros((10, 100), dtype=np.int32)
    label_map[0, 0] = 1  # centroid x 0
    label_map[9, 10] = 2  # centroid x 10: exactly half of a 0.2 stripe (width 20) away
    label_map[9, 11] = 0
    rel = spatial_relations(label_map, stripe_fraction=0.2)
    assert relation_of(rel, 1, 2)["horizontal"] == "x_aligned"
    rel = spatial_relations(label_map, stripe_fraction=0.19)
    assert relation_of(rel, 1, 2)["horizontal"] == "beside"
    # Vertical stripes scale with the image height: 9 rows apart, height 10.
    assert relation_of(rel, 1, 2)["vertical"] == "below"
    assert relation_of(spatial_relations(label_map, stripe_fraction=1.8), 1, 2)["vertical"] == "y_aligned"


def test_one_pixel_gap_is_disjoint_and_diagonal_is_adjacent():
    gap = np.array([[1, 0, 2]])
    assert spatial_relations(gap).adjacent.tolist() == [False, False]
    diagonal = np.array([[1, 0], [0, 2]])
    assert spatial_relations(diagonal).adjacent.tolist() == [True, True]
    anti_diagonal = np.array([[0, 1], [2, 0]])
    assert spatial_relations(anti_diagonal).adjacent.tolist() == [True, True]
    low, high = adjacent_pairs(np.array([[1, 1, 3], [5, 0, 3]]))
    assert list(zip(low.tolist(), high.tolist())) == [(1, 3), (1, 5)]


def brute_force_adjacency(label_map: np.ndarray, a: int, b: int) -> bool:
    padded = np.pad(label_map == a, 1)
    grown = np.zeros_like(padded)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            grown |= np.roll(np.roll(padded, dy, axis=0), dx, axis=1)
    return bool((grown[1:-1, 1:-1] & (label_map == b)).any())


@pytest.mark.parametrize("seed", range(5))
def test_converses_and_symmetry_on_random_maps(seed):
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 7, size=(6, 8))
    label_map = np.kron(coarse, np.ones((5, 5), dtype=np.int64))  # blocks, so some pairs are apart
    rel = spatial_relations(label_map)
    ids = np.unique(label_map[label_map > 0])
    assert len(rel) == ids.size * (ids.size - 1)
    key = {(i, j): k for k, (i, j) in enumerate(zip(rel.region_i.tolist(), rel.region_j.tolist()))}
    for (i, j), k in key.items():
        back = key[(j, i)]
        assert rel.adjacent[k] == rel.adjacent[back] == brute_force_adjacency(label_map, i, j)
        assert rel.x_aligned[k] == rel.x_aligned[back]
        names = {0: "above", 1: "below", 2: "y_aligned"}
        converse = {"above": "below", "below": "above", "y_aligned": "y_aligned"}
        assert names[int(rel.vertical[back])] == converse[names[int(rel.vertical[k])]]


def test_saiapr_codes_and_matrices():
    rel = spatial_relations(scene())
    codes = rel.saiapr_codes()
    assert set(codes["topo"].tolist()) <= {1, 2}
    assert set(codes["x"].tolist()) <= {3, 4}
    assert set(codes["y"].tolist()) <= {5, 6, 7}
    matrices = saiapr_matrices(rel, np.array([1, 2, 3, 4, 5]))
    assert matrices["topo"][0, 1] == 1 and matrices["topo"][1, 2] == 2
    assert matrices["y_rels"][0, 1] == 6 and matrices["y_rels"][1, 0] == 5
    assert np.all(np.diag(matrices["topo"]) == 0)
    assert np.array_equal(matrices["topo"], matrices["topo"].T)


def test_relation_table_and_frequencies():
    rel = spatial_relations(scene())
    table = relations_table("scene", 1, rel)
    assert table.schema.equals(SPATIAL_RELATIONS_SCHEMA)
    assert table.num_rows == 20
    frequencies = relation_frequency_table(relation_counts([rel, rel])).to_pylist()
    by_name = {row["relation"]: row for row in frequencies}
    assert by_name["adjacent"]["pairs"] == 2 * int(rel.adjacent.sum())
    for axis in ("topology", "horizontal", "vertical"):
        assert sum(row["share"] for row in frequencies if row["axis"] == axis) == pytest.approx(1.0)
    assert [row["saiapr_code"] for row in frequencies] == [1, 2, 3, 4, 5, 6, 7]
    assert relation_frequency_table(relation_counts([])).column("share").to_pylist() == [0.0] * 7


def test_single_region_and_empty_map_have_no_pairs():
    assert len(spatial_relations(np.ones((3, 3), dtype=np.int32))) == 0
    assert len(spatial_relations(np.zeros((3, 3), dtype=np.int32))) == 0
    assert relations_table("x", 1, spatial_relations(np.zeros((2, 2), np.int32))).num_rows == 0
    assert isinstance(relations_table("x", 1, spatial_relations(np.zeros((2, 2), np.int32))), pa.Table)


def test_msrc_relation_table_has_n_times_n_minus_1_rows_per_image():
    segmentations, _ = split_imported(import_segmentations("msrc_v2", require_shared(REAL / "segmentations" / "msrc_v2")))
    counts = relation_counts([])
    for seg in segmentations:
        rel = spatial_relations(seg.label_map)
        n = len(seg.labels)
        assert len(rel) == n * (n - 1), seg.image_id
        assert set(rel.region_i.tolist()) | set(rel.region_j.tolist()) == (set(seg.labels) if n > 1 else set())
        counts += relation_counts([rel])
    assert counts["pairs"] > 0
    assert counts["adjacent"] + counts["disjoint"] == counts["pairs"]


def test_stacked_table_is_the_tables_of_each_map_one_after_another():
    maps = [scene(), np.kron(np.arange(6).reshape(2, 3), np.ones((4, 4), dtype=np.int64)), np.zeros((2, 2), np.int32)]
    parts = [(f"image{k}", k + 1, spatial_relations(label_map)) for k, label_map in enumerate(maps)]
    stacked = stacked_relations_table(parts)
    assert stacked.schema.equals(SPATIAL_RELATIONS_SCHEMA)
    assert stacked.equals(pa.concat_tables([relations_table(*part) for part in parts]))
    assert stacked.num_rows == 20 + 5 * 4
