"""The box and content-selection part of the benchmark stage (SPEC 9, subtasks 1 and 3).

Each function at the end is one Snakemake job, callable without Snakemake:
box ground truth for the benchmark's images (rule benchmark_boxes), the box
baselines built from the image-level k-NN runs (rule box_baseline, one job a run) and the
content-selection baselines (rule selection_baselines). Test images are the
benchmark's test split, always in image_id order, so every output is the
same bytes whatever the cores.

Box baselines, one run of each per feature of benchmark.features:

- whole_image_FEATURE: for every test image and every concept the
  knn_FEATURE run decides (decision 1), one box covering the whole image,
  (0, 0, width - 1, height - 1) in the images table's size (the original,
  after EXIF orientation), with the run's score for that concept.
- knn_transfer_FEATURE: the test image's benchmark.knn.neighbours nearest
  training images on FEATURE (the neighbours the knn run used); every truth
  box of each neighbour is carried over, rescaled from the neighbour's size
  to the test image's (transfer_box), with score (k - r + 1) / k for the
  neighbour of rank r (1 = nearest) among k: nearer neighbours' boxes rank
  first, ties keep the run's order (neighbour rank, then box number).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from annobench.benchmark.boxes.measure import DEFAULT_THRESHOLDS, evaluate_boxes
from annobench.benchmark.boxes.model import BOX_RUN_COLUMNS, BoxInputError
from annobench.benchmark.image_list import ImageList
from annobench.benchmark.json_form import json_bytes
from annobench.benchmark.splits import split_ids
from annobench.core.errors import AnnobenchError
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.jobs import Job
from annobench.core.provenance import raw_file
from annobench.core.tables import write_table

# benchmark.boxes.source -> the forms truth_form recognises for it.
BOX_SOURCE_FORMS = {"voc": ("voc",), "coco": ("coco",), "table": ("csv", "parquet"), "xywh": ("xywh",)}
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
        truth = read_box_truth(boxes["path"], vocabulary, images)
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

def whole_image_run(knn_run, sizes: dict[str, tuple[int, int]]) -> pd.DataFrame:
    """One whole-image box per decided concept of each image of an image-level run, with its score."""
    rows, columns = np.nonzero(knn_run.decisions)  # row-major: image order, then vocabulary order
    image_ids = [knn_run.image_ids[r] for r in rows]
    return pd.DataFrame({
        "image_id": image_ids,
        "concept": [knn_run.concepts[c] for c in columns],
        "score": np.clip(knn_run.scores[rows, columns].astype(np.float64), 0.0, 1.0),
        "xmin": np.zeros(len(rows), dtype=np.int32), "ymin": np.zeros(len(rows), dtype=np.int32),
        "xmax": np.array([sizes[i][0] - 1 for i in image_ids], dtype=np.int32),
        "ymax": np.array([sizes[i][1] - 1 for i in image_ids], dtype=np.int32),
    }, columns=list(BOX_RUN_COLUMNS))


def transfer_box(box: tuple[int, int, int, int], source: tuple[int, int], target: tuple[int, int]):
    """An inclusive box of an image of size `source` (width, height) rescaled to size `target`.

    Pixel columns xmin..xmax cover [xmin, xmax + 1) of the image's width; that
    interval is scaled by target/source and the pixels it touches are the new
    box, in exact integer arithmetic; the far side is kept within the target
    as box truth is (at most its width, as VOC's pixels from 1 allow).
    """
    return tuple(int(v) for v in transfer_boxes([box], [source], [target])[0])


def transfer_boxes(boxes: np.ndarray, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """transfer_box on many boxes at once, in exact int64 arithmetic: boxes (n, 4) xmin, ymin,
    xmax, ymax; sources and targets (n, 2) width, height."""
    boxes, sources, targets = (np.asarray(a, dtype=np.int64) for a in (boxes, sources, targets))
    moved = np.empty_like(boxes)
    for axis in (0, 1):
        before, after = sources[:, axis], targets[:, axis]
        first = boxes[:, axis] * after // before
        last = -(-(boxes[:, axis + 2] + 1) * after // before) - 1
        moved[:, axis] = first
        moved[:, axis + 2] = np.minimum(np.maximum(last, first), after)
    return moved


def knn_transfer_run(test_ids: list[str], neighbours: list[list[str]], truth: pd.DataFrame,
                     sizes: dict[str, tuple[int, int]], k: int) -> pd.DataFrame:
    """The k nearest neighbours' truth boxes on each test image (module docstring).

    Rows: test image, then neighbour rank, then the neighbour's boxes in instance order. Built as
    arrays (one (test, neighbour) pair per used neighbour, repeated by its box count), because a
    per-box loop takes hours at 500,000 test images."""
    ordered = truth.sort_values(["image_id", "instance"], kind="stable")
    # truth is sorted by image: each image's boxes are one run of rows, from its first row.
    images, firsts, box_counts = np.unique(ordered["image_id"].to_numpy(dtype=object), return_index=True,
                                           return_counts=True)
    starts, counts = dict(zip(images, firsts.tolist())), dict(zip(images, box_counts.tolist()))
    pair_test, pair_source, pair_score, pair_first, pair_count = [], [], [], [], []
    for image_id, row in zip(test_ids, neighbours):
        used = row[:k]
        for rank, neighbour in enumerate(used, 1):
            if neighbour in counts:
                pair_test.append(image_id)
                pair_source.append(neighbour)
                pair_score.append((len(used) - rank + 1) / len(used))
                pair_first.append(starts[neighbour])
                pair_count.append(counts[neighbour])
    repeats = np.asarray(pair_count, dtype=np.int64)
    pair_of_row = np.repeat(np.arange(len(repeats)), repeats)
    offsets = np.arange(len(pair_of_row)) - np.repeat(np.cumsum(repeats) - repeats, repeats)
    box_rows = np.asarray(pair_first, dtype=np.int64)[pair_of_row] + offsets
    corners = ordered[["xmin", "ymin", "xmax", "ymax"]].to_numpy(dtype=np.int64)[box_rows]
    source_sizes = np.array([sizes[i] for i in pair_source], dtype=np.int64).reshape(-1, 2)[pair_of_row]
    target_sizes = np.array([sizes[i] for i in pair_test], dtype=np.int64).reshape(-1, 2)[pair_of_row]
    moved = transfer_boxes(corners, source_sizes, target_sizes).astype(np.int32)
    frame = pd.DataFrame({
        "image_id": np.asarray(pair_test, dtype=object)[pair_of_row],
        "concept": ordered["concept"].to_numpy(dtype=object)[box_rows],
        "score": np.asarray(pair_score, dtype=np.float64)[pair_of_row],
        "xmin": moved[:, 0], "ymin": moved[:, 1], "xmax": moved[:, 2], "ymax": moved[:, 3],
    }, columns=list(BOX_RUN_COLUMNS))
    return frame.astype({c: np.int32 for c in ("xmin", "ymin", "xmax", "ymax")} | {"score": np.float64})


def evaluate_box_run(name: str, truth: pd.DataFrame, run: pd.DataFrame, test_ids: list[str]) -> dict:
    """The localisation measure at t = 0, 0.1, ..., 0.9 on the test images' truth."""
    test_truth = truth[truth["image_id"].isin(set(test_ids))]
    result = evaluate_boxes(test_truth, run, DEFAULT_THRESHOLDS, image_ids=test_ids)
    return {"run": name, **result}


def build_box_baseline(name: str, spec: dict, settings: dict, inputs: dict, outputs: dict, log) -> None:
    """One box baseline run (spec: kind and feature), written (Parquet and text) and evaluated."""
    from annobench.benchmark.boxes.forms import write_box_run
    from annobench.benchmark.vocabulary import read_concepts_table
    from annobench.benchmark.runs.files import read_run
    from annobench.benchmark.neighbours.stage import read_neighbours

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
