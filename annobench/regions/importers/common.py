"""What the segmentation importers share: `assemble`, the checks of a label map
against its labels that every importer's output goes through (with
`map_problem` and `unlabel`), and the small readers of paths and numbers
several importers use.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import numpy as np

from annobench.regions.segmentation import (
    Imported,
    Segmentation,
    SegmentationReject,
    SegmentationSourceError,
    present_ids,
)


def assemble(
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
    problem = map_problem(label_map)
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
        label_map = unlabel(label_map, unlisted)
    if not kept:
        yield SegmentationReject(image_id, None, "no regions left", annotator, source)
        return
    yield Segmentation(image_id, label_map, kept, annotator)


def map_problem(label_map: np.ndarray) -> str | None:
    """Why a map is no label map of non-negative int32 ids, or None when it is one."""
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


def unlabel(label_map: np.ndarray, region_ids: Iterable[int]) -> np.ndarray:
    out = label_map.copy()
    out[np.isin(out, list(region_ids))] = 0
    return out


def relative(path: Path, root: Path) -> str:
    """path as a reject's `source`: relative to root when it is under root."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def require_files(files: list[Path], root: Path, expected: str) -> list[Path]:
    """The source's files; none is an error saying what was expected there, since an empty source is a
    wrong path or kind, not a dataset without segmentations."""
    if not files:
        raise SegmentationSourceError(f"{root}: no segmentations found; expected {expected}")
    return files
