"""Evaluation measures (annobench/benchmark/annotation/measure.py; the region ones in
annobench/benchmark/region_annotation/measure.py) against independent computations.

Real ground truth: the Mulan "scene" set (with a nearest-neighbour run made
here in numpy) and MSRC-v2 photo labels derived from their regions (with a
noisy run). scikit-learn is the independent reference where its definitions
agree with ours; small hand-worked cases cover where they do not (tie groups,
11-point interpolation, GMAP, the seeded tie order, top-k ties, e_ontology).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import (
    average_precision_score,
    f1_score,
    multilabel_confusion_matrix,
    precision_recall_curve,
    precision_score,
    recall_score,
)

from annobench.benchmark.annotation import measure as M
from annobench.benchmark.region_annotation import measure as R
from annobench.regions.importers import import_segmentations
from annobench.regions.importers.msrc_v2 import MSRC_V2_CLASSES
from annobench.regions.segmentation import Segmentation
from helpers import REAL, read_scene, require_shared

MSRC = REAL / "segmentations" / "msrc_v2"


def hmean(a: float, b: float) -> float:
    return 2 * a * b / (a + b) if a + b else 0.0


# --- real data ----------------------------------------------------------------

class Scene:
    """Scene test set with a k-nearest-neighbour run from the training set."""

    def __init__(self):
        data = read_scene()
        self.labels = data.labels
        features, train_truth = data.x_train.astype(np.float64), data.y_train
        self.truth = data.y_test
        test_features = data.x_test.astype(np.float64)
        squared = ((test_features ** 2).sum(1)[:, None] + (features ** 2).sum(1)[None, :]
                   - 2 * test_features @ features.T)
        distance = np.sqrt(np.maximum(squared, 0))
        nearest = np.argsort(distance, axis=1)[:, :10]
        # Fraction of the 10 neighbours with the label: tenths, so many ties.
        self.tied = train_truth[nearest].mean(axis=1)
        # Inverse-distance weights, plus a trace of each label's training
        # frequency to separate labels no neighbour has: no ties within a row.
        weights = 1 / (np.take_along_axis(distance, nearest, axis=1) + 1e-9)
        weighted = (train_truth[nearest] * weights[:, :, None]).sum(1) / weights.sum(1)[:, None]
        self.smooth = (weighted + 1e-3 * train_truth.mean(axis=0)) / (1 + 1e-3)
        self.decisions = self.tied >= 0.5


@pytest.fixture(scope="module")
def scene() -> Scene:
    return Scene()


@pytest.fixture(scope="module")
def msrc():
    """Photo label sets from the MSRC-v2 cleaned region labels, and a noisy run."""
    items = list(import_segmentations("msrc_v2", require_shared(MSRC)))
    assert all(isinstance(item, Segmentation) for item in items)
    column = {name: j for j, name in enumerate(MSRC_V2_CLASSES)}
    truth = np.zeros((len(items), len(MSRC_V2_CLASSES)), dtype=bool)
    for i, item in enumerate(items):
        truth[i, [column[label] for label in item.labels.values()]] = True
    rng = np.random.default_rng(12)
    scores = np.round(0.35 * truth + 0.65 * rng.random(truth.shape), 2)  # 2 decimals: ties
    return truth, scores, scores > 0.5, [item.image_id for item in items]


# --- ImageCLEF 2013-2016 ----------------------------------------------------------

def test_2013_f1_matches_sklearn_on_scene(scene):
    result = M.imageclef_2013_measures(scene.truth, scene.tied, scene.decisions)
    assert result["MF1-samples"] == pytest.approx(
        f1_score(scene.truth, scene.decisions, average="samples", zero_division=0), abs=1e-12)
    assert result["MF1-concepts"] == pytest.approx(
        f1_score(scene.truth, scene.decisions, average="macro", zero_division=0), abs=1e-12)
    assert 0.3 < result["MF1-concepts"] < 0.9  # a real, imperfect run


def test_map_samples_without_ties_matches_sklearn(scene):
    sorted_rows = np.sort(scene.smooth, axis=1)
    assert (np.diff(sorted_rows, axis=1) != 0).all(), "the smooth run must have no ties"
    assert scene.truth.any(axis=1).all()
    result = M.imageclef_2013_measures(scene.truth, scene.smooth, scene.decisions, seed=3)
    assert result["MAP-samples"] == pytest.approx(
        average_precision_score(scene.truth, scene.smooth, average="samples"), abs=1e-12)


def test_map_samples_counts_an_image_without_truth_as_zero():
    truth = np.array([[True, False, False], [False, False, False]])
    scores = np.array([[0.2, 0.9, 0.5], [0.9, 0.1, 0.3]])
    # Row 0: its one concept ranks 3rd -> AP 1/3. Row 1: no truth -> AP 0.
    result = M.imageclef_2013_measures(truth, scores, scores > 0.4)
    assert result["MAP-samples"] == pytest.approx((1 / 3 + 0) / 2)
    # Row 0: P 0, R 0; row 1: nothing predicted right either -> F 0 both.
    assert result["MF1-samples"] == 0.0


def test_map_samples_tie_order_is_seeded():
    truth = np.array([[False, True]])
    scores = np.array([[0.7, 0.7]])
    values = {seed: M.imageclef_2013_measures(truth, scores, truth, seed=seed)["MAP-samples"] for seed in range(12)}
    # Same seed, same value; the value depends on the order within the tie.
    assert M.imageclef_2013_measures(truth, scores, truth, seed=5)["MAP-samples"] == values[5]
    assert set(values.values()) == {0.5, 1.0}
    # The documented order: one permutation per row from default_rng(seed),
    # then a stable sort by descending score (all tied here, so the
    # permutation is the ranking). Concept 1 first -> AP 1, else 1/2.
    for seed, value in values.items():
        first = np.random.default_rng(seed).permutation(2)[0]
        assert value == (1.0 if first == 1 else 0.5)
    # Rows draw their permutations in row order from the same generator.
    rows = np.array([[0.4, 0.4, 0.4], [0.9, 0.4, 0.4], [0.4, 0.4, 0.4]])
    hits = np.array([[False, False, True], [True, False, True], [True, True, False]])
    rng = np.random.default_rng(7)
    expected = []
    for row, hit in zip(rows, hits):
        permutation = rng.permutation(3)
        order = permutation[np.argsort(-row[permutation], kind="stable")]
        ranks = np.flatnonzero(hit[order]) + 1
        expected.append(np.mean(np.arange(1, ranks.size + 1) / ranks))
    assert M.imageclef_2013_measures(hits, rows, hits, seed=7)["MAP-samples"] == pytest.approx(np.mean(expected))


def test_map_samples_tie_order_averages_to_the_expectation():
    # Each row: one positive tied with one negative -> AP 1 or 1/2, expected 3/4.
    truth = np.tile([[False, True]], (4000, 1))
    scores = np.full(truth.shape, 0.3)
    assert M.imageclef_2013_measures(truth, scores, truth, seed=1)["MAP-samples"] == pytest.approx(0.75, abs=0.03)
    # Without ties the seed does not matter.
    distinct = np.tile([[0.3, 0.2]], (4000, 1))
    assert {M.imageclef_2013_measures(truth, distinct, truth, seed=s)["MAP-samples"] for s in (1, 2)} == {0.5}


# --- ImageCLEF 2012 -----------------------------------------------------------------

def test_per_concept_ap_with_ties_matches_sklearn_on_scene(scene):
    # sklearn also takes tied scores as one threshold (one precision/recall point).
    table = M.per_concept_table(scene.truth, scene.tied, scene.decisions, scene.labels)
    expected = [average_precision_score(scene.truth[:, j], scene.tied[:, j]) for j in range(len(scene.labels))]
    np.testing.assert_allclose(table["ap"], expected, rtol=0, atol=1e-12)
    assert list(table["concept"]) == scene.labels
    assert (table["images"] == len(scene.truth)).all()
    np.testing.assert_array_equal(table["positives"], scene.truth.sum(0))
    np.testing.assert_array_equal(table["correct"], (scene.truth & scene.decisions).sum(0))
    result = M.imageclef_2012_measures(scene.truth, scene.tied, scene.decisions)
    assert result["MnAP"] == pytest.approx(average_precision_score(scene.truth, scene.tied, average="macro"))
    assert result["concepts_without_positives"] == 0


def interpolated_ap_from_sklearn(truth: np.ndarray, scores: np.ndarray) -> float:
    """11-point interpolated AP from sklearn's precision/recall points (one per distinct score)."""
    precision, recall, _ = precision_recall_curve(truth, scores)
    precision, recall = precision[:-1], recall[:-1]  # drop the appended (recall 0, precision 1) end point
    return float(np.mean([precision[recall >= level / 10 - 1e-12].max() for level in range(11)]))


