"""What is wrong with a run or a companion file: problems that name their line, collected up to a limit."""

from __future__ import annotations

from dataclasses import dataclass
from os import PathLike
from typing import Sequence, Union

MAX_PROBLEMS = 100

PathArg = Union[str, PathLike]


@dataclass(frozen=True)
class RunProblem:
    """One thing wrong with a run or a companion file: 1-based line (0 = the whole file) and what."""

    line: int
    message: str


class RunFormatError(ValueError):
    """A run, vocabulary or concept-list file is malformed; `problems` says where and how."""

    def __init__(self, problems: Sequence[RunProblem], path: PathArg = ""):
        self.problems = list(problems)
        self.path = str(path)
        super().__init__("\n".join(self.report_lines()))

    def report_lines(self) -> list[str]:
        return [f"{self.path}:{p.line}: {p.message}" for p in self.problems]


class Problems:
    """Collects problems up to a limit and counts the rest."""

    def __init__(self, limit: int):
        self.limit = limit
        self.found: list[RunProblem] = []
        self.total = 0

    def has_room(self) -> bool:
        return len(self.found) < self.limit

    def add(self, line: int, message: str) -> int | None:
        """Record a problem; returns its index in `found`, or None if past the limit."""
        self.total += 1
        if not self.has_room():
            return None
        self.found.append(RunProblem(line, message))
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
