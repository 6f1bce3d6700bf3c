"""The fuzz suite, seeded and short (about 2 minutes): every reader of files nobody here wrote, on mutations
of the shared real files, each case bounded in memory and time, must end in output, its documented error or
a rejects row.

The harness (tests/fuzz/harness.py, with the targets in tests/fuzz/targets.py) is shared with the long
campaign, tests/fuzz/campaign.py. Here each target gets its unmutated seeds (which must read: a harness whose
reader fails on real files tests nothing) and one case of each mutator, in one child process limited to
4 GiB of address space, 1 GB resident and 30 s a case. The hypothesis tests mutate the text formats
in-process, where hypothesis can shrink a failing file to its smallest form.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import REAL, REPO, require_shared

sys.path.insert(0, str(REPO / "tests" / "fuzz"))

from harness import (  # noqa: E402
    FAILED,
    MUTATORS,
    PASSED,
    Bounds,
    Case,
    build_seeds,
    classify,
    mutated,
    run_batch,
    seeded_cases,
)
from targets import TARGETS  # noqa: E402


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_mutation_of_real_files_ends_in_output_a_documented_error_or_a_rejects_row(target, tmp_path):
    require_shared(REAL)
    seeds = build_seeds(target, tmp_path / "aux")
    cases = seeded_cases(target, seeds, 1, random.Random(target))
    results = run_batch(target, cases, seeds, tmp_path / "aux", tmp_path / "cases")
    unread_seeds = [r.case.seed_name for r in results if r.case.mutator == "none" and r.outcome not in ("ok", "rejects")]
    assert not unread_seeds, f"real files the reader refuses: {unread_seeds}"
    failures = [f"{r.case.key}: {r.outcome} ({r.seconds:.1f} s, {r.peak_mb:.0f} MB): {r.error}\n{r.traceback}"
                for r in results if r.outcome in FAILED]
    assert not failures, "\n".join(failures)
    assert {r.case.mutator for r in results} == {"none", *MUTATORS}


def test_the_harness_sees_each_kind_of_failure_and_goes_on_after_a_killed_or_dead_child(tmp_path):
    orders = ["ok", "documented", "rejects", "raise", "allocate", "sleep", "ok", "abort", "ok"]
    seeds = {f"{k}.txt": order.encode() for k, order in enumerate(orders)}
    cases = [Case("harness_check", name, "none", 0) for name in seeds]
    results = run_batch("harness_check", cases, seeds, tmp_path, tmp_path / "cases", Bounds(seconds=5))
    outcomes = [r.outcome for r in results]
    assert outcomes == ["ok", "documented", "rejects", "traceback", "over_memory", "over_time", "ok", "crash", "ok"]
    assert "KeyError: 'undocumented'" in results[3].error and "Traceback" in results[3].traceback
    assert results[4].peak_mb > 1024


def test_a_case_is_the_same_bytes_every_time():
    seed = bytes(range(256)) * 40
    for mutator in MUTATORS:
        case = Case("t", "seed", mutator, 7)
        assert mutated(case, seed) == mutated(case, seed), mutator
    assert mutated(Case("t", "seed", "bit_flips", 7), seed) != mutated(Case("t", "seed", "bit_flips", 8), seed)


# --- in-process, with hypothesis: the text formats, small edits ----------------------------

TEXT_TARGETS = ("ground_truth", "illustration_truth", "illustration_run", "selection_run", "caption_run",
                "caption_references", "run_text", "config", "regions_canonical_csv")
SMALL_MUTATORS = sorted(set(MUTATORS) - {"compression_bomb"})  # in-process: nothing that takes seconds


@pytest.fixture(scope="module")
def text_seeds(tmp_path_factory) -> dict[str, tuple[dict[str, bytes], Path]]:
    require_shared(REAL)
    root = tmp_path_factory.mktemp("fuzz-seeds")
    return {name: (build_seeds(name, root / name), root / name) for name in TEXT_TARGETS}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.sampled_from(TEXT_TARGETS), mutator=st.sampled_from(SMALL_MUTATORS),
       number=st.integers(0, 1 << 30), position=st.floats(0, 1), inserted=st.binary(max_size=16))
def test_text_readers_give_output_or_a_documented_error_on_any_edit(text_seeds, tmp_path_factory, target, mutator,
                                                                    number, position, inserted):
    seeds, aux = text_seeds[target]
    name = sorted(seeds)[number % len(seeds)]
    data = mutated(Case(target, name, mutator, number), seeds[name])
    at = int(position * len(data))
    path = tmp_path_factory.mktemp("case") / name
    path.write_bytes(data[:at] + inserted + data[at:])
    reader = TARGETS[target]
    outcome, error, trace = classify(lambda: reader.read(path, aux), reader.documented())
    assert outcome in PASSED, f"{target} {mutator} {number}: {error}\n{trace}"
