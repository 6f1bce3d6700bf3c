"""What is wrong with a run or a companion file: problems that name their line, collected up to a limit.

Shared by every checker of submitted files (concept runs, box runs, ranking runs), with the
separator check of the space-separated text forms (concept and box runs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Callable, Sequence, TextIO, Union

from annobench.core.errors import AnnobenchError

MAX_PROBLEMS = 100
# Whitespace that is not a single space between fields: a leading one, two in a row, a tab or other.
BAD_SEPARATOR = re.compile(r"^\s|\s\s|[^\S ]")

PathArg = Union[str, PathLike]


@dataclass(frozen=True)
class RunProblem:
    """One thing wrong with a run or a companion file: 1-based line (0 = the whole file) and what;
    `file` names the file of a run that is a folder of files (its line is that file's)."""

    line: int
    message: str
    file: str = ""

    def where(self, path: PathArg) -> str:
        """`RUN:LINE`, or `RUN/FILE:LINE` for a file of a folder run."""
        return f"{Path(path) / self.file if self.file else path}:{self.line}"


class RunFormatError(AnnobenchError):
    """A run, vocabulary or concept-list file is malformed; `problems` says where and how."""

    def __init__(self, problems: Sequence[RunProblem], path: PathArg = ""):
        self.problems = list(problems)
        self.path = str(path)
        super().__init__("\n".join(self.report_lines()))

    def report_lines(self) -> list[str]:
        return [f"{p.where(self.path)}: {p.message}" for p in self.problems]


class Problems:
    """Collects problems up to a limit and counts the rest."""

    def __init__(self, limit: int):
        self.limit = limit
        self.found: list[RunProblem] = []
        self.total = 0

    def has_room(self) -> bool:
        return len(self.found) < self.limit

    def add(self, line: int, message: str, file: str = "") -> int | None:
        """Record a problem; returns its index in `found`, or None if past the limit."""
        self.total += 1
        if not self.has_room():
            return None
        self.found.append(RunProblem(line, message, file))
        return len(self.found) - 1

    def result(self) -> list[RunProblem]:
        unlisted = self.total - len(self.found)
        if not unlisted:
            return list(self.found)
        more = f"{unlisted} more problem(s) not listed (the listing stops at {self.limit})"
        return self.found + [RunProblem(0, more)]

    def raise_if_any(self, path: PathArg) -> None:
        if self.total:
            raise RunFormatError(self.result(), path)


def quote(token: str, width: int = 40) -> str:
    """The token as a message shows it: quoted, and cut short if long."""
    return repr(token if len(token) <= width else token[:width] + "...")


def check_main(run_path: PathArg, scan: Callable[[], tuple[list[RunProblem], str]], out: TextIO,
               input_errors: tuple[type[Exception], ...] = ()) -> int:
    """The body of a run checker's command: `scan` gives the run's problems and, for a valid run, a
    summary. One line per problem and 2, or `RUN: valid, SUMMARY` and 0; an unusable file (a
    RunFormatError, an unreadable file, one of `input_errors`, whose message names its file) gives 2."""
    try:
        problems, summary = scan()
    except RunFormatError as error:
        for line in error.report_lines():
            print(line, file=out)
        return 2
    except input_errors as error:
        print(error, file=out)
        return 2
    except OSError as error:
        print(f"{error.filename or run_path}: cannot read: {error.strerror or error}", file=out)
        return 2
    for problem in problems:
        print(f"{problem.where(run_path)}: {problem.message}", file=out)
    if problems:
        return 2
    print(f"{run_path}: valid, {summary}", file=out)
    return 0


def describe_separator(match: re.Match) -> str:
    """Where a BAD_SEPARATOR match is and what it is, in words, for a problem message."""
    for offset, char in enumerate(match.group()):
        if char != " ":
            name = "a tab" if char == "\t" else f"whitespace U+{ord(char):04X}"
            return f"{name} at column {match.start() + offset + 1}"
    if match.start() == 0:
        return "the line starts with a space"
    return f"two spaces at column {match.start() + 1}"
