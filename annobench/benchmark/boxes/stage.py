"""The box part of the benchmark stage (ImageCLEF 2016 subtask 1, Gilbert et al. 2016).

Each function at the end is one Snakemake job, callable without Snakemake:
box ground truth for the benchmark's images (rule benchmark_boxes) and the box
baselines built from the image-level k-NN runs (rule box_baseline, one job a run;
the baselines are described in boxes.baselines). Test images are the
benchmark's test split, always in image_id order, so every output is the
same bytes whatever the cores.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from annobench.benchmark.boxes.baselines import knn_transfer_run, whole_image_run
from annobench.benchmark.boxes.measure import DEFAULT_THRESHOLDS, evaluate_boxes
from annobench.benchmark.boxes.model import BoxInputError
from annobench.benchmark.image_list import ImageList
from annobench.benchmark.json_form import json_bytes
from annobench.benchmark.splits import split_ids
from annobench.core.errors import AnnobenchError
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.jobs import Job
from annobench.core.provenance import raw_file
from annobench.core.tables import write_table

# benchmark.boxes.source -> the forms truth_form recognises for it.
BOX_SOURCE_FORMS = {"voc": ("voc",), "coco": ("coco",), "table": ("csv", "parquet"), "xywh": ("text",)}
BOX_RUN_FILES = ("run", "run_text", "evaluation")


class BoxConfigError(AnnobenchError):
    """A benchmark.boxes setting this build cannot follow."""


# -- planning (called from the Snakefile) ----------------------------------

def boxes_enabled(config: dict) -> bool:
    return bool(config["benchmark"]["ground_truth"]["source"] and config["benchmark"]["boxes"]["source"])


def box_baseline_runs(config: dict) -> dict[str, dict]:
    """Box run name -> {'kind': whole_image | knn_transfer, 'feature': ...}."""
    if not boxes_enabled(config):
        return {}
    settings = config["benchmark"]
    return {f"{kind}_{feature}": {"kind": kind, "feature": feature}
            for kind in settings["boxes"]["baselines"] for feature in settings["features"]}


def check_config(config: dict) -> None:
    """BoxConfigError for a combination of settings the box rules cannot build."""
    settings = config["benchmark"]
    boxes = settings["boxes"]
    if boxes["source"] and not settings["ground_truth"]["source"]:
        raise BoxConfigError("benchmark.boxes and benchmark.selection need the benchmark: set "
                             "benchmark.ground_truth.source")
    if boxes["source"] == "segmentations" and not config["input"]["segmentations"]:
        raise BoxConfigError("benchmark.boxes.source is segmentations but input.segmentations is empty")
    if boxes["source"] not in ("", "segmentations") and not boxes["path"]:
        raise BoxConfigError(f"benchmark.boxes.source is {boxes['source']} but benchmark.boxes.path is empty")
    if boxes["source"] and boxes["baselines"] and "knn" not in settings["baselines"]:
        raise BoxConfigError("benchmark.boxes.baselines are built from the knn runs: add knn to "
                             "benchmark.baselines (or set benchmark.boxes.baselines: [])")


def boxes_job_settings(config: dict) -> dict:
    """What the box truth depends on, files named by their state (size and time), never by path."""
    from annobench.core.fingerprint import folder_state

    boxes = config["benchmark"]["boxes"]
    return {"source": boxes["source"], "path": folder_state(boxes["path"]) if boxes["path"] else "",
            "segmentations": config["segmentations"] if boxes["source"] == "segmentations" else {}}


# -- the benchmark's images' sizes ---------------------------------------------

def image_sizes(images_tables: list[str]) -> dict[str, tuple[int, int]]:
    """image_id -> (width, height) of the original image after EXIF orientation (the images tables)."""
    sizes = {}
    for path in images_tables:
        table = pq.read_table(path, columns=["image_id", "width", "height"]).to_pydict()
        sizes.update(zip(table["image_id"], zip(table["width"], table["height"])))
    return sizes


# -- box ground truth ---------------------------------------------------------

def build_box_truth(config: dict, images_tables: list[str], concepts_path: str, splits_path: str,
                    segmentations: str, outputs: dict, log) -> list[dict]:
    """The boxes and box rejects of the benchmark's images; returns the raw files read."""
    from annobench.benchmark.boxes.truth import boxes_from_segmentations, read_box_truth, truth_form
    from annobench.benchmark.vocabulary import read_concepts_table

    boxes = config["benchmark"]["boxes"]
    benchmark_ids = split_ids(splits_path)
    sizes = image_sizes(images_tables)
    images = ImageList(tuple(benchmark_ids), {i: sizes[i] for i in benchmark_ids})
    vocabulary = [c.name for c in read_concepts_table(concepts_path)]
    if boxes["source"] == "segmentations":
        from annobench.regions.matlimits import MatLimits
        from annobench.regions.stage import KINDS, source_options

        kind = config["segmentations"]["kind"]
        truth = boxes_from_segmentations(KINDS[kind], segmentations, vocabulary, images,
                                         wanted=images.__contains__,
                                         mat_limits=MatLimits.from_config(config["segmentations"]),
                                         **source_options(config["segmentations"]))
        raw = []
    else:
        form = truth_form(boxes["path"])
        if form not in BOX_SOURCE_FORMS[boxes["source"]]:
            raise BoxInputError(f"benchmark.boxes.path {boxes['path']} holds {form} box ground truth, not "
                                f"{boxes['source']} (benchmark.boxes.source)")
        truth = read_box_truth(boxes["path"], vocabulary, images, geometry="xywh" if form == "text" else None)
        raw = _box_source_files(boxes["path"])
    if truth.boxes.empty:
        raise BoxInputError(f"no box of the {boxes['source']} ground truth is on an image of the benchmark "
                            f"({len(truth.rejects)} rejected; first: "
                            f"{truth.rejects['reason'].iloc[0] if len(truth.rejects) else 'none'})")
    params = {"source": boxes["source"], "images": len(benchmark_ids), "concepts": vocabulary}
    write_table(truth.boxes_table(), outputs["boxes"], "boxes", params=params)
    write_table(truth.rejects_table(), outputs["box_rejects"], "box_rejects", params=params)
    log(f"{len(truth.boxes)} boxes on {truth.boxes['image_id'].nunique()} of {len(benchmark_ids)} benchmark "
        f"images, {len(truth.rejects)} rejects rows")
    return raw