def test_interpolated_ap_matches_precision_recall_points(scene, msrc):
    table = M.per_concept_table(scene.truth, scene.tied, scene.decisions, scene.labels)
    expected = [interpolated_ap_from_sklearn(scene.truth[:, j], scene.tied[:, j]) for j in range(len(scene.labels))]
    np.testing.assert_allclose(table["ap_interpolated"], expected, rtol=0, atol=1e-12)
    truth, scores, decisions, _ = msrc
    table = M.per_concept_table(truth, scores, decisions, MSRC_V2_CLASSES)
    for j in np.flatnonzero(truth.any(axis=0)):
        assert table["ap_interpolated"][j] == pytest.approx(interpolated_ap_from_sklearn(truth[:, j], scores[:, j]))


def test_2012_f1_variants_match_sklearn_with_the_page_naming(scene):
    result = M.imageclef_2012_measures(scene.truth, scene.tied, scene.decisions)
    truth, decided = scene.truth, scene.decisions
    # The page's "macro" is pooled counts: sklearn's micro.
    assert result["F1-photos-macro"] == pytest.approx(f1_score(truth, decided, average="micro"))
    assert result["F1-concepts-macro"] == result["F1-photos-macro"]
    # The page's "micro" is the F1 of the mean precision and mean recall.
    assert result["F1-photos-micro"] == pytest.approx(hmean(
        precision_score(truth, decided, average="samples", zero_division=0),
        recall_score(truth, decided, average="samples", zero_division=0)))
    assert result["F1-concepts-micro"] == pytest.approx(hmean(
        precision_score(truth, decided, average="macro", zero_division=0),
        recall_score(truth, decided, average="macro", zero_division=0)))
    assert result["F1-photos-instance"] == pytest.approx(f1_score(truth, decided, average="samples", zero_division=0))
    assert result["F1-concepts-instance"] == pytest.approx(f1_score(truth, decided, average="macro", zero_division=0))
    assert result["F1-photos-micro"] != pytest.approx(result["F1-photos-macro"])


