"""One line of a box run taken apart, naming the field of every problem: the text form
(`image_id concept [score:]WxH+X+Y ...`), the CSV form and a line of a detections file
(`class confidence A B C D`, four numbers in the geometry the reader is given: model.GEOMETRIES).

A parsed line gives its boxes as (field number, score or None, corners) and
its problems as messages; the checker adds what needs the whole run
(repeats, unknown names, scores given to some boxes only).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from dataclasses import field as dataclass_field

from annobench.benchmark.boxes.model import GEOMETRY_LAYOUTS, corners_from
from annobench.benchmark.problems import BAD_SEPARATOR, describe_separator, quote

CSV_HEADER = "image_id,concept,score,xmin,ymin,xmax,ymax"
# Scores, as the annotation runs write them: plain decimals, an exponent allowed.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WHOLE = re.compile(r"[+-]?[0-9]+")
# WxH+X+Y, as X11 geometry writes it: the offsets carry their sign (a box may start left of the image).
_GEOMETRY = re.compile(r"(?P<w>[^x]*)x(?P<h>[^+-]*)(?P<x>[+-][^+-]*)(?P<y>[+-][^+-]*)")


@dataclass
class ParsedLine:
    """What one line holds: ids (None when absent), its boxes and what is wrong with it."""

    image_id: str | None = None
    concept: str | None = None
    boxes: list[tuple[int, float | None, tuple[int, int, int, int]]] = dataclass_field(default_factory=list)
    problems: list[str] = dataclass_field(default_factory=list)
    readable: bool = True  # decoded as UTF-8; an unreadable line's values are not checked further
    values: tuple[float, ...] | None = None  # a detections line's four numbers as written (the geometry check)


def decode_line(raw: bytes, number: int, parsed: ParsedLine) -> str:
    """The line's text without its end (and spaces before it), noting bad bytes and a BOM."""
    body = raw.rstrip(b"\r\n").rstrip(b" ")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        parsed.problems.append(f"not valid UTF-8: byte 0x{body[error.start]:02x} at byte {error.start + 1} "
                               "of the line")
        parsed.readable = False
        text = body.decode("utf-8", "replace")
    if number == 1 and text.startswith("\ufeff"):
        parsed.problems.append("the file starts with a byte-order mark (U+FEFF); a run is plain UTF-8 without one")
        text = text[1:]
    return text


def score_problem(token: str) -> str | None:
    """Why a score token is no number in [0, 1], or None."""
    if _NUMBER.fullmatch(token):
        value = float(token)  # a huge exponent gives inf, which the range test refuses
        return None if 0.0 <= value <= 1.0 else f"score {quote(token)} is outside [0, 1]"
    bare = token.lower().lstrip("+-")
    if bare == "nan":
        return f"score {quote(token)} is NaN; a score is a number in [0, 1]"
    if bare in ("inf", "infinity"):
        return f"score {quote(token)} is infinite; a score is a number in [0, 1]"
    if not token:
        return "score is empty"
    return f"score {quote(token)} is not a number"


def name_problem(what: str, token: str) -> str | None:
    if not token:
        return f"empty {what}"
    if any(char.isspace() or char == "," for char in token):
        return f"{what} {quote(token)} holds whitespace or a comma"
    return None


# ---------------------------------------------------------------- the text form


def parse_text_line(raw: bytes, number: int) -> ParsedLine:
    """`image_id concept [score:]WxH+X+Y [score:]WxH+X+Y ...`, single spaces."""
    parsed = ParsedLine()
    text = decode_line(raw, number, parsed)
    if not text.strip():
        parsed.problems.append("blank line: every line names an image, a concept and its boxes")
        return parsed
    separator = BAD_SEPARATOR.search(text)
    if separator:
        parsed.problems.append(f"fields must be separated by single spaces: {describe_separator(separator)}")
    fields = text.split()
    parsed.image_id = fields[0]
    if len(fields) < 3:
        missing = "a concept and boxes" if len(fields) == 1 else "boxes"
        parsed.problems.append(f"truncated line: {len(fields)} field(s), no {missing} "
                               "(a line is 'image_id concept box ...')")
    if len(fields) >= 2:
        parsed.concept = fields[1]
    if not parsed.readable:
        return parsed
    for position, token in enumerate(fields[2:], 3):
        box, problem = _parse_box_token(token)
        if problem:
            parsed.problems.append(f"field {position} (box {position - 2}): {problem}")
        else:
            parsed.boxes.append((position, *box))
    return parsed


def _parse_box_token(token: str):
    """([score:]WxH+X+Y) -> ((score or None, corners), None), or (None, what is wrong)."""
    score = None
    if ":" in token:
        score_token, _, token = token.partition(":")
        problem = score_problem(score_token)
        if problem:
            return None, problem
        score = float(score_token)
    match = _GEOMETRY.fullmatch(token)
    if not match:
        return None, f"geometry {quote(token)} is not WxH+X+Y"
    values = {}
    for part, what in (("w", "width W"), ("h", "height H"), ("x", "offset X"), ("y", "offset Y")):
        text = match.group(part)
        if not _WHOLE.fullmatch(text):
            return None, f"{what} {quote(text)} in {quote(token)} is not a whole number"
        if part in "wh" and text[:1] in "+-":
            return None, f"{what} {quote(text)} in {quote(token)} has a sign; W and H are at least 1 pixel"
        values[part] = int(text)
    if values["w"] < 1 or values["h"] < 1:
        return None, f"geometry {quote(token)}: width and height must be at least 1 pixel"
    x, y = values["x"], values["y"]
    return (score, (x, y, x + values["w"] - 1, y + values["h"] - 1)), None


