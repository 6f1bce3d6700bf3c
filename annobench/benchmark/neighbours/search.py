"""Exact k nearest neighbours against a training set streamed in blocks.

The baselines (Villegas and Paredes 2014, section 2.4) and the visual-overlap
diagnostic (Dutta et al. 2018, section 4.2.2) need, for every test image, its
nearest training images on a global feature: at full scale 10,000 queries
against 500,000 vectors of 5,000 dimensions, i.e. 10 GB of training vectors.
The reference set is therefore never held whole: it arrives as consecutive
blocks (one Parquet shard, one record batch at a time) and memory is bounded
by the block sizes.

How a block is searched, and why the answer is exact:

1. Squared distances ||q||^2 - 2 q.r + ||r||^2 with one float32 matrix
   product per (query block, reference slice). float32 halves the memory of
   the blocks and doubles BLAS throughput at 5,000-d compared with float64;
   its rounding only decides which rows are *candidates*. ||q||^2, the same
   for every row of a query, moves to that query's limit, so the product is
   compared with one float32 limit a query.
2. Candidates: the `k + margin` smallest approximate distances of each query
   in the slice (np.argpartition), plus every other row whose approximate
   distance is within a rigorous float32 error bound of the current k-th best
   exact distance. The bound (`product_error_bound`) is the standard
   worst-case error of a d-term dot product, so no row that could be among
   the k nearest is ever dropped, whatever the BLAS does; the margin only
   keeps that second, irregular set small. Once every query has k
   neighbours, one sweep does both: only rows whose approximate distance is
   within the bound of the current k-th best can enter.
3. Exact distances of the candidates are recomputed in float64 from the
   float32 vectors as sum((q - r)^2), one row at a time in a fixed order, and
   merged with the running best k of each query by (distance, global index);
   in the sweep only the candidates that beat the k-th best are merged.

So the result is the k smallest exact distances, ties broken by the lower
index, and it does not depend on the block sizes, the chunking of the
reference or the BLAS library (tests compare against brute force).

For the same reason a search split into test blocks x training blocks
(separate jobs, neighbours.blocks) merges exactly: each part keeps its k
smallest (exact squared distance, index) pairs, and the k smallest of their
union are the k smallest overall, indices ordered block by block.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from annobench.core.errors import AnnobenchError

# Extra approximate candidates per query and slice beyond k (see step 2).
DEFAULT_MARGIN = 8
# Reference rows compared with a query block in one matrix product; blocks
# larger than this are sliced, so a big shard does not inflate memory.
DEFAULT_REFERENCE_BLOCK = 4096
# Float64 values in flight when recomputing exact distances: 2 MiB stay in a core's L2 cache,
# a quarter faster than 16 MiB (the sums are per row, so the chunk never changes them).
EXACT_CHUNK_VALUES = 2**18
# Record batch size when streaming vectors from Parquet.
DEFAULT_BATCH_ROWS = 4096

FLOAT32_UNIT_ROUNDOFF = 2.0**-24
# Relative slack for the float64 sums that form an entry limit (a few roundings of 2^-53 each).
FLOAT64_SLACK = 2.0**-50
# Squared norms up to float32's largest value / 16 keep every term of -2 q.r + ||r||^2 finite.
LARGEST_SQUARED_NORM = float(np.finfo(np.float32).max) / 16
NO_INDEX = np.iinfo(np.int64).max


class NeighbourError(AnnobenchError):
    """Inputs to the neighbour search that cannot be used (named in the message)."""


def nearest_neighbours(
    queries: np.ndarray,
    reference_blocks: Iterable[np.ndarray],
    k: int,
    **search: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest reference rows of every query, by Euclidean distance:
    nearest_squared's indices, and its exact distances rounded to float32."""
    indices, squared = nearest_squared(queries, reference_blocks, k, **search)
    return indices, np.sqrt(squared).astype(np.float32)


