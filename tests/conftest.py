"""Fixtures and hooks only; what the tests share besides is in helpers.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import (
    KIWIX,
    MSRC,
    REAL_IMAGES,
    TIER_GUARD,
    demo_build_in,
    msrc_kiwix_config,
    require_shared,
    run_snakemake,
)
from tiers import mark_items, tier_marks

pytest_plugins = ("pytester",)


# ---------------------------------------------------------------- tiers

def pytest_collection_modifyitems(config, items):
    """Every test gets its tier marks (workflow, real_data, fuzz, or else fast) from the code it runs."""
    mark_items(items)


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


# ---------------------------------------------------------------- data and builds

@pytest.fixture
def real_images() -> Path:
    return require_shared(REAL_IMAGES)


@pytest.fixture(scope="session")
def demo_build(tmp_path_factory) -> Path:
    """Output folder of a demo build (with its release), shared by the tests that only read it."""
    return demo_build_in(tmp_path_factory.mktemp("demo_build"))


@pytest.fixture(scope="session")
def msrc_build(tmp_path_factory) -> Path:
    """Output folder of the real MSRC-v2 + kiwix build with its benchmark and release."""
    if not MSRC.is_dir() or not KIWIX.is_dir():
        pytest.skip(f"needs the real MSRC-v2 photos at {MSRC} and the kiwix pages at {KIWIX} (../shared is absent)")
    workdir = tmp_path_factory.mktemp("msrc_build")
    run_snakemake(workdir, "--cores", "2", "--configfile", str(msrc_kiwix_config(workdir)))
    return workdir / "out"
