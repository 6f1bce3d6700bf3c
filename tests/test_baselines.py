"""Blocked nearest neighbours and the baseline runs, on real data.

Scene (Mulan, real photos' colour/texture features and labels) for the
neighbour search and the label baselines; the shared Wikipedia articles as
real text for the ImageCLEF co-occurrence baseline. Independent
computations (brute force, scikit-learn, dense numpy) are the reference.
"""

from __future__ import annotations

import collections
import html
import re
from functools import lru_cache

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import scipy.sparse as sp
from sklearn.metrics import average_precision_score, precision_score, recall_score

from annobench.benchmark.annotation.baselines import (
    BaselineError,
    cooccurrence_matrix,
    cooccurrence_scores,
    keyword_columns,
    knn_label_transfer,
    random_scores,
    text_terms_matrix,
    trivial_run,
)
from annobench.benchmark.neighbours import search
from annobench.benchmark.neighbours.search import NeighbourError, nearest_in_tables, nearest_neighbours, vector_blocks
from annobench.core.tables import vector_column, write_table
from helpers import REAL, SCENE_FEATURES, read_scene, require_shared

ARTICLES = REAL / "pages" / "kiwix_wikipedia" / "A"


def scene() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    data = read_scene()
    return data.x_train, data.y_train, data.x_test, data.y_test


