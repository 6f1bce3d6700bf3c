"""BSDS500 ground truth: groundTruth/<split>/<image>.mat, one segmentation per
annotator (4-9 per photo, each its own `annotator` number), no labels.
Region ids are the file's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from annobench.regions.importers.common import assemble, relative, require_files
from annobench.regions.matfile import MatLimits, read_mat
from annobench.regions.segmentation import Imported, SegmentationReject


def import_bsds500(root: Path, wanted: Callable[[str], bool], annotator: int | str = "all",
                   mat_limits: MatLimits = MatLimits()) -> Iterator[Imported]:
    """Every <image_id>.mat under root (groundTruth/{train,val,test}/), cell array
    groundTruth{k}.Segmentation per annotator k (1-based), no labels.
    annotator: "all", or the one k to take (an image with fewer is rejected).
    mat_limits: what one file may make the reader allocate (a file over them is rejected)."""
    if annotator != "all" and (not isinstance(annotator, int) or annotator < 1):
        raise ValueError(f"annotator must be 'all' or a positive integer, not {annotator!r}")
    seen: set[str] = set()
    for path in require_files(sorted(root.rglob("*.mat")), root, "<image_id>.mat files under groundTruth/"):
        image_id, source = path.stem, relative(path, root)
        if not wanted(image_id):
            continue
        if image_id in seen:
            yield SegmentationReject(image_id, None, "image id found again in another folder", None, source)
            continue
        seen.add(image_id)
        try:
            # One annotator asked for: the later cells are not even decompressed.
            ground_truth = read_mat(path, None if annotator == "all" else annotator, mat_limits)["groundTruth"]
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
            yield from assemble(image_id, np.asarray(truths[k - 1]), None, source, annotator=k)


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
