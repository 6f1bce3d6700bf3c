"""The caption and text-illustration leaderboards (SPEC 9): tables and Markdown sections beside the
annotation leaderboard, from the evaluations the caption_evaluation and illustration rules write."""

from __future__ import annotations

import pandas as pd

from annobench.benchmark.leaderboard import markdown_table, number

METEOR_COLUMNS = ("mean", "std", "median", "min", "max", "corpus")
SECONDARY = ("bleu_4", "rouge_l", "cider")
RECALL_KS = (1, 5, 10, 25, 50, 75, 100)


def caption_leaderboard_frame(results: list[dict]) -> pd.DataFrame:
    """One row per caption run (and the human bound): Meteor statistics and the secondary measures,
    sorted by mean Meteor, then name."""
    rows = [{"run": r["run"], **{f"meteor_{k}": r["meteor"][k] for k in METEOR_COLUMNS},
             **{k: r.get(k) for k in SECONDARY}, "images": r["images"]} for r in results]
    frame = pd.DataFrame(rows).astype({k: "float64" for k in SECONDARY})
    return frame.sort_values(["meteor_mean", "run"], ascending=[False, True], na_position="last",
                             kind="stable").reset_index(drop=True)


def illustration_leaderboard_frame(results: list[dict]) -> pd.DataFrame:
    """One row per ranking run: R@k for every k, with chance, sorted by R@100, then R@1, then name."""
    rows = [{"run": r["run"], **{f"R@{k}": r[f"R@{k}"] for k in RECALL_KS},
             **{f"chance R@{k}": r["chance"][f"R@{k}"] for k in RECALL_KS},
             "queries": r["queries"], "candidates": r["candidates"]} for r in results]
    frame = pd.DataFrame(rows)
    return frame.sort_values(["R@100", "R@1", "run"], ascending=[False, False, True], kind="stable"
                             ).reset_index(drop=True)


def caption_markdown(board: pd.DataFrame) -> str:
    rows = [[row["run"], f"{number(row['meteor_mean'])} ± {number(row['meteor_std'])}",
             *(number(row[f"meteor_{k}"]) for k in ("median", "min", "max", "corpus")),
             *(number(row[k]) for k in SECONDARY), str(row["images"])] for _, row in board.iterrows()]
    lines = [
        "## Captions (SPEC 9 subtask 2)",
        "",
        "Meteor 1.5 of each test image's caption against its reference descriptions, mean ± population "
        "standard deviation, median, min and max over the test images with references (an image without "
        "a caption scores 0), and the corpus-level value; BLEU-4, ROUGE-L and CIDEr over the corpus. "
        "`caption_human` is the leave-one-out upper bound on the images with two or more references. "
        "Sorted by mean Meteor.",
        "",
        *markdown_table(["run", "Meteor", "median", "min", "max", "corpus", "BLEU-4", "ROUGE-L", "CIDEr", "images"],
                        rows),
        "",
    ]
    return "\n".join(lines)


def illustration_markdown(board: pd.DataFrame) -> str:
    rows = [[row["run"], *(f"{100 * row[f'R@{k}']:.2f}" for k in RECALL_KS)] for _, row in board.iterrows()]
    if len(board):
        first = board.iloc[0]
        rows.append(["chance", *(f"{100 * first[f'chance R@{k}']:.2f}" for k in RECALL_KS)])
    queries, candidates = (int(board["queries"].max()), int(board["candidates"].max())) if len(board) else (0, 0)
    lines = [
        "## Text illustration (SPEC 9, the 2016 teaser)",
        "",
        f"Recall at k (%) over {queries} queries (a page's text; its answer is the image it shows) among "
        f"{candidates} candidate images; a query the run does not rank is a miss. Sorted by R@100.",
        "",
        *markdown_table(["run", *(f"R@{k}" for k in RECALL_KS)], rows),
        "",
    ]
    return "\n".join(lines)
