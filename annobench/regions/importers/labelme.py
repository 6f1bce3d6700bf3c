"""LabelMe annotations: one JSON of shapes (polygons, rectangles, circles) per
image. Shapes are numbered 1..n in the order the file lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from annobench.core.fsutil import read_user_json
from annobench.regions.importers.common import assemble, relative, require_files
from annobench.regions.segmentation import Imported, SegmentationReject, SegmentationSourceError

# A LabelMe file states its image size; refuse to allocate absurd ones.
MAX_DRAWN_PIXELS = 1 << 28


def import_labelme(root: Path, wanted: Callable[[str], bool]) -> Iterator[Imported]:
    """<image_id>.json files (LabelMe) under root: imageHeight, imageWidth and
    shapes (label, points, shape_type polygon | rectangle | circle). Region k is
    the k-th shape; a later shape covers an earlier one where they overlap,
    as LabelMe's own label export does. Lines and points have no area and
    are rejected."""
    for path in require_files(sorted(root.rglob("*.json")), root, "<image_id>.json LabelMe files"):
        image_id, source = path.stem, relative(path, root)
        if not wanted(image_id):
            continue
        try:
            document = read_user_json(path, SegmentationSourceError)
            height, width = int(document["imageHeight"]), int(document["imageWidth"])
            shapes = list(document.get("shapes") or [])
        except SegmentationSourceError as exc:  # names the file and what is wrong with it
            yield SegmentationReject(image_id, None, f"unreadable LabelMe file: {exc}", 1, source)
            continue
        except Exception as exc:  # a field missing or of the wrong type: the exception says which
            yield SegmentationReject(image_id, None, f"unreadable LabelMe file: {exc!r}", 1, source)
            continue
        if height <= 0 or width <= 0 or height * width > MAX_DRAWN_PIXELS:
            yield SegmentationReject(image_id, None, f"image size {width}x{height} is empty or too large", 1, source)
            continue
        label_map = np.zeros((height, width), dtype=np.int32)
        labels, rejects = {}, []
        for region_id, shape in enumerate(shapes, start=1):
            try:
                inside = _shape_mask(shape, height, width)
            except Exception as exc:
                rejects.append(SegmentationReject(image_id, region_id, f"shape not drawable: {exc}", 1, source))
                continue
            label_map[inside] = region_id
            labels[region_id] = str(shape.get("label") or "").strip() or None
        yield from assemble(image_id, label_map, labels, source, rejects=rejects, label_table="shapes")


def _shape_mask(shape: dict, height: int, width: int) -> np.ndarray:
    kind = shape.get("shape_type") or "polygon"
    points = [(float(x), float(y)) for x, y in shape.get("points") or []]
    canvas = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(canvas)
    if kind == "polygon" and len(points) >= 3:
        draw.polygon(points, outline=1, fill=1)
    elif kind == "rectangle" and len(points) == 2:
        (x0, y0), (x1, y1) = points
        draw.rectangle([min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)], outline=1, fill=1)
    elif kind == "circle" and len(points) == 2:
        (cx, cy), (px, py) = points
        r = float(np.hypot(px - cx, py - cy))
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], outline=1, fill=1)
    else:
        raise ValueError(f"{kind} with {len(points)} points has no area")
    return np.asarray(canvas, dtype=bool)
