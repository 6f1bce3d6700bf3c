"""The round's results (rule campaign_results): every run of every subtask, the build's baselines
and the accepted submissions, in the overviews' tables, with the submissions and their problems.

- Image annotation, as Table 2 and Figures 2-3 of Villegas and Paredes 2014 (section 3.3): each
  run on the whole test set and on each subset of `benchmark.campaign.subsets`, MAP-samples,
  MF1-samples, MF1-concepts, and MF1-concepts on the unseen concepts (whole test set), each with
  its 95 % interval (campaign.intervals). Runs are ordered by their average rank over the four
  measures on the whole test set (a measure without a value for any run, such as the unseen one
  when every test concept was seen, is left out), ties by the mean of the same measures, then by
  name. As in Table 2 the baselines come first and the submissions after them, each ranked among
  its own kind.
- Localisation, Tables 1-2 of Gilbert et al. 2016 (section 3.2): MAP at IoU 0 and 0.5 (intervals
  over the concepts' APs), and the best-localised concepts: each concept's AP averaged over the
  box runs at 0 and 0.5, with the share of test images that have it.
- Captions, Table 3: Meteor mean ± std (interval over the images), median, min, max, with the
  human upper bound.
- Content selection, Table 4: mean F, P and R ± std (intervals over the images), with the human
  upper bound and the random baseline.
- Text illustration, Tables 5-6: R@k, k = 1 ... 100, with random chance; a query is found within
  k or not, so the interval is Wilson's own.

Bounds (the human upper bounds, random chance) come first in their tables and are not ranked.
Parquet: `results` (one row per run, subset and measure), `results_order` (each run's place),
`results_concepts` (Table 2 of 2016), `submissions`, `submission_problems`; Markdown:
`reports/results.md`; one SVG figure per annotation measure.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from annobench.benchmark.campaign.figures import interval_figure
from annobench.benchmark.campaign.intervals import sample_statistics, wilson_interval
from annobench.benchmark.campaign.statistics import ALL, MEASURES, ORDER_MEASURES, UNSEEN
from annobench.benchmark.campaign.submissions import SUBTASKS
from annobench.benchmark.leaderboard import markdown_table
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.jobs import Job
from annobench.core.tables import field, rows_to_table, write_table

SUBMISSIONS_SCHEMA = pa.schema([
    field("group", pa.string(), "the group that submitted the run (its folder)"),
    field("run", pa.string(), "the run's name (its file's name without the suffix)"),
    field("name", pa.string(), "GROUP/RUN: the run's name on the leaderboards"),
    field("subtask", pa.string(), "annotation, boxes, captions, selection or illustration (null: not given)",
          nullable=True),
    field("modality", pa.string(), "visual, textual or both, as the group declared (null: not given)", nullable=True),
    field("external_data", pa.bool_(), "whether the run used data from outside the kit (null: not given)",
          nullable=True),
    field("external_data_description", pa.string(), "what outside data, as the group described it"),
    field("file", pa.string(), "the run's file (or folder) in the group's folder"),
    field("status", pa.string(), "accepted (checked, evaluated, on the leaderboard) or rejected"),
    field("reasons", pa.int64(), "rows of submission_problems for the run (0 when accepted)"),
])
PROBLEMS_SCHEMA = pa.schema([
    field("group", pa.string(), "the group"),
    field("run", pa.string(), "the run"),
    field("line", pa.int32(), "the run file's line the problem is on, from 1; 0: the run as a whole or its metadata"),
    field("message", pa.string(), "what is wrong, as the checker says it"),
])
RESULTS_SCHEMA = pa.schema([
    field("subtask", pa.string(), "annotation, boxes, captions, selection or illustration"),
    field("position", pa.int32(), "the run's row in its subtask's table, from 1 (bounds first, then baselines, then "
                                  "submissions)"),
    field("run", pa.string(), "the run: a baseline's name, GROUP/RUN, or a bound"),
    field("group", pa.string(), "the submitting group; null for the build's baselines and bounds", nullable=True),
    field("origin", pa.string(), "baseline, submission, or bound (human upper bound, random chance)"),
    field("subset", pa.string(), "the test images measured: all, or a subset of benchmark.campaign.subsets"),
    field("measure", pa.string(), "the measure (docs/measures.md, The round's results)"),
    field("value", pa.float64(), "the measure: the mean of the individual values (null: no value)", nullable=True),
    field("std", pa.float64(), "population standard deviation of the individual values (null: not a mean)",
          nullable=True),
    field("samples", pa.int64(), "individual values averaged: images, concepts or queries (null: not a mean)",
          nullable=True),
    field("ci_low", pa.float64(), "lower end of the 95 % interval (null: none)", nullable=True),
    field("ci_high", pa.float64(), "upper end of the 95 % interval (null: none)", nullable=True),
])
ORDER_SCHEMA = pa.schema([
    field("subtask", pa.string(), "the subtask"),
    field("position", pa.int32(), "the run's row in its subtask's table, from 1"),
    field("run", pa.string(), "the run"),
    field("group", pa.string(), "the submitting group; null for the build's runs", nullable=True),
    field("origin", pa.string(), "baseline, submission or bound"),
    field("average_rank", pa.float64(), "mean over the ordering measures of the run's rank among the runs of its "
                                        "origin (1 = best, ties share their ranks); null for bounds", nullable=True),
    field("mean", pa.float64(), "mean of the ordering measures: breaks ties of average_rank", nullable=True),
])
CONCEPTS_SCHEMA = pa.schema([
    field("position", pa.int32(), "the concept's row, best mean AP at IoU 0.5 first"),
    field("concept", pa.string(), "a concept with a box in the test truth"),
    field("AP@0", pa.float64(), "its AP at IoU 0, averaged over the box runs"),
    field("AP@0.5", pa.float64(), "its AP at IoU 0.5, averaged over the box runs"),
    field("occurrence", pa.float64(), "share of the test images with a box of it"),
    field("runs", pa.int64(), "box runs averaged"),
])

ORDERING = {
    "annotation": ORDER_MEASURES,
    "boxes": ("MAP@0", "MAP@0.5"),
    "captions": ("Meteor",),
    "selection": ("F",),
    "illustration": ("R@1", "R@5", "R@10", "R@25", "R@50", "R@75", "R@100"),
}
KS = (1, 5, 10, 25, 50, 75, 100)
ORIGINS = ("bound", "baseline", "submission")
FIGURES = {"MAP-samples": "map_samples", "MF1-samples": "mf1_samples", "MF1-concepts": "mf1_concepts",
           UNSEEN: "mf1_concepts_unseen"}


def figure_name(measure: str) -> str:
    return f"reports/results_{FIGURES[measure]}.svg"


# -- reading ------------------------------------------------------------------------------

def read_json(path: str | Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def accepted_evaluations(paths, subtask: str) -> list[dict]:
    """The evaluations of the accepted submitted runs of a subtask (their `run` is GROUP/RUN), in name
    order: what the leaderboards add to the baselines'."""
    results = [read_json(p) for p in paths]
    return [r["evaluation"] for r in sorted(results, key=lambda r: r["name"])
            if r["status"] == "accepted" and r["subtask"] == subtask]


