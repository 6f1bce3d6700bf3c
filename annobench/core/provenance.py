"""What each job read and wrote, recorded as it runs; the release builds its lineage from these.

Every rule's script ends with `record_job(snakemake, ...)`: a JSON record
under `provenance/jobs/` naming the rule, its wildcards and params (the
config it used, its code fingerprint), and the sha256 and size of every
input and output file (folders expanded to their files). Files inside the
output folder are named by their path relative to it, so records do not
depend on where the build lives; raw inputs outside it (photos, pages,
segmentations) are named by the path the user gave, with their absolute
path beside it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import resource
from pathlib import Path

from annobench import __version__
from annobench.core.fsutil import write_bytes_atomic

RECORDS = "provenance/jobs"
CHUNK = 1 << 20


def sha256_file(path: Path | str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def describe_file(path: Path | str, out_dir: Path | str) -> dict:
    path = Path(path)
    return {"path": build_relative(path, out_dir), "sha256": sha256_file(path), "size": path.stat().st_size}


def build_relative(path: Path | str, out_dir: Path | str) -> str:
    path, out_dir = Path(os.path.abspath(path)), Path(os.path.abspath(out_dir))
    return path.relative_to(out_dir).as_posix() if out_dir in path.parents else str(path)


def files_of(paths) -> list[Path]:
    """Files named by Snakemake inputs/outputs, folders expanded (sorted; hidden files such as
    Snakemake's .snakemake_timestamp markers are not data)."""
    found = []
    for path in map(Path, paths):
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")))
        elif path.is_file():
            found.append(path)
    return found


def raw_file(path: Path | str, given_as: str, sha256: str | None = None, role: str = "raw",
             key: str | None = None) -> dict:
    """A raw input: as the user named it, where it was, and its hash (computed unless known).

    key: the id the file has in the dataset (an image's image_id), when it has one.
    """
    path = Path(path)
    exists = path.is_file()
    return {
        "key": key,
        "path": given_as,
        "absolute_path": str(path.resolve()) if exists else str(path),
        "sha256": sha256 if sha256 else (sha256_file(path) if exists else None),
        "size": path.stat().st_size if exists else None,
        "role": role,
    }


def archived_file(ref, address: str, role: str, key: str | None, sha256: str | None = None) -> dict:
    """A raw input read from a web-archive record (warc.RecordRef): the archive, the record's id,
    offset and declared payload digest, and the sha256 of the payload as used."""
    return {
        "key": key,
        "path": address,
        "absolute_path": os.path.abspath(ref.warc),
        "sha256": sha256 or ref.sha256 or None,
        "size": ref.size or None,
        "role": role,
        "warc": {"file": ref.warc, "record_id": ref.record_id, "offset": ref.offset,
                 "payload_digest": ref.payload_digest},
    }


def job_usage(resources: dict) -> dict:
    """This job's own peak memory and CPU time (exact, unlike sampling from outside), and what it declared."""
    from annobench.core import progress

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),  # Linux reports KiB
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),
        "startup_cpu_seconds": None if progress.startup_cpu_seconds is None else round(progress.startup_cpu_seconds, 3),
        "declared_mem_mb": resources.get("mem_mb"),
        # Snakemake reads mem_mb as 10^6 bytes and derives mem_mib; SLURM's --mem is MiB.
        "declared_mem_mib": resources.get("mem_mib"),
    }


def named_files(files) -> dict:
    """Snakemake's named inputs or outputs: name -> path, or the paths of an expand()."""
    return {name: str(value) if isinstance(value, str) else [str(p) for p in value] for name, value in files.items()}


def job_files(snakemake, out_dir: Path | str) -> dict:
    """A job's inputs and outputs by name and in order, named relative to the build where they are in it:
    what a recompute needs to lay the job out again elsewhere (jobs.Job.from_record)."""
    def relative(named: dict) -> dict:
        return {k: build_relative(v, out_dir) if isinstance(v, str) else [build_relative(p, out_dir) for p in v]
                for k, v in named.items()}

    return {"input": relative(named_files(snakemake.input)), "output": relative(named_files(snakemake.output)),
            "input_files": [build_relative(p, out_dir) for p in snakemake.input],
            "output_files": [build_relative(p, out_dir) for p in snakemake.output]}


