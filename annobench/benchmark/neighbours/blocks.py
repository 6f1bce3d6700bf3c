"""The neighbour search split into test blocks x training blocks of whole shards, merged exactly.

A part (one job) searches the test images of its test block against the training images of its
training block and keeps, for every test image, the k nearest by (exact squared distance, row
among the block's training images), as nearest_squared gives them. The merge takes, for every
test image, the k smallest of the union by (squared distance, training block, row): training
blocks are consecutive shards read in order, so (block, row) is the global file order the
one-job search breaks ties by, and the merged lists are the same bytes whatever the blocks, the
job count or the BLAS threads (the squared distances are recomputed exactly, search.py).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from annobench.core.tables import field, image_ids

PART_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "a test image of the test block"),
        field("neighbours", pa.list_(pa.string()), "its nearest training images of the training block, nearest first"),
        field("rows", pa.list_(pa.int64()), "their row numbers among the training block's training images"),
        field("squared", pa.list_(pa.float64()), "their exact squared distances (float64)"),
    ]
)


def shard_blocks(shard_sizes: list[int], block_images: int) -> list[list[int]]:
    """Consecutive shards grouped into blocks of at most block_images images (a larger shard
    is a block alone); one block when the build is small."""
    blocks, current, images = [], [], 0
    for shard, size in enumerate(shard_sizes):
        if current and images + size > block_images:
            blocks.append(current)
            current, images = [], 0
        current.append(shard)
        images += size
    return blocks + [current] if current else blocks


def block_plan(settings: dict, shard_sizes: list[int]) -> dict[str, list[list[int]]]:
    """The test and training blocks of the search (shard numbers), from benchmark.neighbours."""
    return {"test": shard_blocks(shard_sizes, settings["test_block_images"]),
            "training": shard_blocks(shard_sizes, settings["training_block_images"])}


def gather_queries(query_tables: list[str], test: set[str], out_path: str) -> int:
    """The test images' vectors of a test block's tables, in file order, as one table written
    a batch at a time: what each of the block's parts then reads instead of the block's
    tables (the same vectors in the same order, so the same bytes of every part). Returns the
    rows written."""
    from annobench.benchmark.neighbours.search import vector_blocks
    from annobench.core.tables import write_table_blocks

    schema = queries_schema(pq.read_schema(query_tables[0]).field("vector").type.list_size)
    written = []

    def batches():
        for block_ids, vectors in vector_blocks(query_tables, test):
            written.append(len(block_ids))
            flat = pa.array(np.ascontiguousarray(vectors).reshape(-1), pa.float32())
            yield pa.table([pa.array(block_ids, pa.string()),
                            pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])], schema=schema)

    write_table_blocks(batches(), schema, out_path, "neighbour_queries", params={})
    return sum(written)


def queries_schema(dimension: int) -> pa.Schema:
    return pa.schema([
        field("image_id", pa.string(), "a test image of the test block, in the block's file order"),
        field("vector", pa.list_(pa.float32(), dimension), "its feature vector"),
    ])


def vectors_shape(path: str) -> tuple[int, int]:
    """(rows, dimension) of a table of vectors, from its footer."""
    return pq.read_metadata(path).num_rows, pq.read_schema(path).field("vector").type.list_size


# Memory a part holds per test value, besides 1 GB for the training vectors it streams: 712 MiB
# measured for 6,000 test images of 5,000 dimensions, 24 kB an image.
PART_BYTES_PER_TEST_VALUE = 24_000 / 5_000


def part_memory_mb(test_images: int, dimension: int) -> int:
    """mem_mb of a part that holds test_images test vectors of `dimension` values."""
    return 1024 + math.ceil(PART_BYTES_PER_TEST_VALUE * test_images * dimension / 1e6)


def search_part(query_tables: list[str], reference_tables: list[str], test: set[str], train: set[str], k: int,
                search: dict) -> pa.Table:
    """One part: every test image of query_tables against the training images of reference_tables."""
    from annobench.benchmark.neighbours.search import nearest_in_tables, vector_blocks

    test_ids, queries = _collect(vector_blocks(query_tables, test))
    k = min(k, len(image_ids(reference_tables) & train))
    if not test_ids or k == 0:
        return _part_table(test_ids, [], np.zeros((len(test_ids), 0), np.int64), np.zeros((len(test_ids), 0)))
    train_ids, rows, squared = nearest_in_tables(queries, reference_tables, k, ids_wanted=train, squared=True,
                                                 **search)
    return _part_table(test_ids, train_ids, rows, squared)


def merge_parts(parts: list[pa.Table], k: int) -> tuple[list[str], list[list[str]], np.ndarray]:
    """The k nearest of one test block over all training blocks (parts in training-block order):
    (test ids, neighbour ids per test image, exact squared distances (n, k))."""
    test_ids = parts[0].column("image_id").to_pylist()
    for number, part in enumerate(parts):
        if part.column("image_id").to_pylist() != test_ids:
            raise ValueError(f"neighbour part {number} lists other test images than part 0")
    n = len(test_ids)
    squared = np.concatenate([_list_matrix(part, "squared", n) for part in parts], axis=1)
    if squared.shape[1] < k and n:
        from annobench.benchmark.neighbours.search import NeighbourError

        raise NeighbourError(f"the parts hold {squared.shape[1]} training images per test image, fewer than k = {k}")
    rows = np.concatenate([_list_matrix(part, "rows", n) for part in parts], axis=1)
    blocks = np.concatenate([np.full(_list_width(part, n), b) for b, part in enumerate(parts)])
    order = np.lexsort((rows, np.broadcast_to(blocks, rows.shape), squared), axis=1)[:, :k]
    names = np.concatenate([_list_names(part, n) for part in parts], axis=1)
    chosen_names = np.take_along_axis(names, order, axis=1)
    return test_ids, chosen_names.tolist(), np.take_along_axis(squared, order, axis=1)


def read_part(path: str) -> pa.Table:
    return pq.ParquetFile(path).read()


def _part_table(test_ids: list[str], train_ids: list[str], rows: np.ndarray, squared: np.ndarray) -> pa.Table:
    return pa.Table.from_pydict(
        {
            "image_id": test_ids,
            "neighbours": [[train_ids[j] for j in row] for row in rows],
            "rows": rows.tolist(),
            "squared": squared.tolist(),
        },
        schema=PART_SCHEMA,
    )


def _list_width(part: pa.Table, n: int) -> int:
    flat = len(part.column("rows").combine_chunks().flatten())
    return flat // n if n else 0


def _list_matrix(part: pa.Table, column: str, n: int) -> np.ndarray:
    """A list column whose lists all have one length, as an (n, width) array."""
    flat = part.column(column).combine_chunks().flatten().to_numpy()
    return flat.reshape(n, _list_width(part, n))


def _list_names(part: pa.Table, n: int) -> np.ndarray:
    flat = np.array(part.column("neighbours").combine_chunks().flatten().to_pylist(), dtype=object)
    return flat.reshape(n, _list_width(part, n))


def _collect(blocks) -> tuple[list[str], np.ndarray]:
    ids, arrays = [], []
    for block_ids, vectors in blocks:
        ids.extend(block_ids)
        arrays.append(vectors)
    return ids, (np.concatenate(arrays) if arrays else np.zeros((0, 0), np.float32))
