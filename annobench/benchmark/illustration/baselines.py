"""Baseline runs of the text-illustration task: random, and tf-idf retrieval on near-image text.

Random: each query's ranking is min(100, M) of the M candidates (sorted by
id) drawn without replacement by numpy's PCG64 generator seeded with
(seed, the first 8 bytes of sha256(query id)): it depends only on the seed,
the query id and the candidate set, never on the other queries or their
order.

Tf-idf (after INAOE's run 1, Gilbert et al. 2016, section 3.5: a bag-of-words
retrieval between the query and each image's page text). Each candidate image
is a document: its near-image text terms (Villegas and Paredes 2014, equation
1; the `text_terms` table of a build, or terms computed by `text.features`
from its pages). The query is tokenised by `text.features.terms_of` with the
same TextParams, so query words and image terms are the same kind of token. With N candidates and
df(t) the number of candidates whose terms include t:

    idf(t)      = ln((1 + N) / (1 + df(t))) + 1       (smoothed, never 0)
    query q:    w(t) = (1 + ln c(t)) idf(t)            c = count of t in the query (sublinear tf)
    image i:    w(t) = s_i(t) idf(t)                   s = the term's near-image score
    score(q, i) = cos(w_q, w_i)

A query word no candidate has is left out (it would only scale the
query's norm, not its ranking). The images with a positive score are ranked
by score, ties by image id, at most 100; a query sharing no term with any
candidate ranks nothing (a miss). Queries with the same text share one
vector and one ranking computation.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from annobench.benchmark.illustration.runs import MAX_RANK, RankingRun
from annobench.core.errors import AnnobenchError
from annobench.text.features import TextParams, terms_of

DEFAULT_SEED = 0
SCORES_PER_BLOCK = 20_000_000  # query x candidate scores held at once (160 MB of float64)


class BaselineInputError(AnnobenchError):
    """Inputs a baseline cannot use."""


def query_seed(seed: int, query_id: str) -> list[int]:
    digest = hashlib.sha256(query_id.encode("utf-8")).digest()
    return [seed, int.from_bytes(digest[:8], "big")]


def random_run(query_ids: Sequence[str], candidates: Sequence[str], seed: int, depth: int = MAX_RANK) -> RankingRun:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise BaselineInputError(f"seed must be an integer >= 0, got {seed!r}")
    images = np.array(sorted(set(candidates)), dtype=object)
    if not len(images):
        raise BaselineInputError("no candidate images")
    size = min(depth, len(images))
    rankings = {}
    for query in query_ids:
        drawn = np.random.default_rng(query_seed(seed, query)).choice(len(images), size=size, replace=False)
        rankings[query] = images[drawn].tolist()
    return RankingRun.from_rankings(rankings)


def image_term_matrix(image_terms: pd.DataFrame, candidates: Sequence[str]) -> tuple[sp.csr_matrix, pd.Index]:
    """Candidates x terms matrix of near-image scores (rows image_id, term, score; others ignored)."""
    for column in ("image_id", "term", "score"):
        if column not in image_terms.columns:
            raise BaselineInputError(f"image terms have no column {column!r}")
    images = pd.Index(candidates)
    rows = images.get_indexer(image_terms["image_id"])
    kept = image_terms[rows >= 0]
    scores = kept["score"].to_numpy(dtype=np.float64)
    if not np.isfinite(scores).all() or (scores < 0).any():
        raise BaselineInputError("term scores must be finite and non-negative")
    term_codes, vocabulary = pd.factorize(kept["term"].astype(str), sort=True)
    matrix = sp.csr_matrix((scores, (rows[rows >= 0], term_codes)), shape=(len(images), len(vocabulary)))
    matrix.sum_duplicates()
    return matrix, pd.Index(vocabulary)


def idf(documents: sp.csr_matrix) -> np.ndarray:
    df = np.bincount(documents.indices[documents.data > 0], minlength=documents.shape[1])
    return np.log((1.0 + documents.shape[0]) / (1.0 + df)) + 1.0


def query_matrix(texts: Sequence[str], vocabulary: pd.Index, params: TextParams) -> sp.csr_matrix:
    """Texts x vocabulary matrix of sublinear term frequencies 1 + ln(count)."""
    rows, columns, values = [], [], []
    for row, text in enumerate(texts):
        counts = Counter(terms_of(text, params))
        words = list(counts)
        found = vocabulary.get_indexer(words)
        for word, column in zip(words, found):
            if column >= 0:
                rows.append(row)
                columns.append(column)
                values.append(1.0 + np.log(counts[word]))
    return sp.csr_matrix((values, (rows, columns)), shape=(len(texts), len(vocabulary)))


def _unit_rows(matrix: sp.csr_matrix) -> sp.csr_matrix:
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    return sp.diags(np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)) @ matrix


def tfidf_run(queries: Mapping[str, str], image_terms: pd.DataFrame, candidates: Sequence[str],
              params: TextParams = TextParams(), depth: int = MAX_RANK) -> RankingRun:
    """queries: query_id -> text. The ranking of each query by cosine of tf-idf vectors."""
    images = sorted(set(candidates))
    if not images:
        raise BaselineInputError("no candidate images")
    documents, vocabulary = image_term_matrix(image_terms, images)
    weights = idf(documents)
    image_vectors = _unit_rows(documents @ sp.diags(weights)).T.tocsc()
    texts, text_of_query = np.unique(np.array([queries[q] for q in queries], dtype=object), return_inverse=True)
    query_vectors = _unit_rows(query_matrix(list(texts), vocabulary, params) @ sp.diags(weights))
    ranked = _top_images(query_vectors, image_vectors, depth)
    image_ids = np.array(images, dtype=object)
    return RankingRun.from_rankings({query: image_ids[ranked[text]].tolist()
                                     for query, text in zip(queries, text_of_query)})


def _top_images(query_vectors: sp.csr_matrix, image_vectors: sp.csc_matrix, depth: int) -> list[np.ndarray]:
    """Per query row, the candidate columns with a positive score, best first (ties: lower column = image
    id order), at most `depth`; scores computed a block of queries at a time."""
    n_images = image_vectors.shape[1]
    images_by_term = image_vectors.T.sorted_indices()  # candidates x terms (CSR): no conversion per block
    block = max(1, SCORES_PER_BLOCK // max(1, n_images))
    ranked = []
    for start in range(0, query_vectors.shape[0], block):
        ranked += _best_images(_block_scores(query_vectors[start:start + block], images_by_term), depth)
    return ranked


def _block_scores(queries: sp.csr_matrix, images_by_term: sp.csr_matrix) -> np.ndarray:
    """Candidates x queries scores, a dense product over the block's own terms.

    Each score is summed over the image's terms in ascending term order, a term the query lacks
    adding an exact 0: the same floats as SciPy's sparse product, which sums over the query's
    terms in that order, but several times faster (no sparse result to build)."""
    terms = np.unique(queries.indices)
    weights = sp.csr_matrix((queries.data, np.searchsorted(terms, queries.indices), queries.indptr),
                            shape=(queries.shape[0], len(terms)))
    return images_by_term[:, terms] @ np.ascontiguousarray(weights.toarray().T)


def _best_images(scores: np.ndarray, depth: int) -> list[np.ndarray]:
    """Per query (column), the rows with a positive score, best first, ties by row, at most `depth`.
    Only the rows scoring at least the query's depth-th best score (a partition finds it) are
    sorted: the order of a full sort, cut at `depth`."""
    n_images = len(scores)
    floor = (np.partition(scores, n_images - depth, axis=0)[n_images - depth] if n_images > depth
             else np.zeros(scores.shape[1]))
    images, queries = np.nonzero((scores > 0) & (scores >= floor))
    order = np.lexsort((images, -scores[images, queries], queries))
    ends = np.cumsum(np.bincount(queries, minlength=scores.shape[1]))
    return [best[:depth] for best in np.split(images[order], ends[:-1])]
