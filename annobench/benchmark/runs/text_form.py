"""The two text forms of a run, ImageCLEF 2012 and 2013-2016: checked line by line, read and written.

Both are one line per image, ``id s0 d0 s1 d1 ...`` with single spaces; in the
2012 form every line holds every vocabulary concept, in the 2013 form line i
holds the concepts of concept-list line i.
"""

from __future__ import annotations

import itertools
import re
from typing import Iterator, Sequence

import numpy as np

from annobench.benchmark.problems import BAD_SEPARATOR, PathArg, Problems, RunProblem, describe_separator, quote
from annobench.benchmark.runs.concepts import CompactLists
from annobench.benchmark.runs.model import Run
from annobench.core.fsutil import atomic_path

_TEXT_BLOCK_LINES = 4096  # lines parsed together when reading a text run

# Scores are written with 6 decimals: the real ImageCLEF runs print them so, a
# fixed width keeps writing byte-deterministic, and a score read back from
# 6 decimals is written again identically. The price: scores less than 1e-6
# apart may become tied, which the 2012 measures (ties enter together) see.
SCORE_DECIMALS = 6
_SCALE = 10**SCORE_DECIMALS
# One written pair: " d.dddddd b" (a separating space, the score, a space, the decision).
_PAIR_WIDTH = 5 + SCORE_DECIMALS


# ---------------------------------------------------------------- checking the text forms

# A line whose every score is plainly in [0, 1] and every decision is 0 or 1;
# nearly every line of a valid run matches, and only the others are taken
# apart field by field (which is what names the faulty field).
_PLAIN_LINE = re.compile(r"\S+(?: (?:0(?:\.[0-9]*)?|1(?:\.0*)?|\.[0-9]+) [01])*")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


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
    separator = BAD_SEPARATOR.search(text)
    if separator:
        notes.append(f"fields must be separated by single spaces: {describe_separator(separator)}")
    fields = text.split()
    issues = _value_issues(fields) if readable else []
    return _Record(number, fields[0], len(fields), notes, issues)


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
                                             f"({lists.line_name} {j + 1}) before this one")
            self.slot += 2
            return j + 1
        if next_id == lists.ids[j] and not fits_next_slot:
            unknown = "" if lists.contains(image_id) else f" (an id on no line of the {lists.name})"
            self.problems.add(record.number, f"unexpected line for image '{image_id}'{unknown}: the next line has "
                                             f"image '{lists.ids[j]}' of {lists.line_name} {j + 1}, so this line "
                                             "is one too many")
            return None
        self.slot += 1
        self.problems.add(record.number, self._misplaced_message(record, j, swapped=next_id == lists.ids[j]))
        return None

    def _misplaced_message(self, record: _Record, j: int, swapped: bool) -> str:
        lists, image_id = self.lists, record.image_id
        due = f"line {record.number} should be image '{lists.ids[j]}' ({lists.line_name} {j + 1})"
        if not lists.contains(image_id):
            return f"unknown image id '{image_id}': it is on no line of the {lists.name} ({due})"
        if not self.problems.has_room():
            return "image id out of order"  # not listed: spare the search below
        hint = f" (the next line has '{lists.ids[j]}': two lines swapped?)" if swapped else ""
        return (f"image id '{image_id}' out of order: {due}; '{image_id}' is first on {lists.line_name} "
                f"{lists.first_line_of(image_id)}{hint}")

    def _line_too_many(self, record: _Record) -> None:
        self.extra_lines += 1
        if self.extra_lines == 1:
            self.extra_problem = self.problems.add(record.number, self._too_many_message())

    def _too_many_message(self) -> str:
        more = f" ({self.extra_lines} lines too many from here)" if self.extra_lines > 1 else ""
        return (f"line too many: the {self.lists.name} have {len(self.lists)} lines; "
                f"the run should end before this line{more}")

    def _count_is_right(self, record: _Record, slot: int) -> bool:
        if slot == _VOCABULARY:
            expected, whose = len(self.concepts), "one per vocabulary concept"
        else:
            expected, whose = self.lists.count(slot), f"one per concept of {self.lists.line_name} {slot + 1}"
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
                                                    f"{lists.name} have {len(lists)} (first without a run line: image "
                                                    f"'{lists.ids[self.slot]}', {lists.line_name} {self.slot + 1})")
        if self.extra_problem is not None and self.extra_lines > 1:
            line = self.problems.found[self.extra_problem].line
            self.problems.found[self.extra_problem] = RunProblem(line, self._too_many_message())


def scan_text(path: PathArg, concepts: Sequence[str], lists: CompactLists | None,
              problems: Problems) -> tuple[int, int]:
    """Check a text run line by line into `problems`; returns its numbers of lines and of pairs."""
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


# ---------------------------------------------------------------- reading


def read_text(path: PathArg, concepts: Sequence[str], lists: CompactLists | None, n_lines: int) -> Run:
    """Read a text run of n_lines lines, which scan_text has found valid, into matrices."""
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


# ---------------------------------------------------------------- writing


def write_text(run: Run, path: PathArg) -> None:
    """Write the run atomically as text: per line, the pairs of its listed concepts in vocabulary order."""
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