# -- rows of the results table, by subtask -------------------------------------------------

def _row(subtask: str, run: str, group: str | None, origin: str, measure: str, value, std=None, samples=None,
         subset: str = ALL) -> dict:
    value = None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
    interval = wilson_interval(value, std, samples) if value is not None and std is not None and samples else None
    return {"subtask": subtask, "run": run, "group": group, "origin": origin, "subset": subset, "measure": measure,
            "value": value, "std": None if std is None or value is None else float(std),
            "samples": None if samples is None else int(samples),
            "ci_low": interval[0] if interval else None, "ci_high": interval[1] if interval else None}


def _stat_row(subtask, run, group, origin, measure, stats: dict, subset=ALL) -> dict:
    return _row(subtask, run, group, origin, measure, stats["value"], stats["std"], stats["samples"], subset)


def annotation_rows(run: str, group, origin: str, statistics: dict, subsets: list[str]) -> list[dict]:
    rows = []
    for subset in [ALL, *subsets]:
        measures = [*MEASURES, UNSEEN] if subset == ALL else list(MEASURES)
        rows += [_stat_row("annotation", run, group, origin, m, statistics[subset][m], subset) for m in measures]
    return rows


def box_rows(run: str, group, origin: str, evaluation: dict) -> list[dict]:
    rows = []
    for threshold in ("0", "0.5"):
        aps = list(evaluation["AP"].get(threshold, {}).values())
        stats = sample_statistics(aps)
        rows.append(_row("boxes", run, group, origin, f"MAP@{threshold}", evaluation["MAP"].get(threshold),
                         stats["std"] if aps else None, len(aps) or None))
    return rows


