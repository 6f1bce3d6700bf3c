"""The run checker: check_run, and check_run_main behind `annobench check-run`.

The checker refuses what the official one refuses (wrong line count, ids out of
order, wrong number of fields, a non-numeric score, a decision other than 0/1)
and more, naming the line and field of every problem. It streams the run: the
memory it needs grows with the concept lists (without lists, with the set of
image ids), not with the run's pairs.
"""

from __future__ import annotations

import sys
from typing import Sequence, TextIO

from annobench.benchmark.image_list import ImageListError, read_image_list
from annobench.benchmark.problems import MAX_PROBLEMS, PathArg, Problems, RunProblem, check_main
from annobench.benchmark.runs.concepts import (
    CompactLists,
    ConceptLists,
    as_lists,
    image_order_lists,
    load_lists,
    read_concepts,
    vocabulary_index,
)
from annobench.benchmark.runs.parquet_form import is_parquet, scan_parquet
from annobench.benchmark.runs.text_form import scan_text


def scan_run(path: PathArg, concepts: Sequence[str], lists: CompactLists | None,
             max_problems: int) -> tuple[list[RunProblem], int, int]:
    """The problems, the number of lines and the number of pairs of a run."""
    vocabulary_index(concepts)
    problems = Problems(max_problems)
    scan = scan_parquet if is_parquet(path) else scan_text
    n_lines, n_pairs = scan(path, concepts, lists, problems)
    return problems.result(), n_lines, n_pairs


def check_run(
    path: PathArg,
    concepts: Sequence[str],
    concept_lists: ConceptLists | PathArg | None = None,
    max_problems: int = MAX_PROBLEMS,
) -> list[RunProblem]:
    """Every problem of the run (up to max_problems, then one saying how many more), in line order.

    Without concept lists every line must hold the whole vocabulary (the 2012
    form). concept_lists may also be the path of a list file.
    """
    problems, _, _ = scan_run(path, concepts, as_lists(concept_lists, concepts), max_problems)
    return problems


# ---------------------------------------------------------------- the check-run command


def check_run_main(concepts_path: PathArg, run_path: PathArg, lists_path: PathArg | None = None,
                   out: TextIO | None = None, images_path: PathArg | None = None) -> int:
    """Body of `annobench check-run`: one line per problem and 2, or a one-line summary and 0.

    images_path: the test images in run order, for a run of the 2012 form: its lines are then checked
    against them one for one, as the official checker did (without it, a run with two lines swapped or
    its last line missing has nothing to be checked against).
    """
    out = out or sys.stdout  # looked up at call time, so a redirected stdout is used
    if lists_path is not None and images_path is not None:
        print("annobench: give concept lists or test images, not both: concept lists name the images already",
              file=out)
        return 2

    def scan() -> tuple[list[RunProblem], str]:
        concepts = read_concepts(concepts_path)
        lists = load_lists(lists_path, concepts) if lists_path is not None else None
        if images_path is not None:
            lists = image_order_lists(list(read_image_list(images_path).ids), len(concepts))
        problems, n_lines, n_pairs = scan_run(run_path, concepts, lists, MAX_PROBLEMS)
        return problems, f"{n_lines} lines, {n_pairs} pairs"

    return check_main(run_path, scan, out, input_errors=(ImageListError,))
