"""The box run checker: scan_box_run (what every reader of a box run goes through),
check_box_run, and check_box_run_main behind `annobench check-box-run`.

Forms (run_form tells them apart): the text form, one line per image and
concept, `image_id concept [score:]WxH+X+Y ...` (single spaces); the CSV form,
header `image_id,concept,score,xmin,ymin,xmax,ymax` then one box a line;
Parquet (BOX_RUN_SCHEMA), one box a row; a folder of detections files, one
per image (image id = file stem), lines `class confidence A B C D` whose four
numbers are in the geometry the caller names (model.GEOMETRIES: the folder
does not say it, so a folder without one is refused); and, for evaluate-boxes
only, a COCO results list read against its COCO ground truth (coco_results).

The geometry of a detections folder is checked as a whole: when its boxes
invert or leave their image (where the size is known) under the named
geometry and fewer do under the other (corners <-> xywh), the first problem
names the geometry that fits (model.geometry_problem). Without any image
size, a folder named xywh whose boxes all read as valid corners too gets a
note saying so (model.corners_ambiguity): corners always do, so that cannot
be decided without the images.

Rules: a score, when given, is a number in [0, 1], as in the annotation runs
(the ImageCLEF 2012 task page) and the 2015/2016 box runs; either every box
has a score or none (then the run's order ranks them). A box covers at least
one pixel. Ids and concepts are non-empty and hold no whitespace or comma.
Each (image, concept) has one line in the text form, and no box is given twice
with the same score. With a vocabulary, every concept is in it; with an image
list, every image is in it, and inside its size when the list (or the caller's
sizes) gives it. Negative offsets are allowed (a box may start left of or above
the image). A line with a problem gives no boxes to the checks of the whole run.
A problem of a file of a detections folder names that file and its line
(`FOLDER/FILE:LINE: message`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence, TextIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from annobench.benchmark.boxes.lines import (
    CSV_HEADER,
    ParsedLine,
    decode_line,
    name_problem,
    parse_csv_line,
    parse_detection_line,
    parse_row,
    parse_text_line,
    range_problem,
)
from annobench.benchmark.boxes.model import (
    COORDINATES,
    BoxInputError,
    check_geometry,
    corners_ambiguity,
    geometry_problem,
    outside_image,
)
from annobench.benchmark.image_list import ImageList, ImageListError, read_images
from annobench.benchmark.problems import MAX_PROBLEMS, PathArg, Problems, RunProblem, check_main

RUN_FORMS = ("text", "csv", "parquet", "detections", "coco_results")
_FILE_SHIFT = 32  # a detections folder's problems sort by (file, line): key = file index << 32 | line


def run_form(path: PathArg) -> str:
    """The form of a box run: a folder of detections, Parquet by its magic bytes, CSV by its header
    (or a first line with commas and no space, so that a wrong header is reported as one)."""
    path = Path(path)
    if path.is_dir():
        return "detections"
    with open(path, "rb") as handle:
        head = handle.read(4096)
    if head.startswith(b"PAR1"):
        return "parquet"
    text = head.decode("utf-8", "replace").lstrip("\ufeff")
    first = text.split("\n", 1)[0].rstrip("\r")
    if first.startswith("image_id,") or ("," in first and " " not in first):  # a text line has spaces
        return "csv"
    if text.lstrip()[:1] == "[":
        return "coco_results"
    return "text"


class _Found:
    """Problems as (sort key, line shown, message, file of a folder run). A scan adds in line order
    and keeps its first `limit`; each whole-run check keeps its own first `limit`; the merge keeps
    the first `limit`. A problem of the whole run (key -1) comes first."""

    def __init__(self, limit: int):
        self.limit = limit
        self.items: list[tuple[int, int, str, str]] = []
        self.total = 0
        self.scanned = 0

    def add(self, key: int, line: int, message: str, file: str = "") -> None:
        self.total += 1
        if self.scanned < self.limit:
            self.items.append((key, line, message, file))
            self.scanned += 1

    def add_rows(self, rows: np.ndarray, describe: Callable[[int], tuple[int, int, str, str]]) -> None:
        """One whole-run check's findings, rows ascending; describe(row) -> (key, line, message, file)."""
        self.total += len(rows)
        self.items += [describe(int(row)) for row in rows[: self.limit]]

    def problems(self) -> list[RunProblem]:
        collected = Problems(self.limit)
        for _, line, message, file in sorted(self.items, key=lambda item: item[0]):
            collected.add(line, message, file)
        collected.total = self.total  # the findings past each check's limit count too
        return collected.result()