def nearest_squared(
    queries: np.ndarray,
    reference_blocks: Iterable[np.ndarray],
    k: int,
    query_block: int = 1024,
    reference_block: int = DEFAULT_REFERENCE_BLOCK,
    margin: int = DEFAULT_MARGIN,
) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest reference rows of every query: (indices, squared distances).

    queries: (n, d) array; reference_blocks: consecutive (m_i, d) chunks of the
    reference set, read once. Both are converted to float32 and distances are
    those of the float32 vectors. Returns (indices int64 (n, k), squared
    distances float64 (n, k)): global row numbers in the concatenated
    reference, sorted by exact (float64) distance, ties broken by the lower
    index, and those exact values, so that lists searched apart merge
    exactly (neighbours.blocks). Raises NeighbourError when the reference has
    fewer than k rows.

    Memory: a query_block x reference_block float32 product (plus its int64
    argpartition), one reference slice, and the (n, k) running best; blocks
    larger than reference_block rows are sliced. `margin` only trades the
    fixed-width candidate step against the error-bound sweep (module doc);
    the result does not depend on it.
    """
    queries = _as_matrix(queries, "queries")
    for name, value in (("k", k), ("query_block", query_block), ("reference_block", reference_block)):
        if int(value) < 1:
            raise NeighbourError(f"{name} must be at least 1, got {value}")
    if margin < 0:
        raise NeighbourError(f"margin must be >= 0, got {margin}")
    n, dimension = queries.shape
    best_index = np.full((n, k), NO_INDEX, dtype=np.int64)
    best_sq = np.full((n, k), np.inf)
    prepared = _prepared_queries(queries)
    offset = 0
    for number, block in enumerate(reference_blocks):
        block = _as_matrix(block, f"reference block {number}")
        if block.shape[1] != dimension:
            raise NeighbourError(
                f"reference block {number} has {block.shape[1]} columns, the queries {dimension}")
        for start in range(0, len(block), reference_block):
            part = _prepared_slice(block[start:start + reference_block], offset + start,
                                   f"reference block {number}")
            for q0 in range(0, n, query_block):
                rows = slice(q0, q0 + query_block)
                best_index[rows], best_sq[rows] = _search_slice(
                    prepared.rows(rows), part, best_index[rows], best_sq[rows], k + margin)
        offset += len(block)
    if offset < k:
        raise NeighbourError(f"the reference has {offset} rows, fewer than k = {k}")
    return best_index, best_sq


def product_error_bound(dimension: int, query_norms: np.ndarray, max_reference_norm: float) -> np.ndarray:
    """Worst-case gap between the float32 and the exact squared distance.

    A d-term float32 dot product errs by at most gamma_d * sum|q_i r_i| <=
    gamma_d ||q|| ||r|| (gamma_d = d u / (1 - d u), u = 2^-24, whatever the
    summation order or blocking), so the term -2 q.r by 2 gamma_d ||q|| ||r||
    (the scaling by -2 is exact); ||r||^2 rounded to float32 and the float32
    addition to the product, each at most (1 + gamma_d) (||q|| + ||r||)^2 in
    size, add at most 2u (1 + gamma_d)(1 + u) (||q|| + ||r||)^2 (4u (1 +
    gamma_d) taken, room for ||q||^2 as well, which _entry_limits subtracts
    in float64 instead), and the float64 "exact" value
    is within (d + 2) 2^-53 of its own sum (covered by one more u). Before
    issue 29 the first term was gamma_d (||q|| + ||r||)^2, twice as wide for
    vectors of one norm, so twice the candidates on near duplicates.
    """
    u = FLOAT32_UNIT_ROUNDOFF
    if dimension * u >= 0.5:
        raise NeighbourError(f"dimension {dimension} is too large for a float32 error bound")
    gamma = dimension * u / (1.0 - dimension * u)
    rounding = (4 * u * (1 + gamma) + u) * (query_norms + max_reference_norm) ** 2
    return 2 * gamma * query_norms * max_reference_norm + rounding


def _as_matrix(values: np.ndarray, what: str) -> np.ndarray:
    values = np.asarray(values)
    if values.ndim != 2:
        raise NeighbourError(f"{what} must be a 2-D array (rows, dimension), got shape {values.shape}")
    if values.dtype.kind not in "fiu":
        raise NeighbourError(f"{what} must be numeric, got {values.dtype}")
    return np.ascontiguousarray(values, dtype=np.float32)


def _squared_norms(values: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", values, values, dtype=np.float64)


class _Queries(NamedTuple):
    """Query vectors (float32) and their squared norms."""

    vectors: np.ndarray
    squared_norms: np.ndarray

    def rows(self, rows: slice) -> "_Queries":
        return _Queries(self.vectors[rows], self.squared_norms[rows])


class _Slice(NamedTuple):
    """Reference rows: the vectors, their squared norms in float32 (added to every product),
    the largest norm (for the error bound) and the global index of the first row; derived once
    a slice, whatever the number of query blocks."""

    vectors: np.ndarray
    squared_norms32: np.ndarray
    max_norm: float
    first_index: int


def _prepared_queries(queries: np.ndarray) -> _Queries:
    return _Queries(queries, _product_safe_norms(queries, "queries"))


def _prepared_slice(reference: np.ndarray, first_index: int, what: str) -> _Slice:
    norms = _product_safe_norms(reference, what)
    return _Slice(reference, norms.astype(np.float32), float(np.sqrt(norms.max())), first_index)


def _product_safe_norms(vectors: np.ndarray, what: str) -> np.ndarray:
    """Squared norms in float64; refuses NaN and infinite values (their norms are not finite:
    float32 squares cannot overflow float64, so this costs no pass of its own) and vectors whose
    float32 product could overflow, which would hide rows (an infinite approximate distance is
    never a candidate)."""
    norms = _squared_norms(vectors)
    if not np.isfinite(norms).all():
        raise NeighbourError(f"{what} holds NaN or infinite values")
    if not norms.max(initial=0.0) < LARGEST_SQUARED_NORM:
        raise NeighbourError(f"{what} holds a vector too long for a float32 distance (norm "
                             f"{np.sqrt(norms.max()):.3g}, at most {np.sqrt(LARGEST_SQUARED_NORM):.3g})")
    return norms


def _entry_limits(queries: _Queries, part: _Slice, within: np.ndarray) -> np.ndarray:
    """For each query, the largest approximate value (-2 q.r + ||r||^2 in float32: the
    query's own norm is left out, it does not change which rows are nearest) that a row of
    the slice may have and still be within `within` (a column of exact squared distances,
    inf for any): `within` plus the error bound, less the query's norm, rounded up to
    float32 so that the comparison runs on float32 values."""
    finite = np.isfinite(within)
    inside = np.where(finite, within, 0.0)
    query_sq = queries.squared_norms[:, None]
    bound = product_error_bound(part.vectors.shape[1], np.sqrt(query_sq), part.max_norm)
    limit = inside + bound - query_sq
    limit += FLOAT64_SLACK * (inside + bound + query_sq)  # the roundings of these float64 sums
    return _round_up_to_float32(np.where(finite, limit, np.inf))


def _round_up_to_float32(values: np.ndarray) -> np.ndarray:
    rounded = values.astype(np.float32)
    below = rounded < values
    rounded[below] = np.nextafter(rounded[below], np.float32(np.inf))
    return rounded


def approximate_distances(queries: _Queries, part: _Slice) -> np.ndarray:
    """-2 q.r + ||r||^2 in float32 for every (query, row): the squared distance less ||q||^2,
    which _entry_limits takes off the limit instead."""
    approx = queries.vectors @ part.vectors.T
    approx *= -2.0
    approx += part.squared_norms32[None, :]
    return approx


def _search_slice(queries: _Queries, part: _Slice, best_index, best_sq, width):
    """Merge one reference slice into the running best k of a query block."""
    k = best_index.shape[1]
    approx = approximate_distances(queries, part)
    if np.isfinite(best_sq[:, -1]).all():
        return _sweep_slice(queries, part, approx, best_index, best_sq)

    # Step 2a: the `width` best approximate rows of each query, kept only if
    # they may still beat the current k-th best.
    width = min(width, approx.shape[1])
    if width < approx.shape[1]:
        top = np.argpartition(approx, width - 1, axis=1)[:, :width]
    else:
        top = np.broadcast_to(np.arange(width), approx.shape).copy()
    top_approx = np.take_along_axis(approx, top, axis=1)
    hopeful = top_approx <= _entry_limits(queries, part, best_sq[:, -1:])
    top_sq = np.full(top.shape, np.inf)
    q_rows, positions = np.nonzero(hopeful)
    top_sq[q_rows, positions] = _exact_sq(queries.vectors, part.vectors, q_rows, top[q_rows, positions])

    # Step 2b: any other row within the error bound of the new k-th best.
    threshold = np.partition(np.concatenate([best_sq, top_sq], axis=1), k - 1, axis=1)[:, k - 1:k]
    outside = approx <= _entry_limits(queries, part, threshold)
    np.put_along_axis(outside, top, False, axis=1)
    extra_q, extra_r = np.nonzero(outside)
    extra_sq = _exact_sq(queries.vectors, part.vectors, extra_q, extra_r)

    n_rows = len(best_index)
    merged_q = np.concatenate([np.repeat(np.arange(n_rows), k + width), extra_q])
    merged_index = np.concatenate([
        np.concatenate([best_index, top + part.first_index], axis=1).ravel(), extra_r + part.first_index])
    merged_sq = np.concatenate([np.concatenate([best_sq, top_sq], axis=1).ravel(), extra_sq])
    return _k_smallest_per_row(merged_q, merged_index, merged_sq, n_rows, k)


def _sweep_slice(queries: _Queries, part: _Slice, approx, best_index, best_sq):
    """Once every query has k neighbours, one pass: a row can only enter the best k if its exact
    distance is at most the current k-th best, so its approximate one is within the error bound
    of it; no partial sort. Of those candidates, only the ones whose exact (distance, index)
    beats the k-th best are merged, and only into their own queries' lists."""
    k = best_index.shape[1]
    flat = np.flatnonzero(approx <= _entry_limits(queries, part, best_sq[:, -1:]))
    q_rows, r_rows = np.divmod(flat, approx.shape[1])
    exact = _exact_sq(queries.vectors, part.vectors, q_rows, r_rows)
    index = r_rows + part.first_index
    last_sq, last_index = best_sq[q_rows, -1], best_index[q_rows, -1]
    enters = (exact < last_sq) | ((exact == last_sq) & (index < last_index))
    if not enters.any():
        return best_index, best_sq
    q_rows, index, exact = q_rows[enters], index[enters], exact[enters]
    changed, local = np.unique(q_rows, return_inverse=True)
    merged_q = np.concatenate([np.repeat(np.arange(len(changed)), k), local])
    merged_index = np.concatenate([best_index[changed].ravel(), index])
    merged_sq = np.concatenate([best_sq[changed].ravel(), exact])
    best_index[changed], best_sq[changed] = _k_smallest_per_row(merged_q, merged_index, merged_sq, len(changed), k)
    return best_index, best_sq


def _exact_sq(queries, reference, q_rows, r_rows) -> np.ndarray:
    """sum((q - r)^2) in float64 for the given (query, reference) pairs."""
    out = np.empty(len(q_rows))
    step = max(1, EXACT_CHUNK_VALUES // queries.shape[1])
    for start in range(0, len(q_rows), step):
        part = slice(start, start + step)
        diff = np.subtract(queries[q_rows[part]], reference[r_rows[part]], dtype=np.float64)
        np.square(diff, out=diff)
        out[part] = diff.sum(axis=1)
    return out


def _k_smallest_per_row(rows, index, sq, n_rows, k) -> tuple[np.ndarray, np.ndarray]:
    """For each row, its k (index, sq) pairs smallest by (sq, index).

    Every row has at least k entries (the running best, padded with inf).
    """
    order = np.lexsort((index, sq, rows))
    counts = np.bincount(rows, minlength=n_rows)
    starts = np.cumsum(counts) - counts
    chosen = order[starts[:, None] + np.arange(k)[None, :]]
    return index[chosen], sq[chosen]


def vector_blocks(
    paths: list[str] | list[Path],
    ids_wanted: set[str] | None = None,
    column: str = "vector",
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> Iterator[tuple[list[str], np.ndarray]]:
    """Stream (image ids, (m, d) float32 array) from Parquet feature tables.

    Files are read in the given order, one record batch of at most
    `batch_rows` rows at a time, so memory does not grow with the table.
    With `ids_wanted`, only those images' rows are yielded (in file order);
    empty batches are skipped. The arrays come straight from Arrow buffers
    (float32 columns are not copied and are read-only). Feed the arrays to
    nearest_neighbours and collect the ids to name its indices, or use
    nearest_in_tables.
    """
    wanted = None if ids_wanted is None else pa.array(sorted(ids_wanted), type=pa.string())
    dimension = None
    for path in paths:
        parquet = pq.ParquetFile(path)
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=["image_id", column]):
            ids = batch.column("image_id")
            vectors = batch.column(column)
            if wanted is not None:
                keep = pc.is_in(ids, value_set=wanted)
                ids, vectors = pc.filter(ids, keep), pc.filter(vectors, keep)
            if len(ids) == 0:
                continue
            array = _vectors_to_numpy(vectors, f"{path}: column {column!r}")
            if dimension is not None and array.shape[1] != dimension:
                raise NeighbourError(f"{path}: vectors of {array.shape[1]} values, earlier files {dimension}")
            dimension = array.shape[1]
            yield ids.to_pylist(), array


def _vectors_to_numpy(vectors: pa.Array, where: str) -> np.ndarray:
    if not pa.types.is_fixed_size_list(vectors.type):
        raise NeighbourError(f"{where} is {vectors.type}, expected fixed_size_list<float32>")
    if vectors.null_count:
        raise NeighbourError(f"{where} has {vectors.null_count} missing vectors")
    flat = vectors.flatten()  # respects the batch's offset, unlike .values
    if not (pa.types.is_floating(flat.type) or pa.types.is_integer(flat.type)):
        raise NeighbourError(f"{where} holds {flat.type} values, expected float32")
    if flat.null_count:
        raise NeighbourError(f"{where} has missing values inside vectors")
    array = flat.to_numpy(zero_copy_only=False).reshape(len(vectors), vectors.type.list_size)
    return array if array.dtype == np.float32 else array.astype(np.float32)


def nearest_in_tables(
    queries: np.ndarray,
    paths: list[str] | list[Path],
    k: int,
    ids_wanted: set[str] | None = None,
    column: str = "vector",
    squared: bool = False,
    **search: int,
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """nearest_neighbours against feature tables: (reference ids, indices, distances).

    indices point into the returned list of reference ids (file order);
    with `squared`, the distances are nearest_squared's.
    """
    reference_ids: list[str] = []

    def arrays() -> Iterator[np.ndarray]:
        for ids, block in vector_blocks(paths, ids_wanted, column):
            reference_ids.extend(ids)
            yield block

    rows = search.get("reference_block", DEFAULT_REFERENCE_BLOCK)

    search_function = nearest_squared if squared else nearest_neighbours
    indices, distances = search_function(queries, rebatched(arrays(), rows), k, **search)
    return reference_ids, indices, distances


def rebatched(blocks: Iterable[np.ndarray], rows: int) -> Iterator[np.ndarray]:
    """The same rows in blocks of `rows` (the last shorter): record batches, filtered to the
    training images, come in a few thousand rows or fewer, and every slice's k best candidates
    are recomputed exactly, so full slices cost fewer recomputations per row."""
    pending, held = [], 0
    for block in blocks:
        pending.append(block)
        held += len(block)
        while held >= rows:
            joined = np.concatenate(pending) if len(pending) > 1 else pending[0]
            yield joined[:rows]
            pending, held = [joined[rows:]], held - rows
    if held:
        yield np.concatenate(pending)
