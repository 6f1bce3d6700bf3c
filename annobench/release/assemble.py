"""The release folder, its manifest and RO-Crate (the audit that checks them is in release.audit).

The release folder is a BagIt bag (annobench.release.bag): what follows lies in its payload,
`data/`, the RO-Crate root, with paths relative to it; the bag's tag files stand beside `data/`.
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

With a benchmark, `kit/` is the participant's kit of the round (annobench.benchmark.campaign.kit)
and `kit/data/` links to the released images, features and text (KIT_DATA), so the kit can be
handed out alone; its manifest lines are those of the files they link. The organisers' test
truth (`truth/`) stays in the build folder.

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
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow.parquet as pq

from annobench import __version__
from annobench.core.config import release_identity
from annobench.core.fingerprint import params_hash
from annobench.core.fsutil import atomic_path
from annobench.core.jobs import Job
from annobench.core.provenance import (  # noqa: F401
    RECORDS,
    current_records,
    describe_file,
    full_record,
    last_writers,
    load_lineage_records,
    load_records,
)
from annobench.release.bag import PAYLOAD, write_bag
from annobench.release.croissant import write_croissant
from annobench.release.dataset_card import write_dataset_card

RELEASED = ("tables", "resized", "artefacts", "exports", "segmentations", "reports", "runs", "evaluations", "browse",
            "kit")
# What the participant's kit links (kit/data/PATH): the stored images, the images table, the visual
# features and codebooks, the near-image text features, the vocabulary and the splits; never a truth.
KIT_DATA = ("resized/", "artefacts/", "exports/text.scofeat", "exports/text_iids.txt", "tables/images/",
            "tables/colorhist/", "tables/getlf/", "tables/gist/", "tables/cnn_", "tables/bow_", "tables/text_terms/",
            "tables/concepts/", "tables/splits/")
KIT_DATA_DIR = "kit/data/"
MANIFEST, JOBS, HEADER, CRATE = "MANIFEST.jsonl", "JOBS.jsonl", "RELEASE.json", "ro-crate-metadata.json"
RELEASE_RULE = "release"  # the rule of the files the release job writes itself
PROCESS_PROFILE = "https://w3id.org/ro/wfrun/process/0.5"
CRATE_CONTEXT = "https://w3id.org/ro/crate/1.1/context"


def released_files(out_dir: Path) -> list[str]:
    """Every file under the released folders (hidden files aside), as posix paths from out_dir.
    os.walk over strings: a full-size build releases millions of files, and pathlib's objects
    were a third of the release job's time."""
    found = []
    for top in RELEASED:
        for folder, _, names in os.walk(os.path.join(out_dir, top)):
            relative = os.path.relpath(folder, out_dir).replace(os.sep, "/")
            found += [f"{relative}/{name}" for name in names
                      if not name.startswith(".") and os.path.isfile(os.path.join(folder, name))]
    return sorted(found)


def manifest_entries(out_dir: Path, records: list[dict]) -> tuple[list[dict], list[dict]]:
    """Released files and the intermediate files behind them, and the records of the jobs that made
    them in job-name order (whole or slim: load_lineage_records)."""
    made_by = last_writers(records)
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
        job = job_name(record) if record else None
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
            jobs[job] = record
            # Files of the build it was made from: released or not, their lineage is followed too.
            todo.extend(source["path"] for source in record["inputs"] if not os.path.isabs(source["path"]))
    return sorted(files, key=lambda e: e["path"]), [jobs[name] for name in sorted(jobs)]


def job_entry(record: dict) -> dict:
    return {
        "job": job_name(record),
        "rule": record["rule"],
        "wildcards": record["wildcards"],
        "params": record["params"],
        "params_hash": params_hash(record["params"]),
        "inputs": [{"path": i["path"], "sha256": i["sha256"]} for i in record["inputs"]],
        "files": record["files"],
        "raw_inputs": record["raw_inputs"],
        "finished": record["finished"],
    }


def job_name(record: dict) -> str:
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
        "dependencies": installed_distributions(),
        "snakemake": importlib.metadata.version("snakemake"),
        "command_line": snakemake_command_line(),
        "output_dir": str(out_dir.resolve()),
        "workflow_dir": str(workflow_dir.resolve()),
        "n_shards": n_shards,
        "config": config,
    }


