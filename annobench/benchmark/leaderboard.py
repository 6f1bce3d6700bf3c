"""What every subtask's leaderboard section is written with: its numbers and its Markdown tables."""

from __future__ import annotations


def number(value) -> str:
    """A measure to 4 decimals; "n/a" when there is none (None, or NaN: a mean over nothing)."""
    return "n/a" if value is None or value != value else f"{value:.4f}"


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """The lines of a Markdown table: the first column (the run) left-aligned, the measures right-aligned."""
    alignment = ["---" if i == 0 else "---:" for i in range(len(header))]
    return ["| " + " | ".join(cells) + " |" for cells in (header, alignment, *rows)]