def test_tie_groups_in_a_hand_worked_ranking():
    # Six images, one concept. Ranked by score:
    #   score  0.9 | 0.8 0.8 0.8 | 0.5 | 0.3
    #   truth   1  |  0   1   1  |  0  |  1      (4 positives)
    # Points, one per tie group (hits so far / images so far, recall):
    #   after 0.9: 1/1 = 1,    recall 1/4
    #   after 0.8: 3/4 = 0.75, recall 3/4  (the group gains 2 hits together)
    #   after 0.5: 3/5 = 0.6,  recall 3/4
    #   after 0.3: 4/6,        recall 1
    # Non-interpolated AP = 1 x 1/4 + 0.75 x 2/4 + 0.6 x 0 + 4/6 x 1/4 = 19/24.
    # (Ranking the tied negative first would give (1 + 2/3 + 3/4 + 4/6) / 4
    # instead, ranking it last (1 + 1 + 1 + 4/6) / 4: the group avoids both.)
    # Interpolated: levels 0, 0.1, 0.2 -> best precision at recall >= level = 1;
    # 0.3 ... 0.7 -> 0.75; 0.8, 0.9, 1 -> 4/6. Mean = (3 + 5 x 0.75 + 3 x 4/6) / 11.
    scores = np.array([[0.8], [0.3], [0.9], [0.8], [0.5], [0.8]])
    truth = np.array([[True], [True], [True], [False], [False], [True]])
    result = M.imageclef_2012_measures(truth, scores, scores > 0.6)
    assert result["MnAP"] == pytest.approx(19 / 24)
    assert result["MiAP"] == pytest.approx((3 + 5 * 0.75 + 3 * 4 / 6) / 11)
    table = M.per_concept_table(truth, scores, scores > 0.6, ["c"])
    assert table["ap"][0] == pytest.approx(19 / 24)
    # The same numbers as Dutta's mAP_L and, transposed, mAP_I.
    assert M.label_image_measures(truth, scores, truth)["mAP_L"] == pytest.approx(19 / 24)
    assert M.label_image_measures(truth.T, scores.T, truth.T)["mAP_I"] == pytest.approx(19 / 24)


