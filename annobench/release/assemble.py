"""The release folder, its manifest and RO-Crate, and the audit that checks them.

A release holds every table, stored image, codebook, projection and export
of a build (hard links, or copies across file systems), and:

- MANIFEST.jsonl: one line per file, released or intermediate, with its
  sha256, size, row count and the job that made it;
- JOBS.jsonl: one line per job: its rule, wildcards and parameters, the
  files it read (with their sha256) and the raw inputs behind it. Each job
  is written once, however many files it made (a shard's 2,000 stored
  images share one line);
- RELEASE.json: code version (commit, dirty tree), Python and every
  installed distribution's version, Snakemake's version and command line,
  the config, the time and the folders (times and absolute paths live here
  and in `absolute_path`/`finished` fields only);
- ro-crate-metadata.json: the same lineage as a Workflow Run RO-Crate
  (process profile): a CreateAction per job, its inputs and outputs, and the
  raw inputs as data entities of the crate;
- croissant.json (MLCommons Croissant) and README.md (a Hugging Face dataset
  card), so dataset hubs and loaders read the tables as they are.

The manifest lists every file of the release, these included (the manifest
itself without a hash: it cannot hold its own).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.metadata
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from annobench import __version__
from annobench.release.croissant import write_croissant
from annobench.release.dataset_card import write_dataset_card
from annobench.core.fingerprint import params_hash
from annobench.core.fsutil import atomic_path
from annobench.core.provenance import RECORDS, describe_file, sha256_file

RELEASED = ("tables", "resized", "artefacts", "exports", "segmentations", "reports", "runs", "evaluations", "browse")
MANIFEST, JOBS, HEADER, CRATE = "MANIFEST.jsonl", "JOBS.jsonl", "RELEASE.json", "ro-crate-metadata.json"
RELEASE_RULE = "release"  # the rule of the files the release job writes itself
PROCESS_PROFILE = "https://w3id.org/ro/wfrun/process/0.5"


def load_records(out_dir: Path) -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((out_dir / RECORDS).glob("*.json"))]


def released_files(out_dir: Path) -> list[str]:
    return sorted(
        p.relative_to(out_dir).as_posix()
        for top in RELEASED if (out_dir / top).is_dir()
        for p in (out_dir / top).rglob("*") if p.is_file() and not p.name.startswith(".")
    )


def manifest_entries(out_dir: Path, records: list[dict]) -> tuple[list[dict], list[dict]]:
    """Released files and the intermediate files behind them, and the jobs that made them."""
    made_by = {}
    for record in records:
        for output in record["outputs"]:
            made_by[output["path"]] = (record, output)
    released_set = set(released_files(out_dir))
    files, jobs, todo, seen = [], {}, sorted(released_set), set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        record, output = made_by.get(path, (None, None))
        file = out_dir / path
        # A job hashed its outputs as it wrote them; only files without a record are read here.
        described = output or (describe_file(file, out_dir) if file.is_file() else {})
        job = _job_name(record) if record else None
        files.append({
            "path": path,
            "released": path in released_set,
            "sha256": described.get("sha256"),
            "size": described.get("size"),
            "rows": _rows(file) if file.suffix == ".parquet" and file.is_file() else None,
            "rule": record["rule"] if record else None,
            "job": job,
        })
        if record and job not in jobs:
            jobs[job] = job_entry(record)
            # Files of the build it was made from: released or not, their lineage is followed too.
            todo.extend(source["path"] for source in jobs[job]["inputs"] if not os.path.isabs(source["path"]))
    return sorted(files, key=lambda e: e["path"]), [jobs[name] for name in sorted(jobs)]


def job_entry(record: dict) -> dict:
    return {
        "job": _job_name(record),
        "rule": record["rule"],
        "wildcards": record["wildcards"],
        "params": record["params"],
        "params_hash": params_hash(record["params"]),
        "inputs": [{"path": i["path"], "sha256": i["sha256"]} for i in record["inputs"]],
        "raw_inputs": record["raw_inputs"],
        "finished": record["finished"],
    }


def _job_name(record: dict) -> str:
    from annobench.core.provenance import record_name

    return record_name(record["rule"], record["wildcards"])


def _rows(path: Path) -> int | None:
    try:
        return pq.read_metadata(path).num_rows
    except Exception:
        return None


def header(out_dir: Path, config: dict, workflow_dir: Path, n_shards: int) -> dict:
    return {
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "annobench": __version__,
        "code": git_state(workflow_dir),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "dependencies": {d.metadata["Name"]: d.version for d in sorted(
            importlib.metadata.distributions(), key=lambda d: d.metadata["Name"].lower())},
        "snakemake": importlib.metadata.version("snakemake"),
        "command_line": snakemake_command_line(),
        "output_dir": str(out_dir.resolve()),
        "workflow_dir": str(workflow_dir.resolve()),
        "n_shards": n_shards,
        "config": config,
    }


def git_state(folder: Path) -> dict:
    def git(*args):
        return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True).stdout

    try:
        return {"commit": git("rev-parse", "HEAD").strip(), "dirty": bool(git("status", "--porcelain").strip())}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}


def snakemake_command_line() -> list[str] | None:
    """The command line of the Snakemake process this job runs under, if there is one."""
    try:
        import psutil
    except ImportError:
        return None
    process = psutil.Process()
    while process is not None:
        command = process.cmdline()
        if any("snakemake" in part for part in command[:3]) and ".snakemake/scripts" not in " ".join(command):
            return command
        process = process.parent()
    return None


def assemble_release(out_dir: Path | str, release_dir: Path | str, config: dict, workflow_dir: Path | str,
                     n_shards: int) -> int:
    out_dir, release_dir = Path(out_dir), Path(release_dir)
    records = load_records(out_dir)
    entries, jobs = manifest_entries(out_dir, records)
    with atomic_path(release_dir) as partial:
        partial.mkdir()
        for entry in entries:
            if entry["released"]:
                _link(out_dir / entry["path"], partial / entry["path"])
        own = [write_croissant(partial, config), write_dataset_card(partial, config)]
        _write_jsonl(partial / JOBS, jobs)
        info = header(out_dir, config, Path(workflow_dir), n_shards)
        (partial / HEADER).write_text(json.dumps(info, indent=1, sort_keys=True, default=str), "utf-8")
        own_entries = [own_entry(partial, path) for path in [*own, partial / JOBS, partial / HEADER]]
        own_entries.append(own_entry(partial, partial / MANIFEST, hashed=False))
        crate = ro_crate(entries + own_entries, records, info)
        (partial / CRATE).write_text(json.dumps(crate, indent=1, sort_keys=True), "utf-8")
        own_entries.append(own_entry(partial, partial / CRATE))
        _write_jsonl(partial / MANIFEST, sorted(entries + own_entries, key=lambda e: e["path"]))
    return sum(e["released"] for e in entries)


def own_entry(release_dir: Path, path: Path, hashed: bool = True) -> dict:
    """A manifest line for a file the release job wrote itself; the manifest is listed unhashed."""
    described = describe_file(path, release_dir) if hashed else {}
    return {"path": path.relative_to(release_dir).as_posix(), "released": True, "sha256": described.get("sha256"),
            "size": described.get("size"), "rows": None, "rule": RELEASE_RULE, "job": None}


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, sort_keys=True) + "\n")


def _link(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def ro_crate(entries: list[dict], records: list[dict], info: dict) -> dict:
    """A Workflow Run RO-Crate (process run profile) of the release's lineage."""
    def file_id(path: str) -> str:
        return path if not os.path.isabs(path) else Path(path).as_uri()

    released = [e for e in entries if e["released"]]
    raw = {}
    for record in records:
        for item in record["raw_inputs"]:
            if item.get("warc"):  # a record: the crate names its archive (hashed by the warc_tables job)
                raw.setdefault(item["absolute_path"], {"path": item["warc"]["file"], "sha256": None, "size": None})
            else:
                raw[item["absolute_path"]] = item
    outside = sorted({i["path"] for r in records for i in r["inputs"] if os.path.isabs(i["path"])} - set(raw))
    metadata = info["config"].get("release", {})
    licence = crate_licence(metadata.get("license", ""))
    graph = [
        {"@id": CRATE, "@type": "CreativeWork", "conformsTo": {"@id": "https://w3id.org/ro/crate/1.1"},
         "about": {"@id": "./"}},
        {"@id": "./", "@type": "Dataset", "name": metadata.get("title") or "annobench release",
         "description": metadata.get("description") or "Image-annotation benchmark data regenerated by annobench",
         "datePublished": info["created"], "license": {"@id": licence["@id"]},
         "conformsTo": {"@id": PROCESS_PROFILE},
         # The raw photos, pages and segmentations (outside the release, by file URI) are part of
         # the crate too: its lineage starts from them.
         "hasPart": [{"@id": e["path"]} for e in released] + [{"@id": Path(p).as_uri()} for p in [*sorted(raw), *outside]],
         "mentions": [{"@id": f"#job-{_job_name(r)}"} for r in records]},
        licence,
        {"@id": PROCESS_PROFILE, "@type": "CreativeWork", "name": "Process Run Crate", "version": "0.5"},
        {"@id": "#annobench", "@type": "SoftwareApplication", "name": "annobench", "version": info["annobench"],
         "identifier": info["code"]["commit"] or "unknown"},
    ]
    for entry in entries:
        graph.append({"@id": entry["path"] if entry["released"] else f"#build/{entry['path']}", "@type": "File",
                      "contentSize": entry["size"], "sha256": entry["sha256"]})
    for path, item in sorted(raw.items()):
        entity = {"@id": Path(path).as_uri(), "@type": "File", "name": item["path"], "sha256": item["sha256"],
                  "contentSize": item["size"]}
        graph.append({key: value for key, value in entity.items() if value is not None})
    input_hashes = {i["path"]: i["sha256"] for r in records for i in r["inputs"]}
    for path in outside:  # inputs outside the build that are not raw data files (a mapping file)
        graph.append({"@id": Path(path).as_uri(), "@type": "File", "name": Path(path).name,
                      "sha256": input_hashes[path]})
    released_paths = {e["path"] for e in released}

    def ref(path: str) -> dict:
        if os.path.isabs(path):
            return {"@id": file_id(path)}
        return {"@id": path if path in released_paths else f"#build/{path}"}

    for record in records:
        graph.append({
            "@id": f"#job-{_job_name(record)}", "@type": "CreateAction", "name": _job_name(record),
            "instrument": {"@id": "#annobench"}, "endTime": record["finished"],
            "object": [ref(i["path"]) for i in record["inputs"]] + [
                {"@id": uri} for uri in dict.fromkeys(Path(r["absolute_path"]).as_uri() for r in record["raw_inputs"])],
            "result": [ref(o["path"]) for o in record["outputs"]],
        })
    return {"@context": "https://w3id.org/ro/crate/1.1/context", "@graph": graph}


