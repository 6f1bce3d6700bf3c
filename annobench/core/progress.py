"""Progress lines for long jobs, written to the job's log."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Callable, Iterator

# CPU seconds this process had used when its job's work began (interpreter, Snakemake's
# script preamble, imports): a fixed cost per job, which the speed measurements (perf/) set apart.
startup_cpu_seconds: float | None = None


@contextlib.contextmanager
def job_log(path: Path | str) -> Iterator[Callable[[str], None]]:
    """A job's log file as a function that writes one line and flushes it (progress is read live)."""
    global startup_cpu_seconds
    if startup_cpu_seconds is None:
        startup_cpu_seconds = time.process_time()
    with open(path, "w", encoding="utf-8") as handle:
        def write(line: str) -> None:
            handle.write(line + "\n")
            handle.flush()

        yield write


class Progress:
    def __init__(self, label: str, total: int, write: Callable[[str], None], every_seconds: float = 10.0):
        self.label, self.total, self.write = label, total, write
        self.every_seconds = every_seconds
        self.done = 0
        self.rejected = 0
        self.started = time.monotonic()
        self._last = self.started
        self.write(f"{self.label}: starting, {self.total} items")

    def step(self, rejected: bool = False) -> None:
        self.done += 1
        self.rejected += int(rejected)
        now = time.monotonic()
        if now - self._last >= self.every_seconds and self.done < self.total:
            self._last = now
            self.write(self._line(now))

    def finish(self) -> None:
        self.write(self._line(time.monotonic()) + " (done)")

    def _line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        percent = 100.0 * self.done / self.total if self.total else 100.0
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        rejected = f", {self.rejected} rejected" if self.rejected else ""
        return f"{self.label}: {self.done}/{self.total} ({percent:.1f}%), {rate:.1f}/s{rejected}, eta {eta:.0f} s"
