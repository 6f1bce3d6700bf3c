"""Boxes as tables and arrays (ImageCLEF 2016 subtask 1, Gilbert et al. 2016; PASCAL VOC devkit
conventions, Everingham et al. 2010): the schemas, the box arithmetic of the "+1" convention, the
readings of foreign corner formats, and the list of test images.

Coordinates are inclusive integer pixels, as in the PASCAL VOC devkit: a box
covers the columns xmin..xmax and rows ymin..ymax, so its width is
xmax - xmin + 1 and its area, and the area of an intersection, count pixels
the same way. Whether pixels are numbered from 0 or 1 does not matter to the
measure as long as the truth and the run agree: VOC XML is read as written
(from 1), boxes derived from label maps count from 0.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from annobench.core.errors import AnnobenchError
from annobench.core.tables import field

COORDINATES = ("xmin", "ymin", "xmax", "ymax")

BOXES_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "key of the image"),
        field("instance", pa.int32(), "the box's number in its image, from 1, in source order (a rejected box "
                                      "leaves its number unused)"),
        field("concept", pa.string(), "the concept the box holds an instance of"),
        field("xmin", pa.int32(), "leftmost column of the box (inclusive pixel coordinate)"),
        field("ymin", pa.int32(), "top row of the box (inclusive)"),
        field("xmax", pa.int32(), "rightmost column of the box (inclusive: width = xmax - xmin + 1)"),
        field("ymax", pa.int32(), "bottom row of the box (inclusive: height = ymax - ymin + 1)"),
        field("source", pa.string(), "where the box comes from: format:file[:position]"),
    ]
)

BOX_REJECTS_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "image the box belongs to (null when the source does not say)",
              nullable=True),
        field("instance", pa.int32(), "the number the box would have had in its image (null: a whole file)",
              nullable=True),
        field("concept", pa.string(), "the box's concept as the source names it", nullable=True),
        field("xmin", pa.float64(), "xmin as read, before any check (null when missing or not a number)",
              nullable=True),
        field("ymin", pa.float64(), "ymin as read", nullable=True),
        field("xmax", pa.float64(), "xmax as read", nullable=True),
        field("ymax", pa.float64(), "ymax as read", nullable=True),
        field("reason", pa.string(), "why the box is not in the boxes table"),
        field("source", pa.string(), "where the box comes from: format:file[:position]"),
    ]
)

# Boxes kept after a change, one row each (benchmark.boxes.outside: clip): the box as read and what was done.
BOX_NOTES_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "image the box belongs to"),
        field("instance", pa.int32(), "the box's number in its image (its row in the boxes table)"),
        field("concept", pa.string(), "the box's concept"),
        field("xmin", pa.float64(), "xmin as read, before the change (and before rounding)"),
        field("ymin", pa.float64(), "ymin as read"),
        field("xmax", pa.float64(), "xmax as read"),
        field("ymax", pa.float64(), "ymax as read"),
        field("note", pa.string(), "what was done to the box and why"),
        field("source", pa.string(), "where the box comes from: format:file[:position]"),
    ]
)
OUTSIDE_RULES = ("reject", "clip")

# Box runs in Parquet: one row per box, in the run's order (which breaks score ties).
BOX_RUN_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "test image of the box"),
        field("concept", pa.string(), "concept the box is for"),
        field("score", pa.float64(), "confidence in [0, 1] (null: the run gives no scores)", nullable=True),
        field("xmin", pa.int32(), "leftmost column (inclusive pixel coordinate)"),
        field("ymin", pa.int32(), "top row (inclusive)"),
        field("xmax", pa.int32(), "rightmost column (inclusive)"),
        field("ymax", pa.int32(), "bottom row (inclusive)"),
    ]
)
BOX_RUN_COLUMNS = tuple(BOX_RUN_SCHEMA.names)
BOX_RUN_ARTEFACT = "box_run"


class BoxInputError(AnnobenchError):
    """A box source, run or image list that cannot be used at all (a wrong path or form)."""


# ---------------------------------------------------------------- arithmetic


def nearest_pixel(value: float) -> int:
    """The nearest integer, halves rounded up: how fractional coordinates become pixels."""
    return int(math.floor(value + 0.5))


def corners_from_xywh(left: float, top: float, width: float, height: float) -> tuple[int, int, int, int]:
    """Inclusive pixel corners of a box given as left, top, width, height (COCO, box text files).

    The far corner is (left + width, top + height), not one pixel less: the
    width is read as xmax - xmin, the way VOC boxes become COCO's
    [x, y, w, h] in the common converters (and in the shared toy example,
    whose `area` is (w + 1)(h + 1)), and the way Padilla's
    Object-Detection-Metrics reads `left top width height`. Read so, a
    COCO file or box text file converted from VOC XML gives back exactly
    the VOC boxes, and the published AP values of both reference examples
    are reproduced (reading xmax = left + width - 1 gives 22.54 % instead of
    24.57 % on padilla_odm). Fractional values are rounded to the nearest
    pixel (halves up) after adding: boxes are whole pixels (inclusive integer coordinates, as in
    the PASCAL VOC devkit).
    """
    return (nearest_pixel(left), nearest_pixel(top), nearest_pixel(left + width), nearest_pixel(top + height))


# ---------------------------------------------------------------- geometry

# How four numbers of a box text line (or a detections line) are read: corners with the maximum
# inclusive (the PASCAL VOC devkit's `xmin ymin xmax ymax`, Everingham et al. 2010, and this
# project's boxes), corners with the maximum one past the box (xmax - 1 is its last column), or
# left, top, width, height (read as corners_from_xywh says). Forms that say their geometry (VOC
# XML, COCO JSON, the tables' xmin..ymax columns, the 2015/2016 `WxH+X+Y`) do not take one.
GEOMETRIES = ("xyxy", "xyxy-exclusive", "xywh")
GEOMETRY_LAYOUTS = {"xyxy": "xmin ymin xmax ymax", "xyxy-exclusive": "xmin ymin xmax ymax",
                    "xywh": "left top width height"}
_GEOMETRY_MEANINGS = {"xyxy": "xmin ymin xmax ymax, the maximum inclusive, as VOC",
                      "xyxy-exclusive": "xmin ymin xmax ymax, the maximum one past the box",
                      "xywh": "left top width height"}


def check_geometry(geometry: str | None, what: str, option: str = "--geometry") -> str:
    """The geometry, or BoxInputError naming `what` (a folder that does not say its geometry) and the option."""
    if geometry in GEOMETRIES:
        return geometry
    choices = ", ".join(f"{g} ({_GEOMETRY_MEANINGS[g]})" for g in GEOMETRIES[:-1])
    choices += f" or {GEOMETRIES[-1]} ({_GEOMETRY_MEANINGS[GEOMETRIES[-1]]})"
    if not geometry:
        raise BoxInputError(f"{what} does not say its geometry: give {option} {choices}")
    raise BoxInputError(f"unknown geometry {geometry!r} ({option}): give {choices}")


def raw_corners(values, geometry: str) -> tuple[float, float, float, float]:
    """(xmin, ymin, xmax, ymax) as floats, inclusive, before rounding, of four numbers in `geometry`."""
    a, b, c, d = (float(v) for v in values)
    if geometry == "xywh":
        return a, b, a + c, b + d
    if geometry == "xyxy-exclusive":
        return a, b, c - 1, d - 1
    return a, b, c, d


def corners_from(values, geometry: str) -> tuple[int, int, int, int]:
    """Inclusive integer corners of four numbers in `geometry` (xywh: corners_from_xywh; corners:
    each rounded to the nearest pixel, then, when exclusive, the maximum made the last pixel)."""
    if geometry == "xywh":
        return corners_from_xywh(*values)
    xmin, ymin, xmax, ymax = (nearest_pixel(v) for v in values)
    if geometry == "xyxy-exclusive":
        return xmin, ymin, xmax - 1, ymax - 1
    return xmin, ymin, xmax, ymax


def other_geometry(geometry: str) -> str:
    """The geometry a box text file in `geometry` is most often mistaken for: corners <-> xywh."""
    return "xyxy" if geometry == "xywh" else "xywh"


def geometry_counts(values: np.ndarray, sizes: np.ndarray, geometry: str) -> tuple[int, int]:
    """(inverted, outside): boxes with no pixel (xywh: a negative width or height; corners: max < min)
    and boxes leaving their image, of values (n, 4) read in `geometry`; sizes (n, 2) width, height,
    NaN where unknown. A box that inverts is not counted as leaving."""
    values = np.asarray(values, dtype=np.float64).reshape(-1, 4)
    if geometry == "xywh":
        corners = np.column_stack([values[:, :2], values[:, :2] + values[:, 2:]])
        inverted = (values[:, 2] < 0) | (values[:, 3] < 0)
    else:
        corners = values.copy()
        if geometry == "xyxy-exclusive":
            corners[:, 2:] -= 1
        inverted = (np.floor(corners[:, 2] + 0.5) < np.floor(corners[:, 0] + 0.5)) | \
                   (np.floor(corners[:, 3] + 0.5) < np.floor(corners[:, 1] + 0.5))
    corners = np.floor(corners + 0.5)
    sizes = np.asarray(sizes, dtype=np.float64).reshape(-1, 2)
    with np.errstate(invalid="ignore"):
        outside = ((corners[:, 0] < 0) | (corners[:, 1] < 0) | (corners[:, 2] > sizes[:, 0])
                   | (corners[:, 3] > sizes[:, 1])) & ~np.isnan(sizes).any(axis=1)
    return int(inverted.sum()), int((outside & ~inverted).sum())


def _count_text(inverted: int, outside: int, geometry: str) -> str:
    def boxes(n: int, verb: str) -> str:
        return f"{n} box{'es' if n != 1 else ''} {verb if n != 1 else verb + 's'}"

    parts = [boxes(outside, "leave") + (" its image" if outside == 1 else " their image")] if outside else []
    if inverted:
        parts.append(boxes(inverted, "invert") + (" (a negative width or height)" if geometry == "xywh"
                                                   else " (max < min)"))
    return " and ".join(parts)


def geometry_problem(values: np.ndarray, sizes: np.ndarray, geometry: str, option: str = "--geometry") -> str | None:
    """Why `geometry` is the wrong reading of these boxes, naming the one that fits better, or None.

    The named geometry is wrong when some of its boxes invert or leave their image (where the size
    is known) and fewer do read in the other geometry (corners <-> xywh)."""
    named = geometry_counts(values, sizes, geometry)
    if not sum(named):
        return None
    other = other_geometry(geometry)
    alternative = geometry_counts(values, sizes, other)
    if sum(alternative) >= sum(named):
        return None
    fits = _count_text(*alternative, other) or "every box fits"
    return f"read as {geometry}, {_count_text(*named, geometry)}; read as {other}, {fits}: {option} {other}"


def corners_ambiguity(values: np.ndarray, geometry: str, option: str = "--geometry") -> str | None:
    """Without image sizes, boxes named xywh that all also read as valid corners (as boxes that are
    corners always do) may be corners: a warning naming the way to decide, or None."""
    values = np.asarray(values, dtype=np.float64).reshape(-1, 4)
    if geometry != "xywh" or not len(values) or geometry_counts(values, np.full((len(values), 2), np.nan), "xyxy")[0]:
        return None
    return (f"every one of the {len(values)} boxes read as xywh also reads as valid xyxy corners (xmax >= xmin, "
            f"ymax >= ymin), as boxes written as corners always do: if they are corners, {option} xyxy; "
            "image sizes (--images) would tell")


def clip_to_image(xmin: int, ymin: int, xmax: int, ymax: int, size: tuple[int, int]):
    """The box cut to the range a box may have in an image of size (width, height), 0..width and
    0..height (see outside_image), or None when no pixel of it is inside."""
    width, height = size
    clipped = (max(xmin, 0), max(ymin, 0), min(xmax, width), min(ymax, height))
    return clipped if clipped[2] >= clipped[0] and clipped[3] >= clipped[1] else None


def widths(xmin, xmax) -> np.ndarray:
    """Pixels spanned, inclusive: xmax - xmin + 1."""
    return np.asarray(xmax, dtype=np.int64) - np.asarray(xmin, dtype=np.int64) + 1


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU = |A ∩ B| / |A ∪ B| of boxes a[i] and b[i] (rows xmin, ymin, xmax, ymax), counting pixels.

    a and b are (n, 4) integer arrays (or broadcast against each other);
    disjoint boxes have IoU 0. Areas are exact integers, so the one
    division is the only rounding.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    across = np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]) + 1
    down = np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]) + 1
    inter = np.clip(across, 0, None) * np.clip(down, 0, None)
    area_a = widths(a[..., 0], a[..., 2]) * widths(a[..., 1], a[..., 3])
    area_b = widths(b[..., 0], b[..., 2]) * widths(b[..., 1], b[..., 3])
    return inter / (area_a + area_b - inter)


def geometry_text(xmin: int, ymin: int, xmax: int, ymax: int) -> str:
    """The box as `WxH+X+Y` (the text form of the ImageCLEF 2015/2016 box runs): W = xmax - xmin + 1,
    X = xmin; a negative offset is written with its sign instead of the +, as X11 geometry does
    (`WxH-3+0`)."""
    return f"{xmax - xmin + 1}x{ymax - ymin + 1}{xmin:+d}{ymin:+d}"


def score_text(score: float) -> str:
    """A score written so that reading it back gives the same float (shortest exact decimal, no exponent)."""
    return np.format_float_positional(float(score), unique=True, trim="-")


def outside_image(xmin: int, ymin: int, xmax: int, ymax: int, size: tuple[int, int]) -> bool:
    """Whether the box leaves the image of size (width, height).

    The allowed range is 0..width (and 0..height), so boxes numbered from 0
    (up to width - 1) and from 1 (VOC, up to width) both fit.
    """
    width, height = size
    return xmin < 0 or ymin < 0 or xmax > width or ymax > height