def crate_licence(licence: str) -> dict:
    """The crate's licence entity: an SPDX id or a URL from the config; none chosen says so."""
    if not licence:
        return {"@id": "#licence", "@type": "CreativeWork", "name": "not specified",
                "description": "No licence was set for this release (release.license); the licences of its "
                               "sources apply."}
    if "://" in licence:
        return {"@id": licence, "@type": "CreativeWork", "name": licence}
    return {"@id": f"https://spdx.org/licenses/{licence}", "@type": "CreativeWork", "name": licence}


# --- audit -------------------------------------------------------------------------

@dataclass(frozen=True)
class Problem:
    kind: str  # missing | tampered | extra | stale | unclosed | not-reproduced | differs (a build file)
    path: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.path}: {self.detail}"


def read_manifest(release_dir: Path) -> list[dict]:
    return _read_jsonl(release_dir / MANIFEST)


def read_jobs(release_dir: Path) -> dict[str, dict]:
    return {job["job"]: job for job in _read_jsonl(release_dir / JOBS)} if (release_dir / JOBS).is_file() else {}


def _read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def audit(release_dir: Path | str, recompute: int = 0, seed: int = 0) -> list[Problem]:
    release_dir = Path(release_dir)
    if not (release_dir / MANIFEST).is_file():
        return [Problem("missing", MANIFEST, "not a release folder: no manifest")]
    entries = read_manifest(release_dir)
    problems = check_files(release_dir, entries) + check_lineage(entries, read_jobs(release_dir))
    if recompute:
        problems += recompute_jobs(release_dir, entries, recompute, seed)
    return problems


