"""The project's own error: bad input named and explained, never a bug.

Every stage's error class derives from `AnnobenchError`, so the command line
catches this one type and prints it as one line with exit status 2; any other
exception is a bug and keeps its traceback.
"""

from __future__ import annotations


class AnnobenchError(ValueError):
    """An input (file, option, setting) that cannot be used; the message names it and what is wrong.

    A ValueError, as the stage errors were before they shared this base, so callers that catch
    ValueError still do."""

    def report_lines(self) -> list[str]:
        """What the command line prints: one line (an error listing many problems, such as a run's, gives
        one line per problem instead, each naming its file and line)."""
        return ["annobench: " + " ".join(str(self).splitlines())]
