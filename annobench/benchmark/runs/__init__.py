"""Runs (SPEC 8 "Run formats"): check, read and write what a benchmark participant submits.

A run gives every test image a confidence score in [0, 1] and a binary
decision for each concept it is evaluated on. Three forms hold the same content:

- ``imageclef2012`` (seed 004): one line per image, ``id s0 d0 s1 d1 ... s(N-1) d(N-1)``,
  single spaces, every concept of the vocabulary in vocabulary order;
- ``imageclef2013`` (the 2013-2016 campaigns): each image has its own concept
  list (a companion file of lines ``id c_a c_b ...``); run line i belongs to
  concept-list line i and holds pairs only for that list's concepts, in list order;
- ``parquet``: one row per (line, listed concept), for runs too big for text tools.

The checker refuses what the official one refuses (wrong line count, ids out of
order, wrong number of fields, a non-numeric score, a decision other than 0/1)
and more, naming the line and field of every problem. It streams the run: the
memory it needs grows with the concept lists (without lists, with the set of
image ids), not with the run's pairs.
"""

from __future__ import annotations

import sys
from typing import Sequence, TextIO

import numpy as np

from annobench.benchmark.runs.concepts import (
    CompactLists,
    ConceptLists,
    as_lists,
    load_lists,
    read_concepts,
    vocabulary_index,
)
from annobench.benchmark.runs.model import Run, check_ids_writable
from annobench.benchmark.runs.parquet_form import is_parquet, read_parquet, scan_parquet, write_parquet
from annobench.benchmark.runs.problems import MAX_PROBLEMS, PathArg, Problems, RunFormatError, RunProblem
from annobench.benchmark.runs.text_form import read_text, scan_text, write_text

FORMS = ("imageclef2012", "imageclef2013", "parquet")


# ---------------------------------------------------------------- public checking and reading


def _check(path: PathArg, concepts: Sequence[str], lists: CompactLists | None,
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
    problems, _, _ = _check(path, concepts, as_lists(concept_lists, concepts), max_problems)
    return problems


def read_run(path: PathArg, concepts: Sequence[str], concept_lists: ConceptLists | PathArg | None = None) -> Run:
    """Check the run (RunFormatError with every problem if any), then read it into matrices.

    A Parquet run (name ending in .parquet) carries its lists in its rows, so
    concept_lists is optional for it; given, the rows must agree with them.
    """
    lists = as_lists(concept_lists, concepts)
    problems, n_lines, _ = _check(path, concepts, lists, MAX_PROBLEMS)
    if problems:
        raise RunFormatError(problems, path)
    if is_parquet(path):
        return read_parquet(path, concepts, lists, n_lines)
    return read_text(path, concepts, lists, n_lines)


# ---------------------------------------------------------------- writing


def _check_writable(run: Run, form: str) -> None:
    if form not in FORMS:
        raise ValueError(f"unknown run form {form!r}; choose one of {', '.join(FORMS)}")
    check_ids_writable(run)
    mask = run.listed_mask()
    bad = mask & ~((run.scores >= 0) & (run.scores <= 1))  # NaN fails both tests
    if bad.any():
        row, column = np.argwhere(bad)[0]
        raise ValueError(f"image '{run.image_ids[row]}' (line {row + 1}), concept '{run.concepts[column]}': "
                         f"score {float(run.scores[row, column])!r} is not in [0, 1]")
    if form == "imageclef2012":
        if not mask.all():
            raise ValueError("the run has per-image concept lists: write it in the imageclef2013 form "
                             "(with write_concept_lists) or as parquet")
        if len(set(run.image_ids)) != len(run.image_ids):
            raise ValueError("the run repeats image ids, which the imageclef2012 form (no concept lists) cannot hold")


def write_run(run: Run, path: PathArg, form: str) -> None:
    """Write the run atomically in one of FORMS; the same run always gives the same bytes.

    imageclef2013 writes each line's pairs in vocabulary order, the order
    write_concept_lists gives the lists (a Run keeps which concepts are
    listed, not the order a list file had).
    """
    _check_writable(run, form)
    if form == "parquet":
        write_parquet(run, path)
        return
    write_text(run, path)


# ---------------------------------------------------------------- the check-run command


def check_run_main(concepts_path: PathArg, run_path: PathArg, lists_path: PathArg | None = None,
                   out: TextIO | None = None) -> int:
    """Body of `annobench check-run`: one line per problem and 2, or a one-line summary and 0."""
    out = out or sys.stdout  # looked up at call time, so a redirected stdout is used
    try:
        concepts = read_concepts(concepts_path)
        lists = load_lists(lists_path, concepts) if lists_path is not None else None
        problems, n_lines, n_pairs = _check(run_path, concepts, lists, MAX_PROBLEMS)
    except RunFormatError as error:
        for line in error.report_lines():
            print(line, file=out)
        return 2
    except OSError as error:
        print(f"{error.filename or run_path}: cannot read: {error.strerror or error}", file=out)
        return 2
    for problem in problems:
        print(f"{run_path}:{problem.line}: {problem.message}", file=out)
    if problems:
        return 2
    print(f"{run_path}: valid, {n_lines} lines, {n_pairs} pairs", file=out)
    return 0
