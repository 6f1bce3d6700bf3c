"""The caption part of the benchmark stage (subtask 2 of ImageCLEF 2016, Gilbert et al. 2016).

Each function at the end is one Snakemake job, callable without Snakemake:

- rule caption_references: the `captions` table of the benchmark's images,
  read from benchmark.captions.references (a CSV `image_id,caption` or COCO
  caption JSON), or, with `harvested`, the captions the text stage found in
  the pages (`page_captions` rows its default filter keeps; the same text
  twice for one image counted once);
- rule caption_baselines: the nearest and consensus transfer runs (a job per feature)
  (captions.baselines) on each feature of benchmark.features, for every test
  image, from the training images' references;
- rule caption_meteor_block: a block of test images' references and captions
  tokenised, and each segment's Meteor 1.5 statistics (captions.blocks);
- rules caption_run_evaluation and caption_human_bound: a run's Meteor
  statistics and secondary measures over the test images with references (its
  caption_scores rows aside), and the human upper bound, from every block;
- rule caption_evaluation: the `caption_scores` table (each run's caption and
  Meteor per image).

Images are always taken in image_id order, so every output is the same bytes
whatever the cores.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from annobench.benchmark.captions.baselines import TransferredCaption
from annobench.benchmark.captions.blocks import HUMAN_RUN
from annobench.benchmark.captions.files import (
    CaptionError,
    CaptionRun,
    Reference,
    References,
    captions_table,
    read_references,
)
from annobench.benchmark.json_form import json_bytes
from annobench.benchmark.splits import split_ids
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.jobs import Job
from annobench.core.provenance import raw_file
from annobench.core.tables import field, image_ids, rows_to_table, write_table

HARVESTED = "harvested"

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
    return {caption_run_name(kind, feature): {"kind": kind, "feature": feature}
            for kind in settings["captions"]["baselines"] for feature in settings["features"]}


def caption_run_name(kind: str, feature: str) -> str:
    return f"caption_{kind}_{feature}"


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
    """Rule caption_baselines: the nearest and consensus runs of one feature (the `feature`
    wildcard), from the training images' references; the neighbours are read once and the
    references' n-gram space is built once."""
    from annobench.benchmark.captions.baselines import NgramSpace, consensus_captions, nearest_captions

    feature = job.wildcards["feature"]
    train = set(split_ids(job.input("splits"), "train"))
    references = references_from_table(job.input("captions"), train)
    texts = {image_id: references.texts(image_id) for image_id in references.images}
    depth = job.params["settings"]["neighbours"]
    kinds = job.params["kinds"]
    space = NgramSpace(texts) if "consensus" in kinds else None
    lists = neighbour_lists(job.input("neighbours"))
    for kind in kinds:
        name = caption_run_name(kind, feature)
        run = (consensus_captions(lists, texts, depth, space) if kind == "consensus"
               else nearest_captions(lists, texts, depth))
        write_table(run_table(run), job.output(f"{kind}_run"), "caption_run",
                    params={"kind": kind, "feature": feature, "neighbours": depth})
        write_bytes_atomic(job.output(f"{kind}_run_text"), run_csv_bytes(run))
        job.log(f"{name}: {len(run)} of {len(lists)} test images captioned from "
                f"{len(references.images)} described training images")


# -- evaluation ------------------------------------------------------------------

def evaluation_settings(method: str) -> dict:
    from annobench.benchmark.captions.meteor import METEOR_COMMAND

    return {"tokenize": method, "std": "population", "meteor": METEOR_COMMAND}


def test_references(job: Job, images: set[str] | None = None) -> References:
    """The references of the test images (of `images` only, when given)."""
    test = set(split_ids(job.input("splits"), "test"))
    return references_from_table(job.input("captions"), test if images is None else test & images)


def caption_meteor_block_job(job: Job) -> None:
    """Rule caption_meteor_block: the block's test images' references and every run's captions
    tokenised, and each segment's Meteor statistics (captions.blocks)."""
    from annobench.benchmark.captions.blocks import block_segments
    from annobench.benchmark.captions.meteor import require_tools

    require_tools()
    block_images = image_ids(job.input_list("images"))
    references = test_references(job, block_images)
    runs = {name: run_of_table(job.input(f"run_{name}"), name, references) for name in sorted(job.params["runs"])}
    method = job.params["settings"]["tokenize"]
    tokens, segments = block_segments(references, runs, method)
    write_table(tokens, job.output("references"), "caption_reference_tokens", params={"tokenize": method})
    write_table(segments, job.output("segments"), "caption_segments", params=evaluation_settings(method))
    job.log(f"{len(references.images)} test images with references of {len(block_images)} images: "
            f"{segments.num_rows} segments of {len(runs)} runs and the human bound")