def test_interpolation_uses_recall_levels_exactly():
    # 10 positives among 20 images, distinct scores: recall reaches 0.3
    # exactly at the 3rd hit (3/10 must count as >= 0.3 despite 3 * 0.1 > 0.3 in floats).
    truth = np.array([1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0], dtype=bool)[:, None]
    scores = np.linspace(1, 0.05, 20)[:, None]
    precision_at_hits = [k / (2 * k - 1) for k in range(1, 11)]  # k-th hit at rank 2k-1
    levels = [max(precision_at_hits[max(level, 1) - 1:]) for level in range(11)]
    result = M.imageclef_2012_measures(truth, scores, truth)
    assert result["MiAP"] == pytest.approx(np.mean(levels))
    assert result["MnAP"] == pytest.approx(np.mean(precision_at_hits))


def test_geometric_map_with_epsilon_and_concepts_without_positives():
    # Concept 0: its one positive ranks 4th of 4 distinct scores -> AP 1/4 (interpolated too).
    # Concept 1: perfect -> AP 1. Concept 2: no positive -> left out, counted.
    scores = np.array([[0.9, 0.9, 0.1], [0.8, 0.2, 0.2], [0.7, 0.1, 0.3], [0.6, 0.05, 0.4]])
    truth = np.array([[False, True, False], [False, False, False], [False, False, False], [True, False, False]])
    result = M.imageclef_2012_measures(truth, scores, truth)
    assert result["concepts_without_positives"] == 1
    assert result["MnAP"] == pytest.approx(0.625) and result["MiAP"] == pytest.approx(0.625)
    eps = M.DEFAULT_EPSILON
    assert result["GMnAP"] == pytest.approx(math.sqrt((0.25 + eps) * (1 + eps)) - eps, abs=1e-15)
    assert result["GMiAP"] == pytest.approx(0.5, abs=1e-9)
    coarse = M.imageclef_2012_measures(truth, scores, truth, epsilon=0.01)
    assert coarse["GMnAP"] == pytest.approx(math.exp((math.log(0.26) + math.log(1.01)) / 2) - 0.01)
    with pytest.raises(M.MeasureInputError, match="epsilon"):
        M.imageclef_2012_measures(truth, scores, truth, epsilon=-1)


# --- Dutta et al. -----------------------------------------------------------------

def test_label_and_image_measures_match_sklearn(scene):
    truth, decided = scene.truth, scene.decisions
    result = M.label_image_measures(truth, scene.tied, decided)
    p_l = precision_score(truth, decided, average="macro", zero_division=0)
    r_l = recall_score(truth, decided, average="macro", zero_division=0)
    p_i = precision_score(truth, decided, average="samples", zero_division=0)
    r_i = recall_score(truth, decided, average="samples", zero_division=0)
    assert (result["P_L"], result["R_L"]) == pytest.approx((p_l, r_l))
    assert result["F1_L"] == pytest.approx(hmean(p_l, r_l))
    assert result["F1_L"] != pytest.approx(f1_score(truth, decided, average="macro", zero_division=0))
    assert (result["P_I"], result["R_I"]) == pytest.approx((p_i, r_i))
    assert result["F1_I"] == pytest.approx(hmean(p_i, r_i))
    true_positives = multilabel_confusion_matrix(truth, decided)[:, 1, 1]
    assert result["N+"] == int((true_positives > 0).sum()) and isinstance(result["N+"], int)
    assert result["mAP_L"] == pytest.approx(average_precision_score(truth, scene.tied, average="macro"))
    # Per image, tied scores as one point too.
    assert result["mAP_I"] == pytest.approx(average_precision_score(truth, scene.tied, average="samples"))


def top_k_by_hand(scores: np.ndarray, k: int, listed: np.ndarray) -> np.ndarray:
    chosen = np.zeros(scores.shape, dtype=bool)
    for i, row in enumerate(scores):
        candidates = sorted(np.flatnonzero(listed[i]), key=lambda j: (-row[j], j))
        chosen[i, candidates[:k]] = True
    return chosen


