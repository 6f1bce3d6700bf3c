"""Bodies of `annobench boxes` and `annobench evaluate-boxes` (check-box-run's is in checker).

Each returns the exit status: 0 done, 2 bad input (one line on stderr, or a
run's problems as check-box-run lists them); evaluate-boxes leaves other bad input (BoxInputError,
BoxMeasureError, OSError) to the command line's one-line handler.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from annobench.benchmark.boxes.checker import run_form
from annobench.benchmark.boxes.forms import read_box_run
from annobench.benchmark.boxes.measure import evaluate_boxes, parse_thresholds
from annobench.benchmark.boxes.model import BoxInputError
from annobench.benchmark.boxes.truth import BoxTruth, boxes_from_segmentations, read_box_truth, truth_form
from annobench.benchmark.image_list import read_image_list
from annobench.benchmark.json_form import json_bytes
from annobench.benchmark.problems import RunFormatError
from annobench.benchmark.vocabulary import GroundTruthError, read_vocabulary
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.tables import write_table

BOXES_TABLE = Path("tables") / "boxes" / "all.parquet"
BOX_REJECTS_TABLE = Path("tables") / "box_rejects" / "all.parquet"
_SHOWN_PROBLEMS = 20


def boxes_main(truth: str, out: str, segmentations: str | None = None, concepts: str | None = None,
               images: str | None = None, image_id_from: str = "file", err: TextIO | None = None) -> int:
    """Read box ground truth (or derive it from segmentations) into the boxes and box rejects tables."""
    err = err or sys.stderr
    try:
        vocabulary = [c.name for c in read_vocabulary(concepts)] if concepts else None
        image_list = read_image_list(images) if images else None
        if segmentations:
            form = "segmentations"
            result = boxes_from_segmentations(segmentations, truth, vocabulary, image_list)
        else:
            form = truth_form(truth)
            result = read_box_truth(truth, vocabulary, image_list, image_id_from)
    except (BoxInputError, GroundTruthError, ValueError, OSError) as error:
        print(f"annobench: {error}", file=err)
        return 2
    params = {"form": segmentations or form, "image_id_from": image_id_from, "vocabulary": vocabulary,
              "images": list(image_list.ids) if image_list else None}
    write_table(result.boxes_table(), Path(out) / BOXES_TABLE, "boxes", params=params)
    write_table(result.rejects_table(), Path(out) / BOX_REJECTS_TABLE, "box_rejects", params=params)
    images_named = len(result.image_ids) if result.image_ids is not None else result.boxes["image_id"].nunique()
    print(f"{len(result.boxes)} boxes of {images_named} images, {len(result.rejects)} rejects rows "
          f"-> {Path(out) / BOXES_TABLE}, {Path(out) / BOX_REJECTS_TABLE}")
    return 0


def evaluate_boxes_main(truth: str, run: str, json_path: str, thresholds: str, interpolation: str = "all",
                        min_boxes: int = 0, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """The localisation measure of a box run against box ground truth, as JSON."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        keys = parse_thresholds(thresholds)
        ground = read_box_truth(truth)
        coco_truth = truth if truth_form(truth) == "coco" and run_form(run) == "coco_results" else None
        boxes = read_box_run(run, coco_truth=coco_truth)
        result = evaluate_boxes(ground.boxes, boxes, keys, interpolation, min_boxes, ground.image_ids)
    except RunFormatError as error:
        lines = error.report_lines()
        for line in lines[:_SHOWN_PROBLEMS]:
            print(line, file=err)
        if len(lines) > _SHOWN_PROBLEMS:
            print(f"{run}: {len(lines) - _SHOWN_PROBLEMS} more problem(s); 'annobench check-box-run' lists them "
                  "all", file=err)
        return 2
    _note_rejects(ground, truth, err)
    result["counts"]["truth_rejects"] = len(ground.rejects)
    write_bytes_atomic(json_path, json_bytes(result))
    counts = result["counts"]
    shown = ", ".join(f"MAP@{key} {value:.4f}" for key, value in list(result["MAP"].items())[:4])
    more = ", ..." if len(result["MAP"]) > 4 else ""
    print(f"{counts['images']} images, {counts['concepts']} concepts, {counts['truth_boxes']} truth and "
          f"{counts['run_boxes']} run boxes: {shown}{more} -> {json_path}", file=out)
    return 0


def _note_rejects(ground: BoxTruth, truth: str, err: TextIO) -> None:
    """Rejected truth boxes are left out of the evaluation; say so, with the first."""
    if len(ground.rejects):
        first = ground.rejects.iloc[0]
        print(f"annobench: {len(ground.rejects)} ground-truth box(es) of {truth} rejected and left out; first: "
              f"{first['source']}: {first['reason']} ('annobench boxes' writes them all)", file=err)
