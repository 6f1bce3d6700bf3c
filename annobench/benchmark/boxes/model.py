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
