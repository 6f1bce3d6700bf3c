"""The box leaderboard (ImageCLEF 2016 subtask 1, Gilbert et al. 2016): its table and Markdown
section beside the annotation leaderboard, from the evaluations the box_baseline rule writes."""

from __future__ import annotations

import pandas as pd

from annobench.benchmark.leaderboard import markdown_table, number

HEADLINE_THRESHOLDS = ("0", "0.5")  # Table 1 of Gilbert et al. 2016


def box_leaderboard_frame(results: list[dict]) -> pd.DataFrame:
    """One row per box run: MAP at each threshold (columns MAP@t), sorted by MAP@0.5, then MAP@0, then name."""
    rows = [{"run": r["run"], **{f"MAP@{t}": value for t, value in r["MAP"].items()},
             "test_images": r["counts"]["images"], "run_boxes": r["counts"]["run_boxes"]} for r in results]
    frame = pd.DataFrame(rows)
    keys = [f"MAP@{t}" for t in reversed(HEADLINE_THRESHOLDS)]
    return frame.sort_values([*keys, "run"], ascending=[False, False, True], na_position="last",
                             kind="stable").reset_index(drop=True)


def box_markdown(board: pd.DataFrame) -> str:
    """The localisation section: MAP at 0 and 0.5, then at every threshold."""
    thresholds = [c[len("MAP@"):] for c in board.columns if c.startswith("MAP@")]
    headline = [[row["run"], *(number(row[f"MAP@{t}"]) for t in HEADLINE_THRESHOLDS), str(row["run_boxes"])]
                for _, row in board.iterrows()]
    every = [[row["run"], *(number(row[f"MAP@{t}"]) for t in thresholds)] for _, row in board.iterrows()]
    images = int(board["test_images"].max()) if len(board) else 0
    lines = [
        "## Localisation (boxes, ImageCLEF 2016 subtask 1)",
        "",
        f"MAP over the concepts with a ground-truth box on the {images} test images, at IoU thresholds t "
        "(t = 0: a box counts as an image-level annotation). Sorted by MAP at 0.5.",
        "",
        *markdown_table(["run", "MAP@0", "MAP@0.5", "boxes"], headline),
        "",
        "Every threshold:",
        "",
        *markdown_table(["run", *(f"t={t}" for t in thresholds)], every),
        "",
    ]
    return "\n".join(lines)
