"""Bad input on the command line is one line on stderr and exit 2 (issue 30, defects 3-6): range-checked
options, hostile JSON, empty CSVs and empty segmentation sources; inside a build, a rejects row."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from annobench.core.errors import AnnobenchError
from helpers import REPO

# Files made the way the fuzzing found them: each must be refused in one line, not a traceback.
HOSTILE_JSON = {
    "empty": (b"", "empty, expected a JSON document"),
    "latin-1": ('{"categories": [{"id": 1, "name": "café"}]}'.encode("latin-1"), "not UTF-8 text"),
    "trailing garbage": (b'[{"annotations": []}] }x', "not valid JSON: Extra data at line 1, column 23"),
    "100,000 nested": (b"[" * 100_000, "JSON nested too deeply"),
}


# Runs the command line as `python -m annobench.cli` does, then writes the process's peak resident
# memory (VmHWM) to the file named by the first argument: the one-line stderr stays untouched.
MEASURED_CLI = """
import pathlib, runpy, sys
peak_file = sys.argv.pop(1)
try:
    runpy.run_module("annobench.cli", run_name="__main__", alter_sys=True)
finally:
    status = pathlib.Path("/proc/self/status").read_text()
    pathlib.Path(peak_file).write_text(next(l for l in status.splitlines() if l.startswith("VmHWM")).split()[1])
