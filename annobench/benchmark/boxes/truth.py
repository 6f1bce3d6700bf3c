"""Box ground truth (ImageCLEF 2016 subtask 1, Gilbert et al. 2016; PASCAL VOC devkit conventions,
Everingham et al. 2010): read from VOC XML, COCO JSON, a CSV or Parquet table, a folder of box
text files, or derived from labelled segmentations; every box either in the `boxes` table or,
with its reason, in the box rejects.

Forms and their readings:

- VOC XML folder: one PASCAL annotation file per image; image id = the file
  stem (or, with image_id_from="filename", the stem of `<filename>`);
  each top-level `object` gives `name` and `bndbox` xmin, ymin, xmax, ymax,
  read as written (VOC counts pixels from 1). `<size>` gives the image size.
  `difficult` and `truncated` are not special: the 2016 overview (Gilbert et al. 2016,
  section 2.5) has no ignored boxes.
- COCO instance JSON: `images` (id, file_name, width, height; image id =
  the stem of file_name), `annotations` (image_id, category_id, bbox
  [x, y, w, h] as floats) and `categories` (id, name). See
  model.corners_from_xywh for how [x, y, w, h] becomes inclusive integer
  corners and why. A crowd annotation (iscrowd = 1) marks a group of
  instances, not one, and is rejected.
- A table, CSV (recognised by its header) or Parquet (by its magic bytes):
  columns image_id, concept, xmin, ymin, xmax, ymax (others are ignored),
  inclusive integer coordinates; a fractional coordinate is rejected.
- A folder of box text files, one per image (image id = file stem), lines
  `class A B C D`: four numbers in the geometry the caller names (the folder
  does not say it, so there is no default): `xyxy` (`xmin ymin xmax ymax`,
  the maximum inclusive, as VOC), `xyxy-exclusive` (the maximum one past the
  box) or `xywh` (`left top width height`, Padilla's Object-Detection-Metrics
  ground truth, read as corners_from_xywh says). The folder is read whole
  first: when its boxes invert or leave their image under the named geometry
  and fewer do under the other, BoxInputError names the geometry that fits
  (model.geometry_problem); named xywh without any image size, boxes that all
  read as valid corners too give a warning (model.corners_ambiguity).
- Labelled segmentations, through the region importers: each labelled
  region's bounding box in its label map (pixels counted from 0); the first
  annotator's segmentation of each image; unlabelled regions are no boxes.

Checks every box gets, each failing one giving a rejects row: xmax < xmin or
ymax < ymin; outside the image when its size is known (from the source or
the image list); a concept outside the vocabulary when one is given; an
image outside the image list when one is given. Coordinates that are missing
or not numbers are rejected too. Instances are numbered per image from 1 in
source order; a rejected box leaves its number unused. With outside="clip",
a box leaving its image that still has pixels inside it is kept, cut to
the image (model.clip_to_image), with a notes row (BOX_NOTES_SCHEMA) holding
the box as read; with nothing inside, it is rejected.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from annobench.benchmark.boxes.model import (
    BOX_NOTES_SCHEMA,
    BOX_REJECTS_SCHEMA,
    BOXES_SCHEMA,
    COORDINATES,
    GEOMETRY_LAYOUTS,
    OUTSIDE_RULES,
    BoxInputError,
    check_geometry,
    clip_to_image,
    corners_ambiguity,
    geometry_problem,
    nearest_pixel,
    outside_image,
    raw_corners,
)
from annobench.benchmark.image_list import ImageList
from annobench.core.fsutil import read_user_json

TRUTH_FORMS = ("voc", "coco", "csv", "parquet", "text", "segmentations")
_TABLE_COLUMNS = ("image_id", "concept", *COORDINATES)


@dataclass
class BoxTruth:
    """Accepted boxes (BOXES_SCHEMA columns), rejects (BOX_REJECTS_SCHEMA columns) and the images.

    image_ids: every image the source names, boxes or not (VOC files, COCO
    images, text files, segmentations), in source order; None for a table,
    which only names images through their boxes. notes: the boxes kept after
    a change (BOX_NOTES_SCHEMA columns: clipped to their image). sizes: image
    id -> (width, height) the source gives (VOC XML, COCO, segmentations).
    warnings: what the user should see though nothing is rejected for it.
    """

    boxes: pd.DataFrame
    rejects: pd.DataFrame
    image_ids: tuple[str, ...] | None
    notes: pd.DataFrame | None = None
    sizes: dict[str, tuple[int, int]] | None = None
    warnings: tuple[str, ...] = ()

    def boxes_table(self) -> pa.Table:
        return pa.Table.from_pandas(self.boxes, schema=BOXES_SCHEMA, preserve_index=False)

    def rejects_table(self) -> pa.Table:
        return pa.Table.from_pandas(self.rejects, schema=BOX_REJECTS_SCHEMA, preserve_index=False)

    def notes_table(self) -> pa.Table:
        notes = self.notes if self.notes is not None else _notes_frame([])
        return pa.Table.from_pandas(notes, schema=BOX_NOTES_SCHEMA, preserve_index=False)


def _notes_frame(rows: list[tuple]) -> pd.DataFrame:
    notes = pd.DataFrame(rows, columns=BOX_NOTES_SCHEMA.names)
    return notes.astype({"image_id": object, "instance": "int32", "concept": object, "note": object, "source": object,
                         **dict.fromkeys(COORDINATES, "float64")})


class _TruthBuilder:
    """Numbers the boxes of each image, checks them and sorts them into boxes and rejects."""

    def __init__(self, vocabulary: Iterable[str] | None, images: ImageList | None, lists_images: bool,
                 outside: str = "reject"):
        if outside not in OUTSIDE_RULES:
            raise BoxInputError(f"outside must be one of {', '.join(OUTSIDE_RULES)}, not {outside!r}")
        self.vocabulary = frozenset(vocabulary) if vocabulary is not None else None
        self.images = images
        self.outside = outside
        self.boxes: list[tuple] = []
        self.rejects: list[tuple] = []
        self.notes: list[tuple] = []
        self.warnings: list[str] = []
        self.sizes: dict[str, tuple[int, int]] = {}
        self.named: dict[str, str] = {}  # image id -> the source that named it first
        self.counts: dict[str, int] = {}
        self.lists_images = lists_images

    def image(self, image_id: str, source: str, size: tuple[int, int] | None = None) -> bool:
        """Register an image the source lists; False (and a reject) if an earlier source named it."""
        if image_id in self.named:
            self.reject_file(image_id, f"image id '{image_id}' is already given by {self.named[image_id]}", source)
            return False
        self.named[image_id] = source
        if size is not None:
            self.sizes[image_id] = size
        return True

    def reject_file(self, image_id: str | None, reason: str, source: str) -> None:
        self.rejects.append((image_id, None, None, None, None, None, None, reason, source))

    def box(self, image_id: str, concept: str | None, raw: tuple, source: str, problem: str | None = None,
            whole: bool = False) -> None:
        """One box of the source: raw = (xmin, ymin, xmax, ymax) as read (floats, or None when missing).

        whole: coordinates must already be whole numbers (the table form);
        otherwise they are rounded to the nearest pixel.
        """
        instance = self.counts.get(image_id, 0) + 1
        self.counts[image_id] = instance
        raw = tuple(None if v is None or not math.isfinite(v) else float(v) for v in raw)
        reasons = [problem] if problem else []
        clipped = None
        if not problem:
            found, clipped = self._problems(image_id, concept, raw, whole)
            reasons += found
        if reasons:
            self.rejects.append((image_id, instance, concept, *raw, "; ".join(reasons), source))
            return
        corners = tuple(nearest_pixel(v) for v in raw)
        if clipped is not None:
            changes = ", ".join(f"{name} {before} -> {after}"
                                for name, before, after in zip(COORDINATES, corners, clipped) if before != after)
            size = self.size(image_id)
            self.notes.append((image_id, instance, concept, *raw, f"clipped to the image ({size[0]}x{size[1]}): "
                               f"{changes}", source))
            corners = clipped
        self.boxes.append((image_id, instance, concept, *corners, source))

    def size(self, image_id: str) -> tuple[int, int] | None:
        """The image's (width, height): the source's, else the image list's, else None."""
        size = self.sizes.get(image_id)
        if size is None and self.images is not None and self.images.sizes:
            size = self.images.sizes.get(image_id)
        return size

    def _problems(self, image_id: str, concept: str | None, raw: tuple, whole: bool):
        """(reasons to reject the box, its corners clipped to the image or None)."""
        found = []
        clipped = None
        if any(v is None for v in raw):
            missing = [name for name, v in zip(COORDINATES, raw) if v is None]
            return [f"{', '.join(missing)} missing or not a number"], None
        if whole and any(v != int(v) for v in raw):
            found.append("coordinates must be whole pixels: " + ", ".join(
                f"{name} {v:g}" for name, v in zip(COORDINATES, raw) if v != int(v)))
        xmin, ymin, xmax, ymax = (nearest_pixel(v) for v in raw)
        if xmax < xmin:
            found.append(f"xmax {xmax} < xmin {xmin}")
        if ymax < ymin:
            found.append(f"ymax {ymax} < ymin {ymin}")
        size = self.size(image_id)
        if size is not None and not found and outside_image(xmin, ymin, xmax, ymax, size):
            clipped = clip_to_image(xmin, ymin, xmax, ymax, size) if self.outside == "clip" else None
            if clipped is None:
                inside = "; no pixel of it is inside, so it cannot be clipped" if self.outside == "clip" else ""
                found.append(f"outside the image ({size[0]}x{size[1]}){inside}")
        if not concept:
            found.append("no concept name")
        elif self.vocabulary is not None and concept not in self.vocabulary:
            found.append(f"unknown concept '{concept}' (not in the vocabulary)")
        if self.images is not None and image_id not in self.images:
            found.append(f"unknown image '{image_id}' (not in the image list)")
        return found, (clipped if not found else None)

    def result(self) -> BoxTruth:
        boxes = pd.DataFrame(self.boxes, columns=BOXES_SCHEMA.names)
        boxes = boxes.astype({"image_id": str, "instance": "int32", "concept": str, "source": str,
                              **dict.fromkeys(COORDINATES, "int32")})
        rejects = pd.DataFrame(self.rejects, columns=BOX_REJECTS_SCHEMA.names)
        rejects = rejects.astype({"instance": "Int32", **dict.fromkeys(COORDINATES, "float64")})
        image_ids = tuple(self.named) if self.lists_images else None
        return BoxTruth(boxes, rejects, image_ids, _notes_frame(self.notes), dict(self.sizes), tuple(self.warnings))


