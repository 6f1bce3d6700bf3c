"""Region-level data (SPEC 1): importers from real sources into the canonical form
(annobench.regions.segmentation).

Importers never raise on bad input: each yields `Segmentation`s and
`SegmentationReject`s (image_id, annotator, region_id or None for the whole
image, reason, source file). What is checked everywhere: the map is 2-D
with non-negative integer ids; a labelled region has pixels; a region in
the map has a label row (sources with labels); a label is in the source's
vocabulary; with `image_sizes`, the map has its image's size. A source that cannot be read at all (a
regions.csv without its header, no COCO JSON) raises ValueError: that is a
wrong path or option, not bad data.

Source specifics (each importer's docstring has the layout):
- MSRC-v2 cleaned: `newseg` holds 1-based region ids; region k has class
  `newlabels(k)` (1-based index into MSRC_V2_CLASSES) for k <= numel(newlabels);
  the id one past the last label is void and becomes 0.
- SAIAPR TC-12 masks: `segimg_t` is -1 outside the region and 0 inside.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from annobench.regions.matfile import read_mat, only_2d_array
from annobench.regions.segmentation import Imported, Segmentation, SegmentationReject, present_ids, read_label_map

# MSRC-v2 classes in `newlabels` order (label k is MSRC_V2_CLASSES[k - 1]),
# as the data set's README lists them (0-based there).
MSRC_V2_CLASSES = (
    "building", "grass", "tree", "cow", "horse", "sheep", "sky", "mountain", "aeroplane", "water", "face",
    "car", "bicycle", "flower", "sign", "bird", "book", "chair", "road", "cat", "dog", "body", "boat",
)

SOURCES = ("canonical", "saiapr", "msrc_v2", "bsds500", "coco_panoptic", "labelme")


# --- the one entry point ---------------------------------------------------------

def import_segmentations(
    source: str,
    root: Path | str,
    image_sizes: Mapping[str, tuple[int, int]] | None = None,
    vocabulary: Iterable[str] | None = None,
    wanted: Callable[[str], bool] | None = None,
    **options,
) -> Iterator[Imported]:
    """Segmentations and rejects of one source, in a stable order.

    image_sizes: image_id -> (height, width) of the dataset's images; when
    given, a map of another size, or of an image not in the dataset, is
    rejected. vocabulary: when given, regions whose label is not in it are
    rejected (the sources with label ids check their own vocabulary anyway).
    wanted: when given, only image ids it accepts are read at all (a shard's
    share of the source). options: passed to the source's importer.
    """
    importers = {
        "canonical": import_canonical, "saiapr": import_saiapr, "msrc_v2": import_msrc_v2,
        "bsds500": import_bsds500, "coco_panoptic": import_coco_panoptic, "labelme": import_labelme,
    }
    if source not in importers:
        raise ValueError(f"unknown segmentation source {source!r}; known: {', '.join(SOURCES)}")
    items = importers[source](Path(root), wanted=wanted or (lambda image_id: True), **options)
    if vocabulary is not None:
        items = _restrict_to_vocabulary(items, frozenset(vocabulary))
    if image_sizes is not None:
        items = _check_image_sizes(items, image_sizes)
    return items


def split_imported(items: Iterable[Imported]) -> tuple[list[Segmentation], list[SegmentationReject]]:
    segmentations, rejects = [], []
    for item in items:
        (segmentations if isinstance(item, Segmentation) else rejects).append(item)
    return segmentations, rejects


# --- checks shared by every source -----------------------------------------------

def _assemble(
    image_id: str,
    label_map: np.ndarray,
    labels: Mapping[int, str | None] | None,
    source: str,
    annotator: int = 1,
    rejects: Iterable[SegmentationReject] = (),
    label_table: str = "labels",
) -> Iterator[Imported]:
    """Check a map against its labels; yield the rejects, then what is left.

    labels None means the source has none: every region present gets None.
    """
    yield from rejects
    problem = _map_problem(label_map)
    if problem:
        yield SegmentationReject(image_id, None, problem, annotator, source)
        return
    label_map = label_map.astype(np.int32, order="C")  # row-major: every later pass reads it so
    present = set(present_ids(label_map).tolist())
    if labels is None:
        labels = dict.fromkeys(sorted(present))
    kept = {}
    for region_id in sorted(labels):
        if region_id in present:
            kept[region_id] = labels[region_id]
        else:
            yield SegmentationReject(image_id, region_id, "empty region: no pixels in the label map",
                                     annotator, source)
    unlisted = sorted(present - set(labels))
    for region_id in unlisted:
        yield SegmentationReject(image_id, region_id, f"region in the label map has no row in {label_table}",
                                 annotator, source)
    if unlisted:
        label_map = _unlabel(label_map, unlisted)
    if not kept:
        yield SegmentationReject(image_id, None, "no regions left", annotator, source)
        return
    yield Segmentation(image_id, label_map, kept, annotator)


def _map_problem(label_map: np.ndarray) -> str | None:
    if label_map.ndim != 2 or 0 in label_map.shape:
        return f"label map is not a 2-D image (shape {label_map.shape})"
    if label_map.dtype.kind == "f":
        if not np.all(np.isfinite(label_map)) or np.any(label_map != np.round(label_map)):
            return "label map has non-integer region ids"
    elif label_map.dtype.kind not in "iub":
        return f"label map has values of type {label_map.dtype}"
    if label_map.min() < 0:
        return "label map has negative region ids"
    if label_map.max() > np.iinfo(np.int32).max:
        return "label map has region ids beyond 2^31"
    return None


def _unlabel(label_map: np.ndarray, region_ids: Iterable[int]) -> np.ndarray:
    out = label_map.copy()
    out[np.isin(out, list(region_ids))] = 0
    return out


def _restrict_to_vocabulary(items: Iterable[Imported], vocabulary: frozenset[str]) -> Iterator[Imported]:
    for item in items:
        if not isinstance(item, Segmentation):
            yield item
            continue
        outside = [r for r, label in item.labels.items() if label is not None and label not in vocabulary]
        for region_id in outside:
            yield SegmentationReject(item.image_id, region_id, f"label {item.labels[region_id]!r} not in the vocabulary",
                                     item.annotator)
        if not outside:
            yield item
            continue
        labels = {r: label for r, label in item.labels.items() if r not in outside}
        if not labels:
            yield SegmentationReject(item.image_id, None, "no regions left", item.annotator)
            continue
        yield Segmentation(item.image_id, _unlabel(item.label_map, outside), labels, item.annotator)


def _check_image_sizes(items: Iterable[Imported], sizes: Mapping[str, tuple[int, int]]) -> Iterator[Imported]:
    for item in items:
        if isinstance(item, Segmentation):
            size = sizes.get(item.image_id)
            if size is None:
                item = SegmentationReject(item.image_id, None, "no image with this id in the dataset", item.annotator)
            elif tuple(size) != item.label_map.shape:
                height, width = item.label_map.shape
                item = SegmentationReject(
                    item.image_id, None,
                    f"label map {width}x{height} differs from its image {size[1]}x{size[0]}", item.annotator,
                )
        yield item


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


# --- canonical: <image_id>.png + regions.csv -------------------------------------

def import_canonical(root: Path, wanted: Callable[[str], bool], regions_csv: str = "regions.csv") -> Iterator[Imported]:
    """root/<image_id>.png label maps (8/16-bit) and root/regions.csv
    (`image_id,region_id,label`; an empty label means none)."""
    labels, rejects = _read_regions_csv(root / regions_csv)
    maps = {p.stem: p for p in sorted(root.glob("*.png"))}
    for image_id in sorted(i for i in set(maps) | set(labels) | set(rejects) if wanted(i)):
        source = _relative(maps[image_id], root) if image_id in maps else regions_csv
        if image_id not in maps:
            yield from rejects.get(image_id, [])
            yield SegmentationReject(image_id, None, f"no label map {image_id}.png for rows of {regions_csv}",
                                     1, regions_csv)
            continue
        try:
            label_map = read_label_map(maps[image_id])
        except Exception as exc:  # Pillow raises many types on broken files
            yield from rejects.get(image_id, [])
            yield SegmentationReject(image_id, None, f"unreadable label map: {exc}", 1, source)
            continue
        yield from _assemble(image_id, label_map, labels.get(image_id, {}), source,
                             rejects=rejects.get(image_id, []), label_table=regions_csv)


def _read_regions_csv(path: Path) -> tuple[dict[str, dict[int, str | None]], dict[str, list[SegmentationReject]]]:
    labels: dict[str, dict[int, str | None]] = {}
    rejects: dict[str, list[SegmentationReject]] = {}
    if not path.is_file():
        return labels, rejects
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        missing = {"image_id", "region_id", "label"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path} lacks the columns {sorted(missing)}")
        for line, row in enumerate(reader, start=2):
            image_id = (row["image_id"] or "").strip()
            region_id = _int_or_none((row["region_id"] or "").strip())
            label = (row["label"] or "").strip() or None
            problem = None
            if region_id is None or region_id <= 0:
                problem = f"{path.name} line {line}: region_id {row['region_id']!r} is not a positive integer"
            elif region_id in labels.get(image_id, {}) and labels[image_id][region_id] != label:
                problem = f"{path.name} line {line}: region listed twice with different labels"
            if problem:
                rejects.setdefault(image_id, []).append(SegmentationReject(image_id, region_id, problem, 1, path.name))
                if region_id is not None and region_id > 0:
                    labels.get(image_id, {}).pop(region_id, None)
                continue
            labels.setdefault(image_id, {})[region_id] = label
    return labels, rejects


# --- MSRC-v2 cleaned: newsegmentations_mats/<image>_GT.mat -----------------------

def import_msrc_v2(root: Path, wanted: Callable[[str], bool]) -> Iterator[Imported]:
    """root/newsegmentations_mats/<image_id>_GT.mat (or those files in root itself),
    each with `newseg` (1-based region map) and `newlabels` (1-based class per region)."""
    folder = root / "newsegmentations_mats" if (root / "newsegmentations_mats").is_dir() else root
    for path in sorted(folder.glob("*_GT.mat")):
        image_id, source = path.name[: -len("_GT.mat")], _relative(path, root)
        if not wanted(image_id):
            continue
        try:
            variables = read_mat(path)
            newseg, newlabels = variables["newseg"], np.asarray(variables["newlabels"]).ravel()
        except Exception as exc:
            yield SegmentationReject(image_id, None, f"unreadable MSRC-v2 file: {exc}", 1, source)
            continue
        problem = _map_problem(np.asarray(newseg))
        if problem:
            yield SegmentationReject(image_id, None, problem, 1, source)
            continue
        label_map = np.asarray(newseg).astype(np.int64)
        label_map[label_map == newlabels.size + 1] = 0  # the void region
        labels, rejects = {}, []
        for region_id, value in enumerate(newlabels, start=1):
            if np.isfinite(value) and value == int(value) and 1 <= value <= len(MSRC_V2_CLASSES):
                labels[region_id] = MSRC_V2_CLASSES[int(value) - 1]
            else:
                rejects.append(SegmentationReject(image_id, region_id, f"label {value:g} not in the MSRC-v2 classes",
                                                  1, source))
        if rejects:
            label_map = _unlabel(label_map, [r.region_id for r in rejects])
        yield from _assemble(image_id, label_map, labels, source, rejects=rejects, label_table="newlabels")


# --- BSDS500: groundTruth/<split>/<image>.mat ------------------------------------

def import_bsds500(root: Path, wanted: Callable[[str], bool], annotator: int | str = "all") -> Iterator[Imported]:
    """Every <image_id>.mat under root (groundTruth/{train,val,test}/), cell array
    groundTruth{k}.Segmentation per annotator k (1-based), no labels.
    annotator: "all", or the one k to take (an image with fewer is rejected)."""
    if annotator != "all" and (not isinstance(annotator, int) or annotator < 1):
        raise ValueError(f"annotator must be 'all' or a positive integer, not {annotator!r}")
    seen: set[str] = set()
    for path in sorted(root.rglob("*.mat")):
        image_id, source = path.stem, _relative(path, root)
        if not wanted(image_id):
            continue
        if image_id in seen:
            yield SegmentationReject(image_id, None, "image id found again in another folder", None, source)
            continue
        seen.add(image_id)
        try:
            # One annotator asked for: the later cells are not even decompressed.
            ground_truth = read_mat(path, first_cells=None if annotator == "all" else annotator)["groundTruth"]
            truths = [cell["Segmentation"] for cell in _bsds_cells(ground_truth)]
            annotators = np.asarray(ground_truth, dtype=object).size
        except Exception as exc:
            yield SegmentationReject(image_id, None, f"unreadable BSDS500 file: {exc}", None, source)
            continue
        chosen = range(1, annotators + 1) if annotator == "all" else [annotator]
        for k in chosen:
            if k > annotators:
                yield SegmentationReject(image_id, None, f"annotator {k} asked for, the file has {annotators}",
                                         k, source)
                continue
            yield from _assemble(image_id, np.asarray(truths[k - 1]), None, source, annotator=k)


def _bsds_cells(ground_truth: np.ndarray) -> list[dict]:
    """The struct of each cell of groundTruth that was read, in annotator order."""
    cells = []
    for cell in np.asarray(ground_truth, dtype=object).ravel(order="F"):
        if cell is None:
            break  # read_mat left the later cells unread
        struct = cell.ravel()[0] if isinstance(cell, np.ndarray) and cell.dtype == object else cell
        if not isinstance(struct, dict) or "Segmentation" not in struct:
            raise ValueError("groundTruth cell without a Segmentation field")
        cells.append(struct)
    return cells


# --- SAIAPR TC-12: one mask per region -------------------------------------------

MASK_NAME = re.compile(r"^(?P<image>.+)_(?P<region>\d+)\.mat$")


def import_saiapr(
    root: Path, wanted: Callable[[str], bool], labels_file: str | Path | None = None,
    vocabulary_file: str | Path | None = None,
) -> Iterator[Imported]:
    """SAIAPR TC-12 as distributed: <dir>/segmentation_masks/<image>_<region>.mat
    (one binary mask each, the file's single 2-D variable, `segimg_t`), a labels
    file with `image region ... label_id` per line (default: every labels.txt
    under root, else every features.txt, whose last column is the label id),
    and wlist.txt mapping `label_id<TAB>word` (default: the first under root).
    Without any wlist.txt the label is the id itself, as text.

    Masks: -1 outside and 0 inside (SAIAPR's convention); a mask of only 0/1
    values is read as 1 inside. Regions are painted in id order; a pixel two
    masks claim stays with the lower id.
    """
    masks = sorted(root.rglob("segmentation_masks/*.mat")) or sorted(root.glob("*.mat"))
    by_image: dict[str, dict[int, Path]] = {}
    for path in masks:
        match = MASK_NAME.match(path.name)
        if match and wanted(match["image"]):
            by_image.setdefault(match["image"], {})[int(match["region"])] = path
    words = _read_wlist(_default_file(root, vocabulary_file, ("wlist.txt",)))
    label_paths = [Path(labels_file)] if labels_file else (
        sorted(root.rglob("labels.txt")) or sorted(root.rglob("features.txt")))
    label_ids, line_rejects = _read_saiapr_labels(label_paths, root)
    for image_id in sorted(by_image, key=_natural_key):
        yield from _saiapr_image(image_id, by_image[image_id], label_ids.get(image_id, {}), words, root,
                                 line_rejects.pop(image_id, []))
    for image_id in sorted(i for i in line_rejects if wanted(i)):
        yield from line_rejects[image_id]


def _saiapr_image(
    image_id: str, masks: dict[int, Path], label_ids: dict[int, int], words: dict[int, str] | None,
    root: Path, rejects: list[SegmentationReject],
) -> Iterator[Imported]:
    label_map: np.ndarray | None = None
    labels: dict[int, str | None] = {}
    first_source = _relative(next(iter(masks.values())), root)
    for region_id in sorted(masks):
        source = _relative(masks[region_id], root)
        try:
            inside = _saiapr_mask(masks[region_id])
        except Exception as exc:
            rejects.append(SegmentationReject(image_id, region_id, f"unreadable mask: {exc}", 1, source))
            continue
        if label_map is None:
            label_map = np.zeros(inside.shape, dtype=np.int32)
        if inside.shape != label_map.shape:
            rejects.append(SegmentationReject(
                image_id, region_id,
                f"mask {inside.shape[1]}x{inside.shape[0]} differs from the image's other masks "
                f"{label_map.shape[1]}x{label_map.shape[0]}", 1, source))
            continue
        label, problem = _saiapr_label(label_ids.get(region_id), words)
        if problem:
            rejects.append(SegmentationReject(image_id, region_id, problem, 1, source))
            continue
        label_map[inside & (label_map == 0)] = region_id
        labels[region_id] = label
    if label_map is None:
        yield from rejects
        yield SegmentationReject(image_id, None, "no readable mask", 1, first_source)
        return
    yield from _assemble(image_id, label_map, labels, first_source, rejects=rejects, label_table="the labels file")


def _saiapr_mask(path: Path) -> np.ndarray:
    values = only_2d_array(read_mat(path))
    if values.dtype == bool:
        return values
    distinct = np.unique(values)
    if np.isin(distinct, (-1, 0)).all():
        return values == 0  # SAIAPR: -1 outside, 0 inside
    if np.isin(distinct, (0, 1)).all():
        return values == 1
    raise ValueError(f"mask values {distinct[:5].tolist()} are neither -1/0 nor 0/1")


def _saiapr_label(label_id: int | None, words: dict[int, str] | None) -> tuple[str | None, str | None]:
    """(label, None), or (None, why the region is rejected)."""
    if label_id is None:
        return None, "region has no row in the labels file"
    if words is None:
        return str(label_id), None
    if label_id not in words:
        return None, f"label {label_id} not in the vocabulary (wlist.txt)"
    return words[label_id], None


def _read_wlist(path: Path | None) -> dict[int, str] | None:
    if path is None:
        return None
    words = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        parts = line.strip().split(None, 1)
        if parts and _int_or_none(parts[0]) is not None:
            words[int(parts[0])] = parts[1].strip() if len(parts) > 1 else ""
    return words


def _read_saiapr_labels(
    paths: list[Path], root: Path
) -> tuple[dict[str, dict[int, int]], dict[str, list[SegmentationReject]]]:
    labels: dict[str, dict[int, int]] = {}
    rejects: dict[str, list[SegmentationReject]] = {}
    for path in paths:
        source = _relative(path, root)
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            fields = line.split()
            if not fields:
                continue
            image_id = fields[0]
            region_id = _int_or_none(fields[1]) if len(fields) > 2 else None
            label_id = _int_or_none(fields[-1]) if len(fields) > 2 else None
            if region_id is None or label_id is None:
                rejects.setdefault(image_id, []).append(SegmentationReject(
                    image_id, region_id, f"line {number} is not `image region ... label_id`", 1, source))
                continue
            labels.setdefault(image_id, {})[region_id] = label_id
    return labels, rejects


def _default_file(root: Path, given: str | Path | None, names: tuple[str, ...]) -> Path | None:
    if given:
        return Path(given)
    for name in names:
        found = sorted(root.rglob(name))
        if found:
            return found[0]
    return None


def _natural_key(text: str) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


# --- COCO panoptic: PNG (id = R + 256 G + 256^2 B) + JSON -------------------------

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
    document = json.loads(json_path.read_text(encoding="utf-8"))
    categories = {c["id"]: c["name"] for c in document.get("categories", [])}
    folder = Path(png_folder) if png_folder else (
        json_path.with_suffix("") if json_path.with_suffix("").is_dir() else root)
    for annotation in sorted(document.get("annotations", []), key=lambda a: str(a.get("file_name", ""))):
        if wanted(Path(str(annotation.get("file_name", ""))).stem):
            yield from _coco_image(annotation, categories, folder, root)


def _single(paths: list[Path], root: Path) -> Path:
    if len(paths) != 1:
        raise ValueError(f"expected one JSON file in {root}, found {len(paths)}: name it with annotations=")
    return paths[0]


def _coco_image(annotation: dict, categories: dict[int, str], folder: Path, root: Path) -> Iterator[Imported]:
    file_name = str(annotation.get("file_name", ""))
    image_id, path = Path(file_name).stem, folder / file_name
    source = _relative(path, root)
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
    yield from _assemble(image_id, label_map, labels, source, rejects=rejects, label_table="segments_info")


# --- LabelMe: one JSON of polygons per image -------------------------------------

# A LabelMe file states its image size; refuse to allocate absurd ones.
MAX_DRAWN_PIXELS = 1 << 28


def import_labelme(root: Path, wanted: Callable[[str], bool]) -> Iterator[Imported]:
    """<image_id>.json files (LabelMe) under root: imageHeight, imageWidth and
    shapes (label, points, shape_type polygon | rectangle | circle). Region k is
    the k-th shape; a later shape covers an earlier one where they overlap,
    as LabelMe's own label export does. Lines and points have no area and
    are rejected."""
    for path in sorted(root.rglob("*.json")):
        image_id, source = path.stem, _relative(path, root)
        if not wanted(image_id):
            continue
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
            height, width = int(document["imageHeight"]), int(document["imageWidth"])
            shapes = list(document.get("shapes") or [])
        except Exception as exc:
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
        yield from _assemble(image_id, label_map, labels, source, rejects=rejects, label_table="shapes")


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
