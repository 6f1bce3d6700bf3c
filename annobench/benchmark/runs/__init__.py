"""Runs (SPEC 8 "Run formats"): check, read and write what a benchmark participant submits.

A run gives every test image a confidence score in [0, 1] and a binary
decision for each concept it is evaluated on. Three forms hold the same content:

- ``imageclef2012`` (seed 004): one line per image, ``id s0 d0 s1 d1 ... s(N-1) d(N-1)``,
  single spaces, every concept of the vocabulary in vocabulary order;
- ``imageclef2013`` (the 2013-2016 campaigns): each image has its own concept
  list (a companion file of lines ``id c_a c_b ...``); run line i belongs to
  concept-list line i and holds pairs only for that list's concepts, in list order;
- ``parquet``: one row per (line, listed concept), for runs too big for text tools.

The checker refuses what the official one refuses (wrong line count, ids out of
order, wrong number of fields, a non-numeric score, a decision other than 0/1)
and more, naming the line and field of every problem. It streams the run: the
memory it needs grows with the concept lists (without lists, with the set of
image ids), not with the run's pairs.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from typing import Iterator, Sequence, TextIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from annobench.benchmark.runs.concepts import (
    CompactLists,
    ConceptLists,
    as_lists,
    load_lists,
    read_concepts,
    vocabulary_index,
)
from annobench.benchmark.runs.model import Run, check_ids_writable
from annobench.benchmark.runs.problems import MAX_PROBLEMS, PathArg, Problems, RunFormatError, RunProblem, quote
from annobench.core.fsutil import atomic_path
from annobench.core.tables import META_PARAMS, field, write_table_blocks

FORMS = ("imageclef2012", "imageclef2013", "parquet")
RUN_ARTEFACT = "run"
_TEXT_BLOCK_LINES = 4096  # lines parsed together when reading a text run

# Scores are written with 6 decimals: the real ImageCLEF runs print them so, a
# fixed width keeps writing byte-deterministic, and a score read back from
# 6 decimals is written again identically. The price: scores less than 1e-6
# apart may become tied, which the 2012 measures (ties enter together) see.
SCORE_DECIMALS = 6
_SCALE = 10**SCORE_DECIMALS
# One written pair: " d.dddddd b" (a separating space, the score, a space, the decision).
_PAIR_WIDTH = 5 + SCORE_DECIMALS

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


# ---------------------------------------------------------------- checking the text forms

# A line whose every score is plainly in [0, 1] and every decision is 0 or 1;
# nearly every line of a valid run matches, and only the others are taken
# apart field by field (which is what names the faulty field).
_PLAIN_LINE = re.compile(r"\S+(?: (?:0(?:\.[0-9]*)?|1(?:\.0*)?|\.[0-9]+) [01])*")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_BAD_SEPARATOR = re.compile(r"^\s|\s\s|[^\S ]")


class _Record:
    """One line of a text run, taken apart as far as the checker needs."""

    __slots__ = ("number", "image_id", "n_fields", "notes", "issues")

    def __init__(self, number: int, image_id: str | None, n_fields: int, notes: list[str], issues: list):
        self.number = number
        self.image_id = image_id  # None: a blank line
        self.n_fields = n_fields
        self.notes = notes  # problems of the line as a whole (encoding, separators)
        self.issues = issues  # (pair index, is score, token, what is wrong)


def _line_text(raw: bytes) -> bytes:
    # Tolerated, because neither changes the fields: the line end (the real 2014
    # runs end every line, the last included, with "\n"; "\r\n" from Windows
    # editors too) and spaces before it (a run printed by a loop writing
    # "score decision " per concept ends its lines with a space, and the
    # organisers' tools split lines on whitespace).
    return raw.rstrip(b"\r\n").rstrip(b" ")


def _read_record(number: int, raw: bytes) -> _Record:
    body = _line_text(raw)
    notes: list[str] = []
    try:
        text, readable = body.decode("utf-8"), True
    except UnicodeDecodeError as error:
        notes.append(f"not valid UTF-8: byte 0x{body[error.start]:02x} at byte {error.start + 1} of the line")
        text, readable = body.decode("utf-8", "replace"), False
    if number == 1 and text.startswith("\ufeff"):
        notes.append("the file starts with a byte-order mark (U+FEFF); a run is plain UTF-8 without one")
        text = text[1:]
    if not text.strip():
        return _Record(number, None, 0, notes, [])
    if readable and _PLAIN_LINE.fullmatch(text):
        return _Record(number, text.partition(" ")[0], text.count(" ") + 1, notes, [])
    separator = _BAD_SEPARATOR.search(text)
    if separator:
        notes.append(f"fields must be separated by single spaces: {_describe_separator(separator)}")
    fields = text.split()
    issues = _value_issues(fields) if readable else []
    return _Record(number, fields[0], len(fields), notes, issues)


def _describe_separator(match: re.Match) -> str:
    for offset, char in enumerate(match.group()):
        if char != " ":
            name = "a tab" if char == "\t" else f"whitespace U+{ord(char):04X}"
            return f"{name} at column {match.start() + offset + 1}"
    if match.start() == 0:
        return "the line starts with a space"
    return f"two spaces at column {match.start() + 1}"


def _value_issues(fields: list[str]) -> list[tuple[int, bool, str, str]]:
    issues = []
    for position in range(1, len(fields)):
        pair, is_decision = divmod(position - 1, 2)
        token = fields[position]
        reason = _decision_issue(token) if is_decision else _score_issue(token)
        if reason:
            issues.append((pair, not is_decision, token, reason))
    return issues


def _score_issue(token: str) -> str | None:
    if _NUMBER.fullmatch(token):
        value = float(token)  # a huge exponent gives inf, which the range test refuses
        return None if 0.0 <= value <= 1.0 else "is outside [0, 1]"
    bare = token.lower().lstrip("+-")
    if bare == "nan":
        return "is NaN; a score is a number in [0, 1]"
    if bare in ("inf", "infinity"):
        return "is infinite; a score is a number in [0, 1]"
    return "is not a number"


def _decision_issue(token: str) -> str | None:
    return None if token in ("0", "1") else "is not 0 or 1"


def _field_label(pair: int, is_score: bool, names: Sequence[str] | None) -> str:
    number = 2 + 2 * pair + (0 if is_score else 1)
    owner = f"concept '{names[pair]}'" if names is not None and pair < len(names) else f"pair {pair + 1}"
    return f"field {number} ({'score' if is_score else 'decision'} of {owner})"


def _pairs_text(n_fields: int) -> str:
    pairs, lone = divmod(n_fields - 1, 2)
    return f"{pairs} pairs" + (" and a lone field" if lone else "")


_VOCABULARY = -1  # "slot" of a line checked against the whole vocabulary (no concept lists)


class _TextScan:
    """Checks the records of a text run in order, matching line i to concept-list line i."""

    def __init__(self, concepts: Sequence[str], lists: CompactLists | None, problems: Problems):
        self.concepts = concepts
        self.lists = lists
        self.problems = problems
        self.slot = 0  # next concept-list line (0-based) a run line should belong to
        self.n_lines = 0
        self.n_pairs = 0
        self.last_number = 0
        self.first_line: dict[str, int] = {}  # without lists: where each id was first seen
        self.extra_lines = 0
        self.extra_problem: int | None = None

    def feed(self, record: _Record, following: _Record | None) -> None:
        for note in record.notes:
            self.problems.add(record.number, note)
        if record.image_id is None:
            self.problems.add(record.number, "blank line: a run has exactly one line per image and no empty lines")
            return
        self.n_lines += 1
        self.n_pairs += (record.n_fields - 1) // 2
        self.last_number = record.number
        slot = self._place(record, following) if self.lists is not None else self._place_without_lists(record)
        if slot is not None and not self._count_is_right(record, slot):
            return  # with the wrong count, which pair is which concept is unknown: values wait for the fix
        names = self._names(slot) if slot is not None and record.issues else None
        for pair, is_score, token, reason in record.issues:
            self.problems.add(record.number, f"{_field_label(pair, is_score, names)}: {quote(token)} {reason}")

    def _place_without_lists(self, record: _Record) -> int:
        first = self.first_line.setdefault(record.image_id, record.number)
        if first != record.number:
            self.problems.add(record.number, f"repeated image id '{record.image_id}' (first on line {first}): "
                                             "without concept lists each image has exactly one line")
        return _VOCABULARY

    def _place(self, record: _Record, following: _Record | None) -> int | None:
        """The concept-list line this run line belongs to, or None if it belongs to none.

        Ids repeat, so lines are matched by position, not by id. When line and
        list diverge, one line of look-ahead tells a missing line, a line too
        many and two swapped lines apart, so one fault gives one report
        instead of a misalignment reported on every later line.
        """
        lists, j, image_id = self.lists, self.slot, record.image_id
        if j >= len(lists):
            self._line_too_many(record)
            return None
        if image_id == lists.ids[j]:
            self.slot += 1
            return j
        next_id = following.image_id if following is not None else None
        fits_next_slot = j + 1 < len(lists) and image_id == lists.ids[j + 1]
        if fits_next_slot and next_id != lists.ids[j]:
            self.problems.add(record.number, f"missing line: no run line for image '{lists.ids[j]}' "
                                             f"(concept-list line {j + 1}) before this one")
            self.slot += 2
            return j + 1
        if next_id == lists.ids[j] and not fits_next_slot:
            unknown = "" if lists.contains(image_id) else " (an id on no line of the concept lists)"
            self.problems.add(record.number, f"unexpected line for image '{image_id}'{unknown}: the next line has "
                                             f"image '{lists.ids[j]}' of concept-list line {j + 1}, so this line "
                                             "is one too many")
            return None
        self.slot += 1
        self.problems.add(record.number, self._misplaced_message(record, j, swapped=next_id == lists.ids[j]))
        return None

    def _misplaced_message(self, record: _Record, j: int, swapped: bool) -> str:
        lists, image_id = self.lists, record.image_id
        due = f"line {record.number} should be image '{lists.ids[j]}' (concept-list line {j + 1})"
        if not lists.contains(image_id):
            return f"unknown image id '{image_id}': it is on no line of the concept lists ({due})"
        if not self.problems.has_room():
            return "image id out of order"  # not listed: spare the search below
        hint = f" (the next line has '{lists.ids[j]}': two lines swapped?)" if swapped else ""
        return (f"image id '{image_id}' out of order: {due}; '{image_id}' is first on concept-list line "
                f"{lists.first_line_of(image_id)}{hint}")

    def _line_too_many(self, record: _Record) -> None:
        self.extra_lines += 1
        if self.extra_lines == 1:
            self.extra_problem = self.problems.add(record.number, self._too_many_message())

    def _too_many_message(self) -> str:
        more = f" ({self.extra_lines} lines too many from here)" if self.extra_lines > 1 else ""
        return (f"line too many: the concept lists have {len(self.lists)} lines; "
                f"the run should end before this line{more}")

    def _count_is_right(self, record: _Record, slot: int) -> bool:
        if slot == _VOCABULARY:
            expected, whose = len(self.concepts), "one per vocabulary concept"
        else:
            expected, whose = self.lists.count(slot), f"one per concept of concept-list line {slot + 1}"
        if record.n_fields == 1 + 2 * expected:
            return True
        self.problems.add(record.number, f"wrong number of fields: {record.n_fields} (image id + "
                                         f"{_pairs_text(record.n_fields)}); expected {1 + 2 * expected} "
                                         f"(image id + {expected} score/decision pairs, {whose})")
        return False

    def _names(self, slot: int) -> Sequence[str]:
        if slot == _VOCABULARY:
            return self.concepts
        return [self.concepts[c] for c in self.lists.columns(slot)]

    def finish(self) -> None:
        if self.n_lines == 0:
            self.problems.add(0, "empty file: no run lines")
            return
        lists = self.lists
        if lists is not None and self.slot < len(lists):
            self.problems.add(self.last_number + 1, f"missing line(s): the run ends after {self.n_lines} lines but the "
                                                    f"concept lists have {len(lists)} (first without a run line: image "
                                                    f"'{lists.ids[self.slot]}', concept-list line {self.slot + 1})")
        if self.extra_problem is not None and self.extra_lines > 1:
            line = self.problems.found[self.extra_problem].line
            self.problems.found[self.extra_problem] = RunProblem(line, self._too_many_message())


def _scan_text(path: PathArg, concepts: Sequence[str], lists: CompactLists | None, problems: Problems) -> tuple[int, int]:
    scan = _TextScan(concepts, lists, problems)
    with open(path, "rb") as handle:
        records = (_read_record(number, raw) for number, raw in enumerate(handle, 1))
        current = next(records, None)
        while current is not None:
            following = next(records, None)
            scan.feed(current, following)
            current = following
    scan.finish()
    return scan.n_lines, scan.n_pairs


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
    return bool(json.loads(raw).get("per_image_lists", True)) if raw else True


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
                known = "out of order" if lists.contains(ids[s]) else "unknown (on no line of the concept lists)"
                found.append((number, f"image id '{ids[s]}' {known}: concept-list line {number} is '{expected}'"))
            elif counts[s] != lists.count(number - 1):
                fine[s] = False
                found.append((number, f"{counts[s]} concepts where concept-list line {number} lists "
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
            found.append((number, f"the line's concepts differ from concept-list line {number} (which lists: {names})"))

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
            self.problems.add(n_lines + 1, f"missing line(s): the run ends after {n_lines} lines but the concept "
                                           f"lists have {len(self.lists)}")
        elif self.extra_lines:
            self.problems.add(len(self.lists) + 1, f"line too many: the concept lists have {len(self.lists)} lines "
                                                   f"and the run {n_lines}")
        return n_lines


def _scan_parquet(path: PathArg, concepts: Sequence[str], lists: CompactLists | None, problems: Problems) -> tuple[int, int]:
    try:
        parquet = pq.ParquetFile(path)
    except pa.ArrowInvalid as error:
        problems.add(0, f"not a readable Parquet file: {error}")
        return 0, 0
    layout = _parquet_layout_problem(parquet.schema_arrow)
    if layout:
        problems.add(0, layout)
        return 0, 0
    scan = _ParquetScan(concepts, lists, _per_image_lists(path), problems)
    for block in _blocks_of_whole_lines(parquet, concepts):
        scan.check_block(block)
    return scan.finish(), scan.n_pairs


# ---------------------------------------------------------------- public checking and reading


def _is_parquet(path: PathArg) -> bool:
    return str(path).endswith(".parquet")


def _check(path: PathArg, concepts: Sequence[str], lists: CompactLists | None,
           max_problems: int) -> tuple[list[RunProblem], int, int]:
    """The problems, the number of lines and the number of pairs of a run."""
    vocabulary_index(concepts)
    problems = Problems(max_problems)
    scan = _scan_parquet if _is_parquet(path) else _scan_text
    n_lines, n_pairs = scan(path, concepts, lists, problems)
    return problems.result(), n_lines, n_pairs


def check_run(
    path: PathArg,
    concepts: Sequence[str],
    concept_lists: ConceptLists | PathArg | None = None,
    max_problems: int = MAX_PROBLEMS,
) -> list[RunProblem]:
    """Every problem of the run (up to max_problems, then one saying how many more), in line order.

    Without concept lists every line must hold the whole vocabulary (the 2012
    form). concept_lists may also be the path of a list file.
    """
    problems, _, _ = _check(path, concepts, as_lists(concept_lists, concepts), max_problems)
    return problems


def read_run(path: PathArg, concepts: Sequence[str], concept_lists: ConceptLists | PathArg | None = None) -> Run:
    """Check the run (RunFormatError with every problem if any), then read it into matrices.

    A Parquet run (name ending in .parquet) carries its lists in its rows, so
    concept_lists is optional for it; given, the rows must agree with them.
    """
    lists = as_lists(concept_lists, concepts)
    problems, n_lines, _ = _check(path, concepts, lists, MAX_PROBLEMS)
    if problems:
        raise RunFormatError(problems, path)
    if _is_parquet(path):
        return _read_parquet(path, concepts, lists, n_lines)
    return _read_text(path, concepts, lists, n_lines)


def _read_text(path: PathArg, concepts: Sequence[str], lists: CompactLists | None, n_lines: int) -> Run:
    shape = (n_lines, len(concepts))
    scores = np.full(shape, np.nan)
    decisions = np.zeros(shape, dtype=bool)
    listed = None if lists is None else np.zeros(shape, dtype=bool)
    image_ids: list[str] = []
    with open(path, "rb") as handle:
        for first in range(0, n_lines, _TEXT_BLOCK_LINES):
            # Lines are parsed a block at a time so the matrices are filled by a
            # few vectorised assignments, not one per line; float() reads bytes.
            score_tokens: list[bytes] = []
            decision_tokens: list[bytes] = []
            for raw in itertools.islice(handle, _TEXT_BLOCK_LINES):
                fields = _line_text(raw).split(b" ")
                image_ids.append(fields[0].decode("utf-8"))
                score_tokens += fields[1::2]
                decision_tokens += fields[2::2]
            values = np.array(list(map(float, score_tokens)), dtype=np.float64)
            chosen = np.frombuffer(b"".join(decision_tokens), dtype=np.uint8) == ord("1")
            stop = len(image_ids)
            if lists is None:
                scores[first:stop] = values.reshape(stop - first, -1)
                decisions[first:stop] = chosen.reshape(stop - first, -1)
                continue
            rows = np.repeat(np.arange(first, stop), lists.counts[first:stop])
            columns = lists.flat[lists.starts[first] : lists.starts[stop]]
            scores[rows, columns] = values
            decisions[rows, columns] = chosen
            listed[rows, columns] = True
    return Run(image_ids, list(concepts), scores, decisions, listed)


def _read_parquet(path: PathArg, concepts: Sequence[str], lists: CompactLists | None, n_lines: int) -> Run:
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



def _check_writable(run: Run, form: str) -> None:
    if form not in FORMS:
        raise ValueError(f"unknown run form {form!r}; choose one of {', '.join(FORMS)}")
    check_ids_writable(run)
    mask = run.listed_mask()
    bad = mask & ~((run.scores >= 0) & (run.scores <= 1))  # NaN fails both tests
    if bad.any():
        row, column = np.argwhere(bad)[0]
        raise ValueError(f"image '{run.image_ids[row]}' (line {row + 1}), concept '{run.concepts[column]}': "
                         f"score {float(run.scores[row, column])!r} is not in [0, 1]")
    if form == "imageclef2012":
        if not mask.all():
            raise ValueError("the run has per-image concept lists: write it in the imageclef2013 form "
                             "(with write_concept_lists) or as parquet")
        if len(set(run.image_ids)) != len(run.image_ids):
            raise ValueError("the run repeats image ids, which the imageclef2012 form (no concept lists) cannot hold")


def write_run(run: Run, path: PathArg, form: str) -> None:
    """Write the run atomically in one of FORMS; the same run always gives the same bytes.

    imageclef2013 writes each line's pairs in vocabulary order, the order
    write_concept_lists gives the lists (a Run keeps which concepts are
    listed, not the order a list file had).
    """
    _check_writable(run, form)
    if form == "parquet":
        _write_parquet(run, path)
        return
    mask = run.listed_mask()
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        for chunk in _text_chunks(run, mask):
            handle.write(chunk)


def _pair_bytes(scores: np.ndarray, decisions: np.ndarray) -> np.ndarray:
    """(k, _PAIR_WIDTH) uint8: each row the text " d.dddddd b", built without formatting floats one by one."""
    fixed = np.rint(scores * _SCALE).astype(np.int64)  # in [0, 10**6]; stable for scores read from 6 decimals
    out = np.empty((len(fixed), _PAIR_WIDTH), dtype=np.uint8)
    out[:, 0] = ord(" ")
    out[:, 1] = ord("0") + fixed // _SCALE
    out[:, 2] = ord(".")
    for place in range(SCORE_DECIMALS):
        out[:, 3 + place] = ord("0") + fixed // 10 ** (SCORE_DECIMALS - 1 - place) % 10
    out[:, -2] = ord(" ")
    out[:, -1] = ord("0") + decisions.astype(np.uint8)
    return out


def _text_chunks(run: Run, mask: np.ndarray, lines_per_chunk: int = 4096) -> Iterator[bytes]:
    for first in range(0, len(run.image_ids), lines_per_chunk):
        block = slice(first, first + lines_per_chunk)
        rows, columns = np.nonzero(mask[block])
        pairs = _pair_bytes(run.scores[block][rows, columns], run.decisions[block][rows, columns]).tobytes()
        ends = np.cumsum(mask[block].sum(axis=1)) * _PAIR_WIDTH
        begin, parts = 0, []
        for image_id, end in zip(run.image_ids[block], ends.tolist()):
            parts += [image_id.encode(), pairs[begin:end], b"\n"]
            begin = end
        yield b"".join(parts)


def _write_parquet(run: Run, path: PathArg) -> None:
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


# ---------------------------------------------------------------- the check-run command


def check_run_main(concepts_path: PathArg, run_path: PathArg, lists_path: PathArg | None = None,
                   out: TextIO | None = None) -> int:
    """Body of `annobench check-run`: one line per problem and 2, or a one-line summary and 0."""
    out = out or sys.stdout  # looked up at call time, so a redirected stdout is used
    try:
        concepts = read_concepts(concepts_path)
        lists = load_lists(lists_path, concepts) if lists_path is not None else None
        problems, n_lines, n_pairs = _check(run_path, concepts, lists, MAX_PROBLEMS)
    except RunFormatError as error:
        for line in error.report_lines():
            print(line, file=out)
        return 2
    except OSError as error:
        print(f"{error.filename or run_path}: cannot read: {error.strerror or error}", file=out)
        return 2
    for problem in problems:
        print(f"{run_path}:{problem.line}: {problem.message}", file=out)
    if problems:
        return 2
    print(f"{run_path}: valid, {n_lines} lines, {n_pairs} pairs", file=out)
    return 0
