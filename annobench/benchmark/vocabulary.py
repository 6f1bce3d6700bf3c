"""Concept vocabularies: the concepts a benchmark is annotated with, read from the
concept file a build names or from the `concepts` table, and the error a vocabulary or a
ground truth that cannot be used raises.

Shared by the subtasks that name concepts: image-level annotation and boxes.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from annobench.core.errors import AnnobenchError
from annobench.core.fsutil import read_user_text
from annobench.core.tables import field

CONCEPTS_SCHEMA = pa.schema(
    [
        field("concept", pa.string(), "concept name, as runs and ground truth spell it"),
        field("index", pa.int32(), "column of the concept in runs (vocabulary order, 0-based)"),
        field("keywords", pa.list_(pa.string()), "words that match the concept in text (the name included)"),
        field("parent", pa.string(), "parent concept in the hierarchy (null at the top)", nullable=True),
    ]
)


class GroundTruthError(AnnobenchError):
    """A vocabulary or ground-truth file that cannot be used as it is."""


@dataclass(frozen=True)
class Concept:
    name: str
    keywords: tuple[str, ...] = ()
    parent: str | None = None


def read_vocabulary(path: Path | str) -> list[Concept]:
    """A CSV with header `concept[,keywords][,parent]` (keywords separated by `;`),
    or a plain text file with one concept a line. Order = run column order."""
    path = Path(path)
    text = read_user_text(path, GroundTruthError)
    first = text.splitlines()[0].strip().lower() if text.strip() else ""
    if first.split(",")[0] == "concept":
        concepts = [_concept_from_row(row, path, n) for n, row in enumerate(csv.DictReader(text.splitlines()), 2)]
    else:
        concepts = [Concept(line.strip(), (line.strip(),)) for line in text.splitlines() if line.strip()]
    return check_vocabulary(concepts, path)


def _concept_from_row(row: dict, path: Path, line: int) -> Concept:
    name = (row.get("concept") or "").strip()
    if not name:
        raise GroundTruthError(f"{path}:{line}: empty concept name")
    keywords = [w.strip().lower() for w in (row.get("keywords") or "").split(";") if w.strip()]
    parent = (row.get("parent") or "").strip() or None
    return Concept(name, tuple(dict.fromkeys([name.lower(), *keywords])), parent)


def check_vocabulary(concepts: list[Concept], where: Path | str) -> list[Concept]:
    if not concepts:
        raise GroundTruthError(f"{where}: the vocabulary is empty")
    names = [c.name for c in concepts]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise GroundTruthError(f"{where}: concept(s) listed twice: {', '.join(repeated[:5])}")
    if any(any(ch.isspace() for ch in n) for n in names):
        raise GroundTruthError(f"{where}: concept names must not contain spaces (run and concept-list files "
                               f"separate fields by spaces): {[n for n in names if ' ' in n][:5]}")
    known = set(names)
    for concept in concepts:
        if concept.parent is not None and concept.parent not in known:
            raise GroundTruthError(f"{where}: parent {concept.parent!r} of {concept.name!r} is not a concept")
    return concepts


def vocabulary_from_labels(labels, parents: dict[str, str] | None = None) -> list[Concept]:
    """A vocabulary of every label seen (sorted), with ancestors from the ontology."""
    parents = parents or {}
    names = set(labels)
    for label in list(names):
        while label in parents:
            label = parents[label]
            names.add(label)
    return [Concept(n, (n.lower(),), parents.get(n)) for n in sorted(names)]


def concepts_table(concepts: list[Concept]) -> pa.Table:
    return pa.Table.from_pydict(
        {
            "concept": [c.name for c in concepts],
            "index": list(range(len(concepts))),
            "keywords": [list(c.keywords) or [c.name.lower()] for c in concepts],
            "parent": [c.parent for c in concepts],
        },
        schema=CONCEPTS_SCHEMA,
    )


def read_concepts_table(path: Path | str) -> list[Concept]:
    table = pq.read_table(path).to_pylist()
    return [Concept(r["concept"], tuple(r["keywords"]), r["parent"]) for r in sorted(table, key=lambda r: r["index"])]
