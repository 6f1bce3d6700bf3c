"""The build's rejects on one screen: every rejects table of a build (`tables/*rejects`, each row a
`reason`) and every notes table (`tables/*_notes`, each row a `note`: kept after a change), counted
per table and reason. The workflow prints it when a build ends (the Snakefile's onsuccess), so
nothing is rejected without the user seeing it.

Reasons are grouped by their shape: details in parentheses, quoted names and numbers are left out
(`outside the image (500x375)` and `outside the image (480x360)` are one reason). Only the `reason`
or `note` column is read.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

SHOWN_REASONS = 4  # per table; the rest are counted in one line


def reason_shape(reason: str) -> str:
    """A reason without its details: parentheses, quoted names and numbers left out."""
    shape = re.sub(r"\s*\([^()]*\)", "", str(reason))
    shape = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", shape)
    shape = re.sub(r"[+-]?\d+(?:\.\d+)?(?:x\d+)?", "N", shape)
    shape = shape.split(": ", 1)[0] if len(shape) > 90 else shape
    return shape.strip() or "(no reason given)"


def _counts(folder: Path, column: str) -> Counter:
    counts: Counter = Counter()
    for path in sorted(folder.glob("*.parquet")):
        if column not in pq.read_schema(path).names:
            continue
        for value in pq.read_table(path, columns=[column]).column(column).to_pylist():
            counts[reason_shape(value)] += 1
    return counts


def rejects_summary(out: Path | str) -> list[str]:
    """The lines of the summary: a heading, then each table with rows and its commonest reasons."""
    tables = Path(out) / "tables"
    folders = sorted(p for p in tables.glob("*") if p.is_dir() and (p.name.endswith("rejects")
                                                                      or p.name.endswith("_notes")))
    lines = []
    for folder in folders:
        notes = folder.name.endswith("_notes")
        try:
            counts = _counts(folder, "note" if notes else "reason")
        except (OSError, ValueError) as error:  # a damaged table: said, not raised, at the end of a build
            lines.append(f"  {folder.name}: unreadable ({error})")
            continue
        total = sum(counts.values())
        if not total:
            continue
        what = "kept after a change" if notes else "rejected"
        lines.append(f"  {folder.name}: {total} {what}")
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        lines += [f"    {n:>7,}  {reason}" for reason, n in ranked[:SHOWN_REASONS]]
        if len(ranked) > SHOWN_REASONS:
            rest = sum(n for _, n in ranked[SHOWN_REASONS:])
            lines.append(f"    {rest:>7,}  for {len(ranked) - SHOWN_REASONS} other reason(s)")
    if not lines:
        return [f"annobench: nothing rejected ({len(folders)} rejects and notes tables under {tables})"]
    return [f"annobench: rejects of this build, by table and reason (rows and reasons in {tables}/):", *lines]
