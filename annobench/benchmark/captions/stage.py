"""The caption part of the benchmark stage (SPEC 9, subtask 2 of ImageCLEF 2016).

Each function at the end is one Snakemake job, callable without Snakemake:

- rule caption_references: the `captions` table of the benchmark's images,
  read from benchmark.captions.references (a CSV `image_id,caption` or COCO
  caption JSON), or, with `harvested`, the captions the text stage found in
  the pages (`page_captions` rows its default filter keeps; the same text
  twice for one image counted once);
- rule caption_baselines: the nearest and consensus transfer runs
  (captions.baselines) on each feature of benchmark.features, for every test
  image, from the training images' references;
- rule caption_evaluation: each run's Meteor 1.5 statistics and secondary
  measures over the test images with references, the human upper bound, and
  the `caption_scores` table (each run's caption and Meteor per image).

Images are always taken in image_id order, so every output is the same bytes
whatever the cores.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from annobench.benchmark.box_stage import split_ids
from annobench.benchmark.captions.baselines import TransferredCaption
from annobench.benchmark.captions.files import (
    CaptionError,
    CaptionRun,
    Reference,
    References,
    captions_table,
    read_references,
)
from annobench.benchmark.stage import json_bytes
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.jobs import Job
from annobench.core.provenance import raw_file
from annobench.core.tables import field, rows_to_table, write_table

HARVESTED = "harvested"
HUMAN_RUN = "caption_human"

CAPTION_RUN_SCHEMA = pa.schema([
    field("image_id", pa.string(), "a test image"),
    field("caption", pa.string(), "the run's description of it"),
    field("source_image", pa.string(), "the training image whose reference was transferred"),
    field("reference", pa.int32(), "that reference's number among the training image's references"),
])
CAPTION_SCORES_SCHEMA = pa.schema([
    field("run", pa.string(), "the caption run"),
    field("image_id", pa.string(), "a test image with reference descriptions"),
    field("caption", pa.string(), "the run's caption, null if it gave none", nullable=True),
    field("meteor", pa.float64(), "Meteor 1.5 of the caption against the image's references (0 if none)"),
])


# -- planning (called from the Snakefile) ----------------------------------

def captions_enabled(config: dict) -> bool:
    settings = config["benchmark"]
    return bool(settings["ground_truth"]["source"] and settings["captions"]["references"])


def caption_runs(config: dict) -> dict[str, dict]:
    """Caption run name -> {'kind': nearest | consensus, 'feature': ...}."""
    if not captions_enabled(config):
        return {}
    settings = config["benchmark"]
    return {f"caption_{kind}_{feature}": {"kind": kind, "feature": feature}
            for kind in settings["captions"]["baselines"] for feature in settings["features"]}


def references_job_settings(config: dict) -> dict:
    """benchmark.captions with the references file named by its state, not its path."""
    from annobench.core.fingerprint import file_state

    captions = config["benchmark"]["captions"]
    given = captions["references"]
    return {**captions, "references": given if given == HARVESTED else file_state(given)}


# -- references ----------------------------------------------------------------

def benchmark_references(given: str, page_captions: list[str], benchmark_images: set[str]) -> References:
    """The references of the benchmark's images, from a file or from the harvested captions."""
    if given == HARVESTED:
        references = harvested_references(page_captions)
    else:
        references = read_references(given)
    kept = {image_id: refs for image_id, refs in references.images.items() if image_id in benchmark_images}
    if not kept:
        raise CaptionError(f"{references.path}: no reference description is for an image of the benchmark "
                           f"({len(references.images)} images described, {len(benchmark_images)} in the benchmark)")
    return References(kept, references.path, references.form)


def harvested_references(page_captions: list[str]) -> References:
    """Kept page captions as references: per image in the table's order (page, kind, text), each text once."""
    images: dict[str, list[Reference]] = {}
    seen: set[tuple[str, str]] = set()
    columns = ["image_id", "page_id", "kind", "text", "keep"]
    for path in sorted(page_captions):
        for row in pq.read_table(path, columns=columns).to_pylist():
            refs = images.setdefault(row["image_id"], [])
            if row["keep"] and (row["image_id"], row["text"]) not in seen:
                seen.add((row["image_id"], row["text"]))
                refs.append(Reference(row["text"], f"page_captions:{row['page_id']}:{row['kind']}"))
    kept = {image_id: tuple(refs) for image_id, refs in sorted(images.items()) if refs}
    return References(kept, HARVESTED, "page_captions")


def references_from_table(path: str, images: set[str] | None = None) -> References:
    """The `captions` table back as References (of `images` only, when given)."""
    grouped: dict[str, list[Reference]] = {}
    for row in pq.read_table(path).to_pylist():
        if images is None or row["image_id"] in images:
            grouped.setdefault(row["image_id"], []).append(Reference(row["text"], row["source"]))
    return References({image_id: tuple(grouped[image_id]) for image_id in sorted(grouped)}, path, "table")


