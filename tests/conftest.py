"""Fixtures and hooks only; what the tests share besides is in helpers.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import KIWIX, MSRC, REAL_IMAGES, demo_build_in, msrc_kiwix_config, require_shared, run_snakemake


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
