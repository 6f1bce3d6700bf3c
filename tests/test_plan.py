"""The build's plan (annobench.plan), made from a config without Snakemake: what it makes, how
its work is cut into jobs, and the one-line errors of a config it cannot build."""

from __future__ import annotations

import pytest

from annobench.core.config import deep_merge, load_config
from annobench.plan import PlanError, make_plan
from helpers import REPO, demo_sections, tree_bytes


def demo_config(**changes) -> dict:
    return deep_merge(load_config(), deep_merge({"output": "out", **demo_sections(REPO / "demo")}, changes))


def test_the_demo_is_a_small_build_whose_per_run_jobs_merge():
    config = demo_config()
    plan = make_plan(config, log=lambda line: None)
    assert plan.inventory.n_images == 9 and plan.merged  # the truncated file is listed, rejected later
    kinds = config["features"]["bow"]["kinds"]
    assert len(kinds) == 4 and plan.feature_tables == ["colorhist", "getlf", "gist", *(f"bow_{k}" for k in kinds)]
    assert set(plan.neighbours) == set(plan.feature_tables) and plan.benchmark_on and plan.regions_on
    assert {"random", "knn_gist", "cooccurrence_bow_sift"} <= set(plan.baselines)
    assert not make_plan(demo_config(sharding={"merge_below_images": 0}), log=lambda line: None).merged
    assert not make_plan(demo_config(sharding={"merge_below_images": 9}), log=lambda line: None).merged
    assert make_plan(demo_config(sharding={"merge_below_images": 10}), log=lambda line: None).merged


@pytest.mark.parametrize("changes, message", [
    ({"benchmark": {"features": ["bow_sift"]}, "features": {"bow": {"kinds": ["csift"]}}},
     "benchmark.features / benchmark.overlap.feature name features this build does not make: bow_sift"),
    ({"input": {"segmentations": ""}, "benchmark": {"ground_truth": {"source": "regions", "path": ""}}},
     "benchmark.ground_truth.source is regions but input.segmentations is empty"),
    ({"input": {"images": "/nonexistent/images"}}, "cannot list the input images"),
])
def test_a_config_the_build_cannot_make_is_one_error(changes, message):
    with pytest.raises(PlanError, match="^" + message.replace(".", r"\.")):
        make_plan(demo_config(**changes), log=lambda line: None)


def test_without_pages_the_cooccurrence_baselines_are_skipped_with_a_note():
    plan = make_plan(demo_config(input={"page_map": ""}, benchmark={"illustration": {"enabled": False}}),
                     log=lambda line: None)
    assert plan.text is None and not [run for run in plan.baselines if run.startswith("cooccurrence")]
    assert plan.notes == ["annobench: no text features (input.page_map is empty): co-occurrence baselines skipped"]


def test_merged_jobs_write_the_bytes_of_one_job_a_run(demo_build, demo_workdir_per_run):
    """The demo (merged: one job for the baselines, one for the neighbour searches) against the
    same build with a job per run and feature."""
    apart = demo_workdir_per_run / "out"
    rules = {path.stem.split("-")[0] for path in (apart / "provenance" / "jobs").glob("*.json")}
    assert {"baseline", "benchmark_neighbours", "campaign_run_statistics"} <= rules
    merged = {path.stem.split("-")[0] for path in (demo_build / "provenance" / "jobs").glob("*.json")}
    assert {"baseline_merged", "benchmark_neighbours_merged"} <= merged
    # The job a run adds a file of its own only where one job's work was split: a run's statistics.
    per_run, merged_bytes = tree_bytes(apart), tree_bytes(demo_build)
    statistics = {name for name in per_run if name.startswith("work/campaign/baselines/")}
    baseline_runs = {path.stem.removeprefix("baseline-") for path in (apart / "provenance" / "jobs").glob("baseline-*")}
    assert statistics == {f"work/campaign/baselines/{run}.json" for run in baseline_runs}
    assert {name: data for name, data in per_run.items() if name not in statistics} == merged_bytes
