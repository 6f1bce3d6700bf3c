"""The command line's parser pieces: values checked where they are parsed, usage errors in one line,
and help that states defaults.

A value out of its range (`--top-k 0`) is refused by argparse before any work starts, as one line
naming the option, with exit status 2: the same as every other error of the command line.
"""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An integer >= 1: a count of things to take (top-k, cores, images)."""
    return _int_at_least(text, 1, "a positive integer")


def non_negative_int(text: str) -> int:
    """An integer >= 0: a seed, or a count where 0 means none or every."""
    return _int_at_least(text, 0, "an integer >= 0")


def share(text: str) -> float:
    """A number in (0, 1]: a share of something, such as an image's size."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text!r} is not in (0, 1]")
    return value


def _int_at_least(text: str, least: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default, when it has one worth saying."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("default" in text or action.required or not action.option_strings or default is None or default is False
                or default is argparse.SUPPRESS or isinstance(action, (argparse._HelpAction, argparse._VersionAction))):
            return text
        shown = " ".join(map(str, default)) if isinstance(default, list) else default
        return f"{text} (default: {shown if shown != '' else 'none'})"


class Parser(argparse.ArgumentParser):
    """A parser whose usage errors are one line, like every other error of the command line (argparse's
    own prints the whole usage first)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(**kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")