def check_files(release_dir: Path, entries: list[dict]) -> list[Problem]:
    problems, listed = [], set()
    for entry in (e for e in entries if e["released"]):
        listed.add(entry["path"])
        path = release_dir / entry["path"]
        if not path.is_file():
            problems.append(Problem("missing", entry["path"], "listed in the manifest, not in the release"))
        elif entry["sha256"] is None:  # the manifest itself
            continue
        elif path.stat().st_size != entry["size"] or sha256_file(path) != entry["sha256"]:
            problems.append(Problem("tampered", entry["path"], "its bytes differ from the manifest's sha256"))
    for path in sorted(p for p in release_dir.rglob("*") if p.is_file()):
        relative = path.relative_to(release_dir).as_posix()
        if relative not in listed:
            problems.append(Problem("extra", relative, "in the release, not in the manifest"))
    return problems


def check_lineage(entries: list[dict], jobs: dict[str, dict]) -> list[Problem]:
    """Every file was made by a listed job; every input of a job is a manifest entry with that
    hash, or a raw input whose file still has its hash. Each job is checked once."""
    problems, by_path, checked, job_problems = [], {e["path"]: e for e in entries}, {}, {}
    for entry in entries:
        if entry["rule"] == RELEASE_RULE:  # written by the release job from the files listed here
            continue
        job = jobs.get(entry["job"]) if entry["job"] else None
        if job is None:
            problems.append(Problem("unclosed", entry["path"], "no job record says how it was made"))
            continue
        if entry["job"] not in job_problems:
            job_problems[entry["job"]] = _job_lineage(job, by_path, checked)
        problems += [Problem(kind, entry["path"], detail) for kind, detail in job_problems[entry["job"]]]
    return problems


