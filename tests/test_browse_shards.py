"""The browser by shard (issue 29): the per-shard jobs' code path writes the same bytes as the
browser built in one process, on real builds and on a synthetic build of several shards; the
workflow plans one browse_shard job per shard (and none for a one-shard build); a build of
several shards releases the same browse tree, each shard's pages made by its own job."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from annobench.release.audit import audit, audit_build, read_manifest
from annobench.release.browser.shards import build_browser_by_shard
from annobench.release.browser.writer import build_browser
from helpers import REPO, demo_sections
from test_workflow import planned_jobs


SETTINGS = {"images_per_page": 7, "top_terms": 20, "title": "test release"}


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


def both_ways(build: Path, folder: Path) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The browser of `build` in one process and by shard, each beside a link to its resized/."""
    sites = []
    for name, make in (("one", lambda b: build_browser(build, b, SETTINGS)),
                       ("by-shard", lambda b: build_browser_by_shard(build, b, SETTINGS, folder / "work"))):
        site = folder / name
        site.mkdir(parents=True)
        (site / "resized").symlink_to(build / "resized", target_is_directory=True)
        assert make(site / "browse") == len(tree_bytes(site / "browse"))
        sites.append(tree_bytes(site / "browse"))
    return sites[0], sites[1]


def test_by_shard_gives_the_demo_browser_byte_for_byte(demo_build, tmp_path):
    one, by_shard = both_ways(demo_build, tmp_path)
    assert len(one) > 10 and any(p.startswith("overlays/") for p in one)
    assert by_shard == one


def test_by_shard_gives_the_msrc_browser_byte_for_byte(msrc_build, tmp_path):
    one, by_shard = both_ways(msrc_build, tmp_path)
    assert sum(p.startswith("images/") for p in one) > 200
    assert by_shard == one


@pytest.fixture(scope="module")
def synthetic(demo_build, tmp_path_factory) -> Path:
    """The demo repeated as 60 images in 8 shards, its ground truth, splits and runs in one file each
    (so browse_prepare regroups them), as perf/bench_browse.py makes it."""
    sys.path.insert(0, str(REPO / "perf"))
    import bench_browse

    bench_browse.IMAGES_PER_SHARD = 8
    build = tmp_path_factory.mktemp("synthetic") / "build"
    bench_browse.synthetic_build(demo_build, 60, build)
    return build


def test_by_shard_gives_a_several_shard_browser_byte_for_byte(synthetic, tmp_path):
    one, by_shard = both_ways(synthetic, tmp_path)
    shards = {p.split("/")[1] for p in one if p.startswith("images/")}
    assert len(shards) == 8
    assert any("<h2>Runs</h2>" in page.decode() for path, page in one.items() if path.startswith("images/"))
    assert by_shard == one


def test_prepared_folders_hold_only_their_shards_rows(synthetic, tmp_path):
    both_ways(synthetic, tmp_path)
    plan = json.loads((tmp_path / "work" / "plan.json").read_text())
    assert "ground_truth" in plan["bucketed"] and plan["runs"]
    for folder in sorted((tmp_path / "work").glob("shard-*")):
        shard = int(folder.name.split("-")[1])
        parts = {p.name for p in folder.glob("*/*")}
        assert parts <= {str(shard)}, (folder, parts)


def write_demo_config(workdir: Path, **extra) -> Path:
    config = {"output": "out", **demo_sections(REPO / "demo"), "features": {"bow": {"words": 50, "iterations": 10}},
              **extra}
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_build_of_several_shards_plans_one_browse_job_per_shard(tmp_path):
    jobs = planned_jobs(tmp_path, write_demo_config(tmp_path, sharding={"num_shards": 3}))
    assert (jobs["browse_prepare"], jobs["browse_shard"], jobs["browse_norms"], jobs["browse"]) == (1, 3, 3, 1)


def test_a_one_shard_build_keeps_one_browse_job(tmp_path):
    jobs = planned_jobs(tmp_path, write_demo_config(tmp_path))
    assert jobs["browse"] == 1 and not {"browse_shard", "browse_prepare", "browse_norms"} & set(jobs)


def test_a_build_of_two_shards_releases_the_one_job_browser(demo_workdir_in_shards, tmp_path):
    out = demo_workdir_in_shards / "out"
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "resized").symlink_to(out / "resized", target_is_directory=True)
    release = json.loads((out / "release" / "data" / "RELEASE.json").read_text())["config"]["release"]
    build_browser(out, reference / "browse", {**release["browse"], "title": release["title"],
                                              "description": release["description"]})  # as rule browse
    assert tree_bytes(out / "browse") == tree_bytes(reference / "browse")
    assert {p.split("/")[1] for p in tree_bytes(out / "browse") if p.startswith("images/")} == {
        "shard-00000", "shard-00001"}
    rules = {e["path"]: e["rule"] for e in read_manifest(out / "release" / "data")}
    assert rules["browse/index.html"] == "browse"
    assert {rule for path, rule in rules.items() if path.startswith("browse/images/")} == {"browse_shard"}
    assert audit(out / "release") == [] and audit_build(out)[0] == []