class _Records:
    """The boxes of the lines without problems, in run order, with where each was."""

    def __init__(self):
        self.key: list[int] = []
        self.field: list[int] = []  # the box's field in a text line; 0 when the line is the box
        self.image_id: list[str] = []
        self.concept: list[str] = []
        self.score: list[float] = []
        self.corners: list[tuple[int, int, int, int]] = []

    def add(self, key: int, field: int, image_id: str, concept: str, score: float | None, corners) -> None:
        self.key.append(key)
        self.field.append(field)
        self.image_id.append(image_id)
        self.concept.append(concept)
        self.score.append(np.nan if score is None else score)
        self.corners.append(corners)

    def frame(self) -> pd.DataFrame:
        corners = np.array(self.corners, dtype=np.int64).reshape(-1, 4)
        return pd.DataFrame({"image_id": pd.array(self.image_id, dtype=object),
                             "concept": pd.array(self.concept, dtype=object),
                             "score": np.array(self.score, dtype=np.float64),
                             **{name: corners[:, k] for k, name in enumerate(COORDINATES)}})


@dataclass
class _Names:
    """What names and boxes must match: the vocabulary and the image list, when given, and the
    images' sizes (the list's, or the caller's)."""

    concepts: frozenset[str] | None
    images: ImageList | None
    sizes: dict[str, tuple[int, int]]
    outside_problems: bool = True  # a box leaving its image is a problem (else only the geometry check sees it)

    def problems(self, image_id: str | None, concept: str | None) -> list[str]:
        found = [p for what, value in (("image id", image_id), ("concept", concept)) if value is not None
                 for p in [name_problem(what, value)] if p]
        if found:
            return found
        if self.concepts is not None and concept is not None and concept not in self.concepts:
            found.append(f"unknown concept '{concept}' (not in the vocabulary)")
        if self.images is not None and image_id is not None and image_id not in self.images:
            found.append(f"unknown image '{image_id}' (not in the image list)")
        return found

    def outside(self, image_id: str, corners) -> str | None:
        size = self.sizes.get(image_id) if self.outside_problems else None
        if size is not None and outside_image(*corners, size):
            return f"the box leaves its image ({size[0]}x{size[1]})"
        return None


def _field(position: int) -> str:
    return f"field {position}: " if position else ""


# ---------------------------------------------------------------- scanning each form


def _take_line(number: int, key: int, parsed: ParsedLine, found: _Found, records: _Records, names: _Names,
               file: str = "") -> None:
    """Report every problem of a parsed line; keep its boxes when it has none."""
    problems = parsed.problems + (names.problems(parsed.image_id, parsed.concept) if parsed.readable else [])
    problems += [f"{_field(position)}{outside}" for position, _, corners in parsed.boxes
                 for outside in [range_problem(corners) or names.outside(parsed.image_id, corners)] if outside]
    for message in problems:
        found.add(key, number, message, file)
    if not problems:
        for position, score, corners in parsed.boxes:
            records.add(key, position, parsed.image_id, parsed.concept, score, corners)


def _scan_lines(path: Path, form: str, found: _Found, records: _Records, names: _Names) -> int:
    """A text or CSV run, line by line; returns its number of lines."""
    first_line: dict[tuple[str, str], int] = {}
    number = 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if form == "csv" and number == 1:
                _check_header(raw, found)
                continue
            parsed = (parse_csv_line if form == "csv" else parse_text_line)(raw, number)
            if form == "text" and parsed.concept is not None and parsed.readable:
                first = first_line.setdefault((parsed.image_id, parsed.concept), number)
                if first != number:
                    found.add(number, number, f"repeated line for image '{parsed.image_id}' and concept "
                                              f"'{parsed.concept}' (first on line {first}): one line per image "
                                              "and concept")
                    continue
            _take_line(number, number, parsed, found, records, names)
    return number


def _check_header(raw: bytes, found: _Found) -> None:
    parsed = ParsedLine()
    text = decode_line(raw, 1, parsed)
    for message in parsed.problems:
        found.add(1, 1, message)
    if text != CSV_HEADER and parsed.readable:
        found.add(1, 1, f"the header must be {CSV_HEADER}")


