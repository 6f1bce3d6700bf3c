"""MSRC-v2 cleaned segmentations: one MATLAB file <image>_GT.mat per image.
`newseg` holds 1-based region ids (kept as they are); region k has class
`newlabels(k)` (1-based index into MSRC_V2_CLASSES) for k <= numel(newlabels);
the id one past the last label is void and becomes 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from annobench.regions.importers.common import assemble, map_problem, relative, require_files, unlabel
from annobench.regions.matfile import MatLimits, read_mat
from annobench.regions.segmentation import Imported, SegmentationReject

# MSRC-v2 classes in `newlabels` order (label k is MSRC_V2_CLASSES[k - 1]),
# as the data set's README lists them (0-based there).
MSRC_V2_CLASSES = (
    "building", "grass", "tree", "cow", "horse", "sheep", "sky", "mountain", "aeroplane", "water", "face",
    "car", "bicycle", "flower", "sign", "bird", "book", "chair", "road", "cat", "dog", "body", "boat",
)


def import_msrc_v2(root: Path, wanted: Callable[[str], bool],
                   mat_limits: MatLimits = MatLimits()) -> Iterator[Imported]:
    """root/newsegmentations_mats/<image_id>_GT.mat (or those files in root itself),
    each with `newseg` (1-based region map) and `newlabels` (1-based class per region)."""
    folder = root / "newsegmentations_mats" if (root / "newsegmentations_mats").is_dir() else root
    for path in require_files(sorted(folder.glob("*_GT.mat")), root,
                              "<image_id>_GT.mat files, in newsegmentations_mats/ or the folder itself"):
        image_id, source = path.name[: -len("_GT.mat")], relative(path, root)
        if not wanted(image_id):
            continue
        try:
            variables = read_mat(path, limits=mat_limits)
            newseg, newlabels = variables["newseg"], np.asarray(variables["newlabels"]).ravel()
        except Exception as exc:
            yield SegmentationReject(image_id, None, f"unreadable MSRC-v2 file: {exc}", 1, source)
            continue
        problem = map_problem(np.asarray(newseg))
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
            label_map = unlabel(label_map, [r.region_id for r in rejects])
        yield from assemble(image_id, label_map, labels, source, rejects=rejects, label_table="newlabels")
