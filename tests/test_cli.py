"""The command line as a new user meets it: help for everything, one-line errors."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from annobench.cli import build_parser

SKIPPED = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_the_program_describes_itself_to_users():
    text = build_parser().format_help()
    assert "regenerate image-annotation benchmark datasets" in text
    assert "Later stages" not in text and "developer" not in text.lower()
    for name in subcommands():
        assert name in text


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_argument_has_help_with_its_default(name):
    command = subcommands()[name]
    assert command.description, f"annobench {name} --help says nothing about what it does"
    text = command.format_help()
    for action in command._actions:
        if isinstance(action, SKIPPED):
            continue
        assert action.help, f"annobench {name}: {action.dest} has no help"
        has_default = action.option_strings and not action.required and action.default not in (None, False)
        if has_default and action.default is not False:
            shown = action.default if not isinstance(action.default, list) else " ".join(map(str, action.default))
            assert f"default: {shown}" in " ".join(text.split()), f"annobench {name}: {action.dest} hides its default"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "annobench.cli", *args], capture_output=True, text=True)


@pytest.mark.parametrize("args", [
    ("pages-map", "--pages", "{missing}", "--out", "{tmp}/map"),
    ("text", "--pages", "{missing}", "--out", "{tmp}/text"),
    ("label-stats", "--train", "{missing}", "--test", "{missing}", "--json", "{tmp}/x.json"),
    ("check-run", "--concepts", "{missing}", "{missing}"),
    ("inventory", "--images", "{missing}"),
])
def test_missing_inputs_give_one_line_and_no_traceback(tmp_path, args):
    missing = tmp_path / "no such input"
    done = run_cli(*(a.format(missing=missing, tmp=tmp_path) for a in args))
    assert done.returncode != 0
    said = done.stderr + done.stdout  # check-run reports its problems on stdout, like the official checker
    assert "Traceback" not in said
    lines = said.strip().splitlines()
    assert len(lines) == 1 and str(missing) in lines[0], said


def test_bench_without_its_data_says_what_is_missing(tmp_path, monkeypatch, capsys):
    import annobench.bench as bench
    from annobench.cli import main

    monkeypatch.setattr(bench, "BSDS", tmp_path / "absent")
    assert main(["bench", "--images", "2", "--workdir", str(tmp_path / "work")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("annobench: needs the BSDS500 photos"), lines
