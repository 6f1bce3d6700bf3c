"""The Parquet form of a run: one row per (line, listed concept), for runs too big for text tools.

Checked a block of rows at a time with vectorised tests, read and written here.
"""

from __future__ import annotations

import json
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from annobench.benchmark.problems import PathArg, Problems, quote
from annobench.benchmark.runs.concepts import CompactLists
from annobench.benchmark.runs.model import Run
from annobench.core.tables import META_PARAMS, field, write_table_blocks

RUN_ARTEFACT = "run"

# Parquet form. `decision` is bool: the data model holds decisions as bool and
# Arrow packs them in bits. `line` is explicit because image ids may repeat
# (the real 2014 runs repeat ids), so the id alone cannot order the rows. A line
# whose concept list is empty keeps one row with null concept, score and
# decision, so its id and position survive.
RUN_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "test image of the line"),
        field("concept", pa.string(), "a concept of the line's list (null: the list is empty)", nullable=True),
        field("score", pa.float64(), "confidence in [0, 1] that the concept is present", nullable=True),
        field("decision", pa.bool_(), "the run's binary decision on the concept", nullable=True),
        field("line", pa.int32(), "line of the equivalent text run, from 1; rows are in line then list order"),
    ]
)


def is_parquet(path: PathArg) -> bool:
    """Whether the run at `path` is in the Parquet form, which its name says."""
    return str(path).endswith(".parquet")


# ---------------------------------------------------------------- checking the Parquet form

_PARQUET_COLUMNS = ("image_id", "concept", "score", "decision", "line")
_BATCH_ROWS = 64 * 1024  # rows per Parquet row group and per block checked or read
_NULL_CONCEPT = -2
_UNKNOWN_CONCEPT = -1


def _parquet_layout_problem(schema: pa.Schema) -> str | None:
    expected = {
        "image_id": pa.types.is_string, "concept": pa.types.is_string, "score": pa.types.is_floating,
        "decision": lambda t: pa.types.is_boolean(t) or pa.types.is_integer(t), "line": pa.types.is_integer,
    }
    for name, is_right in expected.items():
        if name not in schema.names:
            return f"no column '{name}' (a Parquet run has columns {', '.join(_PARQUET_COLUMNS)})"
        if not is_right(schema.field(name).type):
            return f"column '{name}' has type {schema.field(name).type}; expected {RUN_SCHEMA.field(name).type}"
    return None


def _per_image_lists(path: PathArg) -> bool:
    """Whether the Parquet run was written with per-image lists (a run of unknown origin: yes)."""
    raw = (pq.read_schema(path).metadata or {}).get(META_PARAMS)
    try:
        params = json.loads(raw) if raw else {}
    except (ValueError, RecursionError):  # metadata someone else wrote: a run of unknown origin
        params = {}
    return bool(params.get("per_image_lists", True)) if isinstance(params, dict) else True


class _Block:
    """Rows of a Parquet run as arrays; concept as a vocabulary column (or _NULL/_UNKNOWN_CONCEPT)."""

    def __init__(self, line: np.ndarray, image_id: pa.Array, concept_name: pa.Array, concept: np.ndarray,
                 score: np.ndarray, decision: np.ndarray):
        self.line, self.image_id, self.concept_name = line, image_id, concept_name
        self.concept, self.score, self.decision = concept, score, decision

    @classmethod
    def from_batch(cls, batch: pa.RecordBatch, vocabulary: pa.Array) -> _Block:
        name = batch.column("concept")
        concept = pc.index_in(name, value_set=vocabulary).fill_null(_UNKNOWN_CONCEPT).to_numpy().astype(np.int64)
        concept[name.is_null().to_numpy(zero_copy_only=False)] = _NULL_CONCEPT
        return cls(
            batch.column("line").cast(pa.int64()).fill_null(0).to_numpy(),
            batch.column("image_id"),
            name,
            concept,
            batch.column("score").cast(pa.float64()).to_numpy(zero_copy_only=False),  # null -> NaN
            batch.column("decision").cast(pa.int64()).fill_null(-1).to_numpy(),
        )

    def __len__(self) -> int:
        return len(self.line)

    def slice(self, start: int, stop: int) -> _Block:
        return _Block(self.line[start:stop], self.image_id[start:stop], self.concept_name[start:stop],
                      self.concept[start:stop], self.score[start:stop], self.decision[start:stop])

    def then(self, other: _Block) -> _Block:
        return _Block(
            np.concatenate([self.line, other.line]), pa.concat_arrays([self.image_id, other.image_id]),
            pa.concat_arrays([self.concept_name, other.concept_name]), np.concatenate([self.concept, other.concept]),
            np.concatenate([self.score, other.score]), np.concatenate([self.decision, other.decision]),
        )


