"""The box part of the benchmark stage (ImageCLEF 2016 subtask 1, Gilbert et al. 2016).

Each function at the end is one Snakemake job, callable without Snakemake:
box ground truth for the benchmark's images (rule benchmark_boxes) and the box
baselines built from the image-level k-NN runs (rule box_baseline, one job a run;
the baselines are described in boxes.baselines). Test images are the
benchmark's test split, always in image_id order, so every output is the
same bytes whatever the cores.

With benchmark.ground_truth.source: boxes, the image labels are made from the
kept boxes (rule benchmark_truth reads the boxes table), so the box truth is
read before the benchmark exists: against every ingested image (their sizes)
and benchmark.vocabulary when it is set, not the benchmark's splits and concepts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
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
BOX_SOURCE_FORMS = {"voc": ("voc",), "coco": ("coco",), "table": ("csv", "parquet"), "text": ("text",)}
GEOMETRY_KEY = "benchmark.boxes.geometry:"  # how the build's messages name the geometry to set
BOX_RUN_FILES = ("run", "run_text", "evaluation")


class BoxConfigError(AnnobenchError):
    """A benchmark.boxes setting this build cannot follow."""


# -- planning (called from the Snakefile) ----------------------------------

def boxes_enabled(config: dict) -> bool:
    return bool(config["benchmark"]["ground_truth"]["source"] and config["benchmark"]["boxes"]["source"])


def labels_from_boxes(config: dict) -> bool:
    """benchmark.ground_truth.source: boxes: the image labels are the concepts of the kept boxes."""
    return config["benchmark"]["ground_truth"]["source"] == "boxes"


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
    if boxes["source"] == "xywh":
        raise BoxConfigError("benchmark.boxes.source xywh is now source: text with geometry: xywh (a folder of "
                             "box text files, whose geometry benchmark.boxes.geometry names: xyxy, xyxy-exclusive "
                             "or xywh)")
    if boxes["source"] == "text" and not boxes["geometry"]:
        raise BoxConfigError("benchmark.boxes.source is text but benchmark.boxes.geometry is empty: a folder of box "
                             "text files does not say its geometry; set it to xyxy (xmin ymin xmax ymax, the "
                             "maximum inclusive, as VOC), xyxy-exclusive (the maximum one past the box) or xywh "
                             "(left top width height)")
    if labels_from_boxes(config) and not boxes["source"]:
        raise BoxConfigError("benchmark.ground_truth.source is boxes but benchmark.boxes.source is empty")
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

    settings = config["benchmark"]
    boxes = settings["boxes"]
    job = {"source": boxes["source"], "path": folder_state(boxes["path"]) if boxes["path"] else "",
           "segmentations": config["segmentations"] if boxes["source"] == "segmentations" else {}}
    # Keys past the first three only when they change what is read, so older builds keep their records.
    if boxes["source"] == "text":
        job["geometry"] = boxes["geometry"]
    if boxes["outside"] != "reject":
        job["outside"] = boxes["outside"]
    if labels_from_boxes(config):
        job["labels_from_boxes"] = True
        job["vocabulary"] = folder_state(settings["vocabulary"]) if settings["vocabulary"] else ""
    return job


# -- the benchmark's images' sizes ---------------------------------------------

def image_sizes(images_tables: list[str]) -> dict[str, tuple[int, int]]:
    """image_id -> (width, height) of the original image after EXIF orientation (the images tables)."""
    sizes = {}
    for path in images_tables:
        table = pq.read_table(path, columns=["image_id", "width", "height"]).to_pydict()
        sizes.update(zip(table["image_id"], zip(table["width"], table["height"])))
    return sizes


# -- box ground truth ---------------------------------------------------------

def build_box_truth(config: dict, images_tables: list[str], concepts_path: str | None, splits_path: str | None,
                    segmentations: str, outputs: dict, log) -> list[dict]:
    """The boxes, box rejects and box notes of the benchmark's images; returns the raw files read.

    Without concepts and splits (ground truth from boxes): every ingested image and the vocabulary
    of benchmark.vocabulary, if any."""
    from annobench.benchmark.boxes.truth import boxes_from_segmentations, read_box_truth, truth_form
    from annobench.benchmark.vocabulary import read_concepts_table, read_vocabulary

    settings = config["benchmark"]
    boxes = settings["boxes"]
    sizes = image_sizes(images_tables)
    if splits_path is not None:
        benchmark_ids = split_ids(splits_path)
        images = ImageList(tuple(benchmark_ids), {i: sizes[i] for i in benchmark_ids})
        vocabulary = [c.name for c in read_concepts_table(concepts_path)]
    else:
        benchmark_ids = sorted(sizes)
        images = ImageList(tuple(benchmark_ids), sizes)
        vocabulary = [c.name for c in read_vocabulary(settings["vocabulary"])] if settings["vocabulary"] else None
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
        truth = read_box_truth(boxes["path"], vocabulary, images, geometry=boxes["geometry"] or None,
                               outside=boxes["outside"], option=GEOMETRY_KEY)
        raw = _box_source_files(boxes["path"])
    if splits_path is None and settings["vocabulary"]:
        raw.append(raw_file(settings["vocabulary"], Path(settings["vocabulary"]).name, role="vocabulary"))
    if truth.boxes.empty:
        raise BoxInputError(f"no box of the {boxes['source']} ground truth is on an image of the benchmark "
                            f"({len(truth.rejects)} rejected; first: "
                            f"{truth.rejects['reason'].iloc[0] if len(truth.rejects) else 'none'})")
    params = {"source": boxes["source"], "images": len(benchmark_ids), "concepts": vocabulary}
    if boxes["source"] == "text":
        params["geometry"] = boxes["geometry"]
    if boxes["outside"] != "reject":
        params["outside"] = boxes["outside"]
    write_table(truth.boxes_table(), outputs["boxes"], "boxes", params=params)
    write_table(truth.rejects_table(), outputs["box_rejects"], "box_rejects", params=params)
    write_table(truth.notes_table(), outputs["box_notes"], "box_notes", params=params)
    clipped = f", {len(truth.notes)} clipped to their image (box_notes)" if len(truth.notes) else ""
    log(f"{len(truth.boxes)} boxes on {truth.boxes['image_id'].nunique()} of {len(benchmark_ids)} benchmark "
        f"images, {len(truth.rejects)} rejects rows{clipped}")
    reasons = truth.rejects["reason"].str.replace(r" \(.*", "", regex=True).value_counts()
    for reason, count in reasons.head(10).items():
        log(f"  rejected: {count} x {reason}")
    for warning in truth.warnings:
        log(f"note: {warning}")
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


# -- labels and boxes side by side ------------------------------------------------

CONSISTENCY_HEADER = "image_id,concept,labelled,boxes,rejected_boxes,finding"


def label_box_consistency(truth_path: str, boxes_path: str, rejects_path: str) -> pd.DataFrame:
    """The (image, concept) pairs on which the image labels and the kept boxes disagree: a label
    without a kept box of its concept (with how many of its boxes were rejected), or kept boxes of a
    concept the image is not labelled with. Sorted by image, then concept."""
    labels = pd.read_parquet(truth_path, columns=["image_id", "concept"]).drop_duplicates()
    kept = pd.read_parquet(boxes_path, columns=["image_id", "concept"]).value_counts().rename("boxes")
    rejects = pd.read_parquet(rejects_path, columns=["image_id", "concept"]).dropna()
    rejected = rejects.value_counts().rename("rejected_boxes")
    pairs = pd.concat([labels.assign(labelled=True).set_index(["image_id", "concept"])["labelled"], kept, rejected],
                      axis=1).reset_index()
    pairs.columns = ["image_id", "concept", "labelled", "boxes", "rejected_boxes"]
    pairs["labelled"] = pairs["labelled"].eq(True)
    pairs[["boxes", "rejected_boxes"]] = pairs[["boxes", "rejected_boxes"]].fillna(0).astype(np.int64)
    unlabelled_rejects = ~pairs["labelled"] & pairs["boxes"].eq(0)  # only rejected boxes: already in box_rejects
    found = pairs[(pairs["labelled"] != pairs["boxes"].gt(0)) & ~unlabelled_rejects].copy()
    found["finding"] = np.where(found["labelled"],
                                np.where(found["rejected_boxes"].gt(0), "label whose boxes were all rejected",
                                         "label without a box"),
                                "boxes without the label")
    return found.sort_values(["image_id", "concept"], kind="stable").reset_index(drop=True)


def write_consistency(frame: pd.DataFrame, path: str) -> None:
    """The consistency report as CSV (header CONSISTENCY_HEADER; labelled as true/false), the same bytes for
    the same findings."""
    import csv
    import io

    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(CONSISTENCY_HEADER.split(","))
    writer.writerows([row.image_id, row.concept, "true" if row.labelled else "false", row.boxes, row.rejected_boxes,
                      row.finding] for row in frame.itertuples(index=False))
    write_bytes_atomic(path, text.getvalue().encode("utf-8"))


def consistency_summary(out: str) -> list[str]:
    """One line on the build's consistency report, for the console summary (none without the report)."""
    path = Path(out) / "reports" / "box_label_consistency.csv"
    if not path.is_file():
        return []
    findings = pd.read_csv(path, dtype=str, keep_default_na=False)["finding"]
    if findings.empty:
        return ["image labels and kept boxes agree on every image"]
    counted = ", ".join(f"{n} {finding}" for finding, n in findings.value_counts().items())
    return [f"image labels and kept boxes disagree on {len(findings)} (image, concept) pair(s): {counted} -> {path}"]


def consistency_job(job: Job) -> None:
    """Rule box_label_consistency: labels and kept boxes side by side."""
    frame = label_box_consistency(job.input("ground_truth"), job.input("boxes"), job.input("box_rejects"))
    write_consistency(frame, job.output("report"))
    job.log(f"{len(frame)} (image, concept) pairs where labels and kept boxes disagree: "
            + (", ".join(f"{n} {f}" for f, n in frame["finding"].value_counts().items()) or "none"))


# -- the rules' jobs ----------------------------------------------------------

def boxes_job(job: Job) -> list[dict]:
    """Rule benchmark_boxes. Returns the box ground-truth files read (none for segmentations)."""
    segmentations = job.config["input"]["segmentations"]
    concepts, splits = job.input_list("concepts"), job.input_list("splits")  # none: labels from boxes
    return build_box_truth(job.config, job.input_list("images"), concepts[0] if concepts else None,
                           splits[0] if splits else None, segmentations, job.outputs, job.log)


def box_baseline_job(job: Job) -> None:
    """Rule box_baseline: one box baseline run (the `run` wildcard), written and evaluated."""
    build_box_baseline(job.wildcards["run"], job.params["run"], job.params["settings"], job.inputs, job.outputs,
                       job.log)