def caption_references_job(job: Job) -> list[dict]:
    """Rule caption_references. Returns the references file read (none when harvested)."""
    given = job.config["benchmark"]["captions"]["references"]
    images = set(split_ids(job.input("splits")))
    references = benchmark_references(given, job.input_list("page_captions"), images)
    write_table(captions_table(references), job.output("captions"), "captions",
                params={"references": job.params["settings"]["references"], "format": references.form})
    summary = references.summary()
    job.log(f"{summary['references']} references of {summary['images']} images ({references.form})")
    return [] if given == HARVESTED else [raw_file(given, Path(given).name, role="caption_references")]


# -- baselines -------------------------------------------------------------------

def neighbour_lists(path: str) -> dict[str, list[str]]:
    table = pq.read_table(path, columns=["image_id", "neighbours"]).to_pydict()
    return dict(zip(table["image_id"], table["neighbours"]))


def run_csv_bytes(run: dict[str, TransferredCaption]) -> bytes:
    """The run as submitted: CSV `image_id,caption`, images sorted."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["image_id", "caption"])
    writer.writerows([image_id, run[image_id].caption] for image_id in sorted(run))
    return buffer.getvalue().encode("utf-8")


def run_table(run: dict[str, TransferredCaption]) -> pa.Table:
    rows = [{"image_id": image_id, "caption": item.caption, "source_image": item.source_image,
             "reference": item.reference} for image_id, item in sorted(run.items())]
    return rows_to_table(rows, CAPTION_RUN_SCHEMA)


def caption_baselines_job(job: Job) -> None:
    """Rule caption_baselines: every nearest and consensus run, from the training images' references.
    Each feature's neighbours are read once, and the references' n-gram space is built once."""
    from annobench.benchmark.captions.baselines import NgramSpace, consensus_captions, nearest_captions

    train = set(split_ids(job.input("splits"), "train"))
    references = references_from_table(job.input("captions"), train)
    texts = {image_id: references.texts(image_id) for image_id in references.images}
    depth = job.params["settings"]["neighbours"]
    runs = job.params["runs"]
    space = NgramSpace(texts) if any(spec["kind"] == "consensus" for spec in runs.values()) else None
    for feature in sorted({spec["feature"] for spec in runs.values()}):
        lists = neighbour_lists(job.input(f"neighbours_{feature}"))
        for name, spec in sorted(runs.items()):
            if spec["feature"] != feature:
                continue
            run = (consensus_captions(lists, texts, depth, space) if spec["kind"] == "consensus"
                   else nearest_captions(lists, texts, depth))
            write_table(run_table(run), job.output(f"{name}_run"), "caption_run",
                        params={**spec, "neighbours": depth})
            write_bytes_atomic(job.output(f"{name}_run_text"), run_csv_bytes(run))
            job.log(f"{name}: {len(run)} of {len(lists)} test images captioned from "
                    f"{len(references.images)} described training images")


# -- evaluation ------------------------------------------------------------------

def caption_evaluation_job(job: Job) -> None:
    """Rule caption_evaluation: each run and the human bound against the test images' references."""
    from annobench.benchmark.captions.measure import human_bound, score_runs
    from annobench.benchmark.captions.meteor import METEOR_COMMAND, require_tools

    require_tools()
    test = set(split_ids(job.input("splits"), "test"))
    references = references_from_table(job.input("captions"), test)
    if not references.images:
        raise CaptionError(f"no test image has a reference description ({len(test)} test images): "
                           "see benchmark.captions.references")
    method = job.params["settings"]["tokenize"]
    settings = {"tokenize": method, "std": "population", "meteor": METEOR_COMMAND}
    runs = {name: run_of_table(job.input(f"run_{name}"), name, references) for name in sorted(job.params["runs"])}
    score_rows = []
    for name, (result, per_image) in score_runs(references, runs, method).items():
        write_bytes_atomic(job.output(f"evaluation_{name}"),
                           json_bytes({**result, "run": name, "settings": settings, "references": references.summary()}))
        score_rows += [{"run": name, "image_id": image_id, "caption": runs[name].captions.get(image_id),
                        "meteor": score} for image_id, score in per_image.items()]
        job.log(f"{name}: Meteor {result['meteor']['mean']:.4f} over {result['images']} images")
    human = human_bound(references, method)
    write_bytes_atomic(job.output("evaluation_human"),
                       json_bytes({**human, "run": HUMAN_RUN, "settings": settings, "references": references.summary()}))
    write_table(rows_to_table(score_rows, CAPTION_SCORES_SCHEMA), job.output("scores"), "caption_scores",
                params=settings)


def run_of_table(path: str, name: str, references: References) -> CaptionRun:
    """A caption run's Parquet file, restricted to the images with references."""
    table = pq.read_table(path, columns=["image_id", "caption"]).to_pydict()
    captions = {i: c for i, c in zip(table["image_id"], table["caption"]) if i in references.images}
    return CaptionRun(captions, name, "table")