def _scan_detections(folder: Path, files: list[Path], found: _Found, records: _Records, names: _Names,
                     geometry: str) -> tuple[int, np.ndarray, np.ndarray]:
    """The detections files, line by line; returns the number of lines, and the four numbers of
    each line that has them (n, 4) with its image's size (n, 2; NaN unknown), for the geometry check."""
    if not files:
        found.add(0, 0, "no .txt detections files in the folder")
    lines = 0
    values: list[tuple[float, ...]] = []
    sizes: list[tuple[float, float]] = []
    for index, path in enumerate(files):
        base = index << _FILE_SHIFT
        unknown = names.problems(path.stem, None)
        for message in unknown:
            found.add(base, 0, message, path.name)
        size = names.sizes.get(path.stem, (np.nan, np.nan))  # the geometry check's, whatever outside_problems
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                lines += 1
                parsed = parse_detection_line(raw, number, geometry)
                parsed.image_id = path.stem
                if parsed.values is not None:
                    values.append(parsed.values)
                    sizes.append(size)
                if not unknown and (parsed.concept is not None or parsed.problems):
                    _take_line(number, base | number, parsed, found, records, names, path.name)
    return lines, np.array(values, dtype=np.float64).reshape(-1, 4), np.array(sizes, dtype=np.float64).reshape(-1, 2)


def _scan_parquet(path: Path, found: _Found, records: _Records, names: _Names) -> int:
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as error:
        found.add(0, 0, f"not a readable Parquet file: {error}")
        return 0
    layout = _parquet_layout_problem(table.schema)
    if layout:
        found.add(0, 0, layout)
        return 0
    columns = [table.column(name).to_pylist() for name in ("image_id", "concept", "score", *COORDINATES)]
    for row, (image_id, concept, score, *corners) in enumerate(zip(*columns), 1):
        _take_line(row, row, parse_row(image_id, concept, score, tuple(corners)), found, records, names)
    return table.num_rows


def _parquet_layout_problem(schema: pa.Schema) -> str | None:
    kinds = {"image_id": pa.types.is_string, "concept": pa.types.is_string, "score": pa.types.is_floating,
             **dict.fromkeys(COORDINATES, lambda t: pa.types.is_integer(t) or pa.types.is_floating(t))}
    for name, is_right in kinds.items():
        if name not in schema.names:
            return f"no column '{name}' (a Parquet box run has columns {CSV_HEADER.replace(',', ', ')})"
        if not is_right(schema.field(name).type):
            return f"column '{name}' has type {schema.field(name).type}"
    return None


def _scan_coco_results(path: Path, found: _Found, records: _Records, names: _Names, coco_truth: PathArg) -> int:
    from annobench.benchmark.boxes.coco_results import read_coco_results

    entries = read_coco_results(path, coco_truth)
    for number, parsed in entries:
        _take_line(number, number, parsed, found, records, names)
    return len(entries)


# ---------------------------------------------------------------- whole-run checks


class _Where:
    """How a box of the records is named in a message: its line (and field, in a text line)."""

    def __init__(self, records: _Records, files: list[str]):
        self.keys = np.asarray(records.key, dtype=np.int64)
        self.fields = np.asarray(records.field, dtype=np.int64)
        self.files = files

    def line(self, row: int) -> int:
        return int(self.keys[row]) & ((1 << _FILE_SHIFT) - 1) if self.files else int(self.keys[row])

    def file(self, row: int) -> str:
        return self.files[int(self.keys[row]) >> _FILE_SHIFT] if self.files else ""

    def text(self, row: int) -> str:
        place = f"{self.file(row)} line" if self.files else "line"
        field = f" field {self.fields[row]}" if self.fields[row] else ""
        return f"{place} {self.line(row)}{field}"

    def problem(self, row: int, message: str) -> tuple[int, int, str, str]:
        return int(self.keys[row]), self.line(row), f"{_field(int(self.fields[row]))}{message}", self.file(row)


def _whole_run_checks(frame: pd.DataFrame, where: _Where, found: _Found) -> None:
    repeated = np.flatnonzero(frame.duplicated(keep="first").to_numpy())
    if len(repeated):
        group = frame.groupby(list(frame.columns), dropna=False, sort=False).ngroup().to_numpy()
        first = pd.Series(np.arange(len(frame))).groupby(group).transform("min").to_numpy()
        found.add_rows(repeated, lambda row: where.problem(
            row, f"repeats the box and score of {where.text(int(first[row]))}"))
    scored = ~np.isnan(frame["score"].to_numpy())
    if scored.any() and not scored.all():
        odd = np.flatnonzero(scored != scored[0])
        odd = odd[np.r_[True, where.keys[odd][1:] != where.keys[odd][:-1]]]  # once per line
        has, gives = ("no score", "gives scores") if scored[0] else ("a score", "gives none")
        found.add_rows(odd, lambda row: where.problem(
            row, f"a box with {has}, but {where.text(0)} {gives}: give every box a score or none"))


