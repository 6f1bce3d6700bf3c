"""The content-selection leaderboard (ImageCLEF 2016 subtask 3, Gilbert et al. 2016): its table and
Markdown section beside the annotation leaderboard, from the evaluations the selection_baselines
rule writes."""

from __future__ import annotations

import pandas as pd

from annobench.benchmark.leaderboard import markdown_table, number

SELECTION_MEASURES = ("P", "R", "F")


def selection_leaderboard_frame(results: list[dict]) -> pd.DataFrame:
    """One row per selection run: mean and standard deviation of P, R and F over the test images, sorted by F."""
    rows = []
    for result in results:
        row = {"run": result["run"]}
        for measure in SELECTION_MEASURES:
            row[f"{measure} mean"] = result[measure]["mean"]
            row[f"{measure} std"] = result[measure]["std"]
        rows.append({**row, "images": result["images"]})
    frame = pd.DataFrame(rows)
    return frame.sort_values(["F mean", "run"], ascending=[False, True], na_position="last",
                             kind="stable").reset_index(drop=True)


def selection_markdown(board: pd.DataFrame) -> str:
    """The content-selection section: P, R and F, mean ± standard deviation over the test images."""
    rows = [[row["run"], *(f"{number(row[f'{m} mean'])} ± {number(row[f'{m} std'])}" for m in SELECTION_MEASURES),
             str(row["images"])] for _, row in board.iterrows()]
    lines = [
        "## Content selection (ImageCLEF 2016 subtask 3)",
        "",
        "P, R and F of each test image's selected box instances against its gold descriptions (eq. 3-5 of "
        "Gilbert et al. 2016), mean ± population standard deviation over the images. The human upper bound "
        "is measured on the images with two or more descriptions. Sorted by F.",
        "",
        *markdown_table(["run", "P", "R", "F", "images"], rows),
        "",
    ]
    return "\n".join(lines)
