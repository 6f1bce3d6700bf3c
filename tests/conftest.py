"""Fixtures and hooks only; what the tests share besides is in helpers.py.

The builds below are made once per test run (helpers.shared_build: once across xdist workers
too). A test that needs a variant copies one (helpers.copy_build) and changes one thing, so that
Snakemake reruns only what that changes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from helpers import (
    KIWIX,
    MSRC,
    POPULAR,
    REAL_IMAGES,
    REPO,
    TIER_GUARD,
    chromium_path,
    copy_build,
    demo_build_in,
    demo_sections,
    java_available,
    msrc_kiwix_config,
    require_shared,
    run_snakemake,
    saved_pages_build_in,
    shared_build,
)
from tiers import mark_items, tier_marks

pytest_plugins = ("pytester",)


# ---------------------------------------------------------------- tiers

def pytest_collection_modifyitems(config, items):
    """Every test gets its tier marks (workflow, real_data, fuzz, or else fast) from the code it runs.
    The workflow tests run first (a stable sort: each file's order kept): builds and the long tests
    start early and the quick tests fill the workers' last minutes; in file order the suite ended
    with one worker on test_workflow's builds while two sat idle for 90 s."""
    mark_items(items)
    items.sort(key=lambda item: "workflow" not in tier_marks(item))


def _guarded(item):
    TIER_GUARD.marks, TIER_GUARD.test, TIER_GUARD.missed = tier_marks(item), item.nodeid, []
    try:
        result = yield
    finally:
        missed, TIER_GUARD.marks = TIER_GUARD.missed, None
    if missed:
        pytest.fail("\n".join(dict.fromkeys(missed)), pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _guarded(item))


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: a worker more than the machine's cores. Some tests mostly wait (the SLURM
    build polls its queue, Chromium renders, a worker waits for a build another makes); the
    extra worker keeps the cores busy meanwhile (full suite on 2 cores: 15 min 39 s with 2
    workers, 14 min 49 s with 3, the same CPU time)."""
    return len(os.sched_getaffinity(0)) + 1


# ---------------------------------------------------------------- data and builds

@pytest.fixture
def real_images() -> Path:
    return require_shared(REAL_IMAGES)


@pytest.fixture(scope="session")
def demo_workdir(tmp_path_factory) -> Path:
    """Working directory of the demo build (config.yaml, the demo's files in demo/, out/), with its
    release: shared by the tests that only read it, copied by those that change it."""
    return shared_build(tmp_path_factory, "demo_build", demo_build_in)


@pytest.fixture(scope="session")
def demo_build(demo_workdir) -> Path:
    """Output folder of the demo build."""
    return demo_workdir / "out"


@pytest.fixture(scope="session")
def demo_workdir_elsewhere(tmp_path_factory) -> Path:
    """The demo built again, in another folder and on one core: the same config as demo_build, so
    its bytes and its manifest must be demo_build's."""
    return shared_build(tmp_path_factory, "demo_workdir_elsewhere", lambda workdir: demo_build_in(workdir, cores=1))


@pytest.fixture(scope="session")
def demo_workdir_per_run(demo_workdir, tmp_path_factory) -> Path:
    """The demo with a job per run and per feature's search, as a build of more
    than sharding.merge_below_images images has: the merged jobs must write the same bytes.
    Built on a copy of the demo build: the setting changes the params of the per-run families
    only, so Snakemake remakes those (and what gathers them) and reuses the images and features."""
    def per_run(workdir: Path) -> None:
        copy_build(demo_workdir, workdir)
        config = yaml.safe_load((workdir / "config.yaml").read_text())
        config["sharding"] = {"merge_below_images": 0}
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
        run_snakemake(workdir, "--cores", "2", "--configfile", str(workdir / "config.yaml"))

    return shared_build(tmp_path_factory, "demo_per_run", per_run)


@pytest.fixture(scope="session")
def demo_workdir_in_shards(tmp_path_factory) -> Path:
    """Working directory of the demo in two shards with a job per run and per feature's search
    (sharding.merge_below_images 0), a Meteor block per shard and the illustration's pages read and
    ranked in three blocks (one without a query): the layout of a large build."""
    def two_shards(config):
        config["sharding"] = {"num_shards": 2, "merge_below_images": 0}
        config["benchmark"]["illustration"]["block_images"] = 3
        if java_available():  # else the build has no caption benchmark
            config["benchmark"]["captions"]["block_images"] = 1

    return shared_build(tmp_path_factory, "demo_workdir_in_shards", lambda workdir: demo_build_in(workdir, edit=two_shards))


@pytest.fixture(scope="session")
def demo_default_workdir(tmp_path_factory) -> Path:
    """Working directory of the demo built with the default codebooks (1,000 words) and no caption
    benchmark, its files read where they are (demo/): the build test_slurm sends through SLURM."""
    def build(workdir: Path) -> None:
        config = {"output": "out", "features": {}, **demo_sections(REPO / "demo")}
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
        run_snakemake(workdir, "--cores", "2", "--configfile", str(workdir / "config.yaml"))

    return shared_build(tmp_path_factory, "demo_default", build)


@pytest.fixture(scope="session")
def msrc_workdir(tmp_path_factory) -> Path:
    """Working directory of the real MSRC-v2 + kiwix build with its benchmark and release."""
    if not MSRC.is_dir() or not KIWIX.is_dir():
        pytest.skip(f"needs the real MSRC-v2 photos at {MSRC} and the kiwix pages at {KIWIX} (../shared is absent)")

    def build(workdir: Path) -> None:
        run_snakemake(workdir, "--cores", "2", "--configfile", str(msrc_kiwix_config(workdir)))

    return shared_build(tmp_path_factory, "msrc_build", build)


@pytest.fixture(scope="session")
def msrc_build(msrc_workdir) -> Path:
    """Output folder of the real MSRC-v2 + kiwix build."""
    return msrc_workdir / "out"


@pytest.fixture(scope="session")
def kiwix_build(tmp_path_factory) -> Path:
    """Output folder of the shared kiwix Wikipedia pages built with their images (no benchmark)."""
    return shared_build(tmp_path_factory, "kiwix_build", lambda workdir: saved_pages_build_in(workdir, KIWIX)) / "out"


@pytest.fixture(scope="session")
def popular_text_build(tmp_path_factory) -> Path:
    """Output folder of the shared popular web pages (dataset_popular) with their images: the
    images and the text tables only (target text_all)."""
    return shared_build(tmp_path_factory, "popular_text_build",
                        lambda workdir: saved_pages_build_in(workdir, POPULAR, "text_all")) / "out"


@pytest.fixture(scope="module")
def chromium():
    """A headless Chromium (Playwright) for the browser tests of a module."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright Python package")
    executable = chromium_path()
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(executable), args=["--no-sandbox"])
        yield launched
        launched.close()
