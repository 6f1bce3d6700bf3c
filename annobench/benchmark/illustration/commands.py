"""The text-illustration commands: `illustration`, `evaluate-illustration`, `check-illustration-run`.

Each body returns the exit status: 0 done, 2 bad input (one line on stderr,
or a run's problems one per line). Their parsers are in `arguments`.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import TextIO

import pandas as pd

from annobench.benchmark.illustration.baselines import DEFAULT_SEED, BaselineInputError
from annobench.benchmark.illustration.measure import (
    IllustrationInputError,
    IllustrationTruth,
    evaluation,
    read_query_ids,
    read_truth,
    write_truth,
)
from annobench.benchmark.illustration.queries import QUERIES_TABLE, make_queries, write_queries
from annobench.benchmark.illustration.runs import RankingRun, read_ranking_run
from annobench.benchmark.illustration.stage import baseline_run, write_evaluated_run
from annobench.benchmark.image_list import ImageListError, read_image_list
from annobench.benchmark.json_form import json_bytes
from annobench.benchmark.problems import RunFormatError
from annobench.core.fsutil import write_bytes_atomic
from annobench.sources.inventory import InventoryError
from annobench.sources.pages import PageLimits
from annobench.text.features import TextParams
from annobench.text.page_map import derive_mapping
from annobench.text.stage import MappingRow, extract_text, read_mapping

SHOWN_PROBLEMS = 20


def _report(error: RunFormatError, err: TextIO, shown: int | None = SHOWN_PROBLEMS) -> int:
    lines = error.report_lines()
    for line in lines[:shown]:
        print(line, file=err)
    if shown is not None and len(lines) > shown:
        print(f"{error.path}: {len(lines) - shown} more problem(s); 'annobench check-illustration-run' lists them",
              file=err)
    return 2


def _candidates(path: str | None, truth: IllustrationTruth) -> list[str]:
    """The given candidate list (which must hold every truth image), or the truth's images."""
    if path is None:
        return truth.images()
    images = list(read_image_list(path).ids)
    missing = sorted(set(truth.image_ids) - set(images))
    if missing:
        raise ImageListError(f"{path}: {len(missing)} ground-truth image(s) are not candidates, e.g. "
                             f"{', '.join(missing[:5])}")
    return images