def pooled_evaluation(job: Job, run: str):
    """(the test images' references, their tokenised forms, the run's segments in image order,
    their Meteor) from every block, checked to cover the same images."""
    from annobench.benchmark.captions.blocks import evaluate_statistics, pooled_references, pooled_segments

    references = test_references(job)
    if not references.images:
        raise CaptionError(f"no test image has a reference description "
                           f"({len(split_ids(job.input('splits'), 'test'))} test images): "
                           "see benchmark.captions.references")
    refs = pooled_references(job.input_list("references"))
    segments = pooled_segments(job.input_list("segments"), run)
    if list(refs) != list(references.images):
        raise CaptionError(f"the Meteor blocks hold {len(refs)} images with references, the captions table "
                           f"{len(references.images)}: rebuild the blocks")
    corpus, scores = evaluate_statistics(segments)
    return references, refs, segments, corpus, scores


def caption_run_evaluation_job(job: Job) -> None:
    """Rule caption_run_evaluation: one run's Meteor statistics and secondary measures, and its
    rows of the caption_scores table."""
    from annobench.benchmark.captions.measure import run_result

    name = job.wildcards["run"]
    method = job.params["settings"]["tokenize"]
    references, refs, segments, corpus, scores = pooled_evaluation(job, name)
    columns = segments.select(["image_id", "hypothesis", "captioned"]).to_pydict()
    if columns["image_id"] != list(refs):
        raise CaptionError(f"{name}: the Meteor blocks score {len(columns['image_id'])} of its captions, "
                           f"the references are of {len(refs)} images: rebuild the blocks")
    hypotheses = dict(zip(columns["image_id"], columns["hypothesis"]))
    captioned = {i for i, given in zip(columns["image_id"], columns["captioned"]) if given}
    result, per_image = run_result(refs, hypotheses, captioned, corpus, scores)
    write_bytes_atomic(job.output("evaluation"), json_bytes(
        {**result, "run": name, "settings": evaluation_settings(method), "references": references.summary()}))
    run = run_of_table(job.input("run"), name, references)
    rows = [{"run": name, "image_id": image_id, "caption": run.captions.get(image_id), "meteor": score}
            for image_id, score in per_image.items()]
    write_table(rows_to_table(rows, CAPTION_SCORES_SCHEMA), job.output("scores"), "caption_scores",
                params=evaluation_settings(method))
    job.log(f"{name}: Meteor {result['meteor']['mean']:.4f} over {result['images']} images")


def caption_human_bound_job(job: Job) -> None:
    """Rule caption_human_bound: the leave-one-out Meteor of the test images' references."""
    from annobench.benchmark.captions.measure import human_result

    method = job.params["settings"]["tokenize"]
    references, refs, segments, corpus, scores = pooled_evaluation(job, HUMAN_RUN)
    human = human_result(refs, segments.column("image_id").to_pylist(), corpus, scores)
    write_bytes_atomic(job.output("evaluation"), json_bytes(
        {**human, "run": HUMAN_RUN, "settings": evaluation_settings(method), "references": references.summary()}))
    job.log(f"human bound: Meteor {human['meteor']['mean']:.4f} over {human['images']} images")


def caption_evaluation_job(job: Job) -> None:
    """Rule caption_evaluation: the caption_scores table, every run's rows in run order."""
    import pyarrow as pa

    parts = [pq.read_table(job.input(f"scores_{name}")) for name in sorted(job.params["runs"])]
    table = pa.concat_tables(parts).combine_chunks() if parts else CAPTION_SCORES_SCHEMA.empty_table()
    write_table(table.replace_schema_metadata(None).cast(CAPTION_SCORES_SCHEMA), job.output("scores"),
                "caption_scores", params=evaluation_settings(job.params["settings"]["tokenize"]))
    job.log(f"{table.num_rows} caption scores of {len(parts)} runs")


def run_of_table(path: str, name: str, references: References) -> CaptionRun:
    """A caption run's Parquet file, restricted to the images with references."""
    table = pq.read_table(path, columns=["image_id", "caption"]).to_pydict()
    captions = {i: c for i, c in zip(table["image_id"], table["caption"]) if i in references.images}
    return CaptionRun(captions, name, "table")