"""
PEAK_LIMIT_KB = 1024 * 1024  # issue 30: every bad input ends within 30 s and under 1 GB


def run_cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    """The command in a child, which must end within 30 s and under 1 GB of resident memory."""
    peak_file = cwd / ".peak_kb"
    done = subprocess.run([sys.executable, "-c", MEASURED_CLI, str(peak_file), *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=30, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    if peak_file.exists():  # absent only where /proc is not Linux's
        assert int(peak_file.read_text()) < PEAK_LIMIT_KB, f"peak {peak_file.read_text()} kB: {args}"
        peak_file.unlink()
    return done


def assert_one_line_error(done: subprocess.CompletedProcess, *fragments: str) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.endswith("\n"), done.stderr
    for fragment in fragments:
        assert fragment in done.stderr
    return done.stderr


@pytest.fixture
def run_files(tmp_path: Path) -> Path:
    """A valid ImageCLEF 2012 run, its concepts and ground truth, in tmp_path."""
    (tmp_path / "concepts.txt").write_text("a\nb\n")
    (tmp_path / "run.txt").write_text("i1 0.9 1 0.2 0\n")
    (tmp_path / "truth.csv").write_text("image_id,concept\ni1,a\n")
    return tmp_path


@pytest.fixture
def images(tmp_path: Path) -> Path:
    Image.new("RGB", (8, 6)).save(tmp_path / "img1.png")
    return tmp_path


def evaluate(folder: Path, *extra, truth="truth.csv", run="run.txt") -> subprocess.CompletedProcess:
    return run_cli("evaluate", "--concepts", "concepts.txt", "--truth", truth, "--run", run, "--json", "out.json",
                   *extra, cwd=folder)


# -- defect 3: option values out of range ---------------------------------------------------------

@pytest.mark.parametrize("top_k", ["0", "-1", "x"])
def test_evaluate_refuses_a_top_k_that_is_not_positive(run_files, top_k):
    said = assert_one_line_error(evaluate(run_files, "--top-k", top_k), f"argument --top-k: '{top_k}'")
    assert "MeasureInputError" not in said and not (run_files / "out.json").exists()


def test_evaluate_takes_a_positive_top_k(run_files):
    assert evaluate(run_files, "--top-k", "1").returncode == 0


@pytest.mark.parametrize("args, option", [
    (["bench", "--cores", "0"], "--cores"),
    (["bench", "--images", "-5"], "--images"),
    (["audit", ".", "--recompute", "-1"], "--recompute"),
    (["evaluate-boxes", "--truth", "t", "--run", "r", "--json", "j", "--min-boxes", "-1"], "--min-boxes"),
    (["regions", "--kind", "bsds", "--images", "i", "--masks", "m", "--out", "o", "--annotator", "0"],
     "--annotator"),
    (["regions", "--kind", "coco", "--images", "i", "--masks", "m", "--out", "o", "--stripe-fraction", "1.5"],
     "--stripe-fraction"),
    (["illustration", "--pages", "p", "--out", "o", "--seed", "-2"], "--seed"),
])
def test_numeric_options_are_checked_by_the_parser(tmp_path, args, option):
    assert_one_line_error(run_cli(*args, cwd=tmp_path), f"argument {option}:")


def test_evaluate_refuses_a_negative_seed(run_files):
    assert_one_line_error(evaluate(run_files, "--seed", "-1"), "argument --seed: '-1' is not an integer >= 0")


# -- defect 4: hostile JSON inputs ----------------------------------------------------------------

@pytest.mark.parametrize("name", HOSTILE_JSON)
def test_regions_coco_refuses_a_hostile_annotations_json(images, name):
    content, message = HOSTILE_JSON[name]
    (images / "masks").mkdir()
    (images / "masks" / "panoptic.json").write_bytes(content)
    done = run_cli("regions", "--kind", "coco", "--images", ".", "--masks", "masks", "--out", "out", cwd=images)
    assert_one_line_error(done, "annobench: masks/panoptic.json: ", message)


# These commands tell their forms apart by content: an empty file is no form at all.
EMPTY_IS_NO_FORM = {"boxes": "not a box ground truth", "evaluate-selection": "a description CSV needs",
                    "evaluate-captions": "empty file; expected a header image_id,caption"}


@pytest.mark.parametrize("name", HOSTILE_JSON)
@pytest.mark.parametrize("command", [
    ["boxes", "--truth", "x.json", "--out", "out"],
    ["evaluate-selection", "--truth", "x.json", "--human", "--json", "out.json"],
    ["evaluate-captions", "--refs", "x.json", "--human", "--json", "out.json"],
])
def test_every_json_reader_refuses_hostile_json_in_one_line(tmp_path, command, name):
    content, message = HOSTILE_JSON[name]
    (tmp_path / "x.json").write_bytes(content)
    expected = EMPTY_IS_NO_FORM[command[0]] if name == "empty" else message
    assert_one_line_error(run_cli(*command, cwd=tmp_path), "annobench: x.json: ", expected)


def test_a_hostile_labelme_file_is_a_rejects_row_naming_what_is_wrong(images):
    (images / "masks").mkdir()
    (images / "masks" / "img1.json").write_bytes(b"[" * 100_000)
    done = run_cli("regions", "--kind", "labelme", "--images", ".", "--masks", "masks", "--out", "out", cwd=images)
    assert done.returncode == 0, done.stderr
    rejects = pd.read_parquet(images / "out" / "tables" / "segmentation_rejects" / "shard-00000.parquet")
    assert rejects["reason"].tolist() == ["unreadable LabelMe file: masks/img1.json: JSON nested too deeply "
                                          "(more levels than the parser's limit)"]


def test_a_hostile_config_is_one_line(images):
    (images / "config.yaml").write_bytes(b"ingest: [\n  {a: 1\n")
    done = run_cli("inventory", "--configfile", "config.yaml", cwd=images)
    assert_one_line_error(done, "annobench: config.yaml: not valid YAML:", "line 3")


# -- defects 5 and 6: empty inputs ----------------------------------------------------------------

@pytest.mark.parametrize("content, message", [
    (b"", "regions.csv: empty, expected the header image_id,region_id,label"),
    (b"image_id,label\n", "regions.csv: lacks the columns ['region_id']"),
    ("image_id,region_id,label\nimg1,1,café\n".encode("latin-1"), "regions.csv: not UTF-8 text"),
])
def test_regions_canonical_refuses_an_unusable_regions_csv(images, content, message):
    (images / "masks").mkdir()
    (images / "masks" / "regions.csv").write_bytes(content)
    done = run_cli("regions", "--kind", "canonical", "--images", ".", "--masks", "masks", "--out", "out", cwd=images)
    assert_one_line_error(done, message)


@pytest.mark.parametrize("kind, expected", [
    ("canonical", "<image_id>.png label maps and regions.csv"),
    ("labelme", "<image_id>.json LabelMe files"),
    ("bsds", "<image_id>.mat files under groundTruth/"),
    ("msrc", "<image_id>_GT.mat files"),
    ("saiapr", "segmentation_masks/<image>_<region>.mat files"),
    ("coco", "expected one COCO panoptic JSON file, found 0"),
])
def test_an_empty_segmentation_source_names_what_was_expected(images, kind, expected):
    (images / "masks").mkdir()
    done = run_cli("regions", "--kind", kind, "--images", ".", "--masks", "masks", "--out", "out", cwd=images)
    assert_one_line_error(done, "annobench: masks: ", expected)


@pytest.mark.parametrize("truth, message", [
    ("", "truth.csv: empty file; expected the header image_id,concept"),
    ("image_id,concept\n", "truth.csv: a header and no rows"),
    ("id,label\ni1,a\n", "truth.csv: needs the header image_id,concept"),
])
def test_evaluate_refuses_an_empty_ground_truth(run_files, truth, message):
    (run_files / "truth.csv").write_text(truth)
    assert_one_line_error(evaluate(run_files), message)
    assert not (run_files / "out.json").exists()


def test_label_stats_refuses_an_empty_ground_truth(run_files):
    (run_files / "empty.csv").write_bytes(b"")
    done = run_cli("label-stats", "--train", "truth.csv", "--test", "empty.csv", "--json", "out.json", cwd=run_files)
    assert_one_line_error(done, "annobench: empty.csv: empty file")


def test_evaluate_refuses_an_empty_run(run_files):
    (run_files / "empty.txt").write_bytes(b"")
    assert_one_line_error(evaluate(run_files, run="empty.txt"), "empty.txt:0: empty file: no run lines")


# -- inside a build -------------------------------------------------------------------------------

def test_a_build_shard_turns_an_unreadable_source_into_a_rejects_row(images):
    from annobench.core.config import load_config
    from annobench.core.jobs import Job
    from annobench.regions.stage import REGION_TABLES, regions_shard_job

    (images / "masks").mkdir()
    (images / "masks" / "panoptic.json").write_bytes(b"")
    pd.DataFrame({"image_id": ["img1"], "width": [8], "height": [6], "source_path": ["img1.png"],
                  "sha256": ["0" * 64]}).to_parquet(images / "images.parquet")
    config = load_config(None, {"input": {"images": str(images), "segmentations": str(images / "masks")},
                                "output": str(images / "build"), "segmentations": {"kind": "coco"}})
    outputs = {name: str(images / "build" / name / "shard-00000.parquet") for name in REGION_TABLES}
    job = Job("regions_shard", config, {"params_hash": "h"}, {"images": str(images / "images.parquet")},
              {**outputs, "maps": str(images / "build" / "maps")}, [], [], wildcards={"shard": "0"},
              log=lambda line: None)
    regions_shard_job(job)
    rejects = pd.read_parquet(outputs["segmentation_rejects"])
    assert rejects["reason"].tolist() == [f"{images / 'masks' / 'panoptic.json'}: empty, expected a JSON document"]
    assert len(pd.read_parquet(outputs["regions"])) == 0


# -- one handler for every error of the project ---------------------------------------------------

def project_error_classes() -> list[type]:
    """Every exception class the package defines whose name ends in Error, imported from its module."""
    found = []
    for path in sorted((REPO / "annobench").rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Error"):
                found.append(getattr(importlib.import_module(module), node.name))
    return found


def test_every_error_class_of_the_project_derives_from_the_one_the_command_line_catches():
    classes = project_error_classes()
    assert len(classes) >= 15  # the walk found the stage errors, so the check below means something
    escaping = [c.__qualname__ for c in classes if not issubclass(c, AnnobenchError)]
    assert escaping == []


def test_the_handler_prints_any_project_error_in_one_line(monkeypatch, capsys):
    from annobench import cli

    def fail(args):
        raise AnnobenchError("some.csv: wrong\nacross lines")

    monkeypatch.setattr(cli, "_demo", fail)
    assert cli.main(["demo", "--out", "x"]) == 2
    assert capsys.readouterr().err == "annobench: some.csv: wrong across lines\n"