def _box_source_files(path: str) -> list[dict]:
    root = Path(path)
    if root.is_file():
        return [raw_file(root, root.name, role="box_truth")]
    return [raw_file(p, p.relative_to(root).as_posix(), role="box_truth")
            for p in sorted(p for p in root.rglob("*") if p.is_file())]


# -- box baselines --------------------------------------------------------------

def evaluate_box_run(name: str, truth: pd.DataFrame, run: pd.DataFrame, test_ids: list[str]) -> dict:
    """The localisation measure at t = 0, 0.1, ..., 0.9 on the test images' truth."""
    test_truth = truth[truth["image_id"].isin(set(test_ids))]
    result = evaluate_boxes(test_truth, run, DEFAULT_THRESHOLDS, image_ids=test_ids)
    return {"run": name, **result}


def build_box_baseline(name: str, spec: dict, settings: dict, inputs: dict, outputs: dict, log) -> None:
    """One box baseline run (spec: kind and feature), written (Parquet and text) and evaluated."""
    from annobench.benchmark.boxes.forms import write_box_run
    from annobench.benchmark.neighbours.stage import read_neighbours
    from annobench.benchmark.runs.files import read_run
    from annobench.benchmark.vocabulary import read_concepts_table

    test_ids = split_ids(inputs["splits"], "test")
    sizes = image_sizes(inputs["images"])
    truth = pd.read_parquet(inputs["boxes"])
    if spec["kind"] == "whole_image":
        concepts = [c.name for c in read_concepts_table(inputs["concepts"])]
        run = whole_image_run(read_run(inputs["knn_run"], concepts), sizes)
    else:
        neighbours, _ = read_neighbours(inputs["neighbours"], test_ids)
        run = knn_transfer_run(test_ids, neighbours, truth, sizes, settings["knn"]["neighbours"])
    write_box_run(run, outputs["run"], "parquet")
    write_box_run(run, outputs["run_text"], "text")
    result = evaluate_box_run(name, truth, run, test_ids)
    write_bytes_atomic(outputs["evaluation"], json_bytes(result))
    log(f"{name}: {len(run)} boxes on {run['image_id'].nunique()} of {len(test_ids)} test images; "
        f"MAP@0 {result['MAP']['0']:.4f}, MAP@0.5 {result['MAP']['0.5']:.4f}")


# -- the rules' jobs ----------------------------------------------------------

def boxes_job(job: Job) -> list[dict]:
    """Rule benchmark_boxes. Returns the box ground-truth files read (none for segmentations)."""
    segmentations = job.config["input"]["segmentations"]
    return build_box_truth(job.config, job.input_list("images"), job.input("concepts"), job.input("splits"),
                           segmentations, job.outputs, job.log)


def box_baseline_job(job: Job) -> None:
    """Rule box_baseline: one box baseline run (the `run` wildcard), written and evaluated."""
    build_box_baseline(job.wildcards["run"], job.params["run"], job.params["settings"], job.inputs, job.outputs,
                       job.log)
