"""Each test's tier, found from the code it runs, so that no test author has to mark one.

`workflow`: the test (or a fixture it uses) runs Snakemake: helpers.run_snakemake,
annobench.projection.sleep_run.sleep_run, or a command naming "snakemake". `real_data`: it
reads ../shared: helpers.require_shared, or a path under ../shared (module constants,
parametrize values, fixture params). `fuzz`: the fuzz campaign
(tests/test_fuzz.py). `fast`: none of these.

The search reads code objects: the test function's and its fixtures' (those a parametrize value
names too, for request.getfixturevalue), following every name they use that resolves to a
function, class or module of tests/ (co_names in the function's globals), their nested code
(lambdas, inner functions, comprehensions), closures and defaults. helpers.TIER_GUARD fails a
test at run time where this misses a gateway.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import helpers
from annobench.projection.sleep_run import sleep_run

TESTS = Path(__file__).resolve().parent
TIERS = ("workflow", "real_data", "fuzz")
FUZZ_MODULES = {"test_fuzz.py"}
# sleep_run runs Snakemake from annobench code, where the search does not look.
GATEWAYS = {helpers.run_snakemake: "workflow", sleep_run: "workflow", helpers.require_shared: "real_data"}
SHARED_PREFIXES = tuple({str(helpers.SHARED), os.path.realpath(helpers.SHARED)})


def under_shared(value, depth: int = 0) -> bool:
    """A path under ../shared, or a container holding one."""
    if isinstance(value, os.PathLike):
        return os.path.abspath(os.fspath(value)).startswith(SHARED_PREFIXES)
    if isinstance(value, str):
        return value.startswith(SHARED_PREFIXES)
    if depth < 3 and isinstance(value, (list, tuple, set, frozenset)):
        return any(under_shared(item, depth + 1) for item in value)
    if depth < 3 and isinstance(value, dict):
        return any(under_shared(item, depth + 1) for item in (*value.keys(), *value.values()))
    return False


class TierFinder:
    """Tiers of functions and code objects, each worked out once."""

    def __init__(self, folders=()) -> None:
        """folders: where the test code lives (tests/, and the folders of the collected tests)."""
        self._folders = {TESTS, *(Path(folder).resolve() for folder in folders)}
        self._files: dict[str, bool] = {}
        self._code: dict[types.CodeType, frozenset[str]] = {}
        self._objects: dict[int, tuple[object, frozenset[str]]] = {}  # functions and classes, by id

    def of_value(self, value) -> set[str]:
        if isinstance(value, (types.FunctionType, type)):
            if id(value) not in self._objects:
                self._objects[id(value)] = (value, frozenset())  # a recursion back here adds nothing
                self._objects[id(value)] = (value, frozenset(self._of_value(value)))
            return set(self._objects[id(value)][1])
        return self._of_value(value)

    def _of_value(self, value) -> set[str]:
        try:
            if value in GATEWAYS:
                return {GATEWAYS[value]}
        except TypeError:  # unhashable
            pass
        if under_shared(value):
            return {"real_data"}
        wrapped = getattr(value, "__wrapped__", None)  # functools.lru_cache, wraps
        if wrapped is not None and callable(value) and not isinstance(value, types.ModuleType):
            return self.of_value(wrapped)
        if isinstance(value, types.FunctionType) and self._in_tests(value):
            return self.of_function(value)
        if isinstance(value, type) and self._in_tests(value):
            found = set()
            for member in vars(value).values():
                found |= self.of_value(getattr(member, "__func__", member))
            return found
        return set()

    def _file_in_tests(self, module) -> bool:
        path = getattr(module, "__file__", None) or ""
        if path not in self._files:
            self._files[path] = bool(path) and Path(path).resolve().parent in self._folders
        return self._files[path]

    def _in_tests(self, obj) -> bool:
        return self._file_in_tests(sys.modules.get(getattr(obj, "__module__", None) or ""))

    def of_function(self, function) -> set[str]:
        inner = getattr(getattr(function, "hypothesis", None), "inner_test", None)  # @given
        if inner is not None:
            function = inner
        function = getattr(function, "__func__", function)
        code = getattr(function, "__code__", None)
        if code is None:
            return set()
        found = set(self.of_code(code, function.__globals__))
        for cell in function.__closure__ or ():
            try:
                found |= self.of_value(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
        for default in (*(function.__defaults__ or ()), *(function.__kwdefaults__ or {}).values()):
            found |= self.of_value(default)
        return found

    def of_code(self, code: types.CodeType, namespace: dict) -> frozenset[str]:
        if code in self._code:
            return self._code[code]
        self._code[code] = frozenset()  # a recursion back here adds nothing
        found: set[str] = set()
        modules = [namespace[name] if name in namespace else sys.modules.get(name) for name in code.co_names]
        # helpers.X, and `from helpers import X` in a function body
        modules = [m for m in modules if isinstance(m, types.ModuleType) and self._file_in_tests(m)]
        for name in code.co_names:
            if name in namespace:
                found |= self.of_value(namespace[name])
            for module in modules:
                if name in vars(module):
                    found |= self.of_value(vars(module)[name])
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                found |= self.of_code(const, namespace)
            elif const == "snakemake" or (isinstance(const, tuple) and "snakemake" in const):
                found.add("workflow")  # a command that runs it: [python, "-m", "snakemake", ...]
            elif under_shared(const):
                found.add("real_data")
        self._code[code] = frozenset(found)
        return self._code[code]


def _fixture_tiers(finder: TierFinder, item, names, seen: set[str]) -> set[str]:
    found = set()
    manager = item.session._fixturemanager
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        for definition in manager.getfixturedefs(name, item) or ():
            found |= finder.of_function(definition.func)
            found |= _fixture_tiers(finder, item, definition.argnames, seen)
            for param in definition.params or ():
                found |= finder.of_value(param)
    return found


def tiers_of(finder: TierFinder, item) -> set[str]:
    """The tiers of one collected test (empty: fast)."""
    found = set()
    if item.path.name in FUZZ_MODULES:
        found.add("fuzz")
    function = getattr(item, "function", None)
    if function is not None:
        found |= finder.of_function(function)
    info = getattr(item, "_fixtureinfo", None)
    names = list(info.names_closure) if info is not None else []
    callspec = getattr(item, "callspec", None)
    for value in (callspec.params.values() if callspec is not None else ()):
        found |= finder.of_value(value)
        if isinstance(value, str):  # a fixture's name, for request.getfixturevalue
            names.append(value)
    found |= _fixture_tiers(finder, item, names, set())
    return found


def mark_items(items) -> None:
    """Give every item its tier marks: those found, or `fast`."""
    import pytest

    finder = TierFinder({item.path.parent for item in items})
    for item in items:
        found = tiers_of(finder, item)
        for tier in sorted(found) or ["fast"]:
            item.add_marker(getattr(pytest.mark, tier))


def tier_marks(item) -> set[str]:
    return {mark.name for mark in item.iter_markers() if mark.name in (*TIERS, "fast")}