def load_records(out_dir: Path | str) -> list[dict]:
    """Every job record under the build's provenance/jobs, superseded or not, in file-name order."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((Path(out_dir) / RECORDS).glob("*.json"))]


def load_lineage_records(out_dir: Path | str) -> list[dict]:
    """load_records with each record slimmed to what the lineage walks (rule, wildcards, finished,
    outputs, and the paths of its inputs: their hashes only for inputs outside the build) and its
    file's path under `source`; full_record reads the rest back. A shard's raw inputs (its photos'
    and segmentations' hashes) were most of a release job's memory held all at once."""
    slim = []
    for path in sorted((Path(out_dir) / RECORDS).glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        inputs = [item if os.path.isabs(item["path"]) else {"path": item["path"]} for item in record["inputs"]]
        slim.append({"rule": record["rule"], "wildcards": record["wildcards"], "finished": record["finished"],
                     "outputs": record["outputs"], "inputs": inputs, "source": str(path)})
    return slim


def full_record(record: dict) -> dict:
    """The whole record of a slim one (load_lineage_records); a whole record as it is."""
    if "source" not in record:
        return record
    return json.loads(Path(record["source"]).read_text(encoding="utf-8"))


def last_writers(records: list[dict]) -> dict[str, tuple[dict, dict]]:
    """Each output path -> (record, output) of the job that wrote it last: a build resumed after
    rules were renamed or split keeps the old records, which claim the files too but finished
    before."""
    made_by = {}
    for record in sorted(records, key=lambda r: (r["finished"], record_name(r["rule"], r["wildcards"]))):
        for output in record["outputs"]:
            made_by[output["path"]] = (record, output)
    return made_by


def current_records(records: list[dict]) -> list[dict]:
    """The one rule for stale records (a renamed or split rule's, a job run again): a record counts
    while at least one of its outputs was last written by its job; one whose every output a later
    job rewrote is superseded, and the release, its audit, the bench and the projection skip it."""
    made_by = last_writers(records)
    return [r for r in records if not r["outputs"] or any(made_by[o["path"]][0] is r for o in r["outputs"])]


def read_job_records(out_dir: Path | str) -> list[tuple[str, dict]]:
    """(name, record) of the current job records of a build (current_records), in name order."""
    return [(record_name(r["rule"], r["wildcards"]), r) for r in current_records(load_records(out_dir))]


def record_name(rule: str, wildcards: dict) -> str:
    suffix = "-".join(f"{value}" for _, value in sorted(wildcards.items()))
    return f"{rule}-{suffix}" if suffix else rule


def record_job(snakemake, raw_inputs: list[dict] | None = None) -> Path:
    """Write the provenance record of the running Snakemake job; returns its path."""
    out_dir = Path(snakemake.config["output"])
    wildcards = dict(snakemake.wildcards.items())
    params = {key: value for key, value in snakemake.params.items()}
    record = {
        "rule": snakemake.rule,
        "wildcards": wildcards,
        "params": params,
        "inputs": [describe_file(p, out_dir) for p in files_of(snakemake.input)],
        "outputs": [describe_file(p, out_dir) for p in files_of(snakemake.output)],
        "files": job_files(snakemake, out_dir),
        "raw_inputs": sorted(raw_inputs or [], key=lambda r: (r["path"], r["role"])),
        "annobench": __version__,
        "python": platform.python_version(),
        "finished": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "usage": job_usage(dict(snakemake.resources.items())),
        "host": platform.node(),
        # Which cluster job ran it, to match against the scheduler's accounting (sacct).
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
    }
    path = out_dir / RECORDS / f"{record_name(snakemake.rule, wildcards)}.json"
    write_bytes_atomic(path, json.dumps(record, indent=1, sort_keys=True, default=str).encode("utf-8"))
    return path
