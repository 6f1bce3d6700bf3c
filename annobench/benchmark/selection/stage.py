"""The content-selection part of the benchmark stage (ImageCLEF 2016 subtask 3, Gilbert et al.
2016): rule selection_baselines.

The job evaluates each selection baseline on the gold descriptions of the
benchmark's test images (writing the random and largest-first runs) and the
human upper bound. The descriptions' box instances come from the instances
CSV, the Flickr30k Entities records or, when neither is given, the boxes
table of the box stage. Images are taken in image_id order, so every output
is the same bytes whatever the cores.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from annobench.benchmark.json_form import json_bytes
from annobench.benchmark.selection.baselines import largest_selection, random_selection
from annobench.benchmark.selection.files import read_description_csv, read_selection_truth, truth_format
from annobench.benchmark.selection.measure import human_scores, run_scores, summarise
from annobench.benchmark.selection.model import Box, SelectionError, SelectionTruth
from annobench.benchmark.splits import split_ids
from annobench.core.errors import AnnobenchError
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.jobs import Job
from annobench.core.provenance import raw_file


class SelectionConfigError(AnnobenchError):
    """A benchmark.selection setting this build cannot follow."""


# -- planning (called from the Snakefile) ----------------------------------

def selection_enabled(config: dict) -> bool:
    return bool(config["benchmark"]["ground_truth"]["source"] and config["benchmark"]["selection"]["truth"])


def selection_runs(config: dict) -> list[str]:
    return list(config["benchmark"]["selection"]["baselines"]) if selection_enabled(config) else []


def check_config(config: dict) -> None:
    """SelectionConfigError for a combination of settings the selection rule cannot build."""
    settings = config["benchmark"]
    selection = settings["selection"]
    if selection["truth"] and not settings["ground_truth"]["source"]:
        raise SelectionConfigError("benchmark.boxes and benchmark.selection need the benchmark: set "
                                   "benchmark.ground_truth.source")
    if selection["truth"] and not selection["instances"] and not settings["boxes"]["source"]:
        if truth_format(selection["truth"]) == "csv":
            raise SelectionConfigError("benchmark.selection.truth is a descriptions CSV: give its box instances "
                                       "(benchmark.selection.instances) or box ground truth (benchmark.boxes)")


def selection_job_settings(config: dict) -> dict:
    from annobench.core.fingerprint import file_state

    selection = config["benchmark"]["selection"]
    return {**selection, "truth": file_state(selection["truth"]),
            "instances": file_state(selection["instances"]) if selection["instances"] else ""}


# -- the baselines -------------------------------------------------------------

def read_selection_truth_for(selection: dict, boxes_path: str | None, test_ids: list[str]) -> SelectionTruth:
    """The gold descriptions of the test images, with their instances from the instances CSV, the
    Flickr30k Entities records, or (neither given) the boxes table: instance = the box's number."""
    if selection["instances"] or truth_format(selection["truth"]) == "flickr30k_entities":
        truth = read_selection_truth(selection["truth"], selection["instances"] or None)
    else:
        if not boxes_path:
            raise SelectionError(f"{selection['truth']}: a descriptions CSV needs benchmark.selection.instances "
                                 "or benchmark.boxes")
        truth = read_description_csv(selection["truth"], instances_from_boxes(pd.read_parquet(boxes_path)))
    tested = set(test_ids)
    images = {i: image for i, image in truth.images.items() if i in tested}
    if not images:
        raise SelectionError(f"{selection['truth']}: none of its {len(truth.images)} described images is a test "
                             f"image of the benchmark (e.g. {', '.join(sorted(truth.images)[:3])})")
    return SelectionTruth(images, {**truth.notes, "described_images_not_in_test": len(truth.images) - len(images)})


def instances_from_boxes(boxes: pd.DataFrame) -> dict:
    """image_id -> instance number (as text) -> Box, from the boxes table."""
    instances: dict[str, dict] = {}
    for image_id, instance, xmin, ymin, xmax, ymax in boxes[
            ["image_id", "instance", "xmin", "ymin", "xmax", "ymax"]].itertuples(index=False):
        instances.setdefault(image_id, {})[str(instance)] = Box(int(xmin), int(ymin), int(xmax), int(ymax))
    return instances


def build_selection_baselines(selection: dict, inputs: dict, outputs: dict, log) -> None:
    """Each selection baseline evaluated on the test images (and the random and largest runs written)."""
    truth = read_selection_truth_for(selection, inputs.get("boxes"), split_ids(inputs["splits"], "test"))
    k, seed = selection["k"], selection["seed"]
    for name in selection["baselines"]:
        if name == "human":
            scores = human_scores(truth)
        else:
            chosen = random_selection(truth, seed, k) if name == "random" else largest_selection(truth, k)
            _write_selection_run(chosen, outputs[f"{name}_run"])
            scores = run_scores(truth, chosen)
        result = {"run": f"selection_{name}", **summarise(scores), "truth": truth.summary(),
                  "settings": {"k": k, "seed": seed} if name != "human" else {}}
        write_bytes_atomic(outputs[f"{name}_evaluation"], json_bytes(result))
        log(f"selection_{name}: {result['images']} images; P {result['P']['mean']:.4f}, R {result['R']['mean']:.4f}, "
            f"F {result['F']['mean']:.4f}")


def _write_selection_run(chosen: dict[str, frozenset], path: str) -> None:
    """The run CSV image_id,instance (the run form files reads), images and instances sorted."""
    lines = ["image_id,instance"] + [f"{image_id},{instance}" for image_id in sorted(chosen)
                                     for instance in sorted(chosen[image_id])]
    write_bytes_atomic(path, ("\n".join(lines) + "\n").encode("utf-8"))


# -- the rule's job -----------------------------------------------------------

def selection_baselines_job(job: Job) -> list[dict]:
    """Rule selection_baselines. Returns the description (and instance) files read."""
    selection = job.config["benchmark"]["selection"]
    build_selection_baselines(selection, job.inputs, job.outputs, job.log)
    files = [raw_file(selection["truth"], Path(selection["truth"]).name, role="selection_truth")]
    if selection["instances"]:
        files.append(raw_file(selection["instances"], Path(selection["instances"]).name, role="selection_instances"))
    return files