def test_evaluate_uses_top_k_for_dutta_and_run_decisions_for_imageclef(scene):
    listed = np.ones(scene.truth.shape, dtype=bool)
    result = M.evaluate(scene.truth, scene.tied, scene.decisions, top_k=2)
    top2 = top_k_by_hand(scene.tied, 2, listed)
    np.testing.assert_array_equal(M.top_k_decisions(scene.tied, 2), top2)
    assert result["P_I"] == pytest.approx(precision_score(scene.truth, top2, average="samples", zero_division=0))
    assert result["R_L"] == pytest.approx(recall_score(scene.truth, top2, average="macro", zero_division=0))
    assert result["MF1-samples"] == pytest.approx(
        f1_score(scene.truth, scene.decisions, average="samples", zero_division=0))
    separate = {
        **M.imageclef_2013_measures(scene.truth, scene.tied, scene.decisions),
        **M.imageclef_2012_measures(scene.truth, scene.tied, scene.decisions),
        **M.label_image_measures(scene.truth, scene.tied, top2),
    }
    assert {key: result[key] for key in separate} == separate
    assert set(result) == set(separate) | {"images", "concepts"}
    assert (result["images"], result["concepts"]) == scene.truth.shape
    for key, value in result.items():
        assert type(value) is (int if key in ("N+", "images", "concepts", "concepts_without_positives") else float)
        if type(value) is float:
            assert 0.0 <= value <= 1.0, key


def test_top_k_breaks_ties_towards_the_lower_column():
    scores = np.array([
        [0.2, 0.9, 0.9, 0.9, 0.1],
        [0.2, 0.9, 0.9, 0.9, 0.1],
        [0.5, 0.5, 0.5, 0.5, 0.5],
        [0.1, 0.2, 0.3, 0.4, 0.5],
    ])
    listed = np.array([
        [True, True, True, True, True],
        [True, False, True, True, True],
        [False, False, False, True, False],  # fewer than k listed: all of them
        [True, True, True, True, True],
    ])
    expected = np.array([
        [False, True, True, False, False],
        [False, False, True, True, False],
        [False, False, False, True, False],
        [False, False, False, True, True],
    ])
    np.testing.assert_array_equal(M.top_k_decisions(scores, 2, listed), expected)
    np.testing.assert_array_equal(M.top_k_decisions(scores, 9), np.ones(scores.shape, dtype=bool))
    for bad in (0, -1, 1.5, True):
        with pytest.raises(M.MeasureInputError, match="k must be"):
            M.top_k_decisions(scores, bad)


# --- concept lists ------------------------------------------------------------------

def test_listed_masks_equal_the_listed_submatrix_by_hand(scene):
    rng = np.random.default_rng(4)
    rows = slice(0, 400)  # the by-hand loop below calls sklearn per image
    truth, smooth, decided = scene.truth[rows], scene.smooth[rows], scene.decisions[rows]
    listed = rng.random(truth.shape) < 0.7
    listed[:, 0] |= ~listed.any(axis=1)  # every image lists something
    # What lies outside the lists must not matter: NaN scores, flipped truth and decisions.
    outside_scores = np.where(listed, smooth, np.nan)
    result = M.evaluate(np.where(listed, truth, ~truth), outside_scores, np.where(listed, decided, ~decided),
                        listed=listed, seed=9)

    per_concept_f1, per_concept_ap = [], []
    for j in range(truth.shape[1]):
        rows = listed[:, j]
        per_concept_f1.append(f1_score(truth[rows, j], decided[rows, j], zero_division=0))
        per_concept_ap.append(average_precision_score(truth[rows, j], smooth[rows, j]))
    per_image_f1, per_image_ap, per_image_p = [], [], []
    for i in range(truth.shape[0]):
        columns = listed[i]
        t, d, s = truth[i, columns], decided[i, columns], smooth[i, columns]
        per_image_f1.append(f1_score(t, d, zero_division=0))
        per_image_p.append(precision_score(t, d, zero_division=0))
        per_image_ap.append(average_precision_score(t, s) if t.any() else 0.0)  # no truth: AP 0
    assert result["MF1-concepts"] == pytest.approx(np.mean(per_concept_f1))
    assert result["MF1-samples"] == pytest.approx(np.mean(per_image_f1))
    assert result["MAP-samples"] == pytest.approx(np.mean(per_image_ap))
    assert result["MnAP"] == pytest.approx(np.mean(per_concept_ap))
    assert result["P_I"] == pytest.approx(np.mean(per_image_p))
    with_truth = [ap for ap, t in zip(per_image_ap, (truth & listed).any(axis=1)) if t]
    assert result["mAP_I"] == pytest.approx(np.mean(with_truth))
    assert (result["images"], result["concepts"]) == truth.shape
    table = M.per_concept_table(truth, outside_scores, decided, scene.labels, listed=listed)
    np.testing.assert_array_equal(table["images"], listed.sum(axis=0))
    np.testing.assert_allclose(table["ap"], per_concept_ap, atol=1e-12)


