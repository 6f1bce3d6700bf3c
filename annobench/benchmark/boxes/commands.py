"""Bodies of `annobench boxes` and `annobench evaluate-boxes` (check-box-run's is in checker).

A folder of box text files does not say its geometry: both take it (`--geometry`, model.GEOMETRIES)
and refuse a folder without it; a geometry the boxes do not fit is refused naming the one they fit.

Each returns the exit status: 0 done, 2 bad input (one line on stderr, or a
run's problems as check-box-run lists them); evaluate-boxes leaves other bad input (BoxInputError,
BoxMeasureError, OSError) to the command line's one-line handler.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from annobench.benchmark.boxes.checker import run_form, scan_box_run
from annobench.benchmark.boxes.measure import evaluate_boxes, parse_thresholds
from annobench.benchmark.boxes.model import BoxInputError
from annobench.benchmark.boxes.truth import BoxTruth, boxes_from_segmentations, read_box_truth, truth_form
from annobench.benchmark.image_list import ImageListError, read_images
from annobench.benchmark.json_form import json_bytes
from annobench.benchmark.problems import RunFormatError
from annobench.benchmark.vocabulary import GroundTruthError, read_vocabulary
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.tables import write_table

BOXES_TABLE = Path("tables") / "boxes" / "all.parquet"
BOX_REJECTS_TABLE = Path("tables") / "box_rejects" / "all.parquet"
BOX_NOTES_TABLE = Path("tables") / "box_notes" / "all.parquet"
_SHOWN_PROBLEMS = 20


def boxes_main(truth: str, out: str, segmentations: str | None = None, concepts: str | None = None,
               images: str | None = None, image_id_from: str = "file", err: TextIO | None = None,
               geometry: str | None = None, outside: str = "reject") -> int:
    """Read box ground truth (or derive it from segmentations) into the boxes, box rejects and box
    notes tables."""
    err = err or sys.stderr
    try:
        vocabulary = [c.name for c in read_vocabulary(concepts)] if concepts else None
        image_list = read_images(images) if images else None
        if segmentations:
            form = "segmentations"
            result = boxes_from_segmentations(segmentations, truth, vocabulary, image_list)
        else:
            form = truth_form(truth)
            result = read_box_truth(truth, vocabulary, image_list, image_id_from, geometry, outside)
    except (BoxInputError, GroundTruthError, ImageListError, ValueError, OSError) as error:
        print(f"annobench: {error}", file=err)
        return 2
    params = {"form": segmentations or form, "image_id_from": image_id_from, "vocabulary": vocabulary,
              "images": list(image_list.ids) if image_list else None}
    if form == "text":
        params["geometry"] = geometry
    if outside != "reject":
        params["outside"] = outside
    write_table(result.boxes_table(), Path(out) / BOXES_TABLE, "boxes", params=params)
    write_table(result.rejects_table(), Path(out) / BOX_REJECTS_TABLE, "box_rejects", params=params)
    write_table(result.notes_table(), Path(out) / BOX_NOTES_TABLE, "box_notes", params=params)
    _print_warnings(result.warnings, err)
    images_named = len(result.image_ids) if result.image_ids is not None else result.boxes["image_id"].nunique()
    clipped = f", {len(result.notes)} clipped (notes -> {Path(out) / BOX_NOTES_TABLE})" if len(result.notes) else ""
    print(f"{len(result.boxes)} boxes of {images_named} images, {len(result.rejects)} rejects rows{clipped} "
          f"-> {Path(out) / BOXES_TABLE}, {Path(out) / BOX_REJECTS_TABLE}")
    _note_rejects(result, truth, err, "they are in " + str(Path(out) / BOX_REJECTS_TABLE))
    return 0


def evaluate_boxes_main(truth: str, run: str, json_path: str, thresholds: str, interpolation: str = "all",
                        min_boxes: int = 0, out: TextIO | None = None, err: TextIO | None = None,
                        geometry: str | None = None, truth_geometry: str | None = None,
                        images: str | None = None) -> int:
    """The localisation measure of a box run against box ground truth, as JSON.

    geometry: how a folder of box text files (the run's, and the truth's unless truth_geometry
    says otherwise) is read. images: an image list with sizes, or a build folder (its images
    table); without it, the truth's own sizes (VOC XML, COCO) check the run's boxes."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        keys = parse_thresholds(thresholds)
        image_list = read_images(images) if images else None
        ground = read_box_truth(truth, images=image_list, geometry=truth_geometry or geometry,
                                option="--truth-geometry" if truth_geometry else "--geometry")
        coco_truth = truth if truth_form(truth) == "coco" and run_form(run) == "coco_results" else None
        scan = scan_box_run(run, images=image_list, coco_truth=coco_truth, geometry=geometry, sizes=ground.sizes,
                            outside_problems=False)
        if scan.problems:
            raise RunFormatError(scan.problems, run)
        result = evaluate_boxes(ground.boxes, scan.frame, keys, interpolation, min_boxes, ground.image_ids)
    except RunFormatError as error:
        lines = error.report_lines()
        for line in lines[:_SHOWN_PROBLEMS]:
            print(line, file=err)
        if len(lines) > _SHOWN_PROBLEMS:
            print(f"{run}: {len(lines) - _SHOWN_PROBLEMS} more problem(s); 'annobench check-box-run' lists them "
                  "all", file=err)
        return 2
    _print_warnings([*ground.warnings, *(f"{run}: {note}" for note in scan.notes)], err)
    _note_rejects(ground, truth, err, "'annobench boxes' writes them all")
    result["counts"]["truth_rejects"] = len(ground.rejects)
    write_bytes_atomic(json_path, json_bytes(result))
    counts = result["counts"]
    shown = ", ".join(f"MAP@{key} {value:.4f}" for key, value in list(result["MAP"].items())[:4])
    more = ", ..." if len(result["MAP"]) > 4 else ""
    print(f"{counts['images']} images, {counts['concepts']} concepts, {counts['truth_boxes']} truth and "
          f"{counts['run_boxes']} run boxes: {shown}{more} -> {json_path}", file=out)
    return 0


def _print_warnings(warnings, err: TextIO) -> None:
    for warning in warnings:
        print(f"annobench: note: {warning}", file=err)


def _note_rejects(ground: BoxTruth, truth: str, err: TextIO, where: str) -> None:
    """Rejected truth boxes are left out; say so, with how many for each reason and the first."""
    if len(ground.rejects):
        first = ground.rejects.iloc[0]
        reasons = ground.rejects["reason"].str.replace(r" \(.*", "", regex=True).value_counts()
        counted = "; ".join(f"{n} {reason}" for reason, n in reasons.head(3).items())
        more = f"; {len(reasons) - 3} other reason(s)" if len(reasons) > 3 else ""
        print(f"annobench: {len(ground.rejects)} ground-truth box(es) of {truth} rejected and left out ({counted}"
              f"{more}); first: {first['source']}: {first['reason']} ({where})", file=err)
