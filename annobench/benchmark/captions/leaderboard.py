"""The caption leaderboard (ImageCLEF 2016 subtask 2, Gilbert et al. 2016): its table and Markdown
section beside the annotation leaderboard, from the evaluations the caption_run_evaluation and
caption_human_bound rules write."""

from __future__ import annotations

import pandas as pd

from annobench.benchmark.leaderboard import markdown_table, number

METEOR_COLUMNS = ("mean", "std", "median", "min", "max", "corpus")
SECONDARY = ("bleu_4", "rouge_l", "cider")


def caption_leaderboard_frame(results: list[dict]) -> pd.DataFrame:
    """One row per caption run (and the human bound): Meteor statistics and the secondary measures,
    sorted by mean Meteor, then name."""
    rows = [{"run": r["run"], **{f"meteor_{k}": r["meteor"][k] for k in METEOR_COLUMNS},
             **{k: r.get(k) for k in SECONDARY}, "images": r["images"]} for r in results]
    frame = pd.DataFrame(rows).astype({k: "float64" for k in SECONDARY})
    return frame.sort_values(["meteor_mean", "run"], ascending=[False, True], na_position="last",
                             kind="stable").reset_index(drop=True)


def caption_markdown(board: pd.DataFrame) -> str:
    rows = [[row["run"], f"{number(row['meteor_mean'])} ± {number(row['meteor_std'])}",
             *(number(row[f"meteor_{k}"]) for k in ("median", "min", "max", "corpus")),
             *(number(row[k]) for k in SECONDARY), str(row["images"])] for _, row in board.iterrows()]
    lines = [
        "## Captions (ImageCLEF 2016 subtask 2)",
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
