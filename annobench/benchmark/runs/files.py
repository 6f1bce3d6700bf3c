"""Reading and writing a run file in any of FORMS, by the module of its form.

read_run checks the run first, with the checker; write_run refuses a run the
chosen form cannot hold.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from annobench.benchmark.problems import MAX_PROBLEMS, PathArg, RunFormatError
from annobench.benchmark.runs.checker import scan_run
from annobench.benchmark.runs.concepts import ConceptLists, as_lists
from annobench.benchmark.runs.model import Run, check_ids_writable
from annobench.benchmark.runs.parquet_form import is_parquet, read_parquet, write_parquet
from annobench.benchmark.runs.text_form import read_text, write_text

FORMS = ("imageclef2012", "imageclef2013", "parquet")


# ---------------------------------------------------------------- reading


def read_run(path: PathArg, concepts: Sequence[str], concept_lists: ConceptLists | PathArg | None = None) -> Run:
    """Check the run (RunFormatError with every problem if any), then read it into matrices.

    A Parquet run (name ending in .parquet) carries its lists in its rows, so
    concept_lists is optional for it; given, the rows must agree with them.
    """
    lists = as_lists(concept_lists, concepts)
    problems, n_lines, _ = scan_run(path, concepts, lists, MAX_PROBLEMS)
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
