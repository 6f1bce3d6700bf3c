"""A submitted run, checked and evaluated (rule submission, one job a run; merged in a small build).

The run is checked with its subtask's checker against that subtask's test inputs in the kit, as a
participant checks it with the kit's commands: the annotation checker against the test images'
concept lists, the box checker against the vocabulary and the test images with their sizes, the
caption checker against the test images, the selection checker against the test images' box
instances, the ranking checker against the kit's query ids and candidate images. A run with any
problem is rejected with every problem the checker lists (line and message) and is evaluated no
further. A run without problems is evaluated with every measure of its subtask against the
organisers' test truth (`truth/`), into the same evaluation JSON as the subtask's baselines, so the
leaderboards take it as they take them: its name is GROUP/RUN.

The job writes `work/submissions/GROUP/RUN.json` (the metadata, the status, the problems, the
evaluation and, for an annotation run, the statistics of the results' intervals) and
`work/submissions/GROUP/RUN.parquet` (the run as the browser reads it; no rows when rejected).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pyarrow as pa

from annobench.benchmark.campaign import kit as kit_files
from annobench.benchmark.json_form import json_bytes
from annobench.benchmark.problems import MAX_PROBLEMS, RunFormatError, RunProblem
from annobench.core.errors import AnnobenchError
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.jobs import Job
from annobench.core.provenance import raw_file
from annobench.core.tables import field, rows_to_table, write_table

SELECTION_RUN_SCHEMA = pa.schema([field("image_id", pa.string(), "a test image"),
                                  field("instance", pa.string(), "a box instance the run selects")])
RANKING_RUN_SCHEMA = pa.schema([field("query_id", pa.string(), "a query of the kit"),
                                field("rank", pa.int32(), "the rank, from 1"),
                                field("image_id", pa.string(), "the candidate image at that rank")])
SUBMITTED_RUN_ARTEFACT = "submitted_run"


class Checked:
    """A run as its checker left it: the problems, and what the evaluation needs when there are none."""

    def __init__(self, problems: list[RunProblem], form: str, run=None):
        self.problems, self.form, self.run = problems, form, run


# -- checking, by subtask ---------------------------------------------------------------

def check(subtask: str, path: Path, kit: Path, metadata: dict | None = None) -> Checked:
    """The run checked against the kit's test inputs of its subtask, with what its metadata says
    of its form (a box run's detections folder: its `geometry`)."""
    try:
        return CHECKERS[subtask](path, kit, metadata or {})
    except RunFormatError as error:  # a reader that raises its problems
        return Checked(error.problems, "")
    except (AnnobenchError, OSError, ValueError) as error:  # the file as a whole cannot be read
        return Checked([RunProblem(0, " ".join(str(error).split()))], "")


def _annotation(path: Path, kit: Path, metadata: dict) -> Checked:
    from annobench.benchmark.runs.checker import scan_run
    from annobench.benchmark.runs.concepts import load_lists, read_concepts
    from annobench.benchmark.runs.parquet_form import is_parquet, read_parquet
    from annobench.benchmark.runs.text_form import read_text

    concepts = read_concepts(kit / kit_files.CONCEPTS)
    lists = load_lists(kit / kit_files.TEST_FILES["annotation"]["lists"], concepts)
    problems, lines, _ = scan_run(path, concepts, lists, MAX_PROBLEMS)
    form = "parquet" if is_parquet(path) else "imageclef2013"
    if problems:
        return Checked(problems, form)
    reader = read_parquet if form == "parquet" else read_text
    return Checked([], form, reader(path, concepts, lists, lines))


def _boxes(path: Path, kit: Path, metadata: dict) -> Checked:
    from annobench.benchmark.boxes.checker import run_form, scan_box_run
    from annobench.benchmark.image_list import read_image_list
    from annobench.benchmark.runs.concepts import read_concepts

    concepts = read_concepts(kit / kit_files.CONCEPTS)
    images = read_image_list(kit / kit_files.TEST_FILES["boxes"]["images"])
    scan = scan_box_run(path, concepts, images, MAX_PROBLEMS, geometry=metadata.get("geometry"),
                        option="the run's metadata key geometry:")
    return Checked(scan.problems, run_form(path), None if scan.problems else scan.frame)


def _captions(path: Path, kit: Path, metadata: dict) -> Checked:
    from annobench.benchmark.captions.checker import scan_caption_run
    from annobench.benchmark.image_list import read_image_list

    images = read_image_list(kit / kit_files.TEST_FILES["captions"]["images"])
    problems, captions, form = scan_caption_run(path, images, MAX_PROBLEMS)
    return Checked(problems, form, None if problems else captions)


def _selection(path: Path, kit: Path, metadata: dict) -> Checked:
    from annobench.benchmark.selection.checker import scan_selection_run
    from annobench.benchmark.selection.files import read_instances_csv

    instances = read_instances_csv(kit / kit_files.TEST_FILES["selection"]["instances"])
    problems, selected = scan_selection_run(path, instances, MAX_PROBLEMS)
    return Checked(problems, "csv", None if problems else selected)


def _illustration(path: Path, kit: Path, metadata: dict) -> Checked:
    from annobench.benchmark.illustration.measure import read_query_ids
    from annobench.benchmark.illustration.runs import read_ranking_run
    from annobench.benchmark.image_list import read_image_list

    files = kit_files.TEST_FILES["illustration"]
    queries = set(read_query_ids(kit / files["query_ids"]))
    candidates = read_image_list(kit / files["candidates"]).ids
    return Checked([], "csv", read_ranking_run(path, queries, set(candidates)))


CHECKERS = {"annotation": _annotation, "boxes": _boxes, "captions": _captions, "selection": _selection,
            "illustration": _illustration}


# -- evaluating, by subtask -------------------------------------------------------------

def evaluate(subtask: str, name: str, checked: Checked, job: Job) -> tuple[dict, dict | None, Callable]:
    """(the evaluation JSON, the statistics of the intervals or None, a function writing the run as the
    browser reads it to a path)."""
    return EVALUATORS[subtask](name, checked.run, job)


def _annotation_evaluation(name: str, run, job: Job):
    from annobench.benchmark.annotation.stage import run_measures
    from annobench.benchmark.campaign.statistics import (
        annotation_statistics,
        read_subsets,
        subset_paths,
        test_truth,
        unseen_concepts,
    )
    from annobench.benchmark.runs.files import write_run
    from annobench.benchmark.settings import BenchmarkSettings

    truth_dir = Path(job.input("truth"))
    settings = BenchmarkSettings.from_config(job.config)
    truth = test_truth(str(truth_dir / kit_files.TRUTH_FILES["annotation"]["table"]), run.image_ids, run.concepts)
    evaluation = run_measures(run, truth, settings, job.input("overlap"), name)
    subsets = read_subsets(subset_paths(job.config), list(run.image_ids))
    unseen = unseen_concepts(truth_dir / kit_files.TRUTH_FILES["annotation"]["unseen"])
    statistics = annotation_statistics(run, truth, unseen, subsets, settings.evaluation["seed"])
    return evaluation, statistics, lambda path: write_run(run, path, "parquet")


def _box_evaluation(name: str, frame, job: Job):
    import pandas as pd

    from annobench.benchmark.boxes.forms import write_box_run
    from annobench.benchmark.boxes.stage import evaluate_box_run
    from annobench.benchmark.image_list import read_image_list

    truth = pd.read_parquet(Path(job.input("truth")) / kit_files.TRUTH_FILES["boxes"]["table"])
    test_ids = list(read_image_list(Path(job.input("kit")) / kit_files.TEST_FILES["boxes"]["images"]).ids)
    evaluation = evaluate_box_run(name, truth, frame, test_ids)
    return evaluation, None, lambda path: write_box_run(frame, path, "parquet")


def _caption_evaluation(name: str, captions: dict, job: Job):
    from annobench.benchmark.captions.files import CaptionRun
    from annobench.benchmark.captions.measure import score_runs
    from annobench.benchmark.captions.stage import CAPTION_SCORES_SCHEMA, evaluation_settings, references_from_table

    method = job.config["benchmark"]["captions"]["tokenize"]
    references = references_from_table(str(Path(job.input("truth")) / kit_files.TRUTH_FILES["captions"]["table"]))
    run = CaptionRun({i: c for i, c in captions.items() if i in references.images}, name, "table")
    result, per_image = score_runs(references, {name: run}, method)[name]
    evaluation = {**result, "run": name, "settings": evaluation_settings(method), "references": references.summary()}
    rows = [{"run": name, "image_id": image_id, "caption": run.captions.get(image_id), "meteor": score}
            for image_id, score in per_image.items()]
    return evaluation, None, _table_writer(rows_to_table(rows, CAPTION_SCORES_SCHEMA), name)


def _selection_evaluation(name: str, selected: dict, job: Job):
    from annobench.benchmark.selection.files import read_selection_truth
    from annobench.benchmark.selection.measure import run_scores, summarise

    files = kit_files.TRUTH_FILES["selection"]
    truth_dir = Path(job.input("truth"))
    truth = read_selection_truth(truth_dir / files["descriptions"], truth_dir / files["instances"])
    chosen = {image_id: instances for image_id, instances in selected.items() if image_id in truth.images}
    evaluation = {"run": name, **summarise(run_scores(truth, chosen)), "truth": truth.summary(), "settings": {}}
    rows = [{"image_id": i, "instance": instance} for i in sorted(selected) for instance in sorted(selected[i])]
    return evaluation, None, _table_writer(rows_to_table(rows, SELECTION_RUN_SCHEMA), name)


def _illustration_evaluation(name: str, run, job: Job):
    from annobench.benchmark.illustration.measure import evaluation, read_truth
    from annobench.benchmark.image_list import read_image_list

    truth = read_truth(Path(job.input("truth")) / kit_files.TRUTH_FILES["illustration"]["truth"])
    candidates = read_image_list(Path(job.input("kit")) / kit_files.TEST_FILES["illustration"]["candidates"]).ids
    result = {**evaluation(truth, run, len(candidates)), "run": name}
    table = pa.table({"query_id": run.query_ids[run.query_codes], "rank": run.ranks,
                      "image_id": run.image_ids[run.image_codes]}, schema=RANKING_RUN_SCHEMA)
    return result, None, _table_writer(table.sort_by([("query_id", "ascending"), ("rank", "ascending")]), name)


EVALUATORS = {"annotation": _annotation_evaluation, "boxes": _box_evaluation, "captions": _caption_evaluation,
              "selection": _selection_evaluation, "illustration": _illustration_evaluation}


def _table_writer(table: pa.Table, name: str) -> Callable:
    return lambda path: write_table(table, path, SUBMITTED_RUN_ARTEFACT, params={"run": name})


def empty_run_table(subtask: str) -> pa.Table:
    from annobench.benchmark.boxes.model import BOX_RUN_SCHEMA
    from annobench.benchmark.captions.stage import CAPTION_SCORES_SCHEMA
    from annobench.benchmark.runs.parquet_form import RUN_SCHEMA

    schemas = {"annotation": RUN_SCHEMA, "boxes": BOX_RUN_SCHEMA, "captions": CAPTION_SCORES_SCHEMA,
               "selection": SELECTION_RUN_SCHEMA, "illustration": RANKING_RUN_SCHEMA}
    return schemas[subtask].empty_table()


# -- the job ---------------------------------------------------------------------------

def submission_result(spec: dict, run_path: Path, job: Job) -> tuple[dict, Callable]:
    """The run's JSON (metadata, status, problems, evaluation) and its table for the browser."""
    metadata = spec["metadata"]
    subtask, name = metadata["subtask"], f"{spec['group']}/{spec['run']}"
    checked = check(subtask, run_path, Path(job.input("kit")), metadata)
    result = {**metadata, "name": name, "file": run_path.name, "form": checked.form,
              # A folder run's problem names its file first, as the checkers print it.
              "problems": [{"line": p.line, "message": f"{p.file}: {p.message}" if p.file else p.message}
                           for p in checked.problems],
              "status": "rejected" if checked.problems else "accepted", "evaluation": None, "statistics": None}
    if checked.problems:
        job.log(f"{name}: rejected, {len(checked.problems)} problem(s); first: line {checked.problems[0].line}: "
                f"{checked.problems[0].message}")
        return result, _table_writer(empty_run_table(subtask), name)
    evaluation, statistics, writer = evaluate(subtask, name, checked, job)
    result.update(evaluation=evaluation, statistics=statistics)
    job.log(f"{name}: accepted ({subtask}, {checked.form}), evaluated")
    return result, writer


def submission_job(job: Job) -> list[dict]:
    """Rule submission: one submitted run (wildcards group and run) checked and, if it passes,
    evaluated. Returns the run's file(s) and metadata as raw inputs."""
    spec = job.params["submission"]
    run_path = Path(job.input("run"))
    result, write_run_table = submission_result(spec, run_path, job)
    write_run_table(job.output("run_table"))
    write_bytes_atomic(job.output("result"), json_bytes(result))
    key = f"{spec['group']}/{run_path.name}"
    files = sorted(p for p in run_path.rglob("*") if p.is_file()) if run_path.is_dir() else [run_path]
    raw = [raw_file(p, f"{key}/{p.relative_to(run_path).as_posix()}" if run_path.is_dir() else key,
                    role="submission") for p in files]
    metadata = Path(job.input("metadata"))
    return raw + [raw_file(metadata, f"{spec['group']}/{metadata.name}", role="submission_metadata")]