def installed_distributions() -> dict[str, str]:
    """Every installed distribution's version, by name (case-insensitive order). Each METADATA
    file is parsed once: parsed three times, they were most of a small build's release job."""
    metadata = [distribution.metadata for distribution in importlib.metadata.distributions()]
    return {entry["Name"]: entry["Version"] for entry in sorted(metadata, key=lambda entry: entry["Name"].lower())}


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
    """The release as a BagIt bag: every file under release_dir/data/ (the RO-Crate root), the bag's
    tag files beside it (annobench.release.bag)."""
    out_dir, release_dir = Path(out_dir), Path(release_dir)
    records = current_records(load_lineage_records(out_dir))
    entries, job_records = manifest_entries(out_dir, records)
    entries = sorted(entries + kit_data_entries(entries), key=lambda e: e["path"])
    with atomic_path(release_dir) as bag:
        partial = bag / PAYLOAD
        partial.mkdir(parents=True)
        made = set()
        for entry in entries:
            if entry["released"]:
                source = entry["path"].removeprefix(KIT_DATA_DIR)  # a kit link: the file it links
                _link(os.path.join(out_dir, source), os.path.join(partial, entry["path"]), made)
        own = [write_croissant(partial, config), write_dataset_card(partial, config)]
        _write_jsonl(partial / JOBS, (job_entry(full_record(record)) for record in job_records))
        info = header(out_dir, config, Path(workflow_dir), n_shards)
        (partial / HEADER).write_text(json.dumps(info, indent=1, sort_keys=True, default=str), "utf-8")
        own_entries = [own_entry(partial, path) for path in [*own, partial / JOBS, partial / HEADER]]
        own_entries.append(own_entry(partial, partial / MANIFEST, hashed=False))
        write_crate(partial / CRATE, entries + own_entries, records, info)
        own_entries.append(own_entry(partial, partial / CRATE))
        listed = sorted(entries + own_entries, key=lambda e: e["path"])
        digest, size = _write_jsonl(partial / MANIFEST, listed)
        # The bag's manifest from the hashes above: the manifest's own from the bytes just written.
        payload = [{**e, "sha256": digest, "size": size} if e["path"] == MANIFEST else e
                   for e in listed if e["released"]]
        write_bag(bag, payload, {**release_identity(config), "organization": release_organization(config)},
                  info["created"])
    return sum(e["released"] for e in entries)


def release_organization(config: dict) -> str:
    return str((config.get("release") or {}).get("organization") or "")


def kit_data_entries(entries: list[dict]) -> list[dict]:
    """The manifest lines of kit/data/: each released file of KIT_DATA again, under kit/data/, with its
    hash, size, rows and job (the link is that file); none without a kit."""
    if not any(entry["path"].startswith("kit/") for entry in entries):
        return []
    return [{**entry, "path": KIT_DATA_DIR + entry["path"]} for entry in entries
            if entry["released"] and entry["path"].startswith(KIT_DATA)]


def own_entry(release_dir: Path, path: Path, hashed: bool = True) -> dict:
    """A manifest line for a file the release job wrote itself; the manifest is listed unhashed."""
    described = describe_file(path, release_dir) if hashed else {}
    return {"path": path.relative_to(release_dir).as_posix(), "released": True, "sha256": described.get("sha256"),
            "size": described.get("size"), "rows": None, "rule": RELEASE_RULE, "job": None}


def _write_jsonl(path: Path, rows: Iterable[dict]) -> tuple[str, int]:
    """Write one JSON object a line; the sha256 and size of the bytes written."""
    digest, size = hashlib.sha256(), 0
    with open(path, "wb") as handle:
        for row in rows:
            line = (json.dumps(row, sort_keys=True) + "\n").encode("utf-8")
            digest.update(line)
            size += len(line)
            handle.write(line)
    return digest.hexdigest(), size