# ---------------------------------------------------------------- the forms


def truth_form(path: Path | str) -> str:
    """Which form a ground-truth path is in: a folder of .xml or .txt files, or a file by its content."""
    path = Path(path)
    if path.is_dir():
        if any(path.glob("*.xml")):
            return "voc"
        if any(path.glob("*.txt")):
            return "text"
        raise BoxInputError(f"{path}: a folder of box ground truth holds VOC .xml files or .txt box files; "
                            "this one holds neither")
    with open(path, "rb") as handle:
        head = handle.read(4096)
    if head.startswith(b"PAR1"):
        return "parquet"
    text = head.decode("utf-8", "replace").lstrip("\ufeff")
    if text.lstrip()[:1] in ("{", "["):
        return "coco"
    first = text.splitlines()[0].strip().split(",") if text.strip() else []
    if first[:1] == ["image_id"]:
        return "csv"
    raise BoxInputError(f"{path}: not a box ground truth: expected a VOC XML folder, a COCO JSON file, a CSV "
                        f"with header {','.join(_TABLE_COLUMNS)}, a Parquet table or a folder of box text files")


def read_box_truth(path: Path | str, vocabulary: Iterable[str] | None = None, images: ImageList | None = None,
                   image_id_from: str = "file", geometry: str | None = None, outside: str = "reject",
                   option: str = "--geometry") -> BoxTruth:
    """The boxes and rejects of a ground truth in any form but segmentations (see truth_form).

    geometry: how a folder of box text files is read (model.GEOMETRIES; required for one, not read
    for the forms that say their geometry); option: how the user names it, in messages. outside:
    what a box leaving its image gets, reject or clip."""
    path = Path(path)
    form = truth_form(path)
    if form == "text":
        geometry = check_geometry(geometry, f"{path}: a folder of box text files", option)
    builder = _TruthBuilder(vocabulary, images, lists_images=form in ("voc", "coco", "text"), outside=outside)
    readers = {"voc": lambda: _read_voc(path, builder, image_id_from), "coco": lambda: _read_coco(path, builder),
               "csv": lambda: _read_csv_table(path, builder), "parquet": lambda: _read_parquet_table(path, builder),
               "text": lambda: _read_text_folder(path, builder, geometry, option)}
    readers[form]()
    return builder.result()


