"""Box runs read and written (ImageCLEF 2016 subtask 1, Gilbert et al. 2016; PASCAL VOC devkit
conventions, Everingham et al. 2010): the text, CSV and Parquet forms, each holding the same
boxes; reading also takes a folder of detections files, in the geometry the caller names.

A box run is a frame, one row per box in the run's order (which breaks
score ties): image_id, concept, score (NaN for every box when the run gives
no scores), xmin, ymin, xmax, ymax (inclusive pixels). Writing is
deterministic and read_box_run(write_box_run(run)) gives the same rows,
scores included (they are written as the shortest decimal that reads back
as the same float). The text form groups the boxes of an image and concept
on one line, at the place of the first: a run whose boxes of one image and
concept are not together comes back with them together.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from annobench.benchmark.boxes.checker import scan_box_run
from annobench.benchmark.boxes.lines import CSV_HEADER
from annobench.benchmark.boxes.model import (
    BOX_RUN_ARTEFACT,
    BOX_RUN_COLUMNS,
    BOX_RUN_SCHEMA,
    COORDINATES,
    geometry_text,
    score_text,
)
from annobench.benchmark.image_list import ImageList
from annobench.benchmark.problems import MAX_PROBLEMS, PathArg, RunFormatError
from annobench.core.fsutil import atomic_path
from annobench.core.tables import write_table

WRITTEN_FORMS = ("text", "csv", "parquet")


def read_box_run(path: PathArg, concepts: Sequence[str] | None = None, images: ImageList | None = None,
                 coco_truth: PathArg | None = None, geometry: str | None = None,
                 sizes: dict[str, tuple[int, int]] | None = None) -> pd.DataFrame:
    """Check the run (RunFormatError with every problem if any), then give its boxes in run order.
    geometry: how a folder of detections files is read (model.GEOMETRIES; required for one)."""
    scan = scan_box_run(path, concepts, images, MAX_PROBLEMS, coco_truth, geometry, sizes)
    if scan.problems:
        raise RunFormatError(scan.problems, path)
    return scan.frame


def write_box_run(run: pd.DataFrame, path: PathArg, form: str) -> None:
    """Write the run atomically in one of WRITTEN_FORMS; the same run always gives the same bytes."""
    if form not in WRITTEN_FORMS:
        raise ValueError(f"unknown box run form {form!r}; choose one of {', '.join(WRITTEN_FORMS)}")
    run = _checked(run)
    if form == "parquet":
        table = pa.Table.from_pandas(run, schema=BOX_RUN_SCHEMA, preserve_index=False)
        write_table(table, path, BOX_RUN_ARTEFACT, params={"scores": bool(run["score"].notna().any())})
        return
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as handle:
        handle.writelines(_csv_lines(run) if form == "csv" else _text_lines(run))


def _checked(run: pd.DataFrame) -> pd.DataFrame:
    """The run's columns, refused when a form cannot hold it as the checker would accept it."""
    missing = [c for c in BOX_RUN_COLUMNS if c not in run.columns]
    if missing:
        raise ValueError(f"the run lacks column(s) {', '.join(missing)}")
    run = run[list(BOX_RUN_COLUMNS)].reset_index(drop=True)
    for name in ("image_id", "concept"):
        values = run[name].astype(str)
        bad = values.eq("") | values.str.contains(r"[\s,]", regex=True)
        if bad.any():
            raise ValueError(f"row {int(np.argmax(bad.to_numpy())) + 1}: {name} {values[bad].iloc[0]!r} is empty "
                             "or holds whitespace or a comma")
    score = run["score"].to_numpy(dtype=np.float64)
    if np.isnan(score).any() and not np.isnan(score).all():
        raise ValueError("some boxes have a score and others none")
    if (~np.isnan(score) & ~((score >= 0) & (score <= 1))).any():
        raise ValueError("a score is outside [0, 1]")
    corners = run[list(COORDINATES)].to_numpy()
    if not np.issubdtype(corners.dtype, np.integer):
        raise ValueError("coordinates must be integers")
    if ((corners[:, 2] < corners[:, 0]) | (corners[:, 3] < corners[:, 1])).any():
        raise ValueError("a box has xmax < xmin or ymax < ymin")
    return run


def _box_tokens(run: pd.DataFrame) -> list[str]:
    corners = run[list(COORDINATES)].to_numpy(dtype=np.int64).tolist()
    geometry = [geometry_text(*box) for box in corners]
    score = run["score"].to_numpy(dtype=np.float64)
    if np.isnan(score).all():
        return geometry
    # A run holds few distinct scores (k for knn_transfer) and formatting one is slow: each
    # distinct bit pattern (so -0.0 apart from 0.0) is written once.
    patterns, which = np.unique(score.view(np.int64), return_inverse=True)
    texts = [score_text(s) for s in patterns.view(np.float64).tolist()]
    return [f"{texts[w]}:{g}" for w, g in zip(which.tolist(), geometry)]


def _text_lines(run: pd.DataFrame):
    tokens = _box_tokens(run)
    lines: dict[tuple[str, str], list[str]] = {}  # insertion order: the place of each pair's first box
    for image_id, concept, token in zip(run["image_id"].astype(str).tolist(), run["concept"].astype(str).tolist(), tokens):
        lines.setdefault((image_id, concept), []).append(token)
    for (image_id, concept), boxes in lines.items():
        yield f"{image_id} {concept} {' '.join(boxes)}\n"


def _csv_lines(run: pd.DataFrame):
    yield CSV_HEADER + "\n"
    score = run["score"].to_numpy(dtype=np.float64)
    scores = [""] * len(run) if np.isnan(score).all() else [score_text(s) for s in score.tolist()]
    corners = run[list(COORDINATES)].to_numpy(dtype=np.int64).tolist()
    for image_id, concept, s, box in zip(run["image_id"].astype(str).tolist(), run["concept"].astype(str).tolist(), scores,
                                     corners):
        yield f"{image_id},{concept},{s},{box[0]},{box[1]},{box[2]},{box[3]}\n"