def _job_lineage(job: dict, by_path: dict[str, dict], checked: dict[str, str | None]) -> list[tuple[str, str]]:
    found = []
    for source in job["inputs"]:
        if os.path.isabs(source["path"]):
            found += _check_raw(source["path"], source["sha256"], checked)
        elif by_path.get(source["path"], {}).get("sha256") != source["sha256"]:
            found.append(("unclosed", f"made from {source['path']}, which the manifest does not hold with the "
                                      "same sha256"))
    for raw in job["raw_inputs"]:
        if raw.get("warc"):
            found += _check_archived(raw, checked)
        elif raw["sha256"] is not None:
            found += _check_raw(raw["absolute_path"], raw["sha256"], checked)
    return found


def _check_archived(raw: dict, checked: dict[str, str | None]) -> list[tuple[str, str]]:
    """A page or image read from a web archive: the record is still at its offset, with its id, its
    payload still matches the archive's digest and has the sha256 recorded."""
    from annobench.sources.warc import RecordRejected, read_record_payload
    from annobench.sources.warc_index import ref_of_raw

    ref = ref_of_raw(raw)
    where = f"{ref.warc}@{ref.offset}"
    if where not in checked:
        try:
            data, _ = read_record_payload(ref, raw["role"], max_bytes=1 << 62)
            checked[where] = hashlib.sha256(data).hexdigest()
        except RecordRejected as error:
            checked[where] = f"unreadable: {error}"
    now = checked[where]
    if raw["sha256"] is None or now == raw["sha256"]:
        return [] if not now.startswith("unreadable") else [("stale", f"raw input {raw['path']}: {now}")]
    detail = now if now.startswith("unreadable") else "its payload has changed since the build"
    return [("stale", f"raw input {raw['path']} (record {ref.record_id} at byte {ref.offset} of {ref.warc}): "
                      f"{detail}")]


def _check_raw(path: str, sha256: str, checked: dict[str, str | None]) -> list[tuple[str, str]]:
    if path not in checked:
        checked[path] = sha256_file(path) if Path(path).is_file() else None
    now = checked[path]
    if now == sha256:
        return []
    detail = "is gone" if now is None else "has changed since the build"
    return [("stale", f"raw input {path} {detail}")]


# --- recompute ---------------------------------------------------------------------

RECOMPUTABLE = ("ingest_shard", "feature_colorhist", "feature_getlf", "feature_gist", "feature_bow", "text_shard",
                "regions_shard")


def sample_jobs(entries: list[dict], count: int, seed: int = 0) -> list[str]:
    """The jobs --recompute rebuilds: a seeded sample of those whose outputs are released."""
    jobs = sorted({e["job"] for e in entries if e["released"] and e["rule"] and e["rule"].startswith(RECOMPUTABLE)})
    return sorted(random.Random(seed).sample(jobs, min(count, len(jobs))))


def recompute_jobs(release_dir: Path, entries: list[dict], count: int, seed: int) -> list[Problem]:
    problems = []
    for job in sample_jobs(entries, count, seed):
        problems += recompute_in_subprocess(release_dir, job)
    return problems