def _read_voc(folder: Path, builder: _TruthBuilder, image_id_from: str) -> None:
    if image_id_from not in ("file", "filename"):
        raise BoxInputError(f"image_id_from must be 'file' or 'filename', not {image_id_from!r}")
    for path in sorted(folder.glob("*.xml")):
        source = f"voc:{path.name}"
        try:
            root = ElementTree.parse(path).getroot()
        except (ElementTree.ParseError, OSError) as error:
            builder.reject_file(path.stem, f"unreadable VOC XML: {error}", source)
            continue
        filename = (root.findtext("filename") or "").strip()
        image_id = Path(filename).stem if image_id_from == "filename" and filename else path.stem
        if not builder.image(image_id, source, _voc_size(root)):
            continue
        for number, item in enumerate(root.findall("object"), 1):
            concept = (item.findtext("name") or "").strip()
            box = item.find("bndbox")
            raw = tuple(_number(box.findtext(name) if box is not None else None) for name in COORDINATES)
            builder.box(image_id, concept, raw, f"{source}:object {number}",
                        None if box is not None else "object without bndbox")


def _voc_size(root: ElementTree.Element) -> tuple[int, int] | None:
    width, height = _number(root.findtext("size/width")), _number(root.findtext("size/height"))
    if width is None or height is None or width < 1 or height < 1:
        return None  # VOC files of images never measured say 0
    return int(width), int(height)