def _blocks_of_whole_lines(parquet: pq.ParquetFile, concepts: Sequence[str]) -> Iterator[_Block]:
    """The run's rows in blocks that never split a line (a line may straddle two batches)."""
    vocabulary = pa.array(list(concepts), pa.string())
    carry: _Block | None = None
    for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, columns=list(_PARQUET_COLUMNS)):
        block = _Block.from_batch(batch, vocabulary)
        block = carry.then(block) if carry is not None else block
        if not len(block):
            continue
        differs = block.line[::-1] != block.line[-1]
        last_start = len(block) - int(np.argmax(differs)) if differs.any() else 0
        carry = block.slice(last_start, len(block))
        if last_start:
            yield block.slice(0, last_start)
    if carry is not None and len(carry):
        yield carry


def _segments(line: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start row of each line's run of rows, and each row's line index within the block."""
    new = np.r_[True, line[1:] != line[:-1]]
    return np.flatnonzero(new), np.cumsum(new) - 1


def _concatenated_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """np.concatenate([np.arange(s, s + c) for s, c in zip(starts, counts)]), without the loop."""
    ends = np.cumsum(counts)
    return np.repeat(starts - (ends - counts), counts) + np.arange(ends[-1] if len(ends) else 0)


class _ParquetScan:
    """Checks a Parquet run block by block, each test a vectorised pass over the block."""

    def __init__(self, concepts: Sequence[str], lists: CompactLists | None, per_image_lists: bool, problems: Problems):
        self.concepts = concepts
        self.lists = lists
        self.whole_vocabulary = lists is None and not per_image_lists
        self.problems = problems
        self.next_line = 1
        self.n_pairs = 0
        self.first_line: dict[str, int] = {}
        self.extra_lines = 0

    def check_block(self, block: _Block) -> None:
        found: list[tuple[int, str]] = []  # reported in line order once the block is done
        starts, segment = _segments(block.line)
        numbers = block.line[starts]
        self._check_numbering(numbers, found)
        ids = block.image_id.take(pa.array(starts)).to_pylist()
        broken = self._check_ids(block, starts, segment, numbers, found)
        broken |= self._check_rows(block, starts, segment, numbers, found)
        counts = np.bincount(segment[block.concept >= 0], minlength=len(starts))
        self.n_pairs += int(counts.sum())
        fine = ~broken
        if self.lists is not None:
            self._check_against_lists(block, starts, segment, numbers, ids, counts, fine, found)
        elif self.whole_vocabulary:
            self._check_whole_vocabulary(block, starts, segment, numbers, ids, counts, fine, found)
        for line, message in sorted(found, key=lambda item: item[0]):
            self.problems.add(line, message)

    def _check_numbering(self, numbers: np.ndarray, found: list) -> None:
        due = np.r_[self.next_line, numbers[:-1] + 1]
        for k in np.flatnonzero(numbers != due):
            found.append((int(numbers[k]), f"line numbers must run 1, 2, 3, ... in row order: line {numbers[k]} "
                                           f"where line {due[k]} was due"))
        self.next_line = int(numbers[-1]) + 1

    def _check_ids(self, block, starts, segment, numbers, found) -> np.ndarray:
        """Lines whose rows name no image or two images."""
        ids = block.image_id
        bad = np.zeros(len(starts), dtype=bool)
        bad[segment[ids.is_null().to_numpy(zero_copy_only=False)]] = True
        if len(ids) > 1:
            differs = pc.not_equal(ids[1:], ids[:-1]).fill_null(True).to_numpy(zero_copy_only=False)
            within = segment[1:] == segment[:-1]
            bad[segment[1:][differs & within]] = True
        for s in np.flatnonzero(bad):
            found.append((int(numbers[s]), "the rows of one line must all name the same (non-null) image id"))
        return bad

    def _check_rows(self, block, starts, segment, numbers, found) -> np.ndarray:
        """Report bad concepts, scores and decisions; returns the lines whose concepts are not all known."""
        concept, score, decision = block.concept, block.score, block.decision
        lengths = np.diff(np.r_[starts, len(block)])
        null = concept == _NULL_CONCEPT
        # Only a line with an empty list has a row without concept: alone, with null score and decision.
        stray = null & ~((lengths[segment] == 1) & np.isnan(score) & (decision == -1))
        for k in np.flatnonzero(stray):
            found.append((int(block.line[k]), "a row without concept; only a line whose list is empty has one, "
                                              "alone and with null score and decision"))
        for k in np.flatnonzero(concept == _UNKNOWN_CONCEPT):
            name = quote(str(block.concept_name[k]))
            found.append((int(block.line[k]), f"unknown concept {name} (not in the vocabulary)"))
        known = concept >= 0
        for k in np.flatnonzero(known & ~((score >= 0) & (score <= 1))):
            what = "is missing" if np.isnan(score[k]) else f"{float(score[k])!r} is outside [0, 1]"
            found.append((int(block.line[k]), f"score of concept '{self.concepts[concept[k]]}': {what}"))
        for k in np.flatnonzero(known & (decision != 0) & (decision != 1)):
            what = "is missing" if decision[k] == -1 else f"{int(decision[k])} is not 0 or 1"
            found.append((int(block.line[k]), f"decision of concept '{self.concepts[concept[k]]}': {what}"))
        keys = np.sort(segment[known] * len(self.concepts) + concept[known])
        for key in np.unique(keys[1:][keys[1:] == keys[:-1]]):
            s, column = divmod(int(key), len(self.concepts))
            found.append((int(numbers[s]), f"concept '{self.concepts[column]}' listed twice"))
        bad = np.zeros(len(starts), dtype=bool)
        bad[segment[stray | (concept == _UNKNOWN_CONCEPT)]] = True
        return bad

    def _check_against_lists(self, block, starts, segment, numbers, ids, counts, fine, found) -> None:
        lists = self.lists
        listed = (numbers >= 1) & (numbers <= len(lists))  # line numbers below 1 are reported already
        self.extra_lines += int((numbers > len(lists)).sum())
        for s in np.flatnonzero(fine & listed):
            number, expected = int(numbers[s]), lists.ids[numbers[s] - 1]
            if ids[s] != expected:
                fine[s] = False
                known = "out of order" if lists.contains(ids[s]) else f"unknown (on no line of the {lists.name})"
                found.append((number, f"image id '{ids[s]}' {known}: {lists.line_name} {number} is '{expected}'"))
            elif counts[s] != lists.count(number - 1):
                fine[s] = False
                found.append((number, f"{counts[s]} concepts where {lists.line_name} {number} lists "
                                      f"{lists.count(number - 1)}"))
        # Each row names its concept, so a line must hold its list's concepts in any order.
        chosen = np.flatnonzero(fine & listed)
        wanted = lists.flat[_concatenated_ranges(lists.starts[numbers[chosen] - 1], counts[chosen])]
        wanted_keys = np.sort(np.repeat(chosen, counts[chosen]) * len(self.concepts) + wanted)
        rows = np.isin(segment, chosen) & (block.concept >= 0)
        have_keys = np.sort(segment[rows] * len(self.concepts) + block.concept[rows])
        for s in np.unique(have_keys[have_keys != wanted_keys] // len(self.concepts)):
            number = int(numbers[s])
            names = " ".join(self.concepts[c] for c in lists.columns(number - 1))
            found.append((number, f"the line's concepts differ from {lists.line_name} {number} (which lists: {names})"))

    def _check_whole_vocabulary(self, block, starts, segment, numbers, ids, counts, fine, found) -> None:
        n_concepts = len(self.concepts)
        position = np.arange(len(block)) - starts[segment]
        misplaced = np.zeros(len(starts), dtype=bool)
        misplaced[segment[block.concept != position]] = True
        for s in np.flatnonzero(fine & (misplaced | (counts != n_concepts))):
            found.append((int(numbers[s]), f"the run was written without per-image lists, so each line must hold "
                                           f"every vocabulary concept in vocabulary order ({counts[s]} of "
                                           f"{n_concepts} here)"))
        for s, image_id in enumerate(ids):
            first = self.first_line.setdefault(image_id, int(numbers[s]))
            if first != numbers[s]:
                found.append((int(numbers[s]), f"repeated image id '{image_id}' (first on line {first})"))

    def finish(self) -> int:
        n_lines = self.next_line - 1
        if n_lines == 0:
            self.problems.add(0, "empty run: no rows")
        elif self.lists is not None and n_lines < len(self.lists):
            self.problems.add(n_lines + 1, f"missing line(s): the run ends after {n_lines} lines but the "
                                           f"{self.lists.name} have {len(self.lists)}")
        elif self.extra_lines:
            self.problems.add(len(self.lists) + 1, f"line too many: the {self.lists.name} have {len(self.lists)} lines "
                                                   f"and the run {n_lines}")
        return n_lines


# What pyarrow raises on a damaged file: ArrowInvalid for a bad footer or schema, OSError for a page
# that does not decompress or deserialize.
PARQUET_DAMAGE = (pa.ArrowException, OSError)


def scan_parquet(path: PathArg, concepts: Sequence[str], lists: CompactLists | None,
                 problems: Problems) -> tuple[int, int]:
    """Check a Parquet run block by block into `problems`; returns its numbers of lines and of pairs."""
    try:
        parquet = pq.ParquetFile(path)
        layout = _parquet_layout_problem(parquet.schema_arrow)
        if layout:
            problems.add(0, layout)
            return 0, 0
        scan = _ParquetScan(concepts, lists, _per_image_lists(path), problems)
        for block in _blocks_of_whole_lines(parquet, concepts):
            scan.check_block(block)
    except PARQUET_DAMAGE as error:  # found page by page: a damaged page can be anywhere in the file
        problems.add(0, f"not a readable Parquet file: {' '.join(str(error).split())}")
        return 0, 0
    return scan.finish(), scan.n_pairs


# ---------------------------------------------------------------- reading


def read_parquet(path: PathArg, concepts: Sequence[str], lists: CompactLists | None, n_lines: int) -> Run:
    """Read a Parquet run of n_lines lines, which scan_parquet has found valid, into matrices."""
    shape = (n_lines, len(concepts))
    scores = np.full(shape, np.nan)
    decisions = np.zeros(shape, dtype=bool)
    listed = None if lists is None and not _per_image_lists(path) else np.zeros(shape, dtype=bool)
    image_ids: list[str] = []
    for block in _blocks_of_whole_lines(pq.ParquetFile(path), concepts):
        starts, _ = _segments(block.line)
        image_ids += block.image_id.take(pa.array(starts)).to_pylist()
        cells = block.concept >= 0  # leaves out the placeholder rows of empty lists
        rows, columns = block.line[cells] - 1, block.concept[cells]
        scores[rows, columns] = block.score[cells]
        decisions[rows, columns] = block.decision[cells] == 1
        if listed is not None:
            listed[rows, columns] = True
    return Run(image_ids, list(concepts), scores, decisions, listed)


# ---------------------------------------------------------------- writing


def write_parquet(run: Run, path: PathArg) -> None:
    """Write the run in the Parquet form; the metadata keeps its vocabulary and whether it has lists."""
    # One block of lines at a time: a whole table for a 500,000-line run is
    # several times the size of the run's matrices.
    params = {"vocabulary": run.concepts, "per_image_lists": run.listed is not None}
    write_table_blocks(_parquet_blocks(run, RUN_SCHEMA), RUN_SCHEMA, path, RUN_ARTEFACT, params)


def _parquet_blocks(run: Run, schema: pa.Schema) -> Iterator[pa.Table]:
    mask = run.listed_mask()
    ids = pa.array(run.image_ids, pa.string())
    names = pa.array(run.concepts, pa.string())
    lines_per_block = max(1, _BATCH_ROWS // len(run.concepts))
    for first in range(0, len(run.image_ids), lines_per_block):
        listed = mask[first : first + lines_per_block]
        # A line with an empty list keeps one row (put in column 0) with nulls.
        cells = listed | (~listed.any(axis=1, keepdims=True) & (np.arange(len(run.concepts)) == 0))
        rows, columns = np.nonzero(cells)
        placeholder = ~listed[rows, columns]
        line = rows + first
        yield pa.table(
            {
                "image_id": ids.take(pa.array(line)),
                "concept": names.take(pa.array(columns, mask=placeholder)),
                "score": pa.array(run.scores[line, columns], pa.float64(), mask=placeholder),
                "decision": pa.array(run.decisions[line, columns], pa.bool_(), mask=placeholder),
                "line": pa.array(line + 1, pa.int32()),
            },
            schema=schema,
        )
