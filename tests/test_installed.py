"""The package installs whole: the project, installed with `pip install` (not editable) into a fresh
virtual environment, runs its commands from a folder that is not a checkout, on real files.

The environment sees the test interpreter's site-packages for the dependencies (the machines reach
the package registries, but a test should not download NumPy); annobench itself comes from the
installed copy, and the test checks that it is that copy that runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from helpers import KIWIX, REAL, REAL_IMAGES, REPO, require_shared

RUNS = REAL / "runs" / "imageclef2014_devel"
# What is installed from: the project without its tests, build folders and outputs.
LEFT_OUT = shutil.ignore_patterns(".git", "tests", "results", "data", ".snakemake", "build", "*.egg-info",
                                  "__pycache__", ".pytest_cache", "site")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The bin/ folder of a fresh virtual environment holding the installed package."""
    root = tmp_path_factory.mktemp("installed")
    source = root / "source"
    shutil.copytree(REPO, source, symlinks=True, ignore=LEFT_OUT)  # links as in a checkout
    venv = root / "venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], cwd=root)
    # A user's `pip install .`: not editable, built in pip's isolated build environment (which
    # fetches the build-system requirements from the package index).
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(source)], cwd=root)
    shutil.rmtree(source)  # nothing may read the files the wheel was built from
    return venv / "bin"


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run outside the checkout, with no PYTHONPATH pointing back into it."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    assert done.returncode == 0, f"{command[:3]} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def test_the_installed_package_holds_the_default_config_and_its_schema(installed, tmp_path):
    where = run([str(installed / "python"), "-c", "import annobench, annobench.core.config as c; "
                 "print(annobench.__file__); print(c.DEFAULT_CONFIG_PATH); print(c.SCHEMA_PATH)"], cwd=tmp_path)
    package, config, schema = (Path(line) for line in where.stdout.splitlines())
    venv = installed.parent
    assert venv in package.parents, f"{package}: not the installed copy"
    for path in (config, schema):
        assert venv in path.parents and path.is_file() and not path.is_symlink()
    assert yaml.safe_load(config.read_text(encoding="utf-8")) == \
        yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8"))


def test_text_runs_on_real_pages_with_the_default_config(installed, tmp_path):
    pages = require_shared(KIWIX)
    out = tmp_path / "text"
    run([str(installed / "annobench"), "text", "--pages", str(pages), "--out", str(out)], cwd=tmp_path)
    terms = pq.read_table(out / "tables" / "text_terms").num_rows
    captions = pq.read_table(out / "tables" / "page_captions").num_rows
    assert terms > 0 and captions > 0


def test_inventory_reads_a_config_of_its_own(installed, tmp_path):
    images = require_shared(REAL_IMAGES / "bsds500" / "train")
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"input": {"images": str(images)}, "output": str(tmp_path / "out")}))
    done = run([str(installed / "annobench"), "inventory", "--configfile", str(config)], cwd=tmp_path)
    expected = len(list(images.glob("*.jpg")))
    assert f"{expected} images" in done.stdout, done.stdout[-2000:]


def test_check_run_and_evaluate_score_a_real_run(installed, tmp_path):
    run_path = require_shared(RUNS) / "baseline_occurrence_devel_sift.res"
    lines = run_path.read_text(encoding="utf-8").splitlines()
    concepts = [f"c{k:03d}" for k in range(100)]
    (tmp_path / "concepts.txt").write_text("\n".join(concepts) + "\n")
    lists = [(line.split()[0], concepts[: (len(line.split()) - 1) // 2]) for line in lines]
    (tmp_path / "lists.txt").write_text("".join(f"{i} {' '.join(c)}\n" for i, c in lists))
    listed = ["--concepts", str(tmp_path / "concepts.txt"), "--concept-lists", str(tmp_path / "lists.txt")]
    checked = run([str(installed / "annobench"), "check-run", *listed, str(run_path)], cwd=tmp_path)
    assert f"valid, {len(lines)} lines" in checked.stdout
    # Truth: each image's first listed concept.
    (tmp_path / "truth.csv").write_text("image_id,concept\n" + "".join(f"{i},{c[0]}\n" for i, c in lists))
    run([str(installed / "annobench"), "evaluate", "--truth", str(tmp_path / "truth.csv"), "--run", str(run_path),
         *listed, "--json", str(tmp_path / "measures.json")], cwd=tmp_path)
    measures = json.loads((tmp_path / "measures.json").read_text(encoding="utf-8"))
    assert 0 <= measures["MF1-samples"] <= 1 and 0 <= measures["MAP-samples"] <= 1