def _number(text) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _read_coco(path: Path, builder: _TruthBuilder) -> None:
    data = read_user_json(path, BoxInputError)
    if not isinstance(data, dict) or not isinstance(data.get("annotations"), list):
        raise BoxInputError(f"{path}: COCO instance JSON is an object with lists images, annotations, categories")
    source = f"coco:{path.name}"
    names = {c.get("id"): str(c.get("name", "")).strip() for c in data.get("categories") or [] if isinstance(c, dict)}
    image_ids = {}
    for image in data.get("images") or []:
        if not isinstance(image, dict):
            continue
        image_id = Path(str(image.get("file_name") or image.get("id"))).stem
        size = (image.get("width"), image.get("height"))
        size = size if all(isinstance(v, int) and v > 0 for v in size) else None
        if builder.image(image_id, f"{source}:image {image.get('id')}", size):
            image_ids[image.get("id")] = image_id
    for item in data["annotations"]:
        _coco_annotation(item, names, image_ids, builder, source)


def _coco_annotation(item, names: dict, image_ids: dict, builder: _TruthBuilder, source: str) -> None:
    if not isinstance(item, dict):
        builder.reject_file(None, "annotation is not a JSON object", source)
        return
    where = f"{source}:annotation {item.get('id')}"
    image_id = image_ids.get(item.get("image_id"))
    if image_id is None:
        builder.reject_file(None, f"image id {item.get('image_id')!r} is not in images", where)
        return
    concept = names.get(item.get("category_id"))
    bbox = item.get("bbox")
    raw, problems = (None,) * 4, []
    if isinstance(bbox, list) and len(bbox) == 4 and all(_number(v) is not None for v in bbox):
        x, y, w, h = (float(v) for v in bbox)
        raw = (x, y, x + w, y + h)  # the corners of model.corners_from_xywh, rounded by the builder
        if w < 0 or h < 0:
            problems.append("negative width or height")
    else:
        problems.append(f"bbox {bbox!r} is not four numbers [x, y, w, h]")
    if concept is None:
        problems.append(f"category id {item.get('category_id')!r} is not in categories")
    if item.get("iscrowd") == 1:
        problems.append("crowd region (iscrowd = 1): a group of instances, not one box instance")
    builder.box(image_id, concept, raw, where, "; ".join(problems) or None)


def _read_csv_table(path: Path, builder: _TruthBuilder) -> None:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise BoxInputError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    reader = csv.DictReader(io.StringIO(text))
    _require_columns(path, reader.fieldnames or [])
    for line, row in enumerate(reader, 2):
        values = [(row.get(name) or "").strip() for name in _TABLE_COLUMNS]
        builder.box(values[0], values[1], tuple(_number(v) for v in values[2:]), f"csv:{path.name}:{line}",
                    None if values[0] else "empty image_id", whole=True)


def _read_parquet_table(path: Path, builder: _TruthBuilder) -> None:
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise BoxInputError(f"{path}: not a readable Parquet file: {error}") from None
    _require_columns(path, table.column_names)
    columns = {name: table.column(name).to_pylist() for name in _TABLE_COLUMNS}
    for row in range(table.num_rows):
        image_id, concept = columns["image_id"][row], columns["concept"][row]
        raw = tuple(_number(columns[name][row]) for name in COORDINATES)
        builder.box(str(image_id or ""), concept, raw, f"parquet:{path.name}:row {row + 1}",
                    None if image_id else "empty image_id", whole=True)


def _require_columns(path: Path, names: list[str]) -> None:
    missing = [name for name in _TABLE_COLUMNS if name not in names]
    if missing:
        raise BoxInputError(f"{path}: a box table needs the columns {','.join(_TABLE_COLUMNS)}; "
                            f"missing {', '.join(missing)}")


