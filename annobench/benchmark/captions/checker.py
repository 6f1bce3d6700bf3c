"""The caption run checker (subtask 2 of ImageCLEF 2016, Gilbert et al. 2016): every problem of a
caption run, by line, as the other run checkers report them, and `annobench check-caption-run`.

A caption run gives one sentence per test image, in one of the forms captions.files reads: CSV
`image_id,caption` with a header (the problems name the line, the header being line 1), a COCO
results list `[{"image_id", "caption"}]` or an object `{image_id: caption}` (a JSON document has
no lines: its problems are on line 0 and name the record or the image). Given the test images,
an image outside them is a problem too. Unlike captions.files.read_run, which stops at the first
fault, the checker goes on, so a participant sees every fault at once.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import Iterator, TextIO

from annobench.benchmark.captions.files import CSV_COLUMNS
from annobench.benchmark.image_list import ImageList, ImageListError, read_image_list
from annobench.benchmark.problems import MAX_PROBLEMS, PathArg, Problems, RunProblem, check_main, quote


def scan_caption_run(path: PathArg, images: ImageList | None = None,
                     max_problems: int = MAX_PROBLEMS) -> tuple[list[RunProblem], dict[str, str], str]:
    """(problems in line order, the captions of the entries without problems, the form: csv,
    coco_results or json)."""
    problems = Problems(max_problems)
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        problems.add(line, f"not valid UTF-8 ({error.reason} at byte {error.start + 1} of the file)")
        return problems.result(), {}, "csv"
    if text.lstrip()[:1] in ("[", "{"):
        form, entries = _json_entries(text, problems)
    else:
        form, entries = "csv", _csv_entries(text, problems)
    captions: dict[str, str] = {}
    first: dict[str, int | str] = {}
    for line, where, image_id, caption in entries:
        if image_id in first:
            problems.add(line, f"{where}image '{image_id}' again (first at {_place(first[image_id])}): a run gives "
                               "one caption per image")
            continue
        first[image_id] = line if form == "csv" else where.rstrip(": ")
        if images is not None and image_id not in images:
            problems.add(line, f"{where}image {quote(image_id)} is not a test image")
            continue
        captions[image_id] = caption
    if not first and not problems.total:
        problems.add(0, "empty run: no captions")
    problems.found.sort(key=lambda problem: problem.line)  # duplicates are found after the rows they repeat
    return problems.result(), captions, form


def _place(first: int | str) -> str:
    return f"line {first}" if isinstance(first, int) else first


def _checked(line: int, where: str, image_id, caption, problems: Problems):
    """(image_id, caption) as strings, or None with the problem recorded."""
    if isinstance(image_id, bool) or not isinstance(image_id, (str, int)) or not str(image_id).strip():
        problems.add(line, f"{where}empty or invalid image_id {image_id!r}")
        return None
    if not isinstance(caption, str) or not caption.strip():
        problems.add(line, f"{where}empty or invalid caption {caption!r}" if not isinstance(caption, str)
                     else f"{where}empty caption for image '{str(image_id).strip()}'")
        return None
    return str(image_id).strip(), caption


def _csv_entries(text: str, problems: Problems) -> Iterator[tuple[int, str, str, str]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None or not any(cell.strip() for cell in header):
            problems.add(1, f"no header: the first line must be {','.join(CSV_COLUMNS)}")
            return
        names = [name.strip() for name in header]
        missing = [name for name in CSV_COLUMNS if name not in names]
        if missing:
            problems.add(1, f"the header lacks column(s) {', '.join(missing)} (expected {','.join(CSV_COLUMNS)})")
            return
        at = {name: names.index(name) for name in CSV_COLUMNS}
        start = reader.line_num + 1
        for row in reader:
            line, start = start, reader.line_num + 1  # a quoted caption may span lines
            if not row:
                continue
            if len(row) != len(names):
                problems.add(line, f"{len(row)} field(s), the header has {len(names)}")
                continue
            checked = _checked(line, "", row[at["image_id"]], row[at["caption"]], problems)
            if checked:
                yield line, "", *checked
    except csv.Error as error:  # a field past the csv module's size limit: the rest cannot be split
        problems.add(reader.line_num, f"not a CSV line ({error})")


def _json_entries(text: str, problems: Problems) -> tuple[str, list]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        problems.add(error.lineno, f"not valid JSON: {error.msg} at column {error.colno}")
        return "json", []
    except RecursionError:
        problems.add(0, "not valid JSON: nested too deeply")
        return "json", []
    entries = []
    if isinstance(data, list):
        for index, record in enumerate(data):
            where = f"record {index}: "
            if not isinstance(record, dict) or "image_id" not in record or "caption" not in record:
                problems.add(0, f"{where}needs \"image_id\" and \"caption\"")
                continue
            checked = _checked(0, where, record["image_id"], record["caption"], problems)
            if checked:
                entries.append((0, where, *checked))
        return "coco_results", entries
    if isinstance(data, dict):
        for key, caption in data.items():
            checked = _checked(0, f"image {key!r}: ", key, caption, problems)
            if checked:
                entries.append((0, f"image {key!r}: ", *checked))
        return "json", entries
    problems.add(0, "a JSON run must be a COCO results list or an {image_id: caption} object")
    return "json", []


def check_caption_run_main(run_path: PathArg, images_path: PathArg | None = None, out: TextIO | None = None) -> int:
    """Body of `annobench check-caption-run`: one line per problem and 2, or a one-line summary and 0."""
    out = out or sys.stdout

    def scan() -> tuple[list[RunProblem], str]:
        images = read_image_list(images_path) if images_path is not None else None
        problems, captions, form = scan_caption_run(run_path, images)
        return problems, f"{len(captions)} captions ({form})"

    return check_main(run_path, scan, out, input_errors=(ImageListError,))