def brute_force(queries: np.ndarray, reference: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    squared = np.empty((len(queries), len(reference)))
    for start in range(0, len(queries), 32):
        diff = queries[start:start + 32, None, :].astype(np.float64) - reference[None, :, :].astype(np.float64)
        squared[start:start + 32] = (diff * diff).sum(axis=-1)
    order = np.argsort(squared, axis=1, kind="stable")[:, :k]
    return order, np.sqrt(np.take_along_axis(squared, order, axis=1)).astype(np.float32)


def chunks(values: np.ndarray, sizes: list[int]):
    bounds = np.cumsum([0] + sizes)
    assert bounds[-1] == len(values)
    return (values[a:b] for a, b in zip(bounds[:-1], bounds[1:]))


# --- nearest neighbours -----------------------------------------------------

def test_blocked_search_equals_brute_force_on_scene():
    x_train, _, x_test, _ = scene()
    # Duplicates of training rows at the end (some across block boundaries):
    # equal distances must come out in index order.
    reference = np.concatenate([x_train, x_train[:60]])
    queries = np.concatenate([x_test[::3], x_train[:10]])
    expected_index, expected_distance = brute_force(queries, reference, 12)
    for sizes, query_block, reference_block in (
        ([len(reference)], 1024, 4096),
        ([100, 1, 499, 611, 60], 77, 64),
        ([300, 300, 300, 371], 400, 13),
        ([1271], 1, 1271),
    ):
        index, distance = nearest_neighbours(queries, chunks(reference, sizes), 12, query_block=query_block,
                                             reference_block=reference_block)
        assert index.dtype == np.int64 and distance.dtype == np.float32
        np.testing.assert_array_equal(index, expected_index)
        np.testing.assert_array_equal(distance, expected_distance)
    # the training rows queried find themselves and their copy, lower index first
    assert (index[-10:, 0] == np.arange(10)).all() and (index[-10:, 1] == len(x_train) + np.arange(10)).all()
    assert (distance[-10:, :2] == 0).all()


def test_duplicate_rows_tie_in_index_order():
    x_train, _, _, _ = scene()
    row = x_train[5]
    reference = np.stack([x_train[0], row, x_train[1], row, row, x_train[2], row])
    index, distance = nearest_neighbours(row[None, :], chunks(reference, [2, 3, 2]), 5, reference_block=2)
    assert index[0, :4].tolist() == [1, 3, 4, 6]
    assert (distance[0, :4] == 0).all() and distance[0, 4] > 0


def test_rows_beyond_the_margin_are_still_found():
    # 40 copies of one row among others: the k + margin approximate
    # candidates of a slice cannot hold them all, the error-bound sweep must
    # bring in the lower-indexed copies.
    x_train, _, x_test, _ = scene()
    reference = x_train[:400].copy()
    reference[5::9][:40] = x_test[0]
    queries = np.concatenate([x_test[:1], x_test[0:1] + 1e-4, x_test[1:30]])
    expected_index, expected_distance = brute_force(queries, reference, 10)
    for margin in (0, 3):
        index, distance = nearest_neighbours(queries, chunks(reference, [150, 250]), 10, margin=margin,
                                             reference_block=128)
        np.testing.assert_array_equal(index, expected_index)
        np.testing.assert_array_equal(distance, expected_distance)
    assert index[0].tolist() == list(range(5, 95, 9))


def test_too_few_reference_rows_or_wrong_dimension_is_refused():
    x_train, _, x_test, _ = scene()
    with pytest.raises(NeighbourError, match="fewer than k"):
        nearest_neighbours(x_test[:3], [x_train[:4]], 5)
    with pytest.raises(NeighbourError, match="columns"):
        nearest_neighbours(x_test[:3], [x_train[:10, :100]], 5)
    with pytest.raises(NeighbourError, match="NaN"):
        nearest_neighbours(np.full((1, SCENE_FEATURES), np.nan), [x_train], 5)


def test_vectors_too_long_for_a_float32_product_are_refused():
    x_train, _, x_test, _ = scene()
    huge = np.full((1, SCENE_FEATURES), 3e18, dtype=np.float32)  # squares overflow float32 once summed
    with pytest.raises(NeighbourError, match="queries holds a vector too long"):
        nearest_neighbours(huge, [x_train], 5)
    with pytest.raises(NeighbourError, match="reference block 1 holds a vector too long"):
        nearest_neighbours(x_test[:3], [x_train, huge], 5)


def test_entry_limits_admit_every_row_within_the_distance():
    # Far from the origin (a large common part, as in histograms) the float32 product errs most
    # against the distances; every row whose exact squared distance is at most T must still
    # have an approximate value within the limit for T, or the search could drop it.
    x_train, _, x_test, _ = scene()
    rng = np.random.default_rng(7)
    for shift in (0.0, 30.0, 1e3):
        queries = (x_test[:200] + shift).astype(np.float32)
        reference = (x_train[:600] + shift + rng.normal(0, 1e-3, (600, SCENE_FEATURES))).astype(np.float32)
        prepared = search._prepared_queries(queries)
        part = search._prepared_slice(reference, 0, "reference")
        approx = search.approximate_distances(prepared, part)
        exact = ((queries[:, None, :].astype(np.float64) - reference[None, :, :]) ** 2).sum(axis=-1)
        for within in (exact, np.nextafter(exact, 0)):  # rows exactly at T, and just beyond it
            limits = search._entry_limits(prepared, part, within)  # one limit per (query, row)
            assert limits.dtype == np.float32 and (approx <= limits).all()
        # and the limit is the bound's width above the row, not arbitrarily loose
        slack = limits.astype(np.float64) - (exact - prepared.squared_norms[:, None])
        bound = search.product_error_bound(SCENE_FEATURES, np.sqrt(prepared.squared_norms), part.max_norm)
        assert (slack <= 1.01 * bound[:, None] + 1e-6 * np.abs(exact)).all()


def test_vector_blocks_read_back_what_tables_wrote(tmp_path):
    x_train, _, x_test, _ = scene()
    paths = []
    for shard, part in enumerate((x_train[:700], x_train[700:])):
        ids = [f"img{shard}_{i:04d}" for i in range(len(part))]
        table = pa.Table.from_arrays([pa.array(ids), vector_column(part)], names=["image_id", "vector"])
        path = tmp_path / f"shard-{shard:05d}.parquet"
        write_table(table, path, "features_test", params={"feature": "scene"})
        paths.append(str(path))
    blocks = list(vector_blocks(paths, batch_rows=256))
    assert [len(ids) for ids, _ in blocks] == [256, 256, 188, 256, 255]
    np.testing.assert_array_equal(np.concatenate([block for _, block in blocks]), x_train)
    assert all(block.dtype == np.float32 and block.shape[1] == SCENE_FEATURES for _, block in blocks)

    wanted = {"img0_0003", "img1_0000", "img1_0510", "absent"}
    picked = list(vector_blocks(paths, wanted, batch_rows=256))
    assert [ids for ids, _ in picked] == [["img0_0003"], ["img1_0000"], ["img1_0510"]]
    np.testing.assert_array_equal(np.concatenate([b for _, b in picked]), x_train[[3, 700, 1210]])

    plain = pa.Table.from_pydict({"image_id": ["a"], "vector": [[1.0, 2.0]]})
    write_table(plain, tmp_path / "plain.parquet", "features_test", params={})
    with pytest.raises(NeighbourError, match="plain.parquet.*fixed_size_list"):
        list(vector_blocks([str(tmp_path / "plain.parquet")]))

    ids, index, distance = nearest_in_tables(x_test[:50], paths, 4, reference_block=300)
    expected_index, expected_distance = brute_force(x_test[:50], x_train, 4)
    assert len(ids) == len(x_train) and ids[700] == "img1_0000"
    np.testing.assert_array_equal(index, expected_index)
    np.testing.assert_array_equal(distance, expected_distance)


# --- label baselines on scene ----------------------------------------------

def mean_sample_ap(truth: np.ndarray, scores: np.ndarray) -> float:
    """Mean over images of the AP of ranking the image's labels by score."""
    return float(average_precision_score(truth, scores, average="samples"))


def label_f1(truth: np.ndarray, decisions: np.ndarray) -> float:
    """Dutta et al.'s F1_L: harmonic mean of the label-averaged P and R."""
    p = precision_score(truth, decisions, average="macro", zero_division=0)
    r = recall_score(truth, decisions, average="macro", zero_division=0)
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def test_knn_label_transfer_beats_random_and_trivial_runs_on_scene():
    x_train, y_train, x_test, y_test = scene()
    index, distance = nearest_neighbours(x_test, [x_train], 10)
    scores, decisions = knn_label_transfer(index, distance, y_train)
    assert scores.shape == y_test.shape and decisions.any(axis=1).all()
    knn_ap, knn_f1 = mean_sample_ap(y_test, scores), label_f1(y_test, decisions)
    runs = {"random_scores": [random_scores(len(y_test), 6, seed=3, k=k) for k in (1, 2, 3)]}
    for kind in ("most_frequent", "rarest", "random"):
        runs[kind] = [trivial_run(kind, y_train, len(y_test), k, seed=3) for k in (1, 2, 3)]
    for name, by_k in runs.items():
        # the scores of a run do not depend on k (checked), only its decisions
        assert all(np.array_equal(by_k[0][0], s) for s, _ in by_k), name
        assert knn_ap > mean_sample_ap(y_test, by_k[0][0]) + 0.2, name
        for k, (_, d) in enumerate(by_k, start=1):
            assert knn_f1 > label_f1(y_test, d) + 0.3, (name, k)
    weighted, _ = knn_label_transfer(index, distance, y_train, weighted=True)
    assert mean_sample_ap(y_test, weighted) > mean_sample_ap(y_test, runs["random_scores"][0][0]) + 0.2


def test_knn_shares_and_decision_rule_by_hand():
    truth = np.array([[1, 0, 0, 1], [1, 1, 0, 0], [0, 1, 0, 0], [1, 0, 1, 0]], dtype=bool)
    index = np.array([[0, 1, 3], [2, 3, 0], [1, 2, 2]])
    scores, decisions = knn_label_transfer(index, np.ones(index.shape), truth)
    np.testing.assert_allclose(scores, [[1, 1 / 3, 1 / 3, 1 / 3], [2 / 3, 1 / 3, 1 / 3, 1 / 3], [1 / 3, 1, 0, 0]])
    # row 1: concept 0 is the majority; row 0: 0 only; row 2: concept 1
    assert decisions.tolist() == [[True, False, False, False], [True, False, False, False],
                                  [False, True, False, False]]
    # no majority: the best-scoring concepts, all of them when tied
    scores, decisions = knn_label_transfer(np.array([[0, 1, 2]]), np.ones((1, 3)), np.eye(4, dtype=bool))
    assert decisions.tolist() == [[True, True, True, False]]
    listed = np.array([[False, True, True, True]])
    scores, decisions = knn_label_transfer(np.array([[0, 1, 3]]), np.ones((1, 3)), truth, listed=listed)
    assert scores[0, 0] == 0 and decisions.tolist() == [[False, True, True, True]]
    with pytest.raises(BaselineError, match="neighbour indices"):
        knn_label_transfer(np.array([[0, 9]]), np.ones((1, 2)), truth)


def test_trivial_runs_choose_the_right_labels_on_scene():
    _, y_train, _, y_test = scene()
    frequency = y_train.sum(axis=0)
    by_frequency = sorted(range(6), key=lambda c: (-frequency[c], c))
    for kind, expected_order in (("most_frequent", by_frequency),
                                 ("rarest", sorted(range(6), key=lambda c: (frequency[c], c)))):
        for k in (1, 2, 3):
            scores, decisions = trivial_run(kind, y_train, len(y_test), k, seed=0)
            assert (decisions.sum(axis=1) == k).all()
            assert (np.flatnonzero(decisions[0]) == sorted(expected_order[:k])).all()
            assert (decisions == decisions[0]).all() and (scores == scores[0]).all()
            assert (scores >= 0).all() and (scores <= 1).all()
            assert np.argsort(-scores[0], kind="stable").tolist() == expected_order
    # scene's training frequencies are 227 165 197 196 277 224
    assert by_frequency[:2] == [4, 0]


def test_trivial_runs_break_frequency_ties_by_column_and_follow_lists():
    truth = np.array([[1, 1, 1, 0, 1], [1, 1, 0, 0, 0], [0, 1, 1, 1, 1]], dtype=bool)  # freq 2 3 2 1 2
    most = trivial_run("most_frequent", truth, 2, 3, seed=0)[1]
    rare = trivial_run("rarest", truth, 2, 2, seed=0)[1]
    assert np.flatnonzero(most[0]).tolist() == [0, 1, 2] and np.flatnonzero(rare[0]).tolist() == [0, 3]
    listed = np.array([[False, False, True, True, True], [True, True, True, True, True]])
    scores, decisions = trivial_run("most_frequent", truth, 2, 2, seed=0, listed=listed)
    assert np.flatnonzero(decisions[0]).tolist() == [2, 4] and np.flatnonzero(decisions[1]).tolist() == [0, 1]
    assert (scores[~listed] == 0).all()
    with pytest.raises(BaselineError, match="unknown trivial run"):
        trivial_run("frequent", truth, 2, 2, seed=0)


def test_random_runs_depend_only_on_the_seed():
    _, y_train, _, y_test = scene()
    first = trivial_run("random", y_train, len(y_test), 3, seed=11)
    again = trivial_run("random", y_train, len(y_test), 3, seed=11)
    other = trivial_run("random", y_train, len(y_test), 3, seed=12)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not np.array_equal(first[0], other[0]) and not np.array_equal(first[1], other[1])
    assert (first[1].sum(axis=1) == 3).all()
    assert len({tuple(row) for row in first[1]}) > 10  # different labels per image, as in Table 7
    scores, decisions = random_scores(50, 20, seed=4, k=5)
    assert ((scores >= 0) & (scores < 1)).all() and (decisions.sum(axis=1) == 5).all()
    assert (scores[decisions].reshape(50, 5).min(axis=1) >= np.where(decisions, -1, scores).max(axis=1)).all()
    listed = np.random.default_rng(0).random((50, 20)) < 0.2
    listed[0] = False
    listed[0, :3] = True
    scores_l, decisions_l = random_scores(50, 20, seed=4, listed=listed, k=5)
    assert np.array_equal(scores_l[listed], scores[listed]) and (scores_l[~listed] == 0).all()
    assert not (decisions_l & ~listed).any()
    assert (decisions_l.sum(axis=1) == np.minimum(5, listed.sum(axis=1))).all()


# --- the co-occurrence baseline on real text --------------------------------

CONCEPTS = {
    "nanny": ["nanny", "nannies"], "spy": ["spy", "spies"], "organ": ["organ"],
    "church": ["church", "churches"], "beatles": ["Beatles"], "trumpet": ["trumpet", "trumpets"],
    "saxophone": ["saxophone", "sax"], "television": ["television", "tv"], "film": ["film", "films", "movie"],
    "orchestra": ["orchestra"],
}
WORD = re.compile(r"[^\W_]+")


@lru_cache(maxsize=None)
def article_terms() -> pd.DataFrame:
    """One 'image' per real Wikipedia article: its lower-cased words, counts summing to 1."""
    rows = []
    for path in sorted(require_shared(ARTICLES).glob("*.html")):
        text = path.read_text(encoding="utf-8", errors="replace")
        text = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", text)
        counts = collections.Counter(WORD.findall(html.unescape(re.sub(r"(?s)<[^>]+>", " ", text)).lower()))
        total = sum(counts.values())
        for rank, (term, count) in enumerate(counts.most_common(), start=1):
            rows.append((path.stem, term, count / total, rank))
    return pd.DataFrame(rows, columns=["image_id", "term", "score", "rank"])


def articles_setup():
    terms = article_terms()
    ids = list(dict.fromkeys(terms["image_id"]))
    matrix, vocabulary = text_terms_matrix(terms, ids)
    columns = keyword_columns(list(CONCEPTS.values()), vocabulary)
    return terms, ids, matrix, vocabulary, columns


def test_text_matrix_keeps_english_words_only():
    terms, ids, matrix, vocabulary, _ = articles_setup()
    assert len(ids) == 64 and matrix.shape == (64, len(vocabulary)) and sp.isspmatrix_csr(matrix)
    assert all(re.fullmatch("[a-z]+", w) for w in vocabulary) and vocabulary == sorted(vocabulary)
    dropped = set(terms["term"]) - set(vocabulary)
    assert {"tormé", "1962", "u2", "няня"} <= dropped  # accents, digits, mixed, other scripts
    english = terms[terms["term"].str.fullmatch("[a-z]+")]
    np.testing.assert_allclose(np.asarray(matrix.sum(axis=1)).ravel(),
                               english.groupby("image_id")["score"].sum().reindex(ids).to_numpy())
    one = ids.index("The_Nanny")
    nanny_score = terms[(terms.image_id == "The_Nanny") & (terms.term == "nanny")]["score"].item()
    assert matrix[one, vocabulary.index("nanny")] == pytest.approx(nanny_score)
    # with a word list, only its words (and only a-z ones) remain
    small, small_vocabulary = text_terms_matrix(terms, ids, english_words={"nanny", "piano", "tormé", "zzz"})
    assert small_vocabulary == ["nanny", "piano"] and small.shape == (64, 2)
    # rows follow the given ids; unknown ids give empty rows
    two, _ = text_terms_matrix(terms, ["nobody", "The_Nanny"], vocabulary=vocabulary)
    assert two[0].nnz == 0 and (two[1] != matrix[one]).nnz == 0
    with pytest.raises(BaselineError, match="repeat"):
        text_terms_matrix(terms, ["The_Nanny", "The_Nanny"])


def dense_reference_scores(matrix, columns, neighbours):
    """The documented definition, recomputed densely."""
    dense = matrix.toarray()
    occurs = np.array([[dense[i, cols].max(initial=0) > 0 for cols in columns] for i in range(len(dense))])
    counts = occurs.T.astype(float) @ dense
    by_concept = counts / np.where(counts.sum(1, keepdims=True) > 0, counts.sum(1, keepdims=True), 1)
    by_word = by_concept / np.where(by_concept.sum(0) > 0, by_concept.sum(0), 1)
    raw = np.array([by_word @ dense[row].sum(axis=0) for row in neighbours])
    return raw / raw.sum(axis=1, keepdims=True)


def test_cooccurrence_baseline_on_wikipedia_articles():
    terms, ids, matrix, vocabulary, columns = articles_setup()
    names = list(CONCEPTS)
    cooc = cooccurrence_matrix(matrix, columns)
    assert sp.isspmatrix_csr(cooc) and cooc.shape == (len(names), len(vocabulary))
    mentioning = {
        name: [i for i in range(len(ids)) if any(matrix[i, c] > 0 for c in columns[n])]
        for n, name in enumerate(names)
    }
    assert len(mentioning["nanny"]) == 2 and len(mentioning["film"]) > 20
    # a test image whose neighbours are the articles mentioning X scores X highest
    for n, name in enumerate(names):
        neighbours = np.array([mentioning[name]])
        scores, decisions = cooccurrence_scores(neighbours, matrix, cooc)
        assert int(np.argmax(scores[0])) == n, name
        assert decisions[0, n], name
    # fixed-k neighbour sets, as the baseline uses (k = 32 in ImageCLEF)
    rng = np.random.default_rng(5)
    neighbours = np.stack([rng.choice(len(ids), 32, replace=False) for _ in range(20)])
    scores, decisions = cooccurrence_scores(neighbours, matrix, cooc)
    np.testing.assert_allclose(scores, dense_reference_scores(matrix, columns, neighbours), rtol=1e-10)
    np.testing.assert_allclose(scores.sum(axis=1), 1.0)
    for row in range(len(scores)):
        assert np.array_equal(decisions[row], scores[row] > scores[row].mean() + scores[row].std())
    again = cooccurrence_scores(neighbours, matrix, cooccurrence_matrix(matrix, columns))
    assert np.array_equal(again[0], scores) and np.array_equal(again[1], decisions)


def test_cooccurrence_baseline_with_concept_lists():
    _, ids, matrix, _, columns = articles_setup()
    cooc = cooccurrence_matrix(matrix, columns)
    neighbours = np.arange(32 * 4).reshape(4, 32) % len(ids)
    listed = np.ones((4, len(CONCEPTS)), dtype=bool)
    listed[0, ::2] = False
    listed[1, :] = False
    listed[2, :] = False
    listed[2, 3] = True
    scores, decisions = cooccurrence_scores(neighbours, matrix, cooc, listed=listed)
    assert (scores[~listed] == 0).all() and not (decisions & ~listed).any()
    np.testing.assert_allclose(scores[[0, 2, 3]].sum(axis=1), 1.0)
    assert not decisions[1].any() and not decisions[2].any()  # one listed concept: never above mean + std
    values = scores[0][listed[0]]
    assert np.array_equal(decisions[0][listed[0]], values > values.mean() + values.std())
    # an image whose neighbours' text mentions nothing the concepts co-occur with scores all zero
    empty = sp.csr_matrix(matrix.shape)
    zero_scores, zero_decisions = cooccurrence_scores(neighbours, empty, cooc)
    assert not zero_scores.any() and not zero_decisions.any()


def test_random_baseline_decides_one_to_k_plus_one_concepts_like_the_organisers_run():
    scores, decisions = random_scores(3000, 100, seed=5, k=5, varying=True)
    counts = decisions.sum(axis=1)
    assert set(counts) == {1, 2, 3, 4, 5, 6}
    assert np.bincount(counts)[1:].min() > 400  # evenly spread
    # The decided concepts are the best-scoring ones of each image.
    decided_min = np.where(decisions, scores, np.inf).min(axis=1)
    undecided_max = np.where(decisions, -np.inf, scores).max(axis=1)
    assert (decided_min > undecided_max).all()
    again, _ = random_scores(3000, 100, seed=5, k=5)
    assert np.array_equal(scores, again)  # the same scores, whichever decision rule
