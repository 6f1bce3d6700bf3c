"""The package's shape: one sub-package per stage, layers checked by import-linter, no import loops."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

from helpers import REPO

PACKAGE = REPO / "annobench"
STAGES = ("core", "sources", "images", "visual", "text", "regions", "benchmark", "release", "projection")
# Entry points: the command line (cli, bench, demo) and the workflow's plan, read by the rule files.
TOP_LEVEL = {"__init__.py", "__main__.py", "cli.py", "bench.py", "demo.py", "plan.py"}
MAX_LINES = 700


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """import-linter on the package under `root`, with the project's contract file."""
    lint = Path(sys.executable).with_name("lint-imports")
    command = [str(lint)] if lint.exists() else [sys.executable, "-m", "importlinter.cli"]
    return subprocess.run([*command, "--config", str(root / ".importlinter"), "--no-cache"], cwd=root,
                          capture_output=True, text=True, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def test_layers_contracts_are_kept():
    done = lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 kept, 0 broken" in done.stdout


def lint_with_import(tmp_path: Path, module: str, imported: str) -> subprocess.CompletedProcess:
    """import-linter on a copy of the package where `module` (a path under annobench/) also imports `imported`."""
    shutil.copytree(PACKAGE, tmp_path / "annobench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / ".importlinter", tmp_path / ".importlinter")
    path = tmp_path / "annobench" / module
    path.write_text(path.read_text() + f"\nimport {imported}  # noqa\n")
    return lint_imports(tmp_path)


def test_an_upward_import_breaks_the_layers_contract(tmp_path):
    done = lint_with_import(tmp_path, "core/layout.py", "annobench.release.assemble")
    assert done.returncode != 0
    assert "annobench.core is not allowed to import annobench.release" in done.stdout
    assert "annobench.core.layout -> annobench.release.assemble" in done.stdout


def test_a_subtask_importing_another_breaks_the_subtasks_contract(tmp_path):
    done = lint_with_import(tmp_path, "benchmark/boxes/stage.py", "annobench.benchmark.annotation.ground_truth")
    assert done.returncode != 0
    assert "annobench.benchmark.boxes is not allowed to import annobench.benchmark.annotation" in done.stdout
    assert "annobench.benchmark.boxes.stage -> annobench.benchmark.annotation.ground_truth" in done.stdout


def test_every_stage_is_a_package_with_a_docstring_saying_what_it_takes_and_gives():
    for stage in STAGES:
        init = PACKAGE / stage / "__init__.py"
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert docstring and "takes" in docstring.lower() and "give" in docstring.lower(), stage


def test_only_the_entry_points_sit_beside_the_stage_packages():
    modules = {p.name for p in PACKAGE.iterdir() if p.suffix == ".py"}
    assert modules <= TOP_LEVEL, sorted(modules - TOP_LEVEL)
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert packages == set(STAGES)


def test_no_module_is_longer_than_700_lines():
    lengths = {p.relative_to(REPO).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
               for p in PACKAGE.rglob("*.py")}
    too_long = {path: lines for path, lines in lengths.items() if lines > MAX_LINES}
    assert not too_long


def import_loops(graph: grimp.ImportGraph) -> list[list[str]]:
    """Groups of modules that import each other, directly or through others (Tarjan's strongly
    connected components of the import graph; every import counts, inside functions too)."""
    index, low, stack, on_stack, loops = {}, {}, [], set(), []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                loops.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return loops


def test_no_two_modules_import_each_other():
    graph = grimp.build_graph("annobench", include_external_packages=False)
    assert import_loops(graph) == []


def test_the_loop_finder_sees_a_loop_through_a_third_module(tmp_path, monkeypatch):
    package = tmp_path / "looped"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from looped import b\n")
    (package / "b.py").write_text("def f():\n    from looped import c\n")
    (package / "c.py").write_text("import looped.a\n")
    (package / "d.py").write_text("import looped.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("looped", include_external_packages=False)
    assert import_loops(graph) == [["looped.a", "looped.b", "looped.c"]]
