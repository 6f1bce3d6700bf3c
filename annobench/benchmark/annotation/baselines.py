"""Baseline runs for the benchmark (Villegas and Paredes 2014, section 2.4; Dutta et al. 2018,
section 4.1, Table 7), as (scores, decisions) matrices.

Rows are test images, columns the concepts of the vocabulary in its order
(the shared data model): scores float64 in [0, 1], decisions bool. `listed`
(bool, same shape, or None for "every concept") restricts each image to its
own concept list as in ImageCLEF 2013-2016; outside an image's list every
baseline writes score 0 and decision False.

- random_scores: the random baseline of the ImageCLEF toolkit (Villegas and
  Paredes 2014, section 2.4).
- trivial_run: the label assignments of Dutta et al. 2018 (section 4.1, Table 7):
  the k most frequent, the k rarest or k random labels for every image.
- knn_label_transfer: the neighbours' labels voted (a reference point that
  uses the training ground truth; not from the papers).
- cooccurrence_*: the ImageCLEF co-occurrence baseline (Villegas and
  Paredes 2014, section 2.4): visual neighbours' text mapped to concepts
  through a concept-word co-occurrence matrix, decided by mean + standard
  deviation.

Every random choice takes its seed as an argument; the same inputs and seed
give identical arrays.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import scipy.sparse as sp

from annobench.benchmark.annotation.measure import top_k_decisions
from annobench.core.errors import AnnobenchError

TRIVIAL_KINDS = ("most_frequent", "rarest", "random")
ENGLISH_TERM = re.compile(r"[a-z]+")
# Test images scored at once by the co-occurrence baseline (bounds memory).
COOCCURRENCE_BATCH = 1024
# Words of the co-occurrence matrix made dense at once when scoring.
VOCABULARY_SLICE = 4096


class BaselineError(AnnobenchError):
    """Inputs a baseline cannot use (what and where in the message)."""


# --- shared helpers -------------------------------------------------------

def _check_listed(listed: np.ndarray | None, shape: tuple[int, int]) -> np.ndarray:
    if listed is None:
        return np.ones(shape, dtype=bool)
    listed = np.asarray(listed)
    if listed.dtype != bool or listed.shape != shape:
        raise BaselineError(f"listed must be a bool array of shape {shape}, got {listed.dtype} {listed.shape}")
    return listed


# --- random and trivial runs ----------------------------------------------

def random_scores(n_images: int, n_concepts: int, seed: int, listed: np.ndarray | None = None,
                  k: int = 5, varying: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The random baseline (Villegas and Paredes 2014, section 2.4).

    Scores: independent uniform values in [0, 1), drawn in one call of
    default_rng(seed).random((n_images, n_concepts)) for every cell, listed
    or not, so they depend only on the seed and the shape; unlisted cells are
    then set to 0. Decisions: the k highest-scoring listed concepts of each
    image (a uniformly random k-subset of its list); with `varying`, the n
    highest, n drawn uniformly from 1..k+1 for each image after the scores,
    as the organisers' 2014 random run decides (1 to 6 concepts, evenly
    spread, in the shared runs/imageclef2014_devel).
    """
    listed = _check_listed(listed, (n_images, n_concepts))
    rng = np.random.default_rng(seed)
    scores = rng.random((n_images, n_concepts))
    scores[~listed] = 0.0
    if not varying:
        return scores, top_k_decisions(scores, k, listed)
    counts = rng.integers(1, k + 2, size=n_images)
    ranks = np.argsort(np.argsort(-np.where(listed, scores, -1.0), axis=1, kind="stable"), axis=1, kind="stable")
    return scores, (ranks < counts[:, None]) & listed


def label_frequencies(train_truth: np.ndarray) -> np.ndarray:
    """Training images per concept (int64)."""
    train_truth = np.asarray(train_truth)
    if train_truth.ndim != 2 or train_truth.dtype != bool:
        raise BaselineError(f"train_truth must be a 2-D bool array, got {train_truth.dtype} {train_truth.shape}")
    return train_truth.sum(axis=0, dtype=np.int64)