def recompute_in_subprocess(release_dir: Path, job: str) -> list[Problem]:
    """Recompute a job in a fresh process with one BLAS thread, as the workflow's jobs run:
    BLAS sums floating-point numbers in another order with more threads."""
    env = {**os.environ, **{v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}
    command = [sys.executable, "-m", "annobench.release.assemble", str(release_dir), job]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        return [Problem("not-reproduced", job, f"recomputing failed: {done.stderr.strip().splitlines()[-1:]}")]
    return [Problem(**p) for p in json.loads(done.stdout)]


def recompute_named_job(release_dir: Path, job: str) -> list[Problem]:
    info = json.loads((release_dir / HEADER).read_text("utf-8"))
    outputs = [e for e in read_manifest(release_dir) if e["released"] and e["job"] == job]
    with tempfile.TemporaryDirectory(prefix="annobench-recompute-") as scratch:
        return recompute_job(release_dir, info, read_jobs(release_dir)[job], outputs, Path(scratch))


def recompute_job(release_dir: Path, info: dict, entry: dict, outputs: list[dict], scratch: Path) -> list[Problem]:
    """Rebuild one job's outputs from its recorded inputs and parameters; compare them byte for byte."""
    rule, params = entry["rule"], entry["params"]
    config = json.loads(json.dumps(info["config"]))
    config["output"] = str(scratch)
    for source in entry["inputs"]:  # files of the build the job read: from the release
        if not os.path.isabs(source["path"]) and (release_dir / source["path"]).is_file():
            _link(release_dir / source["path"], scratch / source["path"])
    shard = int((entry["wildcards"] or {}).get("shard", 0))
    run_rule(rule, params, config, entry, shard, scratch, info["n_shards"], outputs)
    problems = []
    for output in outputs:
        rebuilt = scratch / output["path"]
        if not rebuilt.is_file() or sha256_file(rebuilt) != output["sha256"]:
            problems.append(Problem("not-reproduced", output["path"], f"recomputing {entry['job']} gave other bytes"))
    return problems


def run_rule(rule: str, params: dict, config: dict, entry: dict, shard: int, scratch: Path, n_shards: int,
             outputs: list[dict]) -> None:
    """Run one job's computation into `scratch`, reading raw inputs where the manifest says they were."""
    log = lambda line: None  # noqa: E731
    if rule == "ingest_shard":
        from annobench.images.ingest import ingest_shard
        from annobench.sources.listing import ImageSource

        from annobench.sources.warc_index import ref_of_raw

        sources = sorted((ImageSource(r["key"], r["path"], r["absolute_path"], ref_of_raw(r) if r.get("warc") else None)
                          for r in entry["raw_inputs"] if r["role"] == "image"), key=lambda s: s.image_id)
        ingest_shard(sources, shard, scratch, config, params["params_hash"], log)
    elif rule == "feature_bow":
        from annobench.visual.bow_stage import encode_shard

        kinds = params["settings"]["kinds"]
        codebooks = {kind: scratch / _input(entry, f"artefacts/codebook_{kind}.") for kind in kinds}
        tables = {kind: scratch / next(o["path"] for o in outputs if o["path"].startswith(f"tables/bow_{kind}/"))
                  for kind in kinds}
        encode_shard(scratch / _input(entry, "tables/images/"), scratch, codebooks, params["settings"], tables, log)
    elif rule.startswith("feature_"):
        from annobench.visual.stage import feature_shard

        projection = next((i["path"] for i in entry["inputs"] if "getlf_projection" in i["path"]), None)
        feature_shard(params["feature"], params["settings"], scratch / _input(entry, "tables/images/"), scratch,
                      scratch / outputs[0]["path"], scratch / projection if projection else None, log)
    elif rule == "text_shard":
        from annobench.sources.pages import PageLimits
        from annobench.text.features import TextParams
        from annobench.text.stage import build_text_plan, extract_text, read_mapping_table, write_text_tables
        from annobench.sources.warc_index import WarcPages

        mapping = next(i["path"] for i in entry["inputs"] if os.path.isabs(i["path"]) or "warc_page_map" in i["path"])
        if any(r.get("warc") for r in entry["raw_inputs"]):  # pages read from web archives
            mapping, pages = read_mapping_table(scratch / mapping), WarcPages.from_raw_inputs(entry["raw_inputs"])
        else:
            pages = _raw_root(entry, "page")
        plan = build_text_plan(mapping, pages, n_shards)
        result = extract_text(plan.shards[shard], pages, TextParams.from_config(config["text"]),
                              PageLimits.from_config(config["text"]), owned=lambda p: plan.owners[p] == shard, log=log)
        write_text_tables(result, scratch, shard, params["params_hash"])
    elif rule == "regions_shard":
        from annobench.core import layout
        from annobench.regions.stage import REGION_TABLES, regions_for_shard

        images = {r["key"]: r["absolute_path"] for r in entry["raw_inputs"] if r["role"] == "image"}
        regions_for_shard(config, _raw_root(entry, "segmentation"), images, shard, n_shards,
                          str(scratch / _input(entry, "tables/images/")),
                          {name: str(scratch / layout.table_file(name, shard)) for name in REGION_TABLES},
                          str(scratch / f"segmentations/shard-{shard:05d}"), params["params_hash"], log)
    else:
        raise ValueError(f"rule {rule} cannot be recomputed from a release")


def _raw_root(entry: dict, role: str) -> Path:
    """The folder the raw files of a role were read from (their absolute path less the path given)."""
    raw = next(r for r in entry["raw_inputs"] if r["role"] == role)
    absolute = raw["absolute_path"]
    return Path(absolute[: len(absolute) - len(raw["path"])])


def _input(entry: dict, prefix: str) -> str:
    return next(i["path"] for i in entry["inputs"] if i["path"].startswith(prefix))


# --- a build folder ---------------------------------------------------------------

def is_build_folder(folder: Path) -> bool:
    return not (folder / MANIFEST).is_file() and (folder / RECORDS).is_dir()


def audit_build(out_dir: Path | str) -> tuple[list[Problem], int]:
    """Every file a job record says its job wrote: still there, with the bytes recorded?
    Returns the problems and the number of files checked."""
    out_dir, problems, checked = Path(out_dir), [], 0
    for record in load_records(out_dir):
        job = _job_name(record)
        for output in record["outputs"]:
            checked += 1
            path = out_dir / output["path"]
            if not path.is_file():
                problems.append(Problem("missing", output["path"], f"made by job {job} (rule {record['rule']})"))
            elif path.stat().st_size != output["size"] or sha256_file(path) != output["sha256"]:
                problems.append(Problem("differs", output["path"], f"not the bytes job {job} recorded"))
    return problems, checked


def main_audit_build(out_dir: Path, out=sys.stdout) -> int:
    problems, checked = audit_build(out_dir)
    for problem in problems:
        print(problem, file=out)
    # Snakemake takes targets relative to its working directory, where this is run from.
    for kind, how in (("missing", "name them as targets: snakemake --cores all"),
                      ("differs", "force them as targets: snakemake --cores all --force")):
        paths = [os.path.relpath(out_dir / p.path) for p in problems if p.kind == kind]
        if paths:
            print(f"to restore the {kind} files, {how} {' '.join(paths[:3])}{' ...' if len(paths) > 3 else ''}",
                  file=out)
    verdict = "FAILED" if problems else "passed"
    print(f"build audit {verdict}: {checked} recorded files, {len(problems)} problem(s)", file=out)
    return 1 if problems else 0


def main_audit(release_dir: str, recompute: int, out=sys.stdout) -> int:
    if is_build_folder(Path(release_dir)):
        if recompute:
            print("annobench: --recompute checks a release; a build folder's jobs rerun with snakemake", file=out)
            return 2
        return main_audit_build(Path(release_dir), out)
    problems = audit(release_dir, recompute)
    entries = read_manifest(Path(release_dir)) if (Path(release_dir) / MANIFEST).is_file() else []
    for problem in problems:
        print(problem, file=out)
    released = sum(e["released"] for e in entries)
    if recompute:
        print(f"recomputed: {', '.join(sample_jobs(entries, recompute))}", file=out)
    verdict = "FAILED" if problems else "passed"
    print(f"audit {verdict}: {released} released files, {len(entries) - released} intermediate, "
          f"{len(problems)} problem(s){f', {recompute} job(s) recomputed' if recompute else ''}", file=out)
    return 1 if problems else 0


if __name__ == "__main__":  # the recompute worker: python -m annobench.release.assemble RELEASE_DIR JOB
    found = recompute_named_job(Path(sys.argv[1]), sys.argv[2])
    print(json.dumps([problem.__dict__ for problem in found]))
