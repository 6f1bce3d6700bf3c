"""The content-selection run checker (subtask 3 of ImageCLEF 2016, Gilbert et al. 2016): every
problem of a selection run, by line, and `annobench check-selection-run`.

A run is a CSV `image_id,instance` with a header (further columns ignored), one row per selected
box instance; the problems name the line (the header is line 1). Given the test images' box
instances (the kit's instances CSV: the subtask's input), an image without instances there, or an
instance that is not one of its image's, is a problem. A row given twice counts once, as the
measure takes sets. Unlike selection.files.read_selection_run, which stops at the first fault and
reads against the gold descriptions, the checker reads against the input and goes on.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path
from typing import Mapping, TextIO

from annobench.benchmark.problems import MAX_PROBLEMS, PathArg, Problems, RunProblem, check_main, quote
from annobench.benchmark.selection.files import RUN_COLUMNS, read_instances_csv
from annobench.benchmark.selection.model import SelectionError


def scan_selection_run(path: PathArg, instances: Mapping[str, Mapping] | None = None,
                       max_problems: int = MAX_PROBLEMS) -> tuple[list[RunProblem], dict[str, frozenset]]:
    """(problems in line order, image_id -> the selected instances of the rows without problems)."""
    problems = Problems(max_problems)
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        problems.add(data.count(b"\n", 0, error.start) + 1,
                     f"not valid UTF-8 ({error.reason} at byte {error.start + 1} of the file)")
        return problems.result(), {}
    selected: dict[str, set] = {}
    rows = 0
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        names = [name.strip() for name in header or []]
        missing = [name for name in RUN_COLUMNS if name not in names]
        if missing:
            problems.add(1, f"the header lacks column(s) {', '.join(missing)} (expected {','.join(RUN_COLUMNS)})")
            return problems.result(), {}
        at = {name: names.index(name) for name in RUN_COLUMNS}
        for fields in reader:
            line = reader.line_num
            if not any(value.strip() for value in fields):
                continue
            if len(fields) != len(names):
                problems.add(line, f"{len(fields)} field(s), the header has {len(names)}")
                continue
            image_id, instance = (fields[at[name]].strip() for name in RUN_COLUMNS)
            if not image_id or not instance:
                problems.add(line, "empty image_id or instance")
                continue
            rows += 1
            if instances is not None and image_id not in instances:
                problems.add(line, f"image {quote(image_id)} is not a test image with box instances")
            elif instances is not None and instance not in instances[image_id]:
                problems.add(line, f"instance {quote(instance)} is not among image '{image_id}''s box instances")
            else:
                selected.setdefault(image_id, set()).add(instance)
    except csv.Error as error:
        problems.add(reader.line_num, f"not a CSV line ({error})")
    if not rows and not problems.total:
        problems.add(0, "empty run: no selected instances")
    return problems.result(), {image_id: frozenset(chosen) for image_id, chosen in sorted(selected.items())}


def check_selection_run_main(run_path: PathArg, instances_path: PathArg | None = None,
                             out: TextIO | None = None) -> int:
    """Body of `annobench check-selection-run`: one line per problem and 2, or a one-line summary and 0."""
    out = out or sys.stdout

    def scan() -> tuple[list[RunProblem], str]:
        instances = read_instances_csv(instances_path) if instances_path is not None else None
        problems, selected = scan_selection_run(run_path, instances)
        return problems, f"{sum(len(s) for s in selected.values())} instances of {len(selected)} images"

    return check_main(run_path, scan, out, input_errors=(SelectionError,))
