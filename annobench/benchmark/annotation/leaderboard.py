"""The image-level annotation leaderboard: its table, one row per baseline run, and the
Markdown section that opens the benchmark report, with the dataset diagnostics under it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from annobench.benchmark.leaderboard import markdown_table
from annobench.benchmark.settings import BenchmarkSettings

LEADERBOARD_COLUMNS = ["MAP-samples", "MF1-samples", "MF1-concepts", "MiAP", "GMiAP", "MnAP", "F1_L", "mAP_L",
                       "F1_I", "mAP_I", "N+"]


def leaderboard_frame(results: list[dict]) -> pd.DataFrame:
    rows = []
    for result in results:
        row = {"run": result["run"], **{m: result[m] for m in LEADERBOARD_COLUMNS}}
        for subset in ("most_overlap", "least_overlap"):
            row[f"MAP-samples ({subset})"] = result["subsets"][subset]["MAP-samples"]
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.sort_values(["MAP-samples", "run"], ascending=[False, True]).reset_index(drop=True)


def _cell(value) -> str:
    """A run name as it is, a count as a whole number, a measure to 4 decimals."""
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, (int, np.integer)) else f"{value:.4f}"


def leaderboard_markdown(board: pd.DataFrame, stats: dict, settings: BenchmarkSettings) -> str:
    rows = [[_cell(c) for c in row] for row in board.itertuples(index=False)]
    lines = [
        "# Leaderboard",
        "",
        f"{stats['test_images']} test images, {stats['train_images']} training images, {stats['concepts']} "
        f"concepts. Decisions for F1_L, F1_I and N+: the top {settings.k} labels by score; every other "
        f"F-measure uses the run's own decisions. Sorted by MAP-samples. Fractions, 4 decimals.",
        "",
        *markdown_table(list(board.columns), rows),  # the first column is the run
        "",
        "## Dataset diagnostics (Dutta et al., section 4)",
        "",
        f"- unique label sets: {stats['unique_label_sets']:.4f} of the test images",
        f"- novel label sets (never in training): {stats['novel_label_sets']:.4f}",
        f"- visual overlap on {stats['visual_overlap']['feature']}: mean distance to the "
        f"{stats['visual_overlap']['neighbours']} nearest training images, {stats['visual_overlap']['mean']:.4f} "
        f"on average; the MAP-samples columns in brackets are measured on the {settings.overlap['share']:.0%} "
        f"most and least overlapping test images",
        f"- concepts never seen in training: {stats['concepts_never_in_training']} of {stats['concepts']}",
        "",
    ]
    return "\n".join(lines)
