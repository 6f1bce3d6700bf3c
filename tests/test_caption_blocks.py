"""Meteor by blocks of images (captions.blocks): segment statistics scored in separate blocks and
processes, pooled in one EVAL, give exactly the figures of one evaluation (real references)."""

from __future__ import annotations

import pytest

from annobench.benchmark.captions.blocks import (
    HUMAN_RUN,
    block_segments,
    evaluate_statistics,
    pooled_references,
    pooled_segments,
)
from annobench.benchmark.captions.files import CaptionError, CaptionRun, References, read_references, read_run
from annobench.benchmark.captions.measure import human_bound, human_result, run_result, score_runs
from annobench.benchmark.captions.meteor import require_tools
from annobench.core.tables import write_table
from helpers import REAL, require_shared

EXAMPLE = REAL / "captions" / "clipscore_example"


@pytest.fixture(scope="module")
def example():
    require_shared(EXAMPLE)
    try:
        require_tools()
    except CaptionError as error:
        pytest.skip(str(error))
    references = read_references(str(EXAMPLE / "refs.json"))
    runs = {name: read_run(str(EXAMPLE / f"{name}_captions.json"), references) for name in ("good", "bad")}
    # One image left uncaptioned by a run: it scores 0 and its references count in the corpus.
    first = sorted(references.images)[0]
    runs["bad"] = CaptionRun({i: c for i, c in runs["bad"].captions.items() if i != first}, "bad", "json")
    return references, runs


def blocks_of(references: References, cuts: list[int]) -> list[References]:
    ids = sorted(references.images)
    edges = [0, *cuts, len(ids)]
    return [References({i: references.images[i] for i in ids[a:b]}, references.path, references.form)
            for a, b in zip(edges[:-1], edges[1:])]


def pooled_files(tmp_path, references, runs, cuts):
    """Each block's two tables written as the block jobs write them, blocks in a shuffled order."""
    paths = {"references": [], "segments": []}
    for number, block in reversed(list(enumerate(blocks_of(references, cuts)))):
        block_runs = {name: CaptionRun({i: c for i, c in run.captions.items() if i in block.images}, name, "x")
                      for name, run in runs.items()}
        tokens, segments = block_segments(block, block_runs, "ptb")
        for what, table in (("references", tokens), ("segments", segments)):
            path = tmp_path / f"{what}-{number}.parquet"
            write_table(table, path, what, params={})
            paths[what].append(str(path))
    return paths


def test_blocks_pool_to_the_figures_of_one_evaluation(example, tmp_path):
    references, runs = example
    whole = score_runs(references, runs, "ptb")
    n = len(references.images)
    paths = pooled_files(tmp_path, references, runs, [1, n // 2])
    refs = pooled_references(paths["references"])
    assert list(refs) == sorted(references.images)
    for name, run in runs.items():
        segments = pooled_segments(paths["segments"], name)
        corpus, scores = evaluate_statistics(segments)
        columns = segments.to_pydict()
        hypotheses = dict(zip(columns["image_id"], columns["hypothesis"]))
        captioned = {i for i, given in zip(columns["image_id"], columns["captioned"]) if given}
        result, per_image = run_result(refs, hypotheses, captioned, corpus, scores)
        assert (result, per_image) == whole[name]  # exactly: the same floats, not close ones
    assert whole["bad"][0]["images_not_in_run"] == 1 and whole["bad"][1][sorted(references.images)[0]] == 0.0
    human = pooled_segments(paths["segments"], HUMAN_RUN)
    corpus, scores = evaluate_statistics(human)
    assert human_result(refs, human.column("image_id").to_pylist(), corpus, scores) == human_bound(references)


def test_a_block_without_test_images_gives_empty_tables(example):
    references, runs = example
    empty = References({}, references.path, references.form)
    tokens, segments = block_segments(empty, {name: CaptionRun({}, name, "x") for name in runs}, "ptb")
    assert tokens.num_rows == 0 and segments.num_rows == 0
