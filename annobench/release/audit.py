"""The audit of a release or a build: every file is there with the bytes its manifest or job record
says, every file's lineage is closed down to raw inputs that still have their hashes, and, with
--recompute, a seeded sample of jobs rerun by their rules' own job functions gives the same bytes.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import random
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from annobench.core.jobs import Job
from annobench.core.provenance import RECORDS, sha256_file
from annobench.release.assemble import (
    HEADER,
    JOBS,
    KIT_DATA_DIR,
    MANIFEST,
    RELEASE_RULE,
    _link,
    current_records,
    job_name,
    load_records,
)
from annobench.release.bag import check_bag, is_bag, payload_dir
from annobench.release.integrity import check_keys


@dataclass(frozen=True)
class Problem:
    kind: str  # missing | tampered | extra | unlisted | stale | unclosed | not-reproduced | dangling | differs
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


def audit(release_dir: Path | str, recompute: int = 0, seed: int = 0, jobs: int = 1) -> list[Problem]:
    """The problems of a release: `release_dir` is the bag (its payload under data/ is checked,
    and its tag files against the manifest) or a payload folder itself."""
    bag, release_dir = Path(release_dir), payload_dir(release_dir)
    if not (release_dir / MANIFEST).is_file():
        return [Problem("missing", MANIFEST, "not a release folder: no manifest")]
    entries = read_manifest(release_dir)
    problems = check_files(release_dir, entries, jobs) + check_lineage(entries, read_jobs(release_dir))
    if is_bag(bag):
        problems += check_bag_files(bag, release_dir, entries)
    problems += [Problem("dangling", dangling.table, str(dangling).split(": ", 1)[1])
                 for dangling in check_keys(release_dir)]
    if recompute:
        problems += recompute_jobs(release_dir, entries, recompute, seed)
    return problems


def check_bag_files(bag: Path, release_dir: Path, entries: list[dict]) -> list[Problem]:
    """The bag's tag files against the manifest, whose files check_files hashed: only the
    release manifest itself (which holds no hash of its own) is hashed here."""
    unhashed = {e["path"]: (sha256_file(release_dir / e["path"]), (release_dir / e["path"]).stat().st_size)
                for e in entries if e["released"] and e["sha256"] is None and (release_dir / e["path"]).is_file()}
    return [Problem(kind, path, detail) for kind, path, detail in check_bag(bag, entries, unhashed)]


def check_files(release_dir: Path, entries: list[dict], jobs: int = 1) -> list[Problem]:
    problems, listed = [], set()
    released = [e for e in entries if e["released"]]
    digests = file_digests([release_dir / e["path"] for e in released if _worth_hashing(release_dir, e)], jobs)
    for entry in released:
        listed.add(entry["path"])
        path = release_dir / entry["path"]
        if not path.is_file():
            problems.append(Problem("missing", entry["path"], "listed in the manifest, not in the release"))
        elif entry["sha256"] is None:  # the manifest itself
            continue
        elif path.stat().st_size != entry["size"] or digests[path] != entry["sha256"]:
            problems.append(Problem("tampered", entry["path"], "its bytes differ from the manifest's sha256"))
    for path in sorted(p for p in release_dir.rglob("*") if p.is_file()):
        relative = path.relative_to(release_dir).as_posix()
        if relative not in listed:
            problems.append(Problem("extra", relative, "in the release, not in the manifest"))
    return problems


def _worth_hashing(folder: Path, entry: dict) -> bool:
    """A listed file that is there with its size: only its bytes can tell whether it changed."""
    path = folder / entry["path"]
    return entry["sha256"] is not None and path.is_file() and path.stat().st_size == entry["size"]


BATCH = 64  # files a worker hashes per task: per-file tasks would cost more than small files' hashes


def file_digests(paths: list[Path], jobs: int = 1) -> dict[Path, str]:
    """sha256 of each file, `jobs` files at a time. Threads suffice: reading and hashlib's digest of
    large buffers release the GIL. The digests do not depend on `jobs`."""
    size = max(1, min(BATCH, len(paths) // (4 * max(1, jobs))))  # a few batches a thread, for a few large files
    batches = [paths[k:k + size] for k in range(0, len(paths), size)]

    def hash_batch(batch: list[Path]) -> list[str]:
        return [sha256_file(path) for path in batch]

    if jobs <= 1 or len(batches) <= 1:
        results = map(hash_batch, batches)
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(hash_batch, batches))
    return dict(zip(paths, (digest for batch in results for digest in batch)))


def default_jobs() -> int:
    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


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

# Rule -> the job function its Snakemake script runs, imported by name only when a job is rebuilt.
RECOMPUTE_JOBS = {
    "ingest_shard": "annobench.images.ingest:ingest_shard_job",
    "feature_colorhist": "annobench.visual.stage:feature_job",
    "feature_getlf": "annobench.visual.stage:feature_job",
    "feature_gist": "annobench.visual.stage:feature_job",
    "feature_bow": "annobench.visual.bow_stage:bow_encode_job",
    "text_shard": "annobench.text.stage:text_shard_job",
    "search_keywords": "annobench.text.search_log:search_keywords_job",
    "regions_shard": "annobench.regions.stage:regions_shard_job",
}
# Rules named by a prefix and a name from the config: a network of features.cnn each.
RECOMPUTE_PREFIXES = {"feature_cnn_": "annobench.visual.cnn:cnn_feature_job"}


def recompute_target(rule: str) -> str | None:
    """`module:function` of a recomputable rule's job, or None (None too for the release's own files)."""
    if not rule:
        return None
    if rule in RECOMPUTE_JOBS:
        return RECOMPUTE_JOBS[rule]
    return next((target for prefix, target in RECOMPUTE_PREFIXES.items() if rule.startswith(prefix)), None)


def sample_jobs(entries: list[dict], count: int, seed: int = 0) -> list[str]:
    """The jobs --recompute rebuilds: a seeded sample of those whose outputs are released."""
    jobs = sorted({e["job"] for e in entries if e["released"] and recompute_target(e["rule"])})
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
    command = [sys.executable, "-m", "annobench.release.audit", str(release_dir), job]
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
    """Rebuild one job's outputs from its recorded inputs and parameters, by the rule's own job
    function; compare them byte for byte."""
    for source in entry["inputs"]:  # files of the build the job read: from the release
        if not os.path.isabs(source["path"]) and (release_dir / source["path"]).is_file():
            _link(release_dir / source["path"], scratch / source["path"])
    config = json.loads(json.dumps(info["config"]))
    job_function(entry["rule"])(Job.from_record(entry, config, scratch))
    problems = []
    for output in outputs:
        rebuilt = scratch / output["path"].removeprefix(KIT_DATA_DIR)  # a kit link: the file it links
        if not rebuilt.is_file() or sha256_file(rebuilt) != output["sha256"]:
            problems.append(Problem("not-reproduced", output["path"], f"recomputing {entry['job']} gave other bytes"))
    return problems


def job_function(rule: str):
    """The job function of a recomputable rule: the one its Snakemake script runs."""
    target = recompute_target(rule)
    if target is None:
        raise ValueError(f"rule {rule} cannot be recomputed from a release")
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


# --- a build folder ---------------------------------------------------------------

def is_build_folder(folder: Path) -> bool:
    return not (folder / MANIFEST).is_file() and (folder / RECORDS).is_dir()


def audit_build(out_dir: Path | str, jobs: int = 1) -> tuple[list[Problem], int]:
    """Every file a job record says its job wrote: still there, with the bytes recorded?
    Returns the problems and the number of files checked."""
    out_dir, problems, checked = Path(out_dir), [], 0
    records = current_records(load_records(out_dir))  # not those of jobs whose files were rewritten since
    outputs = [output for record in records for output in record["outputs"]]
    digests = file_digests([out_dir / o["path"] for o in outputs if _worth_hashing(out_dir, o)], jobs)
    for record in records:
        job = job_name(record)
        for output in record["outputs"]:
            checked += 1
            path = out_dir / output["path"]
            if not path.is_file():
                problems.append(Problem("missing", output["path"], f"made by job {job} (rule {record['rule']})"))
            elif path.stat().st_size != output["size"] or digests[path] != output["sha256"]:
                problems.append(Problem("differs", output["path"], f"not the bytes job {job} recorded"))
    return problems, checked


def main_audit_build(out_dir: Path, out=sys.stdout, jobs: int = 1) -> int:
    problems, checked = audit_build(out_dir, jobs)
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


def main_audit(release_dir: str, recompute: int, out=sys.stdout, jobs: int = 1) -> int:
    if is_build_folder(Path(release_dir)):
        if recompute:
            print("annobench: --recompute checks a release; a build folder's jobs rerun with snakemake", file=out)
            return 2
        return main_audit_build(Path(release_dir), out, jobs)
    problems = audit(release_dir, recompute, jobs=jobs)
    payload = payload_dir(release_dir)
    entries = read_manifest(payload) if (payload / MANIFEST).is_file() else []
    for problem in problems:
        print(problem, file=out)
    released = sum(e["released"] for e in entries)
    if recompute:
        print(f"recomputed: {', '.join(sample_jobs(entries, recompute))}", file=out)
    verdict = "FAILED" if problems else "passed"
    print(f"audit {verdict}: {released} released files, {len(entries) - released} intermediate, "
          f"{len(problems)} problem(s){f', {recompute} job(s) recomputed' if recompute else ''}", file=out)
    return 1 if problems else 0


if __name__ == "__main__":  # the recompute worker: python -m annobench.release.audit RELEASE_DIR JOB
    found = recompute_named_job(Path(sys.argv[1]), sys.argv[2])
    print(json.dumps([problem.__dict__ for problem in found]))