def caption_rows(run: str, group, origin: str, evaluation: dict) -> list[dict]:
    meteor = evaluation["meteor"]
    rows = [_row("captions", run, group, origin, "Meteor", meteor["mean"], meteor["std"], evaluation["images"])]
    rows += [_row("captions", run, group, origin, f"Meteor {k}", meteor[k]) for k in ("median", "min", "max")]
    return rows


def selection_rows(run: str, group, origin: str, evaluation: dict) -> list[dict]:
    return [_row("selection", run, group, origin, key, evaluation[key]["mean"], evaluation[key]["std"],
                 evaluation["images"]) for key in ("F", "P", "R")]


def illustration_rows(run: str, group, origin: str, evaluation: dict) -> list[dict]:
    rows = []
    for k in KS:
        value, n = evaluation[f"R@{k}"], evaluation["queries"]
        rows.append(_row("illustration", run, group, origin, f"R@{k}", value, math.sqrt(value * (1 - value)), n))
    return rows


def chance_rows(evaluation: dict) -> list[dict]:
    return [_row("illustration", "chance", None, "bound", f"R@{k}", evaluation["chance"][f"R@{k}"]) for k in KS]


ROWS = {"boxes": box_rows, "captions": caption_rows, "selection": selection_rows, "illustration": illustration_rows}


def origin_of(run: str, subtask: str) -> str:
    return "bound" if run in ("caption_human", "selection_human") else "baseline"


# -- ordering -----------------------------------------------------------------------------

def order_runs(rows: pd.DataFrame, subtask: str) -> pd.DataFrame:
    """One row per run of the subtask: position, average rank, tie-break mean (results_order)."""
    wide = rows[rows["subset"] == ALL].pivot_table(index=["run"], columns="measure", values="value", aggfunc="first",
                                                   dropna=False)
    info = rows.drop_duplicates("run").set_index("run")[["group", "origin"]]
    measures = [m for m in ORDERING[subtask] if m in wide.columns and wide[m].notna().any()]
    parts = []
    for origin in ORIGINS:
        runs = info.index[info["origin"] == origin]
        if not len(runs):
            continue
        block = pd.DataFrame({"run": runs, "group": info.loc[runs, "group"].to_numpy(), "origin": origin})
        values = wide.reindex(runs)[measures] if measures else pd.DataFrame(index=runs)
        if origin == "bound" or not measures:
            block["average_rank"], block["mean"] = np.nan, values.mean(axis=1).to_numpy() if measures else np.nan
            block = block.sort_values("run", kind="stable")
        else:
            ranks = values.rank(ascending=False, method="average", na_option="bottom")
            block["average_rank"] = ranks.mean(axis=1).to_numpy()
            block["mean"] = values.mean(axis=1).to_numpy()
            block = block.sort_values(["average_rank", "mean", "run"], ascending=[True, False, True], kind="stable")
        parts.append(block)
    order = pd.concat(parts, ignore_index=True)
    order.insert(0, "position", np.arange(1, len(order) + 1, dtype=np.int32))
    order.insert(0, "subtask", subtask)
    return order


# -- the job ------------------------------------------------------------------------------

