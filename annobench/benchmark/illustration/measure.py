"""R@k of a text-illustration run (Gilbert et al. 2016, sections 2.5 and 3.5, Tables 5-6).

Each query has exactly one ground-truth image. R@k is the share of the
queries of the truth whose image is among the first k images the run ranks
for them, for k = 1, 5, 10, 25, 50, 75, 100; a query the run does not rank
counts as a miss. Random chance is k / M for M candidate images (capped at
1): a ranking drawn uniformly from the candidates holds the one right image
among its first k with that probability. The candidates are a given list,
or else every image of the truth.

The truth is a CSV `query_id,image_id` with one line per query. Everything
is computed on integer codes (no per-row Python), so 180,000 queries x 100
ranks take well under a second once the run is read.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from annobench.benchmark.illustration.runs import RankingRun
from annobench.benchmark.problems import MAX_PROBLEMS, Problems, quote
from annobench.core.errors import AnnobenchError
from annobench.core.fsutil import read_user_text, write_bytes_atomic

KS = (1, 5, 10, 25, 50, 75, 100)
TRUTH_HEADER = ("query_id", "image_id")


@dataclass(frozen=True)
class IllustrationTruth:
    query_ids: np.ndarray  # object, unique, file order
    image_ids: np.ndarray  # object, the ground-truth image of each query

    @classmethod
    def from_mapping(cls, truth: Mapping[str, str]) -> "IllustrationTruth":
        return cls(np.array(list(truth), dtype=object), np.array(list(truth.values()), dtype=object))

    def images(self) -> list[str]:
        """Every image of the truth, sorted: the default candidates."""
        return sorted(set(self.image_ids))


def read_truth(path: Path | str, limit: int = MAX_PROBLEMS) -> IllustrationTruth:
    """The truth CSV, checked: RunFormatError naming every bad line."""
    problems = Problems(limit)
    truth: dict[str, str] = {}
    first_line: dict[str, int] = {}
    reader = csv.reader(io.StringIO(_truth_text(Path(path), problems), newline=""))
    try:
        header = next(reader, None)
        if header != list(TRUTH_HEADER):
            problems.add(1, f"the header must be {','.join(TRUTH_HEADER)}, not {quote(','.join(header or []))}")
        for fields in reader:
            line = reader.line_num
            if len(fields) != 2 or not all(fields):
                problems.add(line, "a line is query_id,image_id, both non-empty")
            elif fields[0] in truth:
                problems.add(line, f"query {quote(fields[0])} repeats line {first_line[fields[0]]} "
                                   "(a query has exactly one ground-truth image)")
            else:
                truth[fields[0]], first_line[fields[0]] = fields[1], line
    except csv.Error as error:  # a field past the csv module's size limit: the rest cannot be split into lines
        problems.add(reader.line_num, f"not a CSV line ({error})")
    if not truth and not problems.total:
        problems.add(0, "no queries")
    problems.raise_if_any(path)
    return IllustrationTruth.from_mapping(truth)


class IllustrationInputError(AnnobenchError):
    """A list of query ids that cannot be used; the message names the file and line."""


def read_query_ids(path: Path | str) -> list[str]:
    """Query ids without their images (a participant's kit): one id a line, or a CSV whose header
    has a `query_id` column (the kit's queries file; other columns ignored)."""
    path = Path(path)
    text = read_user_text(path, IllustrationInputError)
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, [])
    column = header.index("query_id") if "query_id" in header else None
    rows = reader if column is not None else csv.reader(io.StringIO(text, newline=""))
    ids: dict[str, int] = {}
    try:
        for fields in rows:
            line = rows.line_num
            if not fields or not "".join(fields).strip():
                continue
            value = (fields[column] if column is not None and column < len(fields) else ",".join(fields)).strip()
            if not value:
                raise IllustrationInputError(f"{path}:{line}: empty query id")
            if value in ids:
                raise IllustrationInputError(f"{path}:{line}: query {quote(value)} repeats line {ids[value]}")
            ids[value] = line
    except csv.Error as error:
        raise IllustrationInputError(f"{path}:{rows.line_num}: not a CSV line ({error})") from None
    if not ids:
        raise IllustrationInputError(f"{path}: no query ids")
    return list(ids)


def _truth_text(path: Path, problems: Problems) -> str:
    """The file's text; not UTF-8 is a problem naming the line, raised at once (no line after it can be read)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        problems.add(data.count(b"\n", 0, error.start) + 1, f"not UTF-8 ({error.reason} at byte {error.start})")
        problems.raise_if_any(path)
        raise


def write_truth(truth: Mapping[str, str], path: Path | str) -> None:
    """Atomically: an interrupted write leaves no truncated truth."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(TRUTH_HEADER)
    writer.writerows(truth.items())
    write_bytes_atomic(path, buffer.getvalue().encode("utf-8"))


def truth_ranks(truth: IllustrationTruth, run: RankingRun) -> np.ndarray:
    """Per query of the truth, the rank the run gives its image (0: not ranked)."""
    query_row = pd.Index(truth.query_ids).get_indexer(run.query_ids)[run.query_codes]  # -1: not in the truth
    wanted = pd.Index(run.image_ids).get_indexer(truth.image_ids)  # the truth image's code in the run
    known = np.flatnonzero(query_row >= 0)
    hits = known[run.image_codes[known] == wanted[query_row[known]]]
    found = np.zeros(len(truth.query_ids), dtype=np.int64)
    found[query_row[hits]] = run.ranks[hits]  # a checked run ranks an image once per query
    return found


def recall_at_k(truth: IllustrationTruth, run: RankingRun, ks=KS) -> dict[str, float]:
    ranks = truth_ranks(truth, run)
    return {f"R@{k}": float(np.mean((ranks >= 1) & (ranks <= k))) for k in ks}


def chance(n_candidates: int, ks=KS) -> dict[str, float]:
    return {f"R@{k}": min(1.0, k / n_candidates) for k in ks}


def evaluation(truth: IllustrationTruth, run: RankingRun, n_candidates: int) -> dict:
    """The JSON of evaluate-illustration."""
    ranked = set(run.query_ids[np.unique(run.query_codes)])
    return {
        **recall_at_k(truth, run),
        "queries": len(truth.query_ids),
        "candidates": n_candidates,
        "chance": chance(n_candidates),
        "queries_not_in_run": int(sum(query not in ranked for query in truth.query_ids)),
    }
