"""The tiers (tests/tiers.py): every test gets its marks from the code it runs, and a test that
reaches a gateway its marks lack fails, so that `-m fast` stays free of builds and ../shared."""

from __future__ import annotations

import os
import re
import shutil
import tomllib
from pathlib import Path

from tiers import TIERS, TierFinder, tier_marks, tiers_of

TESTS = Path(__file__).resolve().parent

# Tests whose tiers are known, each found a different way; checked where the run selected them.
KNOWN = {
    "tests/test_workflow.py::test_lint_is_clean": {"workflow"},  # a command naming snakemake
    "tests/test_workflow.py::test_demo_build": {"workflow"},  # a fixture's build
    "tests/test_release.py::test_every_file_of_a_release_is_in_its_manifest[msrc_build]":
        {"workflow", "real_data"},  # a fixture named by a parametrize value
    "tests/test_neighbour_blocks.py::test_a_larger_build_plans_several_search_jobs_per_feature":
        {"workflow"},  # run_snakemake behind a function imported from another test module
    "tests/test_illustration.py::test_end_to_end_on_the_shared_pages[kiwix]": {"real_data"},  # a fixture param
    "tests/test_boxes_runs.py::test_detections_folder_faults_name_their_file_and_line": {"real_data"},  # a list
    "tests/test_gist.py::test_colour_gist_matches_lear_on_all_40_inputs": {"real_data"},  # require_shared
    "tests/test_measures.py::test_2013_f1_matches_sklearn_on_scene": {"real_data"},  # read_scene in a fixture
    "tests/test_fuzz.py::test_a_case_is_the_same_bytes_every_time": {"fuzz"},
    "tests/test_plan.py::test_the_demo_is_a_small_build_whose_per_run_jobs_merge": {"fast"},
}


def test_every_selected_test_has_the_marks_of_the_code_it_runs(request):
    items = request.session.items
    finder = TierFinder({item.path.parent for item in items})
    assert items
    for item in items:
        assert tier_marks(item) == (tiers_of(finder, item) or {"fast"}), item.nodeid
    selected = {item.nodeid: tier_marks(item) for item in items}
    for nodeid, marks in KNOWN.items():
        if nodeid in selected:
            assert selected[nodeid] == marks, nodeid


def test_known_tests_still_exist():
    """KNOWN names real tests (a renamed one would make its check vacuous)."""
    for nodeid in KNOWN:
        path, name = nodeid.split("::")
        function = re.sub(r"\[.*\]$", "", name)
        assert f"def {function}(" in (TESTS.parent / path).read_text(encoding="utf-8"), nodeid


TINY = '''
import os

import pytest

import helpers
from helpers import REAL, require_shared, run_snakemake

DATA = REAL / "somewhere"


def build_it(workdir):
    return run_snakemake(workdir, "--version")


def test_plain():
    assert sum([1, 1]) == 2


def test_through_a_helper(tmp_path):
    build_it(tmp_path)


def test_in_a_lambda():
    return lambda: helpers.run_snakemake(".", "-n")


def test_in_a_comprehension():
    return [require_shared(path) for path in ()]


def test_a_shared_constant():
    return DATA.exists()


@pytest.mark.parametrize("path", [REAL / "x"])
def test_a_shared_parameter(path):
    pass


@pytest.fixture(params=[REAL / "y"])
def shared_param(request):
    return request.param


def test_a_fixture_param(shared_param):
    pass


def test_a_build_fixture(demo_build):
    pass


@pytest.mark.parametrize("name", ["msrc_build"])
def test_a_fixture_by_name(name, request):
    request.getfixturevalue(name)


def test_a_local_import():
    from helpers import bsds_photos

    return bsds_photos


def test_a_command():
    return ["python", "-m", "snakemake", "--lint"]


def test_hidden_run():
    getattr(helpers, "run_" + "snakemake")(".", "--version")


def test_hidden_read(tmp_path):
    helpers.TIER_GUARD.shared = (str(tmp_path),)  # as if tmp_path were ../shared
    (tmp_path / "data.txt").write_text("x")
    open(os.path.join(str(tmp_path), "data.txt")).close()
'''

PRINT_TIERS = '''
def pytest_collection_finish(session):
    for item in session.items:
        names = sorted(m.name for m in item.iter_markers() if m.name in ("fast", "workflow", "real_data", "fuzz"))
        print("TIERS", item.name, ",".join(names))
'''

EXPECTED = {
    "test_plain": "fast",
    "test_through_a_helper": "workflow",
    "test_in_a_lambda": "workflow",
    "test_in_a_comprehension": "real_data",
    "test_a_shared_constant": "real_data",
    "test_a_shared_parameter[path0]": "real_data",
    "test_a_fixture_param[shared_param0]": "real_data",
    "test_a_build_fixture": "workflow",
    "test_a_fixture_by_name[msrc_build]": "real_data,workflow",
    "test_a_local_import": "real_data",
    "test_a_command": "workflow",
    "test_hidden_run": "fast",
    "test_hidden_read": "fast",
    "test_campaign": "fuzz",
}


def test_the_hook_marks_a_tiny_suite_and_the_guard_fails_what_it_misses(pytester, monkeypatch):
    """The suite's own conftest.py on a tiny suite: each way of reaching a gateway is found, and the
    two hidden ones (a name built at run time, a path opened by string) fail at run time."""
    shutil.copy(TESTS / "conftest.py", pytester.path / "conftest.py")
    markers = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    pytester.makeini("[pytest]\nmarkers =\n" + "".join(f"    {line}\n" for line in markers))
    pytester.makepyfile(test_tiny=TINY, tierprint=PRINT_TIERS,
                        test_fuzz="def test_campaign():\n    pass\n")
    path = [str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path))
    collected = pytester.runpytest_subprocess("-p", "tierprint", "--collect-only", "-q", "--strict-markers")
    found = dict(line.split()[1:3] for line in collected.outlines if line.startswith("TIERS "))
    assert found == EXPECTED, collected.outlines[-30:]
    assert set(TIERS) | {"fast"} >= {tier for tiers in found.values() for tier in tiers.split(",")}

    ran = pytester.runpytest_subprocess("-k", "hidden or plain")
    ran.assert_outcomes(passed=1, failed=2)
    text = ran.stdout.str()
    assert "test_hidden_run runs Snakemake but is not marked 'workflow'" in text
    assert "test_hidden_read reads" in text and "is not marked 'real_data'" in text
    assert text.count("the tier hook (tests/tiers.py) missed it") >= 2
