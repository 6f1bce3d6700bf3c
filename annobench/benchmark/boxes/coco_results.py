"""A COCO results list as a box run: `[{"image_id", "category_id", "bbox", "score"}, ...]`,
whose numbers name the images and categories of a COCO ground-truth file.

Entry k (from 1) stands for line k in problems. bbox [x, y, w, h] is read as
model.corners_from_xywh says, like the COCO ground truth.
"""

from __future__ import annotations

import math
from pathlib import Path

from annobench.benchmark.boxes.lines import ParsedLine, score_problem
from annobench.benchmark.boxes.model import BoxInputError, corners_from_xywh
from annobench.benchmark.problems import PathArg
from annobench.core.fsutil import read_user_json


def coco_names(truth_path: PathArg) -> tuple[dict, dict]:
    """(image number -> image id, category number -> concept) of a COCO ground-truth file."""
    data = read_user_json(truth_path, BoxInputError)
    if not isinstance(data, dict):
        raise BoxInputError(f"{truth_path}: a COCO ground truth is an object with images and categories")
    images = {i.get("id"): Path(str(i.get("file_name") or i.get("id"))).stem
              for i in data.get("images") or [] if isinstance(i, dict)}
    categories = {c.get("id"): str(c.get("name", "")).strip() for c in data.get("categories") or []
                  if isinstance(c, dict)}
    return images, categories


def read_coco_results(path: PathArg, truth_path: PathArg) -> list[tuple[int, ParsedLine]]:
    """Each entry of the list taken apart as a run line."""
    entries = read_user_json(path, BoxInputError)
    if not isinstance(entries, list):
        raise BoxInputError(f"{path}: a COCO results file is a JSON list of detections")
    images, categories = coco_names(truth_path)
    return [(number, _entry(item, images, categories)) for number, item in enumerate(entries, 1)]


def _entry(item, images: dict, categories: dict) -> ParsedLine:
    parsed = ParsedLine()
    if not isinstance(item, dict):
        parsed.problems.append("an entry is an object with image_id, category_id, bbox and score")
        return parsed
    parsed.image_id = images.get(item.get("image_id"))
    parsed.concept = categories.get(item.get("category_id"))
    if parsed.image_id is None:
        parsed.problems.append(f"image_id {item.get('image_id')!r} is not an image of the ground truth")
    if parsed.concept is None:
        parsed.problems.append(f"category_id {item.get('category_id')!r} is not a category of the ground truth")
    score = item.get("score")
    problem = score_problem(repr(score)) if isinstance(score, (int, float)) and not isinstance(score, bool) \
        else f"score {score!r} is not a number"
    if problem:
        parsed.problems.append(problem)
    bbox = item.get("bbox")
    numbers = isinstance(bbox, list) and len(bbox) == 4 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in bbox)
    if not numbers:
        parsed.problems.append(f"bbox {bbox!r} is not four finite numbers [x, y, w, h]")
    elif bbox[2] < 0 or bbox[3] < 0:
        parsed.problems.append(f"bbox {bbox!r} has a negative width or height")
    if not parsed.problems:
        parsed.boxes.append((0, float(score), corners_from_xywh(*bbox)))
    return parsed
