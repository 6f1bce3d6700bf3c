"""Release, provenance and audit (issue 7) on real builds of the demo."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
import yaml

from annobench.release import HEADER, JOBS, MANIFEST, audit, main_audit, read_jobs, read_manifest
from conftest import REPO, demo_sections, run_snakemake

pytestmark = pytest.mark.slow


def build_demo(workdir: Path) -> Path:
    """The demo, from a copy of its files (so tests may edit raw inputs), released into workdir/out."""
    demo = workdir / "demo"
    shutil.copytree(REPO / "demo", demo)
    config = {"output": "out", **demo_sections(demo), "features": {"bow": {"words": 50, "iterations": 10}}}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(workdir, "--cores", "2", "--configfile", str(workdir / "config.yaml"))
    return workdir / "out" / "release"


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return build_demo(tmp_path_factory.mktemp("build_a"))


def copy_of(release: Path, tmp_path: Path) -> Path:
    target = tmp_path / "release"
    shutil.copytree(release, target)  # real copies: tampering must not touch the build
    return target


def audit_text(release_dir: Path, recompute: int = 0) -> tuple[int, str]:
    out = io.StringIO()
    return main_audit(str(release_dir), recompute, out=out), out.getvalue()


def test_demo_release_passes_its_audit_and_recomputes_bit_for_bit(release):
    code, report = audit_text(release, recompute=10)
    assert code == 0, report
    assert "audit passed" in report and "10 job(s) recomputed" in report
    entries = read_manifest(release)
    released = [e for e in entries if e["released"]]
    assert {e["path"].split("/")[0] for e in released} >= {"tables", "resized", "artefacts", "exports", "segmentations"}
    jobs = read_jobs(release)
    images = next(e for e in entries if e["path"] == "tables/images/shard-00000.parquet")
    assert images["rule"] == "ingest_shard" and images["rows"] == 8
    assert {r["path"] for r in jobs[images["job"]]["raw_inputs"]} >= {"astronaut.jpg", "truncated.jpg"}
    codebook = next(e for e in entries if e["path"] == "artefacts/codebook_sift.parquet")
    sample = jobs[codebook["job"]]["inputs"][0]["path"]
    assert sample.startswith("work/bow_sample/") and not next(e for e in entries if e["path"] == sample)["released"]
    # Lineage is written once per job: a file's line names its job and stays short.
    assert {e["job"] for e in entries} == set(jobs) and len(jobs) == len(list((release / JOBS).open()))
    assert max(len(line) for line in (release / MANIFEST).open()) < 1000
    info = json.loads((release / HEADER).read_text())
    assert info["code"]["commit"] and info["dependencies"]["numpy"] and info["snakemake"]
    assert any("snakemake" in part for part in info["command_line"])


@pytest.mark.parametrize("damage", ["byte", "delete", "add"])
def test_tampered_missing_or_extra_files_fail_the_audit_by_name(release, tmp_path, damage):
    copy = copy_of(release, tmp_path)
    victim = "tables/gist/shard-00000.parquet"
    if damage == "byte":
        data = bytearray((copy / victim).read_bytes())
        data[len(data) // 2] ^= 0x01
        (copy / victim).write_bytes(bytes(data))
    elif damage == "delete":
        (copy / victim).unlink()
    else:
        victim = "tables/gist/shard-00001.parquet"
        shutil.copy(copy / "tables/gist/shard-00000.parquet", copy / victim)
    code, report = audit_text(copy)
    assert code == 1
    kind = {"byte": "tampered", "delete": "missing", "add": "extra"}[damage]
    assert f"{kind}: {victim}" in report


def test_editing_a_raw_input_after_the_build_makes_outputs_stale(tmp_path):
    release = build_demo(tmp_path)
    photo = tmp_path / "demo" / "images" / "coffee.jpg"
    photo.write_bytes(photo.read_bytes() + b"\0")
    problems = [str(p) for p in audit(release)]
    assert problems and all(p.startswith("stale: ") for p in problems)
    assert any(f"raw input {photo.resolve()} has changed" in p for p in problems)
    assert any(p.startswith("stale: tables/images/shard-00000.parquet") for p in problems)


def test_two_builds_in_different_folders_have_the_same_data_and_manifest(release, tmp_path):
    other = build_demo(tmp_path)
    for entry in read_manifest(release):
        if entry["released"]:
            assert (release / entry["path"]).read_bytes() == (other / entry["path"]).read_bytes(), entry["path"]

    def comparable(folder: Path) -> tuple[list[dict], list[dict]]:
        jobs = list(read_jobs(folder).values())
        for job in jobs:
            job.pop("finished")
            for raw in job["raw_inputs"]:
                raw.pop("absolute_path")
            for source in job["inputs"]:  # a raw file named by Snakemake (the page mapping)
                if source["path"].startswith("/"):
                    source["path"] = Path(source["path"]).name
        return read_manifest(folder), jobs

    assert comparable(release) == comparable(other)


def test_ro_crate_loads_with_the_rocrate_library(release):
    from rocrate.rocrate import ROCrate

    crate = ROCrate(release)
    actions = [e for e in crate.get_entities() if e.type == "CreateAction"]
    assert len(actions) >= 15
    files = {e.id: e for e in crate.get_entities() if e.type == "File"}
    manifest = {e["path"]: e for e in read_manifest(release) if e["released"]}
    assert set(manifest) <= set(files)
    assert all(files[path]["sha256"] == entry["sha256"] for path, entry in manifest.items())
    ingest = next(a for a in actions if a["name"] == "ingest_shard-00000")
    assert any(r.id == "tables/images/shard-00000.parquet" for r in ingest["result"])
