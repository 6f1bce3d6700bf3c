"""The vocabulary and the per-image concept lists a run is read against (the run formats of the
ImageCLEF 2012 task page and of Villegas and Paredes 2014, section 2.2)."""

from __future__ import annotations

import array
from os import PathLike
from typing import Iterator, Sequence

import numpy as np

from annobench.benchmark.problems import MAX_PROBLEMS, PathArg, Problems, quote
from annobench.benchmark.runs.model import Run, check_ids_writable
from annobench.core.fsutil import atomic_path

# Concept lists as read_concept_lists gives them: (image id, concept names) per line.
ConceptLists = Sequence[tuple[str, Sequence[str]]]


def _decode(raw: bytes, number: int, problems: Problems) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        problems.add(number, f"not valid UTF-8: byte 0x{raw[error.start]:02x} at byte {error.start + 1} of the line")
        return raw.decode("utf-8", "replace")


def read_concepts(path: PathArg) -> list[str]:
    """The vocabulary: one concept name a line (whitespace stripped, blank lines skipped)."""
    problems = Problems(MAX_PROBLEMS)
    first_line: dict[str, int] = {}
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            name = _decode(raw, number, problems).strip().lstrip("\ufeff")
            if not name:
                continue
            if any(char.isspace() for char in name):
                problems.add(number, f"concept name {quote(name)} contains whitespace "
                                     "(runs and lists separate names by spaces)")
            elif name in first_line:
                problems.add(number, f"concept '{name}' repeats line {first_line[name]}")
            else:
                first_line[name] = number
    if not first_line and not problems.total:
        problems.add(0, "empty vocabulary: no concept names")
    problems.raise_if_any(path)
    return list(first_line)


class CompactLists:
    """Concept lists held compactly: line i lists vocabulary columns flat[starts[i]:starts[i + 1]].

    `name` and `line_name` say what the lines come from in the checker's messages: a
    concept-list file, or a test-image list (image_order_lists).
    """

    def __init__(self, ids: list[str], starts: np.ndarray, flat: np.ndarray, name: str = "concept lists",
                 line_name: str = "concept-list line"):
        self.ids = ids
        self.starts = starts
        self.flat = flat
        self.counts = np.diff(starts)
        self.name = name
        self.line_name = line_name
        self._id_set: set[str] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def count(self, line: int) -> int:
        return int(self.counts[line])

    def columns(self, line: int) -> np.ndarray:
        return self.flat[self.starts[line] : self.starts[line + 1]]

    def contains(self, image_id: str) -> bool:
        if self._id_set is None:
            self._id_set = set(self.ids)
        return image_id in self._id_set

    def first_line_of(self, image_id: str) -> int:
        return self.ids.index(image_id) + 1


def _parse_lists(entries: Iterator[tuple[int, list[str]]], concepts: Sequence[str], problems: Problems) -> CompactLists:
    """Build lists from (line number, fields) entries, recording unknown or repeated concepts."""
    index = vocabulary_index(concepts)
    ids: list[str] = []
    flat = array.array("i")
    starts = array.array("q", [0])
    for number, fields in entries:
        if not fields:
            problems.add(number, "blank line: concept-list line i belongs to run line i, so no line may be empty")
            continue
        columns = list(map(index.get, fields[1:]))
        if None in columns or len(set(columns)) != len(columns):
            _report_list_line(number, fields[1:], index, problems)
            columns = []
        ids.append(fields[0])
        flat.extend(columns)
        starts.append(len(flat))
    if not ids and not problems.total:
        problems.add(0, "no concept lists: the file has no lines")
    return CompactLists(ids, np.frombuffer(starts, dtype=np.int64), np.frombuffer(flat, dtype=np.int32))


def _report_list_line(number: int, names: list[str], index: dict[str, int], problems: Problems) -> None:
    unknown = [name for name in names if name not in index]
    if unknown:  # one problem a line: a wrong vocabulary file would otherwise bury every other report
        shown = ", ".join(quote(name) for name in unknown[:5])
        shown += f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        problems.add(number, f"unknown concept{'s' if len(unknown) > 1 else ''} {shown} (not in the vocabulary)")
    seen: set[str] = set()
    for name in names:
        if name in seen and name in index:
            problems.add(number, f"concept '{name}' listed twice")
        seen.add(name)


def _list_file_entries(path: PathArg, problems: Problems) -> Iterator[tuple[int, list[str]]]:
    # The organisers' list files are split on any whitespace: they are inputs
    # we are given, not submissions we must hold to the single-space rule.
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            text = _decode(raw, number, problems)
            yield number, (text.lstrip("\ufeff") if number == 1 else text).split()


def vocabulary_index(concepts: Sequence[str]) -> dict[str, int]:
    """Each concept's column; a vocabulary that is empty or names a concept twice is refused."""
    index = {name: column for column, name in enumerate(concepts)}
    if len(index) != len(concepts):
        raise ValueError("the vocabulary names a concept twice")
    if not index:
        raise ValueError("the vocabulary is empty")
    return index


def load_lists(path: PathArg, concepts: Sequence[str]) -> CompactLists:
    """The list file at `path`, held compactly; RunFormatError with every problem if any."""
    problems = Problems(MAX_PROBLEMS)
    lists = _parse_lists(_list_file_entries(path, problems), concepts, problems)
    problems.raise_if_any(path)
    return lists


def image_order_lists(image_ids: list[str], n_concepts: int) -> CompactLists:
    """Every test image, in run order, listing the whole vocabulary: what a run of the 2012 form must
    hold, line for line ("each image in the test collection is to be represented by a single line")."""
    flat = np.tile(np.arange(n_concepts, dtype=np.int32), len(image_ids))
    starts = np.arange(len(image_ids) + 1, dtype=np.int64) * n_concepts
    return CompactLists(list(image_ids), starts, flat, name="test-image list", line_name="test-image line")


def read_concept_lists(path: PathArg, concepts: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Per-image concept lists (lines ``id c_a c_b ...``), in file order; ids may repeat."""
    lists = load_lists(path, concepts)
    return [(image_id, [concepts[c] for c in lists.columns(i)]) for i, image_id in enumerate(lists.ids)]


def as_lists(concept_lists: ConceptLists | PathArg | CompactLists | None,
             concepts: Sequence[str]) -> CompactLists | None:
    """Accept lists as read_concept_lists returns them, or the path of a list file (read compactly)."""
    if concept_lists is None or isinstance(concept_lists, CompactLists):
        return concept_lists
    if isinstance(concept_lists, (str, PathLike)):
        return load_lists(concept_lists, concepts)
    problems = Problems(MAX_PROBLEMS)
    entries = ((i, [image_id, *names]) for i, (image_id, names) in enumerate(concept_lists, 1))
    lists = _parse_lists(entries, concepts, problems)
    problems.raise_if_any("<concept lists>")
    return lists


def write_concept_lists(run: Run, path: PathArg) -> None:
    """Write the lists implied by run.listed (every concept if None), in vocabulary order, atomically."""
    check_ids_writable(run)
    mask = run.listed_mask()
    names = np.array(run.concepts, dtype=object)
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as handle:
        for image_id, row in zip(run.image_ids, mask):
            handle.write(" ".join([image_id, *names[row]]) + "\n")