def _read_text_folder(folder: Path, builder: _TruthBuilder, geometry: str, option: str) -> None:
    """Box text files `class A B C D` in `geometry`: read whole, the geometry checked, then built."""
    layout = GEOMETRY_LAYOUTS[geometry]
    files = []  # (image id, source, lines or None when unreadable, why)
    values, sizes = [], []
    for path in sorted(folder.glob("*.txt")):
        try:
            lines = path.read_text(encoding="utf-8-sig").splitlines()
        except UnicodeDecodeError as error:
            why = f"not UTF-8 text ({error.reason} at byte {error.start})"
            files.append((path.stem, f"text:{path.name}", None, why))
            continue
        files.append((path.stem, f"text:{path.name}", lines, None))
        size = builder.size(path.stem) or (math.nan, math.nan)
        for text in lines:
            fields = text.split()
            numbers = [_number(v) for v in fields[1:]]
            if len(fields) == 5 and None not in numbers:
                values.append(numbers)
                sizes.append(size)
    values = np.array(values, dtype=np.float64).reshape(-1, 4)
    sizes = np.array(sizes, dtype=np.float64).reshape(-1, 2)
    problem = geometry_problem(values, sizes, geometry, option)
    if problem:
        raise BoxInputError(f"{folder}: {problem}")
    if not (~np.isnan(sizes)).any():
        builder.warnings += [f"{folder}: {note}" for note in [corners_ambiguity(values, geometry, option)] if note]
    for image_id, source, lines, why in files:
        builder.image(image_id, source)
        if lines is None:
            builder.reject_file(image_id, why, source)
            continue
        for line, text in enumerate(lines, 1):
            fields = text.split()
            if not fields:
                continue
            numbers = [_number(v) for v in fields[1:]]
            if len(fields) != 5 or None in numbers:
                builder.box(image_id, fields[0], (None,) * 4, f"{source}:{line}",
                            f"expected 'class {layout}' (geometry {geometry}), got {text.strip()!r}")
                continue
            problem = "negative width or height" if geometry == "xywh" and min(numbers[2:]) < 0 else None
            builder.box(image_id, fields[0], raw_corners(numbers, geometry), f"{source}:{line}", problem)


# ---------------------------------------------------------------- from segmentations


def boxes_from_segmentations(source: str, root: Path | str, vocabulary: Iterable[str] | None = None,
                             images: ImageList | None = None, **options) -> BoxTruth:
    """The bounding box of every labelled region of the first annotator of each image.

    source and options go to regions.importers.import_segmentations; region
    labels are the concepts (checked against the vocabulary like any box).
    The importers' rejects become box rejects; with image sizes in
    `images`, a label map of another size is rejected whole.
    """
    from annobench.regions.importers import import_segmentations
    from annobench.regions.segmentation import Segmentation

    builder = _TruthBuilder(vocabulary, images, lists_images=True)
    sizes = {i: (h, w) for i, (w, h) in images.sizes.items()} if images is not None and images.sizes else None
    seen: set[str] = set()
    for item in import_segmentations(source, root, image_sizes=sizes, **options):
        where = f"{source}:{item.image_id}"
        if not isinstance(item, Segmentation):
            region = f" (region {item.region_id})" if item.region_id is not None else ""
            builder.reject_file(item.image_id, f"segmentation rejected{region}: {item.reason}",
                                f"{source}:{item.source or item.image_id}")
            continue
        if item.image_id in seen:
            continue  # another annotator's segmentation of an image already boxed
        seen.add(item.image_id)
        height, width = item.label_map.shape
        builder.image(item.image_id, where, (width, height))
        for region_id, corners in region_boxes(item.label_map).items():
            label = item.labels.get(region_id)
            if label is not None:
                builder.box(item.image_id, label, tuple(map(float, corners)), f"{where}:region {region_id}")
    return builder.result()


def region_boxes(label_map: np.ndarray) -> dict[int, tuple[int, int, int, int]]:
    """Region id -> (xmin, ymin, xmax, ymax) of its pixels (columns and rows from 0), ids ascending."""
    from annobench.regions.segmentation import renumber_regions

    dense = renumber_regions(label_map)
    spans = []
    for axis in (1, 0):  # columns give x, rows give y
        present = dense.coordinate_counts(axis) > 0  # (regions, size)
        first = present.argmax(axis=1)
        last = present.shape[1] - 1 - present[:, ::-1].argmax(axis=1)
        spans.append((first, last))
    (xmin, xmax), (ymin, ymax) = spans
    return {int(r): (int(a), int(b), int(c), int(d)) for r, a, b, c, d in zip(dense.ids, xmin, ymin, xmax, ymax)}

