"""SAIAPR TC-12 segmentations: one MATLAB mask per region, a labels file and the
wlist.txt vocabulary. Masks: `segimg_t` is -1 outside the region and 0
inside. Region ids are the mask files' own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from annobench.regions.importers.common import assemble, int_or_none, relative, require_files
from annobench.regions.matfile import MatLimits, only_2d_array, read_mat
from annobench.regions.segmentation import Imported, SegmentationReject

MASK_NAME = re.compile(r"^(?P<image>.+)_(?P<region>\d+)\.mat$")


def import_saiapr(
    root: Path, wanted: Callable[[str], bool], labels_file: str | Path | None = None,
    vocabulary_file: str | Path | None = None, mat_limits: MatLimits = MatLimits(),
) -> Iterator[Imported]:
    """SAIAPR TC-12 as distributed: <dir>/segmentation_masks/<image>_<region>.mat
    (one binary mask each, the file's single 2-D variable, `segimg_t`), a labels
    file with `image region ... label_id` per line (default: every labels.txt
    under root, else every features.txt, whose last column is the label id),
    and wlist.txt mapping `label_id<TAB>word` (default: the first under root).
    Without any wlist.txt the label is the id itself, as text.

    Masks: -1 outside and 0 inside (SAIAPR's convention); a mask of only 0/1
    values is read as 1 inside. Regions are painted in id order; a pixel two
    masks claim stays with the lower id. mat_limits: what one mask file may make the
    reader allocate (a file over them is rejected).
    """
    masks = require_files(sorted(root.rglob("segmentation_masks/*.mat")) or sorted(root.glob("*.mat")), root,
                          "segmentation_masks/<image>_<region>.mat files")
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
                                 line_rejects.pop(image_id, []), mat_limits)
    for image_id in sorted(i for i in line_rejects if wanted(i)):
        yield from line_rejects[image_id]


def _saiapr_image(
    image_id: str, masks: dict[int, Path], label_ids: dict[int, int], words: dict[int, str] | None,
    root: Path, rejects: list[SegmentationReject], mat_limits: MatLimits,
) -> Iterator[Imported]:
    label_map: np.ndarray | None = None
    labels: dict[int, str | None] = {}
    first_source = relative(next(iter(masks.values())), root)
    for region_id in sorted(masks):
        source = relative(masks[region_id], root)
        try:
            inside = _saiapr_mask(masks[region_id], mat_limits)
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
    yield from assemble(image_id, label_map, labels, first_source, rejects=rejects, label_table="the labels file")


def _saiapr_mask(path: Path, mat_limits: MatLimits) -> np.ndarray:
    values = only_2d_array(read_mat(path, limits=mat_limits))
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
        if parts and int_or_none(parts[0]) is not None:
            words[int(parts[0])] = parts[1].strip() if len(parts) > 1 else ""
    return words


def _read_saiapr_labels(
    paths: list[Path], root: Path
) -> tuple[dict[str, dict[int, int]], dict[str, list[SegmentationReject]]]:
    labels: dict[str, dict[int, int]] = {}
    rejects: dict[str, list[SegmentationReject]] = {}
    for path in paths:
        source = relative(path, root)
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            fields = line.split()
            if not fields:
                continue
            image_id = fields[0]
            region_id = int_or_none(fields[1]) if len(fields) > 2 else None
            label_id = int_or_none(fields[-1]) if len(fields) > 2 else None
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