def evaluate_illustration_main(truth_path: str, run_path: str, json_path: str, candidates_path: str | None = None,
                               out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        truth = read_truth(truth_path)
        candidates = _candidates(candidates_path, truth)
        run = read_ranking_run(run_path, set(truth.query_ids), set(candidates))
    except RunFormatError as error:
        return _report(error, err)
    except (ImageListError, UnicodeDecodeError) as error:
        print(f"annobench: {error}", file=err)
        return 2
    result = {**evaluation(truth, run, len(candidates)), "run": str(run_path)}
    write_bytes_atomic(json_path, json_bytes(result))
    print(_summary(result) + f" -> {json_path}", file=out)
    return 0


def _summary(result: dict) -> str:
    shown = ", ".join(f"R@{k} {result[f'R@{k}'] * 100:.2f}%" for k in (1, 10, 100))
    return (f"{result['run']}: {result['queries']} queries, {result['candidates']} candidates: {shown} "
            f"(chance R@10 {result['chance']['R@10'] * 100:.2f}%)")


def check_illustration_run_main(run_path: str, truth_path: str | None = None, candidates_path: str | None = None,
                                out: TextIO | None = None, err: TextIO | None = None,
                                queries_path: str | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    if truth_path and queries_path:
        print("annobench: give the truth or the query ids, not both: the truth names its queries", file=err)
        return 2
    try:
        truth = read_truth(truth_path) if truth_path else None
        candidates = _candidates(candidates_path, truth) if truth is not None else (
            list(read_image_list(candidates_path).ids) if candidates_path else None)
        queries = set(truth.query_ids) if truth is not None else (
            set(read_query_ids(queries_path)) if queries_path else None)
        run = read_ranking_run(run_path, queries, set(candidates) if candidates is not None else None)
    except RunFormatError as error:
        return _report(error, err, shown=None)
    except (ImageListError, UnicodeDecodeError, IllustrationInputError) as error:
        print(f"annobench: {error}", file=err)
        return 2
    print(f"{run_path}: OK, {len(run)} lines, {len(run.query_ids)} queries, {len(run.image_ids)} images", file=out)
    return 0


def image_terms_from_pages(mapping: list[MappingRow], pages_dir: Path, params: TextParams,
                           limits: PageLimits) -> pd.DataFrame:
    """Near-image text terms (Villegas and Paredes 2014, equation 1) of the mapping's images,
    computed from their pages."""
    result = extract_text(mapping, pages_dir, params, limits, log=lambda message: None)
    rows = result.tables["text_terms"]
    return pd.DataFrame(rows, columns=["image_id", "term", "score", "rank"])


def illustration_main(pages: str, out_dir: str, mapping_path: str | None = None, text_terms: str | None = None,
                      seed: int = DEFAULT_SEED, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Queries, truth, candidates, the random and tf-idf runs and their evaluations, from saved pages."""
    out, err = out or sys.stdout, err or sys.stderr
    pages_dir, out_path = Path(pages), Path(out_dir)
    if not pages_dir.is_dir():
        print(f"annobench: no such folder: {pages}", file=err)
        return 2
    try:
        mapping = read_mapping(mapping_path) if mapping_path else [
            MappingRow(*row) for row in derive_mapping(pages_dir).mapping]
        terms = pd.read_parquet(text_terms, columns=["image_id", "term", "score"]) if text_terms else None
    except (InventoryError, ValueError) as error:
        print(f"annobench: {error}", file=err)
        return 2
    limits, params = PageLimits(), TextParams()
    queries = make_queries([(r.image_id, r.page_id, r.img_src) for r in mapping], pages_dir, limits)
    if not queries.queries:
        print(f"annobench: no query could be made from {pages} ({len(queries.rejects)} page/image pairs rejected)",
              file=err)
        return 2
    truth = queries.truth()
    candidates = sorted(set(truth.values()))
    if terms is None:
        terms = image_terms_from_pages([r for r in mapping if r.image_id in truth.values()], pages_dir, params, limits)
    try:
        runs = {name: baseline_run(name, queries, candidates, terms, seed, params) for name in ("random", "tfidf")}
    except BaselineInputError as error:
        print(f"annobench: {error}", file=err)
        return 2
    _write_inputs(out_path, queries, truth, candidates, mapping_path, pages_dir, seed)
    for name, run in runs.items():
        _write_run(out_path, name, run, IllustrationTruth.from_mapping(truth), len(candidates), out)
    print(f"{len(queries.queries)} queries ({len(queries.rejects)} page/image pairs rejected) -> "
          f"{out_path / QUERIES_TABLE}", file=out)
    return 0


def _write_inputs(out_path: Path, queries, truth: dict, candidates: list[str], mapping_path: str | None,
                  pages_dir: Path, seed: int) -> None:
    params = {"pages": str(pages_dir.resolve()), "mapping": mapping_path, "extraction": "bs4 get_text, lxml"}
    write_queries(queries, out_path, params)
    write_truth(truth, out_path / "truth.csv")
    _write_csv(out_path / "candidates.csv", ["image_id"], [[image] for image in candidates])
    _write_csv(out_path / "query_rejects.csv", ["page_id", "image_id", "reason"], queries.rejects)


def _write_run(out_path: Path, name: str, run: RankingRun, truth: IllustrationTruth, n_candidates: int,
               out: TextIO) -> None:
    (out_path / "runs").mkdir(parents=True, exist_ok=True)
    (out_path / "evaluations").mkdir(parents=True, exist_ok=True)
    result = write_evaluated_run(run, truth, n_candidates, name, out_path / "runs" / f"{name}.csv",
                                 out_path / "evaluations" / f"{name}.json")
    print(_summary(result), file=out)


def _write_csv(path: Path, header: list[str], rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
