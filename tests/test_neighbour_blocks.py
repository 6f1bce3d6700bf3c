"""The neighbour search in blocks (issue 29): parts of test blocks x training blocks merge into the
same bytes as one search, and as brute force, whatever the blocks, their order and the BLAS threads."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from annobench.benchmark.neighbours.blocks import (block_plan, gather_queries, merge_parts, part_memory_mb, search_part,
                                                  shard_blocks, vectors_shape)
from annobench.benchmark.neighbours.stage import write_neighbours
from helpers import REPO, copy_build, demo_sections, run_snakemake
from test_workflow import planned_jobs

K = 9
SHARD_SIZES = [17, 0, 23, 5, 30, 11, 14]


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> tuple[list[str], np.ndarray, list[str]]:
    """Feature tables of 100 images in 7 shards (one empty); small integer vectors, so that many
    distances tie, and rows repeated across shards."""
    folder = tmp_path_factory.mktemp("neighbour_shards")
    rng = np.random.default_rng(29)
    vectors = rng.integers(0, 3, (sum(SHARD_SIZES), 12)).astype(np.float32)
    vectors[60:80] = vectors[:20]
    ids = [f"img{i:03d}" for i in rng.permutation(len(vectors))]
    paths, start = [], 0
    for number, size in enumerate(SHARD_SIZES):
        rows = slice(start, start + size)
        table = pa.table({"image_id": ids[rows],
                          "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors[rows].ravel()), 12)})
        paths.append(str(folder / f"shard-{number}.parquet"))
        pq.write_table(table, paths[-1])
        start += size
    return paths, vectors, ids


def split_sets(ids: list[str]) -> tuple[set[str], set[str]]:
    test = {i for n, i in enumerate(ids) if n % 3 == 0}
    return test, set(ids) - test - {ids[1]}  # one image in neither split (a dev image)


def blocked_table(paths, test, train, plan, tmp_path, name, search=None, test_order=None) -> bytes:
    """The neighbours file from parts of `plan` (test blocks, training blocks of shard numbers)."""
    def tables(block):
        return [paths[shard] for shard in block]

    def queries(number, block):  # as the workflow does: the test block's test vectors gathered once
        gathered = tmp_path / f"{name}-queries-{number}.parquet"
        gather_queries(tables(block), test, str(gathered))
        return [str(gathered)]

    gathered = [queries(number, block) for number, block in enumerate(plan["test"])]
    rows = [[search_part(gathered[t], tables(r), test, train, K, search or {}) for r in plan["training"]]
            for t in range(len(plan["test"]))]
    order = test_order or range(len(rows))
    out = tmp_path / f"{name}.parquet"
    write_neighbours(([rows[t] for t in order]), K, {"query_block": 1024, "reference_block": 8192}, str(out))
    return out.read_bytes()


def brute_force(paths, test, train) -> dict[str, list[str]]:
    ids, vectors = [], []
    for path in paths:
        table = pq.read_table(path)
        ids += table.column("image_id").to_pylist()
        vectors += table.column("vector").to_pylist()
    vectors = np.array(vectors, dtype=np.float64)
    train_rows = [n for n, i in enumerate(ids) if i in train]
    expected = {}
    for n, image in enumerate(ids):
        if image in test:
            squared = ((vectors[train_rows] - vectors[n]) ** 2).sum(axis=1)
            expected[image] = [ids[train_rows[j]] for j in np.argsort(squared, kind="stable")[:K]]
    return expected


def test_shard_blocks_are_consecutive_and_one_when_the_build_is_small():
    assert shard_blocks([5, 5, 5], 100) == [[0, 1, 2]]
    assert shard_blocks([5, 5, 5, 5], 10) == [[0, 1], [2, 3]]
    assert shard_blocks([5, 12, 5], 10) == [[0], [1], [2]]  # a shard larger than a block is one alone
    plan = block_plan({"test_block_images": 10, "training_block_images": 15}, [5, 5, 5, 5])
    assert plan == {"test": [[0, 1], [2, 3]], "training": [[0, 1, 2], [3]]}


@pytest.mark.parametrize("test_images,training_images,search", [
    (40, 30, None),
    (1, 1, {"query_block": 3, "reference_block": 4}),
    (60, 17, {"query_block": 7, "reference_block": 5}),
    (200, 55, None),
])
def test_parts_merge_into_the_bytes_of_one_search_and_brute_force(shards, tmp_path, test_images, training_images,
                                                                   search):
    paths, _, ids = shards
    test, train = split_sets(ids)
    one = blocked_table(paths, test, train, block_plan({"test_block_images": 10**6, "training_block_images": 10**6},
                                                       SHARD_SIZES), tmp_path, "one")
    plan = block_plan({"test_block_images": test_images, "training_block_images": training_images}, SHARD_SIZES)
    order = random.Random(test_images).sample(range(len(plan["test"])), len(plan["test"]))
    assert blocked_table(paths, test, train, plan, tmp_path, "blocks", search, order) == one
    table = pq.read_table(tmp_path / "blocks.parquet")
    assert dict(zip(table.column("image_id").to_pylist(), table.column("neighbours").to_pylist())) == \
        brute_force(paths, test, train)


def test_gathered_test_vectors_give_each_part_the_table_of_its_test_blocks_shards(shards, tmp_path):
    paths, vectors, ids = shards
    test, train = split_sets(ids)
    for number, block in enumerate(shard_blocks(SHARD_SIZES, 1)):  # shard 1 holds no image
        tables = [paths[shard] for shard in block]
        gathered = tmp_path / f"queries-{number}.parquet"
        rows = gather_queries(tables, test, str(gathered))
        in_order = [i for i in pq.read_table(tables[0]).column("image_id").to_pylist() if i in test]
        assert pq.read_table(gathered).column("image_id").to_pylist() == in_order and rows == len(in_order)
        assert vectors_shape(str(gathered)) == (len(in_order), 12)
        assert search_part([str(gathered)], paths, test, train, K, {}) == search_part(tables, paths, test, train, K, {})
    # A part declares the test vectors it holds, not its test block's images.
    assert part_memory_mb(9_231, 5_000) < part_memory_mb(510_123, 5_000) // 10


def test_ties_go_to_the_earlier_shard_across_training_blocks(shards):
    paths, vectors, ids = shards
    test, train = split_sets(ids)
    parts = [search_part(paths, [path], test, train, K, {}) for path in paths]  # one training block a shard
    test_ids, neighbours, squared = merge_parts(parts, K)
    order = {image: n for n, image in enumerate(i for path in paths
                                                for i in pq.read_table(path).column("image_id").to_pylist())}
    for names, distances in zip(neighbours, squared):
        keys = [(d, order[name]) for d, name in zip(distances, names)]
        assert keys == sorted(keys)
    assert any(len(set(row)) < len(row) for row in squared.tolist())  # ties were there to break


def test_the_same_bytes_on_one_and_two_blas_threads(shards, tmp_path):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    paths, _, ids = shards
    test, train = split_sets(ids)
    plan = block_plan({"test_block_images": 50, "training_block_images": 40}, SHARD_SIZES)
    results = []
    for threads in (1, 2):
        with threadpoolctl.threadpool_limits(threads):
            results.append(blocked_table(paths, test, train, plan, tmp_path, f"threads{threads}"))
    assert results[0] == results[1]


# --- the workflow ------------------------------------------------------------

def blocks_config(workdir: Path, test_block_images: int, training_block_images: int) -> Path:
    """The demo's benchmark with two images a shard and the given neighbour blocks, a job per
    feature's search as in a build of more than sharding.merge_below_images."""
    config = {"output": "out", **demo_sections(REPO / "demo"), "features": {"bow": {"words": 50, "iterations": 10}},
              "sharding": {"images_per_shard": 2, "merge_below_images": 0}}
    config["benchmark"]["neighbours"] = {"test_block_images": test_block_images,
                                         "training_block_images": training_block_images}
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_larger_build_plans_several_search_jobs_per_feature(tmp_path):
    blocked = planned_jobs(tmp_path, blocks_config(tmp_path, 4, 2))
    features = blocked["benchmark_neighbours"]
    assert blocked["benchmark_neighbour_block"] >= 4 * features
    assert blocked["benchmark_neighbour_block"] % features == 0
    whole = planned_jobs(tmp_path, blocks_config(tmp_path, 10**5, 2 * 10**5))
    assert "benchmark_neighbour_block" not in whole and whole["benchmark_neighbours"] == features


def test_neighbours_in_blocks_are_the_bytes_of_one_search(demo_workdir_in_shards, tmp_path):
    """The neighbours of the demo in two shards, built in one job per feature
    (demo_workdir_in_shards), rebuilt in blocks of a shard: the same bytes."""
    workdir = copy_build(demo_workdir_in_shards, tmp_path / "build")
    folder = workdir / "out" / "work" / "neighbours"
    before = {path.name: path.read_bytes() for path in sorted(folder.glob("*.parquet"))}
    assert len(before) >= 4 and not (workdir / "out" / "work" / "neighbour_blocks").exists()
    shutil.rmtree(folder)
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["benchmark"]["neighbours"] = {"test_block_images": 4, "training_block_images": 2}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    targets = [f"out/work/neighbours/{name}" for name in before]
    run_snakemake(workdir, *targets, "--cores", "2", "--configfile", str(workdir / "config.yaml"))
    assert len(list((workdir / "out" / "work" / "neighbour_blocks").rglob("*.parquet"))) >= 4 * len(before)
    assert {path.name: path.read_bytes() for path in sorted(folder.glob("*.parquet"))} == before
