"""COCO panoptic segmentations: RGB PNGs whose pixels hold segment ids
(id = R + 256 G + 256^2 B) and the JSON listing each PNG's segments with
their categories. Segments are numbered 1..n in the order the JSON lists
them. No COCO JSON (or several, without `annotations=`), or one that is empty, malformed or without
annotations, raises SegmentationSourceError.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from annobench.core.fsutil import read_user_json
from annobench.regions.importers.common import assemble, relative
from annobench.regions.segmentation import Imported, SegmentationReject, SegmentationSourceError


def import_coco_panoptic(
    root: Path, wanted: Callable[[str], bool], annotations: str | Path | None = None,
    png_folder: str | Path | None = None,
) -> Iterator[Imported]:
    """A COCO panoptic JSON (`annotations`: default the one *.json in root) whose
    annotations list `file_name` and `segments_info` (id, category_id), and its
    PNGs (default: the folder named like the JSON, else root). Regions are
    numbered 1..n in segments_info order; pixels of id 0 or of an id not in
    segments_info are unlabelled. The image id is the PNG's file stem."""
    json_path = Path(annotations) if annotations else _single(sorted(root.glob("*.json")), root)
    document = _panoptic_document(json_path)
    categories = {c["id"]: c["name"] for c in document.get("categories", [])}
    folder = Path(png_folder) if png_folder else (
        json_path.with_suffix("") if json_path.with_suffix("").is_dir() else root)
    for annotation in sorted(document["annotations"], key=lambda a: str(a.get("file_name", ""))):
        if wanted(Path(str(annotation.get("file_name", ""))).stem):
            yield from _coco_image(annotation, categories, folder, root)


def _single(paths: list[Path], root: Path) -> Path:
    if len(paths) != 1:
        raise SegmentationSourceError(f"{root}: expected one COCO panoptic JSON file, found {len(paths)}: "
                                      "name it with annotations=")
    return paths[0]


def _panoptic_document(path: Path) -> dict:
    """The JSON's annotations (objects, at least one) and categories (objects with an integer id and a
    name), the categories list optional (without it every segment is rejected for its category)."""
    document = read_user_json(path, SegmentationSourceError)
    expected = "a COCO panoptic JSON object with lists annotations (file_name, segments_info) and categories"
    if not isinstance(document, dict):
        raise SegmentationSourceError(f"{path}: expected {expected}, found a {type(document).__name__}")
    annotations, categories = document.get("annotations"), document.get("categories", [])
    if not isinstance(annotations, list) or not isinstance(categories, list):
        raise SegmentationSourceError(f"{path}: expected {expected}")
    if not annotations:
        raise SegmentationSourceError(f"{path}: no segmentations found; expected {expected}")
    if not all(isinstance(a, dict) for a in annotations) or not all(
            isinstance(c, dict) and isinstance(c.get("id"), int) and isinstance(c.get("name"), str)
            for c in categories):
        raise SegmentationSourceError(f"{path}: an annotation or category is not an object with its fields; "
                                      f"expected {expected}")
    return document


def _coco_image(annotation: dict, categories: dict[int, str], folder: Path, root: Path) -> Iterator[Imported]:
    file_name = str(annotation.get("file_name", ""))
    image_id, path = Path(file_name).stem, folder / file_name
    source = relative(path, root)
    try:
        with Image.open(path) as image:
            if image.mode != "RGB":
                raise ValueError(f"panoptic PNG must be RGB, not {image.mode}")
            rgb = np.asarray(image).astype(np.int64)
    except Exception as exc:
        yield SegmentationReject(image_id, None, f"unreadable panoptic PNG: {exc}", 1, source)
        return
    segment_ids = rgb[..., 0] + 256 * rgb[..., 1] + 65536 * rgb[..., 2]
    labels, rejects = {}, []
    # One lookup over the distinct segment ids instead of a pass per segment.
    distinct, inverse = np.unique(segment_ids, return_inverse=True)
    region_of = np.zeros(distinct.size, dtype=np.int32)
    for region_id, info in enumerate(annotation.get("segments_info") or [], start=1):
        info = info if isinstance(info, dict) else {}
        category, segment_id = info.get("category_id"), info.get("id")
        if not isinstance(segment_id, int) or segment_id <= 0:
            rejects.append(SegmentationReject(image_id, region_id, f"segment id {segment_id!r} is not positive",
                                              1, source))
            continue
        if not isinstance(category, int) or category not in categories:
            rejects.append(SegmentationReject(image_id, region_id,
                                              f"category {category!r} not in the categories", 1, source))
            continue
        position = np.searchsorted(distinct, segment_id)
        if position < distinct.size and distinct[position] == segment_id:
            region_of[position] = region_id
        labels[region_id] = categories[category]
    label_map = region_of[inverse.reshape(segment_ids.shape)]
    yield from assemble(image_id, label_map, labels, source, rejects=rejects, label_table="segments_info")