class Results:
    """Every subtask's rows, ordered, from the baselines' evaluations and the submissions."""

    def __init__(self, inputs: dict, planned_rejects: list[dict], subsets: list[str]):
        self.inputs, self.subsets = inputs, subsets
        self.submissions = sorted((read_json(p) for p in _paths(inputs.get("submissions"))),
                                  key=lambda r: r["name"])
        self.planned_rejects = planned_rejects
        self.rows: list[dict] = []
        self.box_evaluations: list[dict] = []
        self._baselines()
        for result in self.submissions:
            if result["status"] == "accepted":
                self._add(result["subtask"], result["name"], result["group"], "submission", result["evaluation"],
                          result.get("statistics"))

    def _add(self, subtask: str, run: str, group, origin: str, evaluation: dict, statistics: dict | None) -> None:
        if subtask == "annotation":
            self.rows += annotation_rows(run, group, origin, statistics, self.subsets)
        else:
            self.rows += ROWS[subtask](run, group, origin, evaluation)
        if subtask == "boxes":
            self.box_evaluations.append(evaluation)

    def _baselines(self) -> None:
        statistics = read_json(self.inputs["statistics"])["runs"] if self.inputs.get("statistics") else {}
        for run in sorted(statistics):
            self._add("annotation", run, None, "baseline", {}, statistics[run])
        for subtask in ("boxes", "captions", "selection", "illustration"):
            evaluations = [read_json(p) for p in _paths(self.inputs.get(f"{subtask}_evaluations"))]
            for evaluation in sorted(evaluations, key=lambda e: e["run"]):
                self._add(subtask, evaluation["run"], None, origin_of(evaluation["run"], subtask), evaluation, None)
            if subtask == "illustration" and evaluations:
                self.rows += chance_rows(evaluations[0])

    def tables(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(results, results_order)."""
        frame = pd.DataFrame(self.rows, columns=[f.name for f in RESULTS_SCHEMA if f.name != "position"])
        frame["samples"] = frame["samples"].astype("Int64")
        orders = [order_runs(frame[frame["subtask"] == s], s) for s in SUBTASKS if (frame["subtask"] == s).any()]
        order = pd.concat(orders, ignore_index=True) if orders else pd.DataFrame(columns=ORDER_SCHEMA.names)
        if len(frame):
            position = order.set_index(["subtask", "run"])["position"]
            keys = pd.MultiIndex.from_frame(frame[["subtask", "run"]])
            frame.insert(1, "position", position.reindex(keys).to_numpy())
            subtask_rank = {s: k for k, s in enumerate(SUBTASKS)}
            subset_rank = {s: k for k, s in enumerate([ALL, *self.subsets])}
            measure_rank = {m: k for k, m in enumerate(
                [*ORDER_MEASURES, "MAP@0", "MAP@0.5", "Meteor", "Meteor median", "Meteor min", "Meteor max",
                 "F", "P", "R", *(f"R@{k}" for k in KS)])}
            keys = (frame["subtask"].map(subtask_rank), frame["position"], frame["subset"].map(subset_rank),
                    frame["measure"].map(measure_rank))
            frame = frame.iloc[np.lexsort(tuple(reversed([k.to_numpy() for k in keys])))].reset_index(drop=True)
        else:
            frame.insert(1, "position", pd.Series(dtype="int32"))
        return frame, order

    def concepts(self) -> pd.DataFrame:
        """The best-localised concepts (2016 Table 2) over every box run of the table."""
        if not self.box_evaluations:
            return pd.DataFrame(columns=CONCEPTS_SCHEMA.names)
        import pyarrow.parquet as pq

        truth = pq.read_table(Path(self.inputs["truth"]) / "boxes" / "boxes.parquet",
                              columns=["image_id", "concept"]).to_pandas()
        test_images = len(Path(self.inputs["kit"], "test/boxes/test_images.csv").read_text(
            encoding="utf-8").splitlines()) - 1
        share = truth.drop_duplicates().groupby("concept")["image_id"].count() / max(1, test_images)
        concepts = sorted({c for e in self.box_evaluations for c in e["AP"].get("0.5", {})})
        rows = []
        for concept in concepts:
            at = {t: [e["AP"].get(t, {}).get(concept) for e in self.box_evaluations] for t in ("0", "0.5")}
            rows.append({"concept": concept, "AP@0": _mean(at["0"]), "AP@0.5": _mean(at["0.5"]),
                         "occurrence": float(share.get(concept, 0.0)), "runs": len(self.box_evaluations)})
        frame = pd.DataFrame(rows).sort_values(["AP@0.5", "AP@0", "concept"], ascending=[False, False, True],
                                               kind="stable").reset_index(drop=True)
        frame.insert(0, "position", np.arange(1, len(frame) + 1, dtype=np.int32))
        return frame

    def submission_tables(self) -> tuple[list[dict], list[dict]]:
        submissions, problems = [], []
        planned = [{**r["metadata"], "group": r["group"], "run": r["run"], "file": r["file"], "status": "rejected",
                    "problems": [{"line": 0, "message": reason} for reason in r["reasons"]]}
                   for r in self.planned_rejects]
        for result in sorted([*self.submissions, *planned], key=lambda r: (r["group"], r["run"])):
            submissions.append({
                "group": result["group"], "run": result["run"], "name": f"{result['group']}/{result['run']}",
                "subtask": result.get("subtask"), "modality": result.get("modality"),
                "external_data": result.get("external_data"),
                "external_data_description": result.get("external_data_description") or "",
                "file": result["file"], "status": result["status"], "reasons": len(result["problems"])})
            problems += [{"group": result["group"], "run": result["run"], "line": p["line"], "message": p["message"]}
                         for p in result["problems"]]
        return submissions, problems


def _mean(values) -> float:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else math.nan


def _paths(value) -> list[str]:
    if not value:
        return []
    return [value] if isinstance(value, str) else list(value)


# -- Markdown --------------------------------------------------------------------------

def _percent(value, low=None, high=None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    text = f"{100 * value:.2f}"
    if low is not None and high is not None and not (math.isnan(low) or math.isnan(high)):
        text += f" [{100 * low:.2f}, {100 * high:.2f}]"
    return text


def _fraction(value, std=None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.4f}" + (f" ± {std:.4f}" if std is not None and not math.isnan(std) else "")


def _cells(frame: pd.DataFrame) -> dict:
    return {(r.run, r.subset, r.measure): r for r in frame.itertuples(index=False)}


def _label(run: str, group, origin: str) -> list[str]:
    return [run, group if isinstance(group, str) else ("—" if origin != "bound" else "bound")]


def results_markdown(results: pd.DataFrame, order: pd.DataFrame, concepts: pd.DataFrame, subsets: list[str],
                     submissions: list[dict]) -> str:
    lines = ["# Results", "",
             "Every run of the benchmark, the build's baselines and the accepted submissions, in the tables of the "
             "ImageCLEF overviews. Values in %, or as fractions where the overviews give fractions; [low, high] is "
             "the 95 % interval (Wilson's, with the spread of the individual values: docs/measures.md, The "
             "round's results).", ""]
    accepted = sum(s["status"] == "accepted" for s in submissions)
    lines += [f"{len(submissions)} submitted run(s), {accepted} accepted, {len(submissions) - accepted} rejected "
              "(tables `submissions` and `submission_problems`).", ""]
    for subtask in SUBTASKS:
        block = results[results["subtask"] == subtask]
        if not len(block):
            continue
        ranked = order[order["subtask"] == subtask]
        lines += SECTIONS[subtask](block, ranked, subsets) + [""]
        if subtask == "boxes" and len(concepts):
            lines += _concepts_section(concepts) + [""]
    return "\n".join(lines)


def _annotation_section(block: pd.DataFrame, order: pd.DataFrame, subsets: list[str]) -> list[str]:
    cells = _cells(block)
    columns = [(m, s) for m in MEASURES for s in [ALL, *subsets]] + [(UNSEEN, ALL)]
    header = ["run", "group", *(f"{m} ({s})" for m, s in columns), "average rank"]
    rows = []
    for r in order.itertuples(index=False):
        values = []
        for measure, subset in columns:
            cell = cells.get((r.run, subset, measure))
            values.append(_percent(cell.value, cell.ci_low, cell.ci_high) if cell else "n/a")
        rank = "" if r.average_rank != r.average_rank else f"{r.average_rank:.2f}"
        rows.append([*_label(r.run, r.group, r.origin), *values, rank])
    return ["## Image annotation (Villegas and Paredes 2014, Table 2 and Figures 2-3)", "",
            "MAP-samples, MF1-samples and MF1-concepts on all the test images and on each subset, MF1-concepts on "
            "the concepts of the test truth the development truth lacks (unseen), in %. Baselines first, then "
            "the submissions; each ordered by the average rank over the four measures on all the test images, "
            "ties by their mean. Figures: `reports/results_*.svg`.", "",
            *markdown_table(header, rows)]


def _simple_section(title: str, text: str, measures: list[str], percent: bool):
    def section(block: pd.DataFrame, order: pd.DataFrame, subsets: list[str]) -> list[str]:
        cells = _cells(block)
        rows = []
        for r in order.itertuples(index=False):
            values = []
            for measure in measures:
                cell = cells.get((r.run, ALL, measure))
                if cell is None:
                    values.append("")
                elif percent:
                    values.append(_percent(cell.value, cell.ci_low, cell.ci_high))
                else:
                    std = cell.std if cell.std == cell.std else None
                    interval = (f" [{cell.ci_low:.4f}, {cell.ci_high:.4f}]"
                                if cell.ci_low is not None and cell.ci_low == cell.ci_low else "")
                    values.append(_fraction(cell.value, std) + interval)
            rows.append([*_label(r.run, r.group, r.origin), *values])
        return [title, "", text, "", *markdown_table(["run", "group", *measures], rows)]
    return section


def _concepts_section(concepts: pd.DataFrame) -> list[str]:
    rows = [[r["concept"], _fraction(r["AP@0"]), _fraction(r["AP@0.5"]), f"{100 * r['occurrence']:.1f} %",
             str(r["runs"])] for r in concepts.head(10).to_dict("records")]
    return ["### Best-localised concepts (Gilbert et al. 2016, Table 2)", "",
            "Each concept's AP averaged over the box runs above, at IoU 0 and 0.5, ranked by the latter, with the "
            "share of the test images that have it (the ten best; every concept in `results_concepts`).", "",
            *markdown_table(["concept", "AP@0", "AP@0.5", "test images", "runs"], rows)]


SECTIONS = {
    "annotation": _annotation_section,
    "boxes": _simple_section("## Localisation (Gilbert et al. 2016, Table 1)",
                             "MAP at IoU 0 (no localisation) and 0.5, intervals over the concepts' APs; ordered by "
                             "the average rank over the two.", ["MAP@0", "MAP@0.5"], percent=False),
    "captions": _simple_section("## Captions (Gilbert et al. 2016, Table 3)",
                                "Meteor 1.5 over the test images with references: mean ± standard deviation "
                                "[interval], median, min, max; the human upper bound first.",
                                ["Meteor", "Meteor median", "Meteor min", "Meteor max"], percent=False),
    "selection": _simple_section("## Content selection (Gilbert et al. 2016, Table 4)",
                                 "Mean F, P and R ± standard deviation [interval] over the test images with "
                                 "descriptions; the human upper bound first, the random baseline among the "
                                 "baselines.", ["F", "P", "R"], percent=False),
    "illustration": _simple_section("## Text illustration (Gilbert et al. 2016, Tables 5-6)",
                                    "Recall at k over every test query, in %, with random chance first.",
                                    [f"R@{k}" for k in KS], percent=True),
}


def write_results(inputs: dict, outputs: dict, planned_rejects: list[dict], subsets: list[str], log) -> None:
    results = Results(inputs, planned_rejects, subsets)
    frame, order = results.tables()
    concepts = results.concepts()
    submissions, problems = results.submission_tables()
    params = {"subsets": subsets}
    write_table(pa.Table.from_pandas(frame, schema=RESULTS_SCHEMA, preserve_index=False), outputs["results"],
                "results", params=params)
    write_table(pa.Table.from_pandas(order, schema=ORDER_SCHEMA, preserve_index=False), outputs["order"],
                "results_order", params=params)
    write_table(pa.Table.from_pandas(concepts, schema=CONCEPTS_SCHEMA, preserve_index=False), outputs["concepts"],
                "results_concepts", params=params)
    write_table(rows_to_table(submissions, SUBMISSIONS_SCHEMA), outputs["submissions"], "submissions", params={})
    write_table(rows_to_table(problems, PROBLEMS_SCHEMA), outputs["submission_problems"], "submission_problems",
                params={})
    report = results_markdown(frame, order, concepts, subsets, submissions)
    write_bytes_atomic(outputs["report"], report.encode("utf-8"))
    annotation = frame[frame["subtask"] == "annotation"]
    ranked = order[order["subtask"] == "annotation"]
    for measure in ORDER_MEASURES:
        if f"figure_{FIGURES[measure]}" not in outputs:
            continue
        cells = _cells(annotation)
        rows = [{"run": r.run, "origin": r.origin, **_figure_values(cells.get((r.run, ALL, measure)))}
                for r in ranked.itertuples(index=False)]
        write_bytes_atomic(outputs[f"figure_{FIGURES[measure]}"],
                           interval_figure(f"{measure}, all test images (%)", rows))
    accepted = sum(s["status"] == "accepted" for s in submissions)
    log(f"results of {len(order)} runs; {len(submissions)} submissions ({accepted} accepted), {len(problems)} problems")


def _figure_values(cell) -> dict:
    if cell is None:
        return {"value": None, "ci_low": None, "ci_high": None}
    return {"value": _none(cell.value), "ci_low": _none(cell.ci_low), "ci_high": _none(cell.ci_high)}


def _none(value):
    return None if value is None or value != value else float(value)


def results_job(job: Job) -> None:
    """Rule campaign_results: the results tables, the report and its figures, the submissions tables."""
    write_results(job.inputs, job.outputs, job.params["rejected"], sorted(job.params["subsets"]), job.log)