def trivial_run(kind: str, train_truth: np.ndarray, n_test: int, k: int, seed: int,
                listed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The trivial assignments of Dutta et al. 2018 (section 4.1, Table 7).

    - "most_frequent": every test image gets the k labels most frequent in
      training; "rarest": the k least frequent (a label never seen in
      training counts as frequency 0, the rarest). Ties in frequency go to
      the lower column index. Scores rank the labels in that order: the
      label at position p (0 = first chosen) scores 1 - p / n_concepts, the
      same for every image, so the chosen k rank strictly first.
    - "random": k labels drawn for each image separately, as in the paper;
      this is random_scores(n_test, n_concepts, seed, listed, k) (the top k
      of independent uniform scores is a uniform random k-subset).

    With `listed`, each image gets the first k of its own listed labels in
    that order. Decisions: exactly min(k, listed labels) per image. The seed
    is only used by "random".
    """
    if kind not in TRIVIAL_KINDS:
        raise BaselineError(f"unknown trivial run {kind!r}; expected one of {', '.join(TRIVIAL_KINDS)}")
    frequency = label_frequencies(train_truth)
    n_concepts = len(frequency)
    if kind == "random":
        return random_scores(n_test, n_concepts, seed, listed, k)
    columns = np.arange(n_concepts)
    key = -frequency if kind == "most_frequent" else frequency
    order = np.lexsort((columns, key))
    position = np.empty(n_concepts, dtype=np.int64)
    position[order] = columns
    listed = _check_listed(listed, (n_test, n_concepts))
    scores = np.where(listed, 1.0 - position / n_concepts, 0.0)
    return scores, top_k_decisions(scores, k, listed)


# --- k-NN label transfer ----------------------------------------------------

def knn_label_transfer(neighbour_indices: np.ndarray, neighbour_distances: np.ndarray,
                       train_truth: np.ndarray, weighted: bool = False,
                       listed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Vote of the neighbours' ground truth.

    Score of a concept = the share of the k neighbours that have it (default);
    with weighted=True each neighbour weighs 1 / (distance + delta),
    delta = 1e-6 x the row's mean distance + 1e-12 (keeps a zero distance
    finite and the weights scale-free), weights normalised to sum 1.
    Decisions: every listed concept with score >= 0.5 (a majority of the
    neighbours' weight), and in any case the listed concept(s) with the
    image's highest positive score (all of them when tied), so an image whose
    neighbours disagree still gets its best guess.
    """
    neighbour_indices = np.asarray(neighbour_indices)
    distances = np.asarray(neighbour_distances, dtype=np.float64)
    frequency = label_frequencies(train_truth)  # validates train_truth
    if neighbour_indices.ndim != 2 or distances.shape != neighbour_indices.shape:
        raise BaselineError(
            f"neighbour indices {neighbour_indices.shape} and distances {distances.shape} must be the same (n, k)")
    _check_indices(neighbour_indices, len(train_truth))
    n_images, k = neighbour_indices.shape
    if not np.isfinite(distances).all() or (distances < 0).any():
        raise BaselineError("neighbour distances must be finite and non-negative")
    scores = np.zeros((n_images, len(frequency)))
    if weighted:
        delta = 1e-6 * distances.mean(axis=1, keepdims=True) + 1e-12
        weights = 1.0 / (distances + delta)
        weights /= weights.sum(axis=1, keepdims=True)
        for j in range(k):  # (n, k, concepts) never exists at once
            scores += weights[:, j:j + 1] * train_truth[neighbour_indices[:, j]]
        np.clip(scores, 0.0, 1.0, out=scores)
    else:
        for j in range(k):  # counts first, so a share of exactly half is exactly 0.5
            scores += train_truth[neighbour_indices[:, j]]
        scores /= k
    listed = _check_listed(listed, scores.shape)
    scores[~listed] = 0.0
    best = scores.max(axis=1, keepdims=True)
    decisions = ((scores >= 0.5) | ((scores == best) & (best > 0))) & listed
    return scores, decisions


def _check_indices(indices: np.ndarray, n_train: int) -> None:
    if indices.dtype.kind not in "iu":
        raise BaselineError(f"neighbour indices must be integers, got {indices.dtype}")
    if indices.size and (indices.min() < 0 or indices.max() >= n_train):
        raise BaselineError(
            f"neighbour indices must lie in [0, {n_train}) (training images), got {indices.min()}..{indices.max()}")


# --- the ImageCLEF co-occurrence baseline -----------------------------------

def is_english_term(term: str, english_words: set[str] | frozenset[str] | None = None) -> bool:
    """The "English words only" filter of Villegas and Paredes 2014, section 2.4, approximated.

    A term is kept when it is made of the ASCII letters a-z only (our text
    features are lower-cased, text.lowercase), and, when a word list is
    given, when it is in that list. Digits, accented letters, other scripts and mixed
    tokens are dropped; without a list an English-looking non-word ("zxq")
    is kept.
    """
    return ENGLISH_TERM.fullmatch(term) is not None and (english_words is None or term in english_words)


def text_terms_matrix(text_terms: pd.DataFrame, image_ids: list[str],
                      english_words: set[str] | frozenset[str] | None = None,
                      vocabulary: list[str] | None = None) -> tuple[sp.csr_matrix, list[str]]:
    """Images x words CSR matrix of text-feature scores, and its vocabulary.

    text_terms: rows (image_id, term, score) as in tables/text_terms.
    Row i is image_ids[i] (ids must be unique; images without terms give
    empty rows; terms of other images are ignored). Only English terms
    (is_english_term) are kept, with their stored scores (not renormalised:
    an image whose text is mostly non-English keeps a small English mass).
    Columns: `vocabulary` if given (other terms dropped), else the sorted
    kept terms of these images. Repeated (image, term) rows add up.
    """
    for name in ("image_id", "term", "score"):
        if name not in text_terms.columns:
            raise BaselineError(f"text_terms has no column {name!r} (columns: {list(text_terms.columns)})")
    image_index = pd.Index(image_ids)
    if not image_index.is_unique:
        raise BaselineError("image_ids repeat an id; each image must have one row")
    rows = image_index.get_indexer(text_terms["image_id"])
    terms = text_terms["term"].astype(str)
    unique_terms = pd.unique(terms)
    english = np.array([is_english_term(t, english_words) for t in unique_terms], dtype=bool)
    kept_terms = unique_terms[english]
    keep = (rows >= 0) & terms.isin(kept_terms).to_numpy()
    if vocabulary is None:
        vocabulary = sorted(set(terms[keep]))
    columns = pd.Index(vocabulary).get_indexer(terms[keep])
    present = columns >= 0
    scores = text_terms["score"].to_numpy(dtype=np.float64)[keep][present]
    if not np.isfinite(scores).all() or (scores < 0).any():
        raise BaselineError("text_terms scores must be finite and non-negative")
    matrix = sp.csr_matrix((scores, (rows[keep][present], columns[present])),
                           shape=(len(image_ids), len(vocabulary)))
    matrix.sum_duplicates()
    return matrix, list(vocabulary)


def keyword_columns(concept_keywords: list[list[str]], vocabulary: list[str]) -> list[list[int]]:
    """For each concept, the vocabulary columns of its keywords (sorted, unique).

    Keywords are lower-cased; a keyword outside the vocabulary (including any
    with characters other than a-z, which never reach it) is ignored.
    """
    index = {word: column for column, word in enumerate(vocabulary)}
    return [sorted({index[w.lower()] for w in words if w.lower() in index}) for words in concept_keywords]


def cooccurrence_matrix(train_terms: sp.csr_matrix, concept_word_columns: list[list[int]]) -> sp.csr_matrix:
    """Concept x word co-occurrence on the training text, normalised to P(c | w).

    A concept occurs in a training image's text when any of its keyword
    columns has a positive score there. Counts: C[c, w] = sum over the
    training images where c occurs of the image's score for w. Then:
    1. each concept row is divided by its sum: row c becomes the word
       distribution of the text around images that mention c, P(w | c), so a
       concept mentioned on many pages does not outweigh the others;
    2. each word column is divided by its sum: P(c | w) with equal concept
       priors (Bayes), so a word spreads one unit of vote over the concepts
       it co-occurs with.
    Without step 2, words common to every text ("the", "and": our text
    features keep stop words by default) carry most of each row and the
    scores barely depend on the neighbours: on the 64 real Wikipedia
    articles of the shared data, with ten concepts, taking as neighbours the
    articles that mention a concept ranks it first for 3 of the 10 concepts
    with step 1 alone and for all 10 with both (tests/test_baselines.py).
    Concepts never mentioned and words never co-occurring keep zero rows /
    columns.
    """
    train_terms = sp.csr_matrix(train_terms)
    n_words = train_terms.shape[1]
    keyword_matrix = _keyword_indicator(concept_word_columns, n_words)
    mentions = (train_terms > 0).astype(np.float64) @ keyword_matrix  # images x concepts
    occurs = (mentions > 0).astype(np.float64)
    counts = sp.csr_matrix(occurs.T @ train_terms)
    by_concept = sp.diags(_inverse(np.asarray(counts.sum(axis=1)).ravel())) @ counts
    return sp.csr_matrix(by_concept @ sp.diags(_inverse(np.asarray(by_concept.sum(axis=0)).ravel())))


def _inverse(totals: np.ndarray) -> np.ndarray:
    return np.divide(1.0, totals, out=np.zeros_like(totals), where=totals > 0)


def _keyword_indicator(concept_word_columns: list[list[int]], n_words: int) -> sp.csr_matrix:
    """Words x concepts 0/1 matrix of the keyword columns."""
    rows, cols = [], []
    for concept, columns in enumerate(concept_word_columns):
        for column in columns:
            if not 0 <= column < n_words:
                raise BaselineError(f"concept {concept}: keyword column {column} outside the {n_words} words")
            rows.append(column)
            cols.append(concept)
    data = np.ones(len(rows))
    indicator = sp.csr_matrix((data, (rows, cols)), shape=(n_words, len(concept_word_columns)))
    indicator.data[:] = 1.0  # a keyword listed twice still counts once
    return indicator


def cooccurrence_scores(neighbour_indices: np.ndarray, train_terms: sp.csr_matrix, cooc: sp.csr_matrix,
                        listed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Scores and decisions of the co-occurrence baseline (Villegas and Paredes 2014, section 2.4).

    neighbour_indices: (n_test, k) rows of train_terms, the k nearest training
    images of each test image on one visual feature (k = 32 in ImageCLEF;
    see annobench.benchmark.neighbours.search). The neighbours' word vectors are summed (a
    training image appearing twice counts twice), raw = cooc @ that sum;
    scores = raw divided by its sum over the image's listed concepts (zero
    raw -> all zero), as in the organisers' 2014 run where each image's
    scores sum to 1. Decisions: listed concepts whose score exceeds the mean
    plus the population standard deviation (ddof=0, the form that reproduces
    every line of the organisers' run) of that image's listed scores,
    computed with numpy on the image's listed scores in column order.
    """
    neighbour_indices = np.asarray(neighbour_indices)
    if neighbour_indices.ndim != 2:
        raise BaselineError(f"neighbour indices must be (n_test, k), got shape {neighbour_indices.shape}")
    train_terms = sp.csr_matrix(train_terms)
    cooc = sp.csr_matrix(cooc)
    if cooc.shape[1] != train_terms.shape[1]:
        raise BaselineError(f"cooc has {cooc.shape[1]} words, train_terms {train_terms.shape[1]}")
    _check_indices(neighbour_indices, train_terms.shape[0])
    n_test, k = neighbour_indices.shape
    listed = _check_listed(listed, (n_test, cooc.shape[0]))
    scores = np.zeros((n_test, cooc.shape[0]))
    word_rows = sp.csr_matrix(cooc.T)  # words x concepts
    n_words = word_rows.shape[0]
    for start in range(0, n_test, COOCCURRENCE_BATCH):
        block = neighbour_indices[start:start + COOCCURRENCE_BATCH]
        pick = sp.csr_matrix((np.ones(block.size), (np.repeat(np.arange(len(block)), k), block.ravel())),
                             shape=(len(block), train_terms.shape[0]))
        words = sp.csc_matrix(pick @ train_terms)  # summed neighbour word vectors
        raw = scores[start:start + len(block)]
        # sparse x dense slices of the vocabulary: 5x faster than sparse x
        # sparse here, and the dense slice of C stays small (4096 words)
        for w0 in range(0, n_words, VOCABULARY_SLICE):
            raw += words[:, w0:w0 + VOCABULARY_SLICE] @ word_rows[w0:w0 + VOCABULARY_SLICE].toarray()
    scores[~listed] = 0.0
    totals = scores.sum(axis=1, keepdims=True)
    np.divide(scores, totals, out=scores, where=totals > 0)
    return scores, mean_plus_std_decisions(scores, listed)


def mean_plus_std_decisions(scores: np.ndarray, listed: np.ndarray | None = None) -> np.ndarray:
    """Listed concepts scoring above mean + std (ddof=0) of the image's listed scores."""
    listed = _check_listed(listed, scores.shape)
    decisions = np.zeros(scores.shape, dtype=bool)
    for row in range(len(scores)):
        values = scores[row][listed[row]]
        if values.size:
            decisions[row, listed[row]] = values > values.mean() + values.std()
    return decisions