# ---------------------------------------------------------------- the CSV form


def parse_csv_line(raw: bytes, number: int) -> ParsedLine:
    """`image_id,concept,score,xmin,ymin,xmax,ymax`; an empty score means the run gives none."""
    parsed = ParsedLine()
    text = decode_line(raw, number, parsed)
    if not text.strip():
        parsed.problems.append("blank line: every line after the header is one box")
        return parsed
    fields = text.split(",")
    parsed.image_id = fields[0]
    if len(fields) != 7:
        parsed.problems.append(f"wrong number of fields: {len(fields)}; expected 7 ({CSV_HEADER})")
        return parsed
    parsed.concept = fields[1]
    if not parsed.readable:
        return parsed
    problems = []  # empty or odd names: the checker tests them in every form
    score = None
    if fields[2]:
        problem = score_problem(fields[2])
        problems += [f"field 3: {problem}"] if problem else []
        score = None if problem else float(fields[2])
    corners = []
    for position, (name, token) in enumerate(zip(("xmin", "ymin", "xmax", "ymax"), fields[3:]), 4):
        if _WHOLE.fullmatch(token):
            corners.append(int(token))
        else:
            problems.append(f"field {position}: {name} {quote(token)} is not a whole number")
    if len(corners) == 4:
        problems += extent_problems(*corners)
    parsed.problems += problems
    if not problems:
        parsed.boxes.append((0, score, tuple(corners)))  # field 0: the line is the box
    return parsed


# No image is two billion pixels across; within it, widths and areas stay inside the int64 the boxes are kept in.
MAX_COORDINATE = 2**31 - 1


def range_problem(corners: tuple[int, ...]) -> str | None:
    """A coordinate no image can have (any form: the text form's W and H add up to one)."""
    outside = [value for value in corners if abs(value) > MAX_COORDINATE]
    return f"coordinate {outside[0]} is beyond +-{MAX_COORDINATE}" if outside else None


def extent_problems(xmin: int, ymin: int, xmax: int, ymax: int) -> list[str]:
    """A box with no pixel: xmax < xmin or ymax < ymin (inclusive coordinates)."""
    found = []
    if xmax < xmin:
        found.append(f"xmax {xmax} < xmin {xmin}: a box is at least 1 pixel wide")
    if ymax < ymin:
        found.append(f"ymax {ymax} < ymin {ymin}: a box is at least 1 pixel high")
    return found


# ---------------------------------------------------------------- detections files


def parse_detection_line(raw: bytes, number: int, geometry: str = "xywh") -> ParsedLine:
    """`class confidence A B C D` in `geometry` (one file per image; blank lines are skipped)."""
    parsed = ParsedLine()
    text = decode_line(raw, number, parsed)
    fields = text.split()
    if not fields or not parsed.readable:
        return parsed
    parsed.concept = fields[0]
    layout = GEOMETRY_LAYOUTS[geometry]
    if len(fields) != 6:
        parsed.problems.append(f"wrong number of fields: {len(fields)}; expected 6 "
                               f"(class confidence {layout}, --geometry {geometry})")
        return parsed
    problem = score_problem(fields[1])
    if problem:
        parsed.problems.append(f"field 2: {problem}")
    values = []
    for position, (name, token) in enumerate(zip(layout.split(), fields[2:]), 3):
        value = float(token) if _NUMBER.fullmatch(token) else math.nan
        if not math.isfinite(value):
            parsed.problems.append(f"field {position}: {name} {quote(token)} is not a finite number")
        elif name in ("width", "height") and value < 0:
            parsed.problems.append(f"field {position}: {name} {quote(token)} is negative")
        values.append(value)
    if all(math.isfinite(v) for v in values):
        parsed.values = tuple(values)
    if not parsed.problems:
        corners = corners_from(values, geometry)
        extent = extent_problems(*corners)
        if extent:
            parsed.problems += [f"{message} (read as {geometry})" for message in extent]
        else:
            parsed.boxes.append((0, float(fields[1]), corners))
    return parsed


# ---------------------------------------------------------------- Parquet rows


def parse_row(image_id, concept, score, corners: tuple) -> ParsedLine:
    """One row of a Parquet run, as Python values: a null score means the run gives none."""
    parsed = ParsedLine(image_id=image_id, concept=concept)
    for what, value in (("image id", image_id), ("concept", concept)):
        if value is None:
            parsed.problems.append(f"{what} is missing (null)")
    if score is not None and not 0.0 <= score <= 1.0:  # NaN fails both tests
        kind = "NaN" if math.isnan(score) else "infinite" if math.isinf(score) else "outside [0, 1]"
        parsed.problems.append(f"score {score!r} is {kind}; a score is a number in [0, 1] (or null)")
    whole = []
    for name, value in zip(("xmin", "ymin", "xmax", "ymax"), corners):
        if value is None or not math.isfinite(value) or value != int(value):
            parsed.problems.append(f"{name} {value!r} is not a whole number")
        else:
            whole.append(int(value))
    if len(whole) == 4:
        parsed.problems += extent_problems(*whole)
    if not parsed.problems:
        parsed.boxes.append((0, score, tuple(whole)))
    return parsed