@dataclass
class BoxRunScan:
    """What scan_box_run finds: the problems (in line order, up to the limit, then one saying how
    many more), the boxes of the lines without problems in run order (image_id, concept, score NaN
    when absent, xmin, ymin, xmax, ymax), the number of lines (rows) read, and notes that are no
    problem but that the user should see (a geometry that cannot be decided without the images)."""

    problems: list[RunProblem]
    frame: pd.DataFrame
    lines: int
    notes: list[str]


def scan_box_run(path: PathArg, concepts: Sequence[str] | None = None, images: ImageList | None = None,
                 max_problems: int = MAX_PROBLEMS, coco_truth: PathArg | None = None, geometry: str | None = None,
                 sizes: dict[str, tuple[int, int]] | None = None, option: str = "--geometry",
                 outside_problems: bool = True) -> BoxRunScan:
    """Scan a box run in any form. geometry: how a detections folder's four numbers are read
    (model.GEOMETRIES; required for a folder, not read for the other forms); sizes: image_id ->
    (width, height), on top of the image list's. outside_problems: a box leaving its image is a
    problem; if not, the sizes serve the geometry check only (evaluate-boxes: a detection a few
    pixels past its image is scored as it is, as the VOC devkit does)."""
    path = Path(path)
    form = run_form(path)
    known_sizes = {**(sizes or {}), **((images.sizes or {}) if images is not None else {})}
    names = _Names(frozenset(concepts) if concepts is not None else None, images, known_sizes, outside_problems)
    found, records = _Found(max_problems), _Records()
    files = sorted(path.glob("*.txt")) if form == "detections" else []
    notes = []
    if form == "detections":
        geometry = check_geometry(geometry, f"{path}: a folder of detections files", option)
        lines, values, value_sizes = _scan_detections(path, files, found, records, names, geometry)
        problem = geometry_problem(values, value_sizes, geometry, option)
        if problem:
            found.add(-1, 0, problem)
        elif not known_sizes:
            notes += [note for note in [corners_ambiguity(values, geometry, option)] if note]
    elif form == "parquet":
        lines = _scan_parquet(path, found, records, names)
    elif form == "coco_results":
        if coco_truth is None:
            raise BoxInputError("a COCO results list names images and categories by number: it is read against "
                                "its COCO ground truth (annobench evaluate-boxes)")
        lines = _scan_coco_results(path, found, records, names, coco_truth)
    else:
        lines = _scan_lines(path, form, found, records, names)
    frame = records.frame()
    _whole_run_checks(frame, _Where(records, [p.name for p in files]), found)
    if not len(frame) and not found.total:
        found.add(0, 0, "empty run: no boxes")
    return BoxRunScan(found.problems(), frame, lines, notes)


def check_box_run(path: PathArg, concepts: Sequence[str] | None = None, images: ImageList | None = None,
                  max_problems: int = MAX_PROBLEMS, geometry: str | None = None) -> list[RunProblem]:
    """Every problem of a box run (up to max_problems, then one saying how many more), in line order."""
    return scan_box_run(path, concepts, images, max_problems, geometry=geometry).problems


def check_box_run_main(run_path: PathArg, concepts_path: PathArg | None = None, images_path: PathArg | None = None,
                       out: TextIO | None = None, geometry: str | None = None, err: TextIO | None = None) -> int:
    """Body of `annobench check-box-run`: one line per problem and 2, or a one-line summary and 0;
    a note (a geometry the images would decide) goes to err."""
    from annobench.benchmark.runs.concepts import read_concepts

    out = out or sys.stdout  # looked up at call time, so a redirected stdout is used
    err = err or sys.stderr

    def scan() -> tuple[list[RunProblem], str]:
        concepts = read_concepts(concepts_path) if concepts_path is not None else None
        images = read_images(images_path) if images_path is not None else None
        try:
            result = scan_box_run(run_path, concepts, images, geometry=geometry)
        except (BoxInputError, json.JSONDecodeError) as error:  # the run as a whole: named by its path
            message = str(error)
            raise BoxInputError(message if message.startswith(f"{run_path}") else f"{run_path}: {message}") from None
        for note in result.notes:
            print(f"annobench: note: {run_path}: {note}", file=err)
        return result.problems, f"{result.lines} lines, {len(result.frame)} boxes"

    return check_main(run_path, scan, out, input_errors=(BoxInputError, ImageListError))
