"""The benchmark's nearest-neighbour job: each test image's nearest training images on one feature.

Apart from the annotation stage so that this job, one per feature, loads no pandas (0.6 CPU-s of
start-up a job, more than the search itself on a small build); only read_neighbours, which the
baselines read the table back with, converts to pandas.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from annobench.benchmark.splits import split_ids
from annobench.core.jobs import Job
from annobench.core.tables import field, write_table

NEIGHBOURS_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "a test image"),
        field("neighbours", pa.list_(pa.string()), "its nearest training images, nearest first"),
        field("distances", pa.list_(pa.float32()), "their Euclidean distances on the feature"),
    ]
)


def build_neighbours(feature_tables: list[str], splits_path: str, k: int, settings: dict, out_path: str,
                     log) -> None:
    """The k nearest training images of every test image on one feature, in one job: the search
    as one part (blocked matrix products over the training vectors streamed table by table)."""
    from annobench.benchmark.neighbours.blocks import search_part

    train, test = _train_and_test(splits_path)
    part = search_part(feature_tables, feature_tables, test, train, k, settings)
    write_neighbours([[part]], min(k, len(train)), settings, out_path)
    log(f"{part.num_rows} test images, {len(train)} training images, {min(k, len(train))} neighbours each")


def search_neighbour_block(query_tables: list[str], reference_tables: list[str], splits_path: str, k: int,
                           settings: dict, out_path: str, log) -> None:
    """One part of the search: the test images of some shards against the training images of others."""
    from annobench.benchmark.neighbours.blocks import search_part

    train, test = _train_and_test(splits_path)
    part = search_part(query_tables, reference_tables, test, train, k, settings)
    write_table(part, out_path, "neighbour_block", params={"k": k, **settings})
    log(f"{part.num_rows} test images, {len(part.column('rows').combine_chunks().flatten())} neighbours in all")


def merge_neighbour_blocks(part_paths: list[str], training_blocks: int, splits_path: str, k: int, settings: dict,
                           out_path: str, log) -> None:
    """The neighbours table from the parts, test block by test block (part_paths: test-block major,
    training blocks in order)."""
    from annobench.benchmark.neighbours.blocks import read_part

    train, _ = _train_and_test(splits_path)
    paths = [part_paths[start:start + training_blocks] for start in range(0, len(part_paths), training_blocks)]
    write_neighbours(([read_part(path) for path in row] for row in paths), min(k, len(train)), settings, out_path)
    log(f"{len(part_paths)} parts merged, {len(train)} training images")


def write_neighbours(test_blocks, k: int, settings: dict, out_path: str) -> None:
    """The neighbours table: test_blocks yields, per test block, its parts in training-block order."""
    from annobench.benchmark.neighbours.blocks import merge_parts

    test_ids, neighbours, squared = [], [], []
    for parts in test_blocks:
        block_ids, block_neighbours, block_squared = merge_parts(parts, k)
        if not block_ids:  # a test block without test images
            continue
        test_ids += block_ids
        neighbours += block_neighbours
        squared.append(block_squared)
    distances = np.sqrt(np.concatenate(squared)).astype(np.float32)
    order = sorted(range(len(test_ids)), key=test_ids.__getitem__)
    table = pa.Table.from_pydict(
        {
            "image_id": [test_ids[i] for i in order],
            "neighbours": [neighbours[i] for i in order],
            "distances": [distances[i].tolist() for i in order],
        },
        schema=NEIGHBOURS_SCHEMA,
    )
    write_table(table, out_path, "neighbours", params={"k": k, **settings})


def read_neighbours(path: str, test_ids: list[str]) -> tuple[list[list[str]], np.ndarray]:
    """Each test image's neighbour ids and distances (rows in test_ids order)."""
    table = pq.read_table(path).to_pandas().set_index("image_id")
    rows = table.loc[test_ids]
    distances = np.array([np.asarray(d, np.float32) for d in rows["distances"]], dtype=np.float32)
    return [list(n) for n in rows["neighbours"]], distances


def _train_and_test(splits_path: str) -> tuple[set[str], set[str]]:
    train, test = set(split_ids(splits_path, "train")), set(split_ids(splits_path, "test"))
    if not train or not test:
        from annobench.benchmark.vocabulary import GroundTruthError

        raise GroundTruthError(f"nearest neighbours need training and test images: {len(train)} train, "
                               f"{len(test)} test (benchmark.split)")
    return train, test


def neighbours_job(job: Job) -> None:
    """Rule benchmark_neighbours: the nearest training images of every test image on one feature,
    searched here (one block) or merged from the parts of rule benchmark_neighbour_block."""
    if job.input_list("parts"):
        merge_neighbour_blocks(job.input_list("parts"), job.params["training_blocks"], job.input("splits"),
                               job.params["k"], job.params["settings"], job.output_files[0], job.log)
    else:
        build_neighbours(job.input_list("features"), job.input("splits"), job.params["k"], job.params["settings"],
                         job.output_files[0], job.log)


def neighbour_queries_job(job: Job) -> None:
    """Rule benchmark_neighbour_queries: a test block's test vectors, gathered for its parts."""
    from annobench.benchmark.neighbours.blocks import gather_queries

    _, test = _train_and_test(job.input("splits"))
    rows = gather_queries(job.input_list("queries"), test, job.output_files[0])
    job.log(f"{rows} test images of {len(job.input_list('queries'))} tables")


def neighbour_block_job(job: Job) -> None:
    """Rule benchmark_neighbour_block: one test block against one training block on one feature."""
    search_neighbour_block(job.input_list("queries"), job.input_list("reference"), job.input("splits"),
                           job.params["k"], job.params["settings"], job.output_files[0], job.log)