def test_unlisted_images_and_concepts_are_not_evaluated():
    truth = np.array([[True, False, True], [False, True, False], [True, True, False]])
    scores = np.array([[0.9, 0.1, 0.8], [0.2, 0.7, 0.1], [0.6, 0.4, 0.3]])
    listed = np.array([[True, True, False], [False, False, False], [True, True, False]])
    result = M.evaluate(truth, scores, scores > 0.5, listed=listed)
    assert (result["images"], result["concepts"]) == (2, 2)
    # Rows 0 and 2 on columns 0 and 1 only.
    sub = np.ix_([0, 2], [0, 1])
    expected = M.evaluate(truth[sub], scores[sub], scores[sub] > 0.5)
    assert result == expected


# --- MSRC-v2 label sets -------------------------------------------------------------

def test_msrc_photo_labels_and_noisy_run_match_sklearn(msrc):
    truth, scores, decisions, image_ids = msrc
    assert truth.shape == (296, 23) and truth.any(axis=1).all()
    assert truth[image_ids.index("10_10_s")].nonzero()[0].tolist() == [MSRC_V2_CLASSES.index("flower")]
    result = M.evaluate(truth, scores, decisions, seed=2)
    assert result["MF1-samples"] == pytest.approx(f1_score(truth, decisions, average="samples", zero_division=0))
    assert result["MF1-concepts"] == pytest.approx(f1_score(truth, decisions, average="macro", zero_division=0))
    assert result["F1-photos-macro"] == pytest.approx(f1_score(truth, decisions, average="micro"))
    assert result["P_L"] == pytest.approx(precision_score(truth, decisions, average="macro", zero_division=0))
    assert result["R_L"] == pytest.approx(recall_score(truth, decisions, average="macro", zero_division=0))
    present = truth.any(axis=0)
    assert result["concepts_without_positives"] == int((~present).sum())
    assert result["MnAP"] == pytest.approx(average_precision_score(truth[:, present], scores[:, present]))
    assert result["mAP_L"] == result["MnAP"]
    assert result["mAP_I"] == pytest.approx(average_precision_score(truth, scores, average="samples"))


# --- region level ----------------------------------------------------------------------

# Part of the SAIAPR TC-12 hierarchy (Escalante et al. 2008). The trees path is stated in
# the text: object -> landscape-nature -> vegetation -> trees -> tree. The
# figures with the rest are not in the text; the other labels hang where
# Table 9's errors put them (depth = steps below the root "object").
SAIAPR_PART = {
    "landscape-nature": "object", "man-made": "object",
    "vegetation": "landscape-nature", "trees": "vegetation", "tree": "trees",
    "palm": "trees", "branch": "trees", "plant": "vegetation", "bush": "plant", "leaf": "plant",
    "sky": "landscape-nature", "sky-blue": "sky", "sky-light": "sky",
    "water": "landscape-nature", "waterfall": "water",
    "construction": "man-made", "road": "construction", "highway": "road",
}


