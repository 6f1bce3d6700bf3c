"""The benchmark report (rule benchmark_report): every subtask's leaderboard and the
dataset diagnostics, gathered into one Markdown file beside each leaderboard's table.

The image-level annotation leaderboard comes first, with Dutta et al.'s diagnostics (their
JSON, the `visual_overlap` table and the label-frequency figure); the localisation,
content-selection, caption and illustration sections follow when the build has such runs.
Each leaderboard holds the baselines and the accepted submitted runs of its subtask
(annobench.benchmark.campaign), named GROUP/RUN; without submissions it is as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from annobench.benchmark.annotation.diagnostics import (
    label_frequency_figure,
    label_set_stats,
    overlap_table,
    visual_overlap,
)
from annobench.benchmark.annotation.leaderboard import leaderboard_frame, leaderboard_markdown
from annobench.benchmark.annotation.stage import BenchmarkData
from annobench.benchmark.boxes.leaderboard import box_leaderboard_frame, box_markdown
from annobench.benchmark.campaign.results import accepted_evaluations
from annobench.benchmark.captions.leaderboard import caption_leaderboard_frame, caption_markdown
from annobench.benchmark.illustration.leaderboard import illustration_leaderboard_frame, illustration_markdown
from annobench.benchmark.json_form import json_bytes
from annobench.benchmark.neighbours.stage import read_neighbours
from annobench.benchmark.selection.leaderboard import selection_leaderboard_frame, selection_markdown
from annobench.benchmark.settings import BenchmarkSettings
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.jobs import Job
from annobench.core.tables import write_table

# Each subtask's section: the name of its evaluations input and leaderboard output, its
# leaderboard frame and its Markdown, in the order the report shows them.
SUBTASK_SECTIONS = (
    ("box", "boxes", box_leaderboard_frame, box_markdown),
    ("selection", "selection", selection_leaderboard_frame, selection_markdown),
    ("caption", "captions", caption_leaderboard_frame, caption_markdown),
    ("illustration", "illustration", illustration_leaderboard_frame, illustration_markdown),
)


def build_report(settings: BenchmarkSettings, evaluations: list[str], inputs: dict, outputs: dict, log) -> None:
    """Leaderboard (Markdown and Parquet), label-frequency figure and the diagnostics JSON."""
    data = BenchmarkData(inputs["concepts"], inputs["ground_truth"], inputs["splits"])
    submitted = _paths(inputs.get("submissions", []))
    results = _results(evaluations) + accepted_evaluations(submitted, "annotation")
    board = leaderboard_frame(results)
    _write_board(board, results, outputs["leaderboard_table"], "leaderboard")
    stats = _diagnostics(data, settings, inputs["overlap"], outputs)
    markdown = leaderboard_markdown(board, stats, settings) + _subtask_sections(inputs, outputs)
    write_bytes_atomic(outputs["leaderboard"], markdown.encode("utf-8"))
    log(f"leaderboard of {len(results)} runs; unique label sets {stats['unique_label_sets']:.3f}, "
        f"novel {stats['novel_label_sets']:.3f}")


def _diagnostics(data: BenchmarkData, settings: BenchmarkSettings, overlap_path: str, outputs: dict) -> dict:
    """Dutta et al.'s diagnostics of the train and test images, written as the diagnostics JSON, the
    visual_overlap table and the label-frequency figure; returns them for the leaderboard."""
    empty = frozenset()
    stats = label_set_stats([data.label_sets.get(i, empty) for i in data.train_ids],
                            [data.label_sets.get(i, empty) for i in data.test_ids])
    _, distances = read_neighbours(overlap_path, data.test_ids)
    overlap = visual_overlap(distances, settings.overlap["neighbours"])
    write_table(overlap_table(data.test_ids, overlap, settings.overlap["share"]), outputs["overlap_table"],
                "visual_overlap", params=settings.overlap)
    stats["visual_overlap"] = {"feature": settings.overlap["feature"],
                               "neighbours": int(min(settings.overlap["neighbours"], distances.shape[1])),
                               "mean": float(overlap.mean()), "min": float(overlap.min()),
                               "max": float(overlap.max())}
    train_counts = data.truth(data.train_ids).sum(axis=0)
    stats["concepts"] = len(data.names)
    stats["concepts_never_in_training"] = int((train_counts == 0).sum())
    write_bytes_atomic(outputs["diagnostics"], json_bytes(stats))
    counts = data.truth(data.train_ids + data.test_ids).sum(axis=0)
    write_bytes_atomic(outputs["figure"], label_frequency_figure(
        counts.tolist(), f"Label frequency: {len(data.names)} concepts, train + test images"))
    return stats


def _subtask_sections(inputs: dict, outputs: dict) -> str:
    """The localisation, content-selection, caption and illustration leaderboards (tables and
    Markdown), when the build has such runs; nothing otherwise, so builds without them keep their bytes."""
    sections = ""
    submitted = _paths(inputs.get("submissions", []))
    for kind, subtask, frame, markdown in SUBTASK_SECTIONS:
        results = _results(_paths(inputs.get(f"{kind}_evaluations", []))) + accepted_evaluations(submitted, subtask)
        if not results:
            continue
        board = frame(results)
        _write_board(board, results, outputs[f"{kind}_leaderboard"], f"{kind}_leaderboard")
        sections += "\n" + markdown(board)
    return sections


def _results(paths: list[str]) -> list[dict]:
    return [json.loads(Path(p).read_text(encoding="utf-8")) for p in paths]


def _write_board(board, results: list[dict], path: str, artefact: str) -> None:
    write_table(pa.Table.from_pandas(board, preserve_index=False), path, artefact,
                params={"runs": sorted(r["run"] for r in results)})


def _paths(value) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def report_job(job: Job) -> None:
    """Rule benchmark_report: the leaderboard and diagnostics over every baseline's evaluation."""
    build_report(BenchmarkSettings.from_config(job.config), job.input_list("evaluations"), job.inputs, job.outputs,
                 job.log)
