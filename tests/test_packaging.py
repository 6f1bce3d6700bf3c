"""The conda environment and the pip requirements name the same dependencies."""

from __future__ import annotations

import re
import tomllib

import yaml

from helpers import REPO

# conda-forge names that differ from PyPI's.
CONDA_TO_PIP = {"snakemake-minimal": "snakemake"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[]", requirement.strip(), maxsplit=1)[0].lower()


def test_conda_env_matches_pyproject():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    pip_names = {_name(r) for r in pyproject["project"]["dependencies"]}
    env = yaml.safe_load((REPO / "envs" / "annobench.yaml").read_text())
    conda_names = set()
    for entry in env["dependencies"]:
        if isinstance(entry, dict):
            conda_names.update(_name(r) for r in entry["pip"])
        elif _name(entry) not in {"python", "pip"}:
            conda_names.add(CONDA_TO_PIP.get(_name(entry), _name(entry)))
    assert conda_names == pip_names


def test_default_profile_is_found_by_snakemake():
    profile = REPO / "profiles" / "default" / "config.yaml"
    assert profile.is_file(), "snakemake looks for profiles/default next to the Snakefile"
    settings = yaml.safe_load(profile.read_text())
    assert settings["scheduler"] == "greedy" and settings["rerun-incomplete"] is True