def test_e_ontology_reproduces_the_worked_example_and_table_9():
    assert R.e_ontology(["trees"], ["tree"], SAIAPR_PART)[0] == pytest.approx(0.25)
    table_9 = [
        ("trees", "vegetation", 0.33), ("tree", "vegetation", 0.5), ("road", "highway", 0.25),
        ("vegetation", "leaf", 0.5), ("bush", "vegetation", 0.5), ("sky", "sky-blue", 0.33),
        ("sky-light", "sky", 0.33), ("plant", "vegetation", 0.33), ("palm", "vegetation", 0.5),
        ("water", "waterfall", 0.33), ("branch", "vegetation", 0.5),
    ]
    truth, predicted, printed = zip(*table_9)
    np.testing.assert_allclose(R.e_ontology(truth, predicted, SAIAPR_PART), printed, atol=0.005)
    # Unrelated (different branches, or siblings) = 1, equal = 0.
    np.testing.assert_array_equal(
        R.e_ontology(["tree", "palm", "sky", "tree"], ["road", "tree", "water", "tree"], SAIAPR_PART), [1, 1, 1, 0])
    # Labels outside the ontology only match themselves.
    np.testing.assert_array_equal(R.e_ontology(["cow", "cow", "tree"], ["cow", "horse", "cow"], SAIAPR_PART),
                                  [0, 1, 1])


def test_region_measures_average_both_errors():
    truth = ["trees", "road", "sky", "sky"]
    predicted = ["tree", "highway", "water", "sky"]
    np.testing.assert_array_equal(R.e_hard(truth, predicted), [1, 1, 1, 0])
    result = R.region_measures(truth, predicted, SAIAPR_PART)
    assert result == {"e_hard": 0.75, "e_ontology": pytest.approx((0.25 + 0.25 + 1 + 0) / 4), "regions": 4}
    assert R.region_measures(truth, predicted)["e_ontology"] == 0.75  # no ontology: as hard
    with pytest.raises(R.RegionMeasureError, match="cycle"):
        R.e_ontology(["a"], ["b"], {"a": "b", "b": "c", "c": "a"})
    with pytest.raises(R.RegionMeasureError, match="2 true labels but 1"):
        R.e_hard(["a", "b"], ["a"])
    with pytest.raises(R.RegionMeasureError, match="no regions"):
        R.region_measures([], [])


# --- bad input ----------------------------------------------------------------------------

def test_bad_matrices_are_refused_with_clear_errors():
    truth = np.zeros((3, 4), dtype=bool)
    scores = np.zeros((3, 4))
    with pytest.raises(M.MeasureInputError, match=r"scores has shape \(3, 5\) but truth has shape \(3, 4\)"):
        M.evaluate(truth, np.zeros((3, 5)), truth)
    with pytest.raises(M.MeasureInputError, match="truth must be boolean"):
        M.evaluate(truth.astype(float), scores, truth)
    with pytest.raises(M.MeasureInputError, match="decisions must be boolean"):
        M.evaluate(truth, scores, np.full((3, 4), 2))
    with pytest.raises(M.MeasureInputError, match="2-D"):
        M.evaluate(truth[0], scores[0], truth[0])
    with pytest.raises(M.MeasureInputError, match="listed must be boolean"):
        M.evaluate(truth, scores, truth, listed=np.ones((3, 4)))
    bad = scores.copy()
    bad[1, 2] = np.nan
    with pytest.raises(M.MeasureInputError, match=r"listed position \(row 1, column 2\)"):
        M.imageclef_2013_measures(truth, bad, truth)
    listed = np.ones((3, 4), dtype=bool)
    listed[1, 2] = False
    M.imageclef_2013_measures(truth, bad, truth, listed=listed)  # NaN outside the list is fine
    with pytest.raises(M.MeasureInputError, match="3 concept names for 4 columns"):
        M.per_concept_table(truth, scores, truth, ["a", "b", "c"])
    with pytest.raises(M.MeasureInputError, match="nothing to evaluate"):
        M.evaluate(np.zeros((0, 4), dtype=bool), np.zeros((0, 4)), np.zeros((0, 4), dtype=bool))
    with pytest.raises(M.MeasureInputError, match="seed must be"):
        M.evaluate(truth, scores, truth, seed=None)
    with pytest.raises(M.MeasureInputError, match="k must be"):
        M.evaluate(truth, scores, truth, top_k=0)
    # 0/1 integers are accepted as booleans.
    assert M.evaluate(truth.astype(int), scores, truth.astype(np.uint8))["images"] == 3
