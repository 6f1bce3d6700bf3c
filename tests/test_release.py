"""Release, provenance and audit (issue 7) on real builds of the demo."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from annobench.release.assemble import (
    CRATE,
    HEADER,
    JOBS,
    MANIFEST,
    current_records,
    job_name,
    load_records,
    manifest_entries,
)
import annobench.release.audit as audit_module
from annobench.release.audit import audit, audit_build, main_audit, read_jobs, read_manifest
from annobench.release.bag import decode_path, encode_path, human_size, manifest_text, read_bag_info, write_bag
from helpers import copy_build, run_snakemake


@pytest.fixture(scope="module")
def release(demo_build) -> Path:
    """The demo release's files: the payload of its bag."""
    return demo_build / "release" / "data"


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
    assert {e["job"] for e in entries if e["rule"] != "release"} == set(jobs)
    assert len(jobs) == len(list((release / JOBS).open()))
    assert max(len(line) for line in (release / MANIFEST).open()) < 1000
    info = json.loads((release / HEADER).read_text())
    assert info["code"]["commit"] and info["dependencies"]["numpy"] and info["snakemake"]
    assert any("snakemake" in part for part in info["command_line"])


# --- the release as a BagIt bag (RFC 8493) ----------------------------------------------

def sha256sum_check(folder: Path, manifest: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sha256sum", "--strict", "-c", manifest], cwd=folder, capture_output=True, text=True)


def test_the_release_is_a_bag_that_bagit_and_sha256sum_validate(demo_build):
    import bagit

    bag = demo_build / "release"
    assert sorted(p.name for p in bag.iterdir()) == ["bag-info.txt", "bagit.txt", "data", "manifest-sha256.txt",
                                                      "tagmanifest-sha256.txt"]
    assert (bag / "bagit.txt").read_bytes() == b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n"
    loaded = bagit.Bag(str(bag))
    loaded.validate()  # every payload file hashed against the manifest, the tag manifest, the Oxum
    released = [e for e in read_manifest(bag / "data") if e["released"]]
    assert set(loaded.payload_files()) == {f"data/{e['path']}" for e in released}
    total = sum((bag / "data" / e["path"]).stat().st_size for e in released)
    info = json.loads((bag / "data" / HEADER).read_text())
    assert loaded.info["Payload-Oxum"] == f"{total}.{len(released)}"
    assert loaded.info["Bagging-Date"] == info["created"][:10]
    assert loaded.info["Bag-Size"] == human_size(total)
    assert loaded.info["External-Description"].startswith(info["config"]["release"]["title"])
    assert "Source-Organization" not in loaded.info  # the demo sets no release.organization
    checked = sha256sum_check(bag, "manifest-sha256.txt")
    assert checked.returncode == 0 and checked.stdout.count(": OK\n") == len(released), checked.stderr
    assert sha256sum_check(bag, "tagmanifest-sha256.txt").returncode == 0
    code, report = audit_text(bag)  # the audit of the bag: its payload, and its tag files
    assert code == 0, report


def test_a_flipped_bit_fails_bagit_sha256sum_and_the_audit(demo_build, tmp_path):
    import bagit

    bag = tmp_path / "bag"
    shutil.copytree(demo_build / "release", bag)  # real copies
    victim = "data/tables/gist/shard-00000.parquet"
    data = bytearray((bag / victim).read_bytes())
    data[len(data) // 3] ^= 0x04
    (bag / victim).write_bytes(bytes(data))
    with pytest.raises(bagit.BagValidationError) as failed:
        bagit.Bag(str(bag)).validate()
    assert [detail.path for detail in failed.value.details] == [victim]
    checked = sha256sum_check(bag, "manifest-sha256.txt")
    assert checked.returncode == 1 and f"{victim}: FAILED" in checked.stdout
    code, report = audit_text(bag)
    assert code == 1 and "tampered: tables/gist/shard-00000.parquet" in report
    # A changed tag file: the tag manifest no longer holds, and the audit names it.
    (bag / victim).write_bytes((demo_build / "release" / victim).read_bytes())
    info = (bag / "bag-info.txt").read_text().replace("Bagging-Date: 2", "Bagging-Date: 1")
    (bag / "bag-info.txt").write_text(info)
    with pytest.raises(bagit.BagValidationError):
        bagit.Bag(str(bag)).validate()
    code, report = audit_text(bag)
    assert code == 1 and report.splitlines()[0] == ("tampered: bag-info.txt: its bytes differ from its sha256 in "
                                                    "tagmanifest-sha256.txt")


def test_manifest_paths_are_percent_encoded_for_cr_lf_and_percent_only():
    for path in ("a%b", "a%25b", "line\nbreak", "cr\rlf\r\n", "plain name é/x.png", "%0A"):
        assert decode_path(encode_path(path)) == path
    assert encode_path("a%0A\n\r b") == "a%250A%0A%0D b"
    assert decode_path("a%0a%0d%25") == "a\n\r%"
    assert manifest_text([("data/z", "2"), ("data/%", "1")]) == "1  data/%25\n2  data/z\n"
    assert [human_size(n) for n in (0, 999, 1000, 17_450_161, 5 * 10**12)] == [
        "0 B", "999 B", "1.0 kB", "17.5 MB", "5.0 TB"]


def awkward_bag(folder: Path, names: list[str], organization: str = "") -> list[dict]:
    """A bag of small files under `folder`/data/ named `names`; their manifest entries."""
    import hashlib

    payload = []
    for number, name in enumerate(names):
        data = f"file {number}\n".encode() * (number + 1)
        (folder / "data" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "data" / name).write_bytes(data)
        payload.append({"path": name, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "released": True})
    metadata = {"name": "n", "title": "A title", "description": "word " * 40, "organization": organization}
    write_bag(folder, payload, metadata, "2026-01-02T03:04:05+00:00")
    return payload


def test_a_bag_of_file_names_with_line_breaks_validates_with_bagit(tmp_path):
    import bagit

    names = ["resized/x\ny.jpg", "resized/cr\r.jpg", "README.md", "dir/sub dir/é.txt"]
    awkward_bag(tmp_path, names, organization="The Lab")
    loaded = bagit.Bag(str(tmp_path))
    loaded.validate()
    assert loaded.info["Source-Organization"] == "The Lab" and loaded.info["Bagging-Date"] == "2026-01-02"
    unfolded = loaded.info["External-Description"].replace("\n", "")  # bagit keeps the fold's line break
    assert unfolded == "A title (n). " + ("word " * 40).strip() == read_bag_info(tmp_path / "bag-info.txt")[
        "External-Description"]
    assert max(len(line) for line in (tmp_path / "bag-info.txt").read_text().splitlines()) <= 79
    assert "data/resized/x%0Ay.jpg" in (tmp_path / "manifest-sha256.txt").read_text()
    (tmp_path / "data" / names[0]).write_bytes(b"other bytes")
    with pytest.raises(bagit.BagValidationError):
        bagit.Bag(str(tmp_path)).validate()


def test_a_percent_sign_in_a_file_name_is_written_and_read_as_rfc_8493_says(tmp_path):
    """Image ids made from nested paths and web addresses hold '%' (%2F for '/'): the manifest names
    such a file with '%25', and the audit's bag check reads it back to the file. (bagit-python 1.9 reads
    '%' as written, its issue 157, so it cannot validate such a bag; sha256sum -c neither.)"""
    from annobench.release.bag import check_bag, read_manifest_file

    names = ["resized/shard-00000/example.org%2Fa%2Fb.jpg", "tables/a%0Ab.parquet", "plain.txt"]
    payload = awkward_bag(tmp_path, names)
    manifest = (tmp_path / "manifest-sha256.txt").read_text()
    assert "data/resized/shard-00000/example.org%252Fa%252Fb.jpg" in manifest and "a%250Ab.parquet" in manifest
    listed = read_manifest_file(tmp_path / "manifest-sha256.txt")
    assert sorted(listed) == sorted(f"data/{name}" for name in names)
    assert all((tmp_path / path).is_file() for path in listed)
    assert check_bag(tmp_path, payload, {}) == []


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


def test_hashing_on_several_threads_finds_the_same_problems(release, demo_build, tmp_path, monkeypatch):
    monkeypatch.setattr(audit_module, "BATCH", 2)  # batches of two files: the threads share the demo's few
    copy = copy_of(release, tmp_path)
    pages = sorted((copy / "browse").rglob("*.html"))
    for page in pages[::5]:  # tampered: same size, one byte changed
        data = bytearray(page.read_bytes())
        data[-2] ^= 0x01
        page.write_bytes(bytes(data))
    (copy / "tables/gist/shard-00000.parquet").unlink()
    one, four = audit(copy, jobs=1), audit(copy, jobs=4)
    assert len([p for p in one if p.kind == "tampered"]) == len(pages[::5])
    assert four == one
    assert audit_build(demo_build, jobs=1) == audit_build(demo_build, jobs=4) == ([], audit_build(demo_build)[1])


def test_editing_a_raw_input_after_the_build_makes_outputs_stale(demo_workdir_elsewhere):
    """On the build of demo_workdir_elsewhere, whose job records name its own copy of the demo's
    files: the photo is put back, bytes and time, for the tests that read that build after."""
    release = demo_workdir_elsewhere / "out" / "release"
    photo = demo_workdir_elsewhere / "demo" / "images" / "coffee.jpg"
    original, times = photo.read_bytes(), photo.stat()
    try:
        photo.write_bytes(original + b"\0")
        problems = [str(p) for p in audit(release)]
    finally:
        photo.write_bytes(original)
        os.utime(photo, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert problems and all(p.startswith("stale: ") for p in problems)
    assert any(f"raw input {photo.resolve()} has changed" in p for p in problems)
    assert any(p.startswith("stale: tables/images/shard-00000.parquet") for p in problems)
    assert audit(release) == []  # put back: the build is whole again


def outside_by_name(value):
    """A job's named files with every path outside the build (absolute) replaced by its file name."""
    if isinstance(value, dict):
        return {key: outside_by_name(item) for key, item in value.items()}
    if isinstance(value, list):
        return [outside_by_name(item) for item in value]
    return Path(value).name if value.startswith("/") else value


def test_two_builds_in_different_folders_have_the_same_data_and_manifest(release, demo_workdir_elsewhere):
    other = demo_workdir_elsewhere / "out" / "release" / "data"
    for entry in read_manifest(release):
        if entry["released"] and entry["path"] not in (JOBS, HEADER, CRATE, MANIFEST):  # times, by design
            assert (release / entry["path"]).read_bytes() == (other / entry["path"]).read_bytes(), entry["path"]

    def comparable(folder: Path) -> tuple[list[dict], list[dict]]:
        jobs = list(read_jobs(folder).values())
        manifest = read_manifest(folder)
        for entry in manifest:  # the files that hold times and absolute paths by design
            if entry["path"] in (JOBS, HEADER, CRATE):
                entry.pop("sha256"), entry.pop("size")
        for job in jobs:
            job.pop("finished")
            for raw in job["raw_inputs"]:
                raw.pop("absolute_path")
            for source in job["inputs"]:  # a raw file named by Snakemake (the page mapping)
                if source["path"].startswith("/"):
                    source["path"] = Path(source["path"]).name
            job["files"] = outside_by_name(job["files"])  # the same raw file, where each build found it
        return manifest, jobs

    assert comparable(release) == comparable(other)


def test_ro_crate_loads_with_the_rocrate_library(release):
    from rocrate.rocrate import ROCrate

    crate = ROCrate(release)
    actions = [e for e in crate.get_entities() if e.type == "CreateAction"]
    assert len(actions) >= 15
    files = {e.id: e for e in crate.get_entities() if e.type == "File"}
    manifest = {e["path"]: e for e in read_manifest(release) if e["released"]}
    assert set(manifest) - {CRATE} <= set(files)
    assert all(files[path]["sha256"] == entry["sha256"] for path, entry in manifest.items() if path != CRATE)
    ingest = next(a for a in actions if a["name"] == "ingest_shard-00000")
    assert any(r.id == "tables/images/shard-00000.parquet" for r in ingest["result"])


@pytest.fixture(params=["demo_build", "msrc_build"])
def built(request) -> Path:
    """The output folder of the demo build, then of the real MSRC-v2 + kiwix build."""
    return request.getfixturevalue(request.param)


def test_every_file_of_a_release_is_in_its_manifest(built):
    release = built / "release" / "data"
    listed = {e["path"] for e in read_manifest(release) if e["released"]}
    present = {p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()}
    assert present == listed
    assert {MANIFEST, JOBS, HEADER, CRATE, "croissant.json", "README.md"} <= listed
    assert not any(Path(path).name.startswith(".") for path in present)


def test_every_table_folder_reads_as_its_own_table(built):
    import pandas as pd
    import pyarrow.parquet as pq

    for folder in sorted(p for p in (built / "release" / "data" / "tables").iterdir() if p.is_dir()):
        files = sorted(folder.glob("*.parquet"))
        schemas = {pq.read_schema(f).remove_metadata() for f in files}
        assert len(schemas) == 1, f"{folder.name} holds {len(schemas)} schemas"
        frame = pd.read_parquet(folder)
        assert list(frame.columns) == schemas.pop().names, folder.name
        assert len(frame) == sum(pq.read_metadata(f).num_rows for f in files)


def test_ro_crate_loads_without_warnings(built):
    import warnings

    from rocrate.rocrate import ROCrate

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        crate = ROCrate(built / "release" / "data")
    assert not [str(w.message) for w in caught]
    raw = [e for e in crate.get_entities() if e.id.startswith("file://")]
    assert raw and all(e in crate.root_dataset["hasPart"] for e in raw)


def offline_validator_cache(cache: Path) -> Path:
    """An HTTP cache (requests_cache, as rocrate-validator keeps it) holding the RO-Crate 1.1
    JSON-LD context the rocrate package ships: the validator then runs without the network."""
    import io

    import rocrate
    import urllib3
    from requests.adapters import HTTPAdapter
    from requests_cache import CachedSession

    context = (Path(rocrate.__file__).parent / "data" / "ro-crate.jsonld").read_bytes()

    class ShippedContext(HTTPAdapter):
        def send(self, request, **kwargs):
            body = urllib3.HTTPResponse(body=io.BytesIO(context), status=200, preload_content=False,
                                        headers={"Content-Type": "application/ld+json"}, request_url=request.url)
            return self.build_response(request, body)

    session = CachedSession(cache_name=str(cache), backend="sqlite", expire_after=-1, allowable_methods=("GET",),
                            allowable_codes=(200, 302, 404))
    session.mount("https://", ShippedContext())
    assert session.get("https://w3id.org/ro/crate/1.1/context").status_code == 200
    session.close()
    return cache


@pytest.mark.parametrize("profile", ["process-run-crate-0.5", "ro-crate-1.1"])
def test_ro_crate_passes_roc_validator_offline(built, tmp_path, profile):
    services = pytest.importorskip("rocrate_validator.services", reason="roc-validator is a test dependency")
    settings = services.ValidationSettings(
        rocrate_uri=str(built / "release" / "data"), profile_identifier=profile, requirement_severity="REQUIRED",
        offline=True, cache_path=offline_validator_cache(tmp_path / "http_cache"))
    result = services.validate(settings)
    assert not [f"{issue.check.identifier}: {issue.message}" for issue in result.get_issues()]
    assert result.passed()


def test_build_audit_names_missing_and_changed_build_files(demo_build, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(demo_build, out, ignore=shutil.ignore_patterns("release"))
    code, report = audit_text(out)
    assert code == 0 and "build audit passed" in report
    (out / "tables" / "gist" / "shard-00000.parquet").unlink()
    intermediate = next((out / "work" / "bow_sample").rglob("*.npy"))
    intermediate.write_bytes(intermediate.read_bytes()[:-1] + b"\1")
    code, report = audit_text(out)
    assert code == 1
    assert "missing: tables/gist/shard-00000.parquet: made by job feature_gist-00000" in report
    assert f"differs: {intermediate.relative_to(out).as_posix()}" in report
    assert "snakemake --cores all" in report


def test_a_deleted_build_table_comes_back_when_named_as_target(demo_workdir, tmp_path):
    """What the README's recovery section says: a plain rerun leaves a deleted intermediate
    missing behind an up-to-date release; naming it as a target rebuilds the same bytes."""
    tmp_path = copy_build(demo_workdir, tmp_path / "build")
    out = tmp_path / "out"
    victim = out / "tables" / "gist" / "shard-00000.parquet"
    before = victim.read_bytes()
    victim.unlink()
    plain = run_snakemake(tmp_path, "--cores", "2", "--configfile", str(tmp_path / "config.yaml"))
    assert not victim.exists(), plain.stdout[-2000:]
    target = victim.relative_to(tmp_path).as_posix()  # as the audit names it, from the working directory
    run_snakemake(tmp_path, "--cores", "2", target, "--configfile", str(tmp_path / "config.yaml"))
    assert victim.read_bytes() == before
    code, report = audit_text(out)
    assert code == 0, report


def test_a_record_left_by_a_renamed_rule_does_not_claim_files_written_since(demo_build):
    """A build resumed after an upgrade keeps the records of rules that no longer exist (the one
    `baselines` job before runs had jobs of their own); the manifest names the job that wrote
    each file last, and the stale record drops out of the jobs."""
    records = load_records(demo_build)
    current = next(r for r in records if "runs/knn_gist.parquet" in {o["path"] for o in r["outputs"]})
    stale = {**current, "rule": "baselines", "wildcards": {}, "finished": "2000-01-01T00:00:00+00:00"}
    for order in ([*records, stale], [stale, *records]):
        files, jobs = manifest_entries(demo_build, order)
        run = next(f for f in files if f["path"] == "runs/knn_gist.parquet")
        assert run["job"] == job_name(current) and run["job"].startswith("baseline")
        assert "baselines" not in {job_name(job) for job in jobs}
    # Nor does the crate mention it: it is no longer a record of this build.
    assert current_records([*records, stale]) == records


def test_slim_records_give_the_manifest_jobs_and_crate_of_whole_ones(built, tmp_path):
    """The release holds each record slimmed (load_lineage_records) and writes its crate entity by
    entity: the same lines and bytes as from the whole records and one json.dumps of the crate."""
    from annobench.release.assemble import (
        CRATE_CONTEXT, crate_graph, full_record, job_entry, load_lineage_records, write_crate)

    whole, slim = current_records(load_records(built)), current_records(load_lineage_records(built))
    assert len(slim) == len(whole) and all("raw_inputs" not in r for r in slim)
    (files, jobs), (slim_files, slim_jobs) = manifest_entries(built, whole), manifest_entries(built, slim)
    assert slim_files == files
    assert [job_entry(full_record(r)) for r in slim_jobs] == [job_entry(r) for r in jobs]
    info = json.loads((built / "release" / "data" / HEADER).read_text())
    write_crate(tmp_path / CRATE, files, slim, info)
    whole_crate = {"@context": CRATE_CONTEXT, "@graph": list(crate_graph(files, whole, info))}
    assert (tmp_path / CRATE).read_text(encoding="utf-8") == json.dumps(whole_crate, indent=1, sort_keys=True)
    assert len(whole_crate["@graph"]) > len(files) + len(jobs)


def test_the_build_audit_ignores_a_record_whose_files_a_later_job_rewrote(tmp_path):
    """A resumed build's stale record (a renamed rule's) names bytes since rewritten: not a problem."""
    import hashlib

    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    (out / "provenance" / "jobs").mkdir(parents=True)
    run = out / "runs" / "knn_gist.txt"
    run.write_bytes(b"new bytes\n")

    def record(rule, wildcards, finished, content):
        output = {"path": "runs/knn_gist.txt", "sha256": hashlib.sha256(content).hexdigest(), "size": len(content)}
        return {"rule": rule, "wildcards": wildcards, "finished": finished, "outputs": [output]}

    records = {"baselines": record("baselines", {}, "2026-01-01T00:00:00+00:00", b"old bytes, longer\n"),
               "baseline-knn_gist": record("baseline", {"run": "knn_gist"}, "2026-02-01T00:00:00+00:00",
                                           b"new bytes\n")}
    for name, content in records.items():
        (out / "provenance" / "jobs" / f"{name}.json").write_text(json.dumps(content))
    assert audit_build(out) == ([], 1)
    run.write_bytes(b"tampered\n")
    assert [p.kind for p in audit_build(out)[0]] == ["differs"]
