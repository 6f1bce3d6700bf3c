"""The text-illustration leaderboard (the ImageCLEF 2016 teaser, Gilbert et al. 2016): its table
and Markdown section beside the annotation leaderboard, from the evaluations the illustration rule
writes."""

from __future__ import annotations

import pandas as pd

from annobench.benchmark.leaderboard import markdown_table

RECALL_KS = (1, 5, 10, 25, 50, 75, 100)


def illustration_leaderboard_frame(results: list[dict]) -> pd.DataFrame:
    """One row per ranking run: R@k for every k, with chance, sorted by R@100, then R@1, then name."""
    rows = [{"run": r["run"], **{f"R@{k}": r[f"R@{k}"] for k in RECALL_KS},
             **{f"chance R@{k}": r["chance"][f"R@{k}"] for k in RECALL_KS},
             "queries": r["queries"], "candidates": r["candidates"]} for r in results]
    frame = pd.DataFrame(rows)
    return frame.sort_values(["R@100", "R@1", "run"], ascending=[False, False, True], kind="stable"
                             ).reset_index(drop=True)


def illustration_markdown(board: pd.DataFrame) -> str:
    rows = [[row["run"], *(f"{100 * row[f'R@{k}']:.2f}" for k in RECALL_KS)] for _, row in board.iterrows()]
    if len(board):
        first = board.iloc[0]
        rows.append(["chance", *(f"{100 * first[f'chance R@{k}']:.2f}" for k in RECALL_KS)])
    queries, candidates = (int(board["queries"].max()), int(board["candidates"].max())) if len(board) else (0, 0)
    lines = [
        "## Text illustration (the ImageCLEF 2016 teaser)",
        "",
        f"Recall at k (%) over {queries} queries (a page's text; its answer is the image it shows) among "
        f"{candidates} candidate images; a query the run does not rank is a miss. Sorted by R@100.",
        "",
        *markdown_table(["run", *(f"R@{k}" for k in RECALL_KS)], rows),
        "",
    ]
    return "\n".join(lines)
