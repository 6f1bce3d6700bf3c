"""The benchmark's nearest-neighbour job: each test image's nearest training images on one feature.

Apart from benchmark_stage so that this job, one per feature, loads no pandas (0.6 CPU-s of
start-up a job, more than the search itself on a small build).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from annobench.core.jobs import Job
from annobench.core.tables import field, write_table

NEIGHBOURS_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "a test image"),
        field("neighbours", pa.list_(pa.string()), "its nearest training images, nearest first"),
        field("distances", pa.list_(pa.float32()), "their Euclidean distances on the feature"),
    ]
)


def split_ids(splits_path: str, split: str) -> set[str]:
    # ParquetFile, not read_table: the dataset reader read_table goes through imports pandas.
    table = pq.ParquetFile(splits_path).read(columns=["image_id", "split"])
    return set(table.filter(pc.equal(table.column("split"), split)).column("image_id").to_pylist())


def build_neighbours(feature_tables: list[str], splits_path: str, k: int, settings: dict, out_path: str,
                     log) -> None:
    """The k nearest training images of every test image on one feature, by blocked matrix products
    over the training vectors streamed table by table."""
    from annobench.benchmark.neighbours import nearest_in_tables, vector_blocks

    train, test = split_ids(splits_path, "train"), split_ids(splits_path, "test")
    if not train or not test:
        from annobench.benchmark.ground_truth import GroundTruthError

        raise GroundTruthError(f"nearest neighbours need training and test images: {len(train)} train, "
                               f"{len(test)} test (benchmark.split)")
    test_ids, test_vectors = _collect(vector_blocks(feature_tables, test))
    k = min(k, len(train))
    train_ids, indices, distances = nearest_in_tables(
        test_vectors, feature_tables, k, ids_wanted=train,
        query_block=settings["query_block"], reference_block=settings["reference_block"])
    order = sorted(range(len(test_ids)), key=test_ids.__getitem__)
    table = pa.Table.from_pydict(
        {
            "image_id": [test_ids[i] for i in order],
            "neighbours": [[train_ids[j] for j in indices[i]] for i in order],
            "distances": [distances[i].tolist() for i in order],
        },
        schema=NEIGHBOURS_SCHEMA,
    )
    write_table(table, out_path, "neighbours", params={"k": k, **settings})
    log(f"{len(test_ids)} test images, {len(train_ids)} training images, {k} neighbours each")


def _collect(blocks) -> tuple[list[str], np.ndarray]:
    ids, arrays = [], []
    for block_ids, vectors in blocks:
        ids.extend(block_ids)
        arrays.append(vectors)
    return ids, (np.concatenate(arrays) if arrays else np.zeros((0, 0), np.float32))


def neighbours_job(job: Job) -> None:
    """Rule benchmark_neighbours: the nearest training images of every test image on one feature."""
    build_neighbours(job.input_list("features"), job.input("splits"), job.params["k"], job.params["settings"],
                     job.output_files[0], job.log)