def _link(source: str | Path, target: str | Path, made: set | None = None) -> None:
    """A hard link (a copy across file systems); `made`: folders known to exist already."""
    folder = os.path.dirname(target)
    if made is None or folder not in made:
        os.makedirs(folder, exist_ok=True)
        if made is not None:
            made.add(folder)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def write_crate(path: Path, entries: list[dict], records: list[dict], info: dict) -> None:
    """The crate's JSON-LD, entity by entity: the bytes json.dumps(indent=1, sort_keys=True) gives
    the whole document, without the whole document in memory."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write('{\n "@context": "%s",\n "@graph": [' % CRATE_CONTEXT)
        for index, entity in enumerate(crate_graph(entries, records, info)):
            text = entity_json(entity).replace("\n", "\n  ")
            handle.write(("," if index else "") + "\n  " + text)
        handle.write("\n ]\n}")


def entity_json(entity: dict) -> str:
    """json.dumps(entity, indent=1, sort_keys=True): a flat entity's lines joined here, its values
    by the C encoder (with an indent, json's encoder is pure Python: most of a large release's
    crate time)."""
    if not all(value is None or isinstance(value, (str, int, float)) for value in entity.values()):
        return json.dumps(entity, indent=1, sort_keys=True)
    return "{\n" + ",\n".join(f" {json.dumps(key)}: {json.dumps(value)}" for key, value in sorted(entity.items())) + "\n}"


def file_uri(path: str) -> str:
    """Path(path).as_uri() of an absolute path, without building a Path (a release names each raw
    file three times, millions at full size): the same percent-encoding of the same bytes."""
    if os.name != "posix" or "//" in path or "/./" in path or path.endswith(("/", "/.")):
        return Path(path).as_uri()  # pathlib normalises these first
    return "file://" + urllib.parse.quote_from_bytes(os.fsencode(path))


def crate_graph(entries: list[dict], records: list[dict], info: dict) -> Iterator[dict]:
    """The entities of a Workflow Run RO-Crate (process run profile) of the release's lineage;
    `records` whole or slim (load_lineage_records): their raw inputs are read back once, one record
    at a time, and each job keeps only the paths of its own (interned: one string a raw file)."""
    def file_id(path: str) -> str:
        return path if not os.path.isabs(path) else file_uri(path)

    released = [e for e in entries if e["released"]]
    raw, raw_of_job = {}, []
    for record in records:
        paths = []
        for item in full_record(record)["raw_inputs"]:
            path = sys.intern(item["absolute_path"])
            paths.append(path)
            if item.get("warc"):  # a record: the crate names its archive (hashed by the warc_tables job)
                raw.setdefault(path, {"path": item["warc"]["file"], "sha256": None, "size": None})
            else:  # what the crate says of it, not the whole item: one a photo, page or segmentation
                raw[path] = {"path": item["path"], "sha256": item["sha256"], "size": item["size"]}
        raw_of_job.append(tuple(dict.fromkeys(paths)))
    uris = {path: file_uri(path) for path in raw}
    outside = sorted({i["path"] for r in records for i in r["inputs"] if os.path.isabs(i["path"])} - set(raw))
    metadata = info["config"].get("release", {})
    licence = crate_licence(metadata.get("license", ""))
    yield from [
        {"@id": CRATE, "@type": "CreativeWork", "conformsTo": {"@id": "https://w3id.org/ro/crate/1.1"},
         "about": {"@id": "./"}},
        {"@id": "./", "@type": "Dataset", "name": metadata.get("title") or "annobench release",
         "description": metadata.get("description") or "Image-annotation benchmark data regenerated by annobench",
         "datePublished": info["created"], "license": {"@id": licence["@id"]},
         "conformsTo": {"@id": PROCESS_PROFILE},
         # The raw photos, pages and segmentations (outside the release, by file URI) are part of
         # the crate too: its lineage starts from them.
         "hasPart": [{"@id": e["path"]} for e in released] + [{"@id": uris[p]} for p in sorted(raw)]
                    + [{"@id": file_uri(p)} for p in outside],
         "mentions": [{"@id": f"#job-{job_name(r)}"} for r in records]},
        licence,
        {"@id": PROCESS_PROFILE, "@type": "CreativeWork", "name": "Process Run Crate", "version": "0.5"},
        {"@id": "#annobench", "@type": "SoftwareApplication", "name": "annobench", "version": info["annobench"],
         "identifier": info["code"]["commit"] or "unknown"},
    ]
    for entry in entries:
        yield {"@id": entry["path"] if entry["released"] else f"#build/{entry['path']}", "@type": "File",
               "contentSize": entry["size"], "sha256": entry["sha256"]}
    for path, item in sorted(raw.items()):
        entity = {"@id": uris[path], "@type": "File", "name": item["path"], "sha256": item["sha256"],
                  "contentSize": item["size"]}
        yield {key: value for key, value in entity.items() if value is not None}
    input_hashes = {i["path"]: i["sha256"] for r in records for i in r["inputs"] if os.path.isabs(i["path"])}
    for path in outside:  # inputs outside the build that are not raw data files (a mapping file)
        yield {"@id": file_uri(path), "@type": "File", "name": Path(path).name,
               "sha256": input_hashes[path]}
    released_paths = {e["path"] for e in released}

    def ref(path: str) -> dict:
        if os.path.isabs(path):
            return {"@id": file_id(path)}
        return {"@id": path if path in released_paths else f"#build/{path}"}

    for record, raw_paths in zip(records, raw_of_job):
        yield {
            "@id": f"#job-{job_name(record)}", "@type": "CreateAction", "name": job_name(record),
            "instrument": {"@id": "#annobench"}, "endTime": record["finished"],
            "object": [ref(i["path"]) for i in record["inputs"]] + [
                {"@id": uri} for uri in dict.fromkeys(uris[path] for path in raw_paths)],
            "result": [ref(o["path"]) for o in record["outputs"]],
        }


def crate_licence(licence: str) -> dict:
    """The crate's licence entity: an SPDX id or a URL from the config; none chosen says so."""
    if not licence:
        return {"@id": "#licence", "@type": "CreativeWork", "name": "not specified",
                "description": "No licence was set for this release (release.license); the licences of its "
                               "sources apply."}
    if "://" in licence:
        return {"@id": licence, "@type": "CreativeWork", "name": licence}
    return {"@id": f"https://spdx.org/licenses/{licence}", "@type": "CreativeWork", "name": licence}


def release_job(job: Job) -> None:
    """Rule release: the release folder, from the build's files and every job's record."""
    from annobench.core.config import REPO_DIR

    release_dir = Path(job.output_files[0]).parent
    count = assemble_release(job.out_dir, release_dir, job.config, REPO_DIR, job.params["n_shards"])
    job.log(f"{count} files released with their lineage in {release_dir}")
