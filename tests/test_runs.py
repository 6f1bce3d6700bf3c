"""Runs (the run formats of the ImageCLEF 2012 task page and of Villegas and Paredes 2014, section
2.2): checker, reader and writers, on the two real ImageCLEF 2014 runs."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annobench.benchmark.problems import RunFormatError
from annobench.benchmark.runs.checker import check_run, check_run_main
from annobench.benchmark.runs.concepts import read_concept_lists, read_concepts, write_concept_lists
from annobench.benchmark.runs.files import read_run, write_run
from annobench.benchmark.runs.model import Run
from annobench.core.tables import read_metadata
from helpers import REAL, require_shared

REAL_RUNS = REAL / "runs" / "imageclef2014_devel"
RUN_NAMES = ["baseline_random_devel.res", "baseline_occurrence_devel_sift.res"]
VOCABULARY = [f"concept{k:03d}" for k in range(100)]


def real_lines(name: str) -> list[bytes]:
    """The real run's lines as bytes, without their "\\n" (every line, the last included, has one)."""
    data = require_shared(REAL_RUNS / name).read_bytes()
    assert data.endswith(b"\n")
    return data.split(b"\n")[:-1]


def implied_lists(lines: list[bytes]) -> list[tuple[str, list[str]]]:
    """Line i: its id and as many concepts (the first of the vocabulary) as it has pairs."""
    lists = []
    for line in lines:
        fields = line.decode().split(" ")
        lists.append((fields[0], VOCABULARY[: (len(fields) - 1) // 2]))
    return lists


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


@pytest.fixture
def vocabulary_file(tmp_path: Path) -> Path:
    path = tmp_path / "concepts.txt"
    path.write_text("\n".join(VOCABULARY) + "\n", encoding="utf-8")
    return path


def lists_file(tmp_path: Path, lines: list[bytes]) -> Path:
    path = tmp_path / "lists.txt"
    path.write_text("".join(" ".join([i, *names]) + "\n" for i, names in implied_lists(lines)), encoding="utf-8")
    return path


def main_output(vocabulary: Path, run: Path, lists: Path | None) -> tuple[int, list[str]]:
    out = io.StringIO()
    code = check_run_main(vocabulary, run, lists, out=out)
    return code, out.getvalue().splitlines()


# ---------------------------------------------------------------- the real runs are valid


@pytest.mark.parametrize("name", RUN_NAMES)
def test_real_runs_pass_and_read_as_their_text_says(name, tmp_path, vocabulary_file):
    lines = real_lines(name)
    lists = lists_file(tmp_path, lines)
    path = REAL_RUNS / name
    assert check_run(path, VOCABULARY, lists) == []
    assert check_run(path, VOCABULARY, implied_lists(lines)) == []  # the lists as tuples, not a file
    run = read_run(path, VOCABULARY, lists)

    assert run.scores.shape == (1940, 100) and run.listed is not None
    assert run.image_ids == [line.split(b" ")[0].decode() for line in lines]
    assert len(set(run.image_ids)) == 1000  # ids repeat: lines are matched by position
    for row, line in enumerate(lines):
        fields = line.split(b" ")[1:]
        n = len(fields) // 2
        assert np.array_equal(run.scores[row, :n], [float(s) for s in fields[0::2]])
        assert np.array_equal(run.decisions[row, :n], [d == b"1" for d in fields[1::2]])
        assert run.listed[row, :n].all() and not run.listed[row, n:].any()
        assert np.isnan(run.scores[row, n:]).all() and not run.decisions[row, n:].any()

    n_pairs = sum(len(line.split(b" ")) // 2 for line in lines)
    code, output = main_output(vocabulary_file, path, lists)
    assert (code, output) == (0, [f"{path}: valid, 1940 lines, {n_pairs} pairs"])


@pytest.mark.parametrize("name", RUN_NAMES)
def test_real_run_rewritten_in_the_2013_form_is_byte_identical(name, tmp_path):
    lines = real_lines(name)
    lists = lists_file(tmp_path, lines)
    run = read_run(REAL_RUNS / name, VOCABULARY, lists)
    write_run(run, tmp_path / "again.res", "imageclef2013")
    write_concept_lists(run, tmp_path / "again_lists.txt")
    assert (tmp_path / "again.res").read_bytes() == (REAL_RUNS / name).read_bytes()
    assert (tmp_path / "again_lists.txt").read_bytes() == lists.read_bytes()
    assert read_concept_lists(tmp_path / "again_lists.txt", VOCABULARY) == implied_lists(lines)


# ---------------------------------------------------------------- every fault, at its line

CORRUPTIONS = {
    # name: (edit of the 1940 real lines, the lines every problem must be on, words of the first message)
    "missing line": (lambda ls: ls[:4] + ls[5:], [5], "missing line: no run line for image"),
    "missing last line": (lambda ls: ls[:-1], [1940], "missing line(s): the run ends after 1939 lines"),
    "two lines swapped": (lambda ls: ls[:9] + [ls[19]] + ls[10:19] + [ls[9]] + ls[20:], [10, 20], "out of order"),
    "neighbours swapped": (lambda ls: ls[:29] + [ls[30], ls[29]] + ls[31:], [30, 31], "two lines swapped?"),
    "wrong field count": (lambda ls: edit(ls, 33, lambda f: f[:-2]), [33], "wrong number of fields: "),
    "NaN score": (lambda ls: edit(ls, 40, lambda f: set_field(f, 2, b"nan")), [40],
                  "field 2 (score of concept 'concept000'): 'nan' is NaN"),
    "non-numeric score": (lambda ls: edit(ls, 41, lambda f: set_field(f, 4, b"abc")), [41],
                          "field 4 (score of concept 'concept001'): 'abc' is not a number"),
    "decision 2": (lambda ls: edit(ls, 42, lambda f: set_field(f, 3, b"2")), [42],
                   "field 3 (decision of concept 'concept000'): '2' is not 0 or 1"),
    "score 1.5": (lambda ls: edit(ls, 50, lambda f: set_field(f, 6, b"1.5")), [50],
                  "field 6 (score of concept 'concept002'): '1.5' is outside [0, 1]"),
    "infinite score": (lambda ls: edit(ls, 51, lambda f: set_field(f, 2, b"inf")), [51], "'inf' is infinite"),
    "empty file": (lambda ls: [], [0], "empty file"),
    "unknown id": (lambda ls: edit(ls, 7, lambda f: set_field(f, 1, b"NoSuchImage00000")), [7],
                   "unknown image id 'NoSuchImage00000'"),
    "blank line": (lambda ls: ls[:60] + [b""] + ls[60:], [61], "blank line"),
    "trailing extra line": (lambda ls: ls + [ls[0]], [1941],
                            "line too many: the concept lists have 1940 lines; the run should end before this line"),
    "line repeated": (lambda ls: ls[:70] + [ls[69]] + ls[70:], [71], "this line is one too many"),
    "non-UTF-8 byte": (lambda ls: edit(ls, 80, lambda f: set_field(f, 2, f[1] + b"\xff")), [80],
                       "not valid UTF-8: byte 0xff"),
    "tab separator": (lambda ls: ls[:89] + [ls[89].replace(b" ", b"\t", 1)] + ls[90:], [90],
                      "fields must be separated by single spaces: a tab at column 17"),
}


def edit(lines: list[bytes], number: int, change) -> list[bytes]:
    """The lines with line `number` (1-based) split into fields, changed, and joined again."""
    fields = lines[number - 1].split(b" ")
    return lines[: number - 1] + [b" ".join(change(fields))] + lines[number:]


def set_field(fields: list[bytes], number: int, value: bytes) -> list[bytes]:
    return fields[: number - 1] + [value] + fields[number:]


@pytest.mark.parametrize("fault", sorted(CORRUPTIONS))
def test_each_fault_is_reported_at_its_line(fault, tmp_path, vocabulary_file):
    lines = real_lines(RUN_NAMES[0])
    lists = lists_file(tmp_path, lines)
    corrupt, fault_lines, words = CORRUPTIONS[fault]
    run = write_lines(tmp_path / "corrupt.res", corrupt(lines))

    code, output = main_output(vocabulary_file, run, lists)
    assert code == 2
    assert all(line.startswith(f"{run}:") for line in output)
    assert [int(line[len(f"{run}:") :].split(":")[0]) for line in output] == fault_lines
    assert words in output[0]
    assert [p.line for p in check_run(run, VOCABULARY, lists)] == fault_lines
    with pytest.raises(RunFormatError) as raised:
        read_run(run, VOCABULARY, lists)
    assert [p.line for p in raised.value.problems] == fault_lines


def test_what_the_real_runs_do_not_show_is_tolerated_when_harmless(tmp_path):
    """A space before the line end, Windows line ends, no final newline and exponent notation."""
    lines = real_lines(RUN_NAMES[1])
    lists = lists_file(tmp_path, lines)
    expected = read_run(REAL_RUNS / RUN_NAMES[1], VOCABULARY, lists)
    loose = [line + b" " for line in lines[:100]] + [line + b"\r" for line in lines[100:200]] + lines[200:]
    loose = edit(loose, 300, lambda f: set_field(f, 2, b"%.6e" % float(f[1])))
    path = tmp_path / "loose.res"
    path.write_bytes(b"\n".join(loose))
    assert check_run(path, VOCABULARY, lists) == []
    assert read_run(path, VOCABULARY, lists) == expected


def test_problems_are_listed_up_to_the_limit_then_counted(tmp_path):
    lines = real_lines(RUN_NAMES[0])
    lists = lists_file(tmp_path, lines)
    broken = lines
    for number in range(1, 151):
        broken = edit(broken, number, lambda f: set_field(f, 3, b"2"))
    problems = check_run(write_lines(tmp_path / "broken.res", broken), VOCABULARY, lists, max_problems=10)
    assert [p.line for p in problems] == list(range(1, 11)) + [0]
    assert problems[-1].message.startswith("140 more problem(s) not listed")


def test_missing_files_give_one_line_and_no_traceback(tmp_path, vocabulary_file):
    code, output = main_output(vocabulary_file, tmp_path / "absent.res", None)
    assert code == 2 and len(output) == 1 and "absent.res: cannot read" in output[0]
    code, output = main_output(tmp_path / "no_concepts.txt", tmp_path / "absent.res", None)
    assert code == 2 and len(output) == 1 and "no_concepts.txt: cannot read" in output[0]


# ---------------------------------------------------------------- vocabulary and concept lists


def test_vocabulary_file_problems_name_their_line(tmp_path):
    path = tmp_path / "concepts.txt"
    path.write_text("sky\n\n  dog \ncat\ndog\n", encoding="utf-8")
    with pytest.raises(RunFormatError) as raised:
        read_concepts(path)
    assert [(p.line, p.message) for p in raised.value.problems] == [(5, "concept 'dog' repeats line 3")]
    path.write_text("sky\n\n  dog \ncat\n", encoding="utf-8")
    assert read_concepts(path) == ["sky", "dog", "cat"]
    path.write_text("\n \n", encoding="utf-8")
    with pytest.raises(RunFormatError, match=":0: empty vocabulary"):
        read_concepts(path)


def test_concept_list_problems_name_their_line(tmp_path):
    path = tmp_path / "lists.txt"
    path.write_text("a sky dog\nb sky bird\nc cat cat\nd\n", encoding="utf-8")
    with pytest.raises(RunFormatError) as raised:
        read_concept_lists(path, ["sky", "dog", "cat"])
    assert [(p.line, p.message) for p in raised.value.problems] == [
        (2, "unknown concept 'bird' (not in the vocabulary)"),
        (3, "concept 'cat' listed twice"),
    ]


# ---------------------------------------------------------------- a small hand-worked case


def test_list_order_and_an_empty_list_hand_worked(tmp_path):
    concepts = ["sky", "dog", "cat"]
    (tmp_path / "lists.txt").write_text("a cat sky\nb\nc dog\n", encoding="utf-8")
    (tmp_path / "run.res").write_text("a 0.25 1 5e-1 0\nb\nc 1 1\n", encoding="utf-8")
    run = read_run(tmp_path / "run.res", concepts, tmp_path / "lists.txt")
    assert run.image_ids == ["a", "b", "c"]
    assert np.array_equal(run.scores, [[0.5, np.nan, 0.25], [np.nan] * 3, [np.nan, 1.0, np.nan]], equal_nan=True)
    assert run.decisions.tolist() == [[False, False, True], [False] * 3, [False, True, False]]
    assert run.listed.tolist() == [[True, False, True], [False] * 3, [False, True, False]]

    # Written back, pairs and lists follow vocabulary order.
    write_run(run, tmp_path / "out.res", "imageclef2013")
    write_concept_lists(run, tmp_path / "out_lists.txt")
    assert (tmp_path / "out.res").read_text() == "a 0.500000 0 0.250000 1\nb\nc 1.000000 1\n"
    assert (tmp_path / "out_lists.txt").read_text() == "a sky cat\nb\nc dog\n"
    write_run(run, tmp_path / "out.parquet", "parquet")
    assert read_run(tmp_path / "out.parquet", concepts) == run
    assert read_run(tmp_path / "out.parquet", concepts, tmp_path / "lists.txt") == run

    # A pair for a concept the list does not have: the count is wrong.
    (tmp_path / "run.res").write_text("a 0.25 1 0.5 0\nb 0.1 0\nc 1 1\n", encoding="utf-8")
    assert check_run(tmp_path / "run.res", concepts, tmp_path / "lists.txt")[0].message.startswith(
        "wrong number of fields: 3 (image id + 1 pairs); expected 1 (image id + 0 score/decision pairs")


# ---------------------------------------------------------------- the 2012 form (no lists)


def random_run(n_images: int = 8, concepts: tuple[str, ...] = ("sky", "dog", "cat", "sea", "car"),
               seed: int = 12) -> Run:
    rng = np.random.default_rng(seed)
    shape = (n_images, len(concepts))
    ids = [f"img{k:04d}" for k in range(n_images)]
    return Run(ids, list(concepts), rng.random(shape), rng.random(shape) < 0.3, None)


def test_2012_form_round_trips_and_catches_faults(tmp_path):
    run = random_run()
    path = tmp_path / "run2012.res"
    write_run(run, path, "imageclef2012")
    first = path.read_text().splitlines()[0]
    assert first == "img0000 " + " ".join(f"{s:.6f} {int(d)}" for s, d in zip(run.scores[0], run.decisions[0]))
    assert check_run(path, run.concepts) == []
    back = read_run(path, run.concepts)
    assert back.listed is None and back.image_ids == run.image_ids
    assert np.abs(back.scores - run.scores).max() <= 5e-7 and np.array_equal(back.decisions, run.decisions)
    write_run(back, tmp_path / "again.res", "imageclef2012")
    assert (tmp_path / "again.res").read_bytes() == path.read_bytes()

    lines = path.read_bytes().split(b"\n")[:-1]
    lines = edit(lines, 3, lambda f: f[:-2])
    lines = edit(lines, 4, lambda f: set_field(f, 1, b"img0001"))
    problems = check_run(write_lines(path, lines), run.concepts)
    assert [p.line for p in problems] == [3, 4]
    assert problems[0].message.startswith("wrong number of fields: 9 (image id + 4 pairs); expected 11")
    assert problems[1].message.startswith("repeated image id 'img0001' (first on line 2)")


def test_2012_form_refuses_runs_it_cannot_hold(tmp_path):
    run = random_run()
    run.listed = np.ones(run.scores.shape, dtype=bool)
    run.listed[2, 1] = False
    with pytest.raises(ValueError, match="per-image concept lists"):
        write_run(run, tmp_path / "x.res", "imageclef2012")
    run = random_run()
    run.image_ids[3] = run.image_ids[0]
    with pytest.raises(ValueError, match="repeats image ids"):
        write_run(run, tmp_path / "x.res", "imageclef2012")
    run = random_run()
    run.scores[1, 1] = np.nan
    with pytest.raises(ValueError, match=r"image 'img0001' \(line 2\), concept 'dog': score nan"):
        write_run(run, tmp_path / "x.res", "imageclef2013")
    assert not (tmp_path / "x.res").exists()


# ---------------------------------------------------------------- every form round-trips


def test_every_form_round_trips_byte_identically(tmp_path):
    path = tmp_path / "seed.res"
    write_run(random_run(), path, "imageclef2012")
    concepts = random_run().concepts
    run = read_run(path, concepts)  # scores now have 6 decimals, which every form keeps exactly
    for form, name in [("imageclef2012", "a.res"), ("imageclef2013", "b.res"), ("parquet", "c.parquet")]:
        write_run(run, tmp_path / name, form)
        lists = None
        if form == "imageclef2013":
            write_concept_lists(run, tmp_path / "b_lists.txt")
            lists = tmp_path / "b_lists.txt"
        back = read_run(tmp_path / name, concepts, lists)
        assert np.array_equal(back.scores, run.scores) and np.array_equal(back.decisions, run.decisions)
        assert back.image_ids == run.image_ids
        write_run(back, tmp_path / f"again_{name}", form)
        assert (tmp_path / f"again_{name}").read_bytes() == (tmp_path / name).read_bytes()
    assert read_run(tmp_path / "c.parquet", concepts) == run  # listed None survives Parquet


@pytest.mark.parametrize("name", RUN_NAMES)
def test_real_run_through_parquet(name, tmp_path):
    lines = real_lines(name)
    lists = lists_file(tmp_path, lines)
    run = read_run(REAL_RUNS / name, VOCABULARY, lists)
    path = tmp_path / "run.parquet"
    write_run(run, path, "parquet")
    assert read_run(path, VOCABULARY) == run
    assert read_run(path, VOCABULARY, lists) == run
    table = pq.read_table(path)
    assert table.num_rows == sum(len(line.split(b" ")) // 2 for line in lines)
    assert table.schema.field("decision").type == pa.bool_()
    first_pairs = len(lines[0].split(b" ")) // 2
    assert table.column("line").to_pylist()[: first_pairs + 1] == [1] * first_pairs + [2]
    assert read_metadata(path)["annobench.artefact"] == "run"
    first = path.read_bytes()
    write_run(read_run(path, VOCABULARY), path, "parquet")
    assert path.read_bytes() == first
    write_run(run, tmp_path / "back.res", "imageclef2013")
    assert (tmp_path / "back.res").read_bytes() == (REAL_RUNS / name).read_bytes()


def test_parquet_faults_are_reported_at_their_line(tmp_path):
    lines = real_lines(RUN_NAMES[0])
    lists = lists_file(tmp_path, lines)
    path = tmp_path / "run.parquet"
    write_run(read_run(REAL_RUNS / RUN_NAMES[0], VOCABULARY, lists), path, "parquet")
    table = pq.read_table(path)
    line = np.asarray(table.column("line"))
    score = np.asarray(table.column("score")).copy()
    score[np.flatnonzero(line == 12)[3]] = 1.5
    pq.write_table(table.set_column(2, "score", pa.array(score)), path)
    problems = check_run(path, VOCABULARY, lists)
    assert [(p.line, p.message) for p in problems] == [(12, "score of concept 'concept003': 1.5 is outside [0, 1]")]

    pq.write_table(table.filter(pa.array(line != 1940)), path)  # the last line's rows dropped
    assert [p.line for p in check_run(path, VOCABULARY, lists)] == [1940]
    path.write_bytes(b"not parquet")
    assert check_run(path, VOCABULARY, lists)[0].message.startswith("not a readable Parquet file")


def test_parquet_of_unknown_origin_hand_worked(tmp_path):
    """No provenance metadata: the rows are the lists. Faults: unknown concept, missing decision, skipped line."""
    table = pa.table(
        {
            "image_id": ["a", "a", "b", "b", "c", "d"],
            "concept": ["sky", "dog", "sky", "bird", "cat", None],
            "score": [0.5, 0.2, 0.1, 0.3, 0.4, None],
            "decision": [True, False, False, True, None, None],
            "line": pa.array([1, 1, 2, 2, 3, 5], pa.int32()),
        }
    )
    path = tmp_path / "foreign.parquet"
    pq.write_table(table, path)
    problems = check_run(path, ["sky", "dog", "cat"])
    assert [(p.line, p.message) for p in problems] == [
        (2, "unknown concept 'bird' (not in the vocabulary)"),
        (3, "decision of concept 'cat': is missing"),
        (5, "line numbers must run 1, 2, 3, ... in row order: line 5 where line 4 was due"),
    ]
    (tmp_path / "concepts.txt").write_text("sky\ndog\ncat\n", encoding="utf-8")
    code, output = main_output(tmp_path / "concepts.txt", path, None)
    assert code == 2 and output[0] == f"{path}:2: unknown concept 'bird' (not in the vocabulary)"

    # Lines a, b (without the unknown concept) and d (an empty list), numbered 1-3.
    pq.write_table(pa.table({name: table.column(name).take([0, 1, 2, 5]) for name in table.column_names})
                   .set_column(4, "line", pa.array([1, 1, 2, 3], pa.int32())), path)
    run = read_run(path, ["sky", "dog", "cat"])
    assert run.image_ids == ["a", "b", "d"]
    assert run.listed.tolist() == [[True, True, False], [True, False, False], [False, False, False]]
    assert run.decisions.tolist() == [[True, False, False], [False] * 3, [False] * 3]



# ---------------------------------------------------------------- the 2012 form against the test images


def real_2012_run(tmp_path: Path) -> tuple[Path, Path, list[bytes]]:
    """A real 2014 run in the 2012 form (each image's first line; unlisted concepts scored 0, not
    chosen), its test-image list and its lines."""
    lines = real_lines(RUN_NAMES[1])
    run = read_run(write_lines(tmp_path / "real.res", lines), VOCABULARY, implied_lists(lines))
    first = sorted({image_id: row for row, image_id in reversed(list(enumerate(run.image_ids)))}.values())
    ids, mask = [run.image_ids[row] for row in first], run.listed_mask()[first]
    full = Run(ids, VOCABULARY, np.where(mask, run.scores[first], 0.0), run.decisions[first] & mask, None)
    write_run(full, tmp_path / "run2012.res", "imageclef2012")
    images = tmp_path / "test_images.txt"
    images.write_text("".join(i + "\n" for i in ids), encoding="utf-8")
    return tmp_path / "run2012.res", images, (tmp_path / "run2012.res").read_bytes().split(b"\n")[:-1]


def images_output(vocabulary: Path, run: Path, images: Path | None) -> tuple[int, list[str]]:
    out = io.StringIO()
    code = check_run_main(vocabulary, run, None, out=out, images_path=images)
    return code, out.getvalue().splitlines()


def test_2012_run_with_two_lines_swapped_passes_alone_and_fails_against_the_test_images(tmp_path, vocabulary_file):
    run, images, lines = real_2012_run(tmp_path)
    assert images_output(vocabulary_file, run, images)[0] == 0
    lines[9], lines[10] = lines[10], lines[9]
    swapped = write_lines(tmp_path / "swapped.res", lines)
    assert images_output(vocabulary_file, swapped, None)[0] == 0  # nothing to check the order against
    code, report = images_output(vocabulary_file, swapped, images)
    assert code == 2
    assert report[0].startswith(f"{swapped}:10: image id ")
    assert "out of order: line 10 should be image" in report[0] and "two lines swapped?" in report[0]


def test_2012_run_missing_its_last_line_or_with_one_too_many_fails_against_the_test_images(tmp_path,
                                                                                         vocabulary_file):
    run, images, lines = real_2012_run(tmp_path)
    short = write_lines(tmp_path / "short.res", lines[:-1])
    assert images_output(vocabulary_file, short, None)[0] == 0
    code, report = images_output(vocabulary_file, short, images)
    assert code == 2 and report == [
        f"{short}:{len(lines)}: missing line(s): the run ends after {len(lines) - 1} lines but the test-image list "
        f"have {len(lines)} (first without a run line: image '{lines[-1].split()[0].decode()}', "
        f"test-image line {len(lines)})"]
    middle = write_lines(tmp_path / "middle.res", lines[:5] + lines[6:])
    code, report = images_output(vocabulary_file, middle, images)
    assert code == 2 and report[0].startswith(f"{middle}:6: missing line: no run line for image")
    longer = write_lines(tmp_path / "longer.res", lines + [lines[0]])
    code, report = images_output(vocabulary_file, longer, images)
    assert code == 2 and report[0].startswith(f"{longer}:{len(lines) + 1}: line too many: the test-image list")


def test_2012_parquet_run_is_checked_against_the_test_images_too(tmp_path, vocabulary_file):
    run, images, lines = real_2012_run(tmp_path)
    parquet = tmp_path / "short.parquet"
    shortened = read_run(write_lines(tmp_path / "short.res", lines[:-1]), VOCABULARY)
    write_run(shortened, parquet, "parquet")
    assert images_output(vocabulary_file, parquet, None)[0] == 0
    code, report = images_output(vocabulary_file, parquet, images)
    assert code == 2 and report[0].startswith(f"{parquet}:{len(lines)}: missing line(s)")


def test_test_images_from_a_ground_truth_csv_and_their_faults(tmp_path, vocabulary_file):
    run, _, lines = real_2012_run(tmp_path)
    ids = [line.split(b" ")[0].decode() for line in lines]
    truth = tmp_path / "truth.csv"
    truth.write_text("image_id,concept\n" + "".join(f"{i},concept000\n{i},concept001\n" for i in ids))
    assert images_output(vocabulary_file, run, truth)[0] == 0
    bad = tmp_path / "bad.txt"
    bad.write_text(f"{ids[0]}\n\n{ids[1]}\n{ids[0]}\n")
    code, report = images_output(vocabulary_file, run, bad)
    assert code == 2 and report == [f"{bad}:4: image '{ids[0]}' repeats line 1"]
    out = io.StringIO()
    assert check_run_main(vocabulary_file, run, truth, out=out, images_path=truth) == 2
    assert "not both" in out.getvalue()
