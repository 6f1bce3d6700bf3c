"""The conda environment and the pip requirements name the same dependencies with the same floors, and
the floors are versions the suite runs on."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib

import yaml
from packaging.requirements import Requirement
from packaging.version import Version

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


def runtime_requirements() -> list[Requirement]:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    return [Requirement(r) for r in pyproject["project"]["dependencies"]]


def conda_floors() -> dict[str, str]:
    env = yaml.safe_load((REPO / "envs" / "annobench.yaml").read_text())
    entries = [e for entry in env["dependencies"] for e in (entry["pip"] if isinstance(entry, dict) else [entry])]
    floors = {}
    for entry in entries:
        name, _, floor = entry.partition(">=")
        if name not in ("python", "pip"):
            floors[CONDA_TO_PIP.get(name.strip(), name.strip())] = floor.strip()
    return floors


def floor_of(requirement: Requirement) -> str:
    [spec] = [spec for spec in requirement.specifier if spec.operator == ">="]
    return spec.version


def test_conda_env_has_the_floors_of_pyproject():
    assert conda_floors() == {r.name.lower(): floor_of(r) for r in runtime_requirements()}


def test_every_floor_is_a_major_minor_the_running_suite_satisfies():
    """Floors are what was tested (pyproject.toml says how they were set): the versions this suite
    runs on satisfy every floor, and each floor is a major.minor, as they were set. (Newer versions
    installed later keep the floors true; the floors then say what was tested, not what runs.)"""
    for requirement in runtime_requirements():
        installed = Version(importlib.metadata.version(requirement.name))
        floor = Version(floor_of(requirement))
        assert installed in requirement.specifier, f"{requirement.name} {installed} is below its floor {floor}"
        assert len(floor.release) == 2, f"{requirement.name}>={floor}: give the floor as major.minor"


def test_default_profile_is_found_by_snakemake():
    profile = REPO / "profiles" / "default" / "config.yaml"
    assert profile.is_file(), "snakemake looks for profiles/default next to the Snakefile"
    settings = yaml.safe_load(profile.read_text())
    assert settings["scheduler"] == "greedy" and settings["rerun-incomplete"] is True
