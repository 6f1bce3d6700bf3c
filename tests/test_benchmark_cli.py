"""`annobench evaluate`, `check-run` and `label-stats` on real runs and real multi-label ground truth."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, f1_score, precision_score, recall_score

from annobench.benchmark.runs.files import write_run
from annobench.benchmark.runs.model import Run
from annobench.cli import main
from helpers import REAL, read_scene, require_shared

RUNS = REAL / "runs" / "imageclef2014_devel"


@pytest.fixture(scope="module")
def scene_files(tmp_path_factory):
    """A k-NN run on the real scene test set (2012 form), its truth CSV and its concepts."""
    scene = read_scene()
    folder = tmp_path_factory.mktemp("scene")
    distance = ((scene.x_test[:, None, :] - scene.x_train[None, :, :]) ** 2).sum(-1)
    nearest = np.argsort(distance, axis=1, kind="stable")[:, :7]
    scores = scene.y_train[nearest].mean(axis=1)
    ids = [f"t{k:04d}" for k in range(len(scores))]
    write_run(Run(ids, scene.labels, scores, scores >= 0.5, None), folder / "run.txt", "imageclef2012")
    (folder / "concepts.txt").write_text("\n".join(scene.labels) + "\n")
    rows = [f"{i},{c}" for i, row in zip(ids, scene.y_test) for c, present in zip(scene.labels, row) if present]
    (folder / "truth.csv").write_text("image_id,concept\n" + "\n".join(rows) + "\n")
    return folder, scene, scores


def test_evaluate_agrees_with_scikit_learn_on_the_scene_set(scene_files, capsys):
    folder, scene, scores = scene_files
    out = folder / "measures.json"
    assert main(["evaluate", "--truth", str(folder / "truth.csv"), "--run", str(folder / "run.txt"), "--concepts",
                 str(folder / "concepts.txt"), "--json", str(out), "--per-concept", str(folder / "c.csv")]) == 0
    measures = json.loads(out.read_text())
    truth, decided = scene.y_test, scores >= 0.5
    assert measures["MF1-samples"] == pytest.approx(f1_score(truth, decided, average="samples", zero_division=0))
    assert measures["MF1-concepts"] == pytest.approx(f1_score(truth, decided, average="macro", zero_division=0))
    assert measures["MnAP"] == pytest.approx(average_precision_score(truth, scores, average="macro"))
    assert measures["P_L"] == pytest.approx(precision_score(truth, decided, average="macro", zero_division=0))
    assert measures["R_I"] == pytest.approx(recall_score(truth, decided, average="samples", zero_division=0))
    required = ["MF1-samples", "MF1-concepts", "MAP-samples", "MiAP", "MnAP", "GMiAP", "GMnAP", "P_L", "R_L",
                "F1_L", "mAP_L", "N+", "P_I", "R_I", "F1_I", "mAP_I"]
    assert all(0 <= measures[key] <= 1 for key in required if key != "N+") and measures["N+"] == 6
    assert (folder / "c.csv").read_text().splitlines()[0].startswith("concept,")
    top = folder / "top2.json"
    main(["evaluate", "--truth", str(folder / "truth.csv"), "--run", str(folder / "run.txt"), "--concepts",
          str(folder / "concepts.txt"), "--top-k", "2", "--json", str(top)])
    top2 = json.loads(top.read_text())
    assert top2["MF1-samples"] == measures["MF1-samples"]  # the ImageCLEF measures keep the run's decisions
    assert top2["P_I"] != measures["P_I"]


def test_evaluate_names_bad_input_in_one_line_without_a_traceback(scene_files, tmp_path, capsys):
    folder, _, _ = scene_files
    base = ["--truth", str(folder / "truth.csv"), "--run", str(folder / "run.txt"),
            "--concepts", str(folder / "concepts.txt"), "--json", str(tmp_path / "m.json")]
    broken = tmp_path / "broken.txt"
    lines = (folder / "run.txt").read_text().splitlines()
    broken.write_text("\n".join(lines[:3] + [lines[3].replace(" 0 ", " 2 ", 1)] + lines[4:]) + "\n")
    cases = {
        "broken run": (["--run", str(broken)], f"{broken}:4:"),
        "missing run": (["--run", str(tmp_path / "absent.txt")], "absent.txt"),
        "short run": (["--run", str(_head(folder / "run.txt", tmp_path / "short.txt", 10))], "no line for"),
        "unknown concept": (["--truth", str(_with_row(folder / "truth.csv", tmp_path / "t.csv", "t0000,Zebra"))],
                            "Zebra"),
    }
    for name, (extra, expected) in cases.items():
        args = list(base)
        for key, value in zip(extra[::2], extra[1::2]):
            args[args.index(key) + 1] = value
        assert main(["evaluate", *args]) == 2, name
        err = capsys.readouterr().err
        assert expected in err and "Traceback" not in err, (name, err)
    assert not (tmp_path / "m.json").exists()


def test_check_run_on_the_real_2014_runs(tmp_path, capsys):
    run_path = require_shared(RUNS) / "baseline_occurrence_devel_sift.res"
    lines = run_path.read_text().splitlines()
    concepts = [f"c{k:03d}" for k in range(100)]
    (tmp_path / "concepts.txt").write_text("\n".join(concepts) + "\n")
    (tmp_path / "lists.txt").write_text("".join(
        f"{line.split()[0]} {' '.join(concepts[: (len(line.split()) - 1) // 2])}\n" for line in lines))
    args = ["check-run", "--concepts", str(tmp_path / "concepts.txt"), "--concept-lists", str(tmp_path / "lists.txt")]
    assert main([*args, str(run_path)]) == 0
    assert "valid, 1940 lines" in capsys.readouterr().out
    bad = tmp_path / "bad.res"
    bad.write_text("\n".join(lines[:99] + [lines[99].replace(" 0 ", " 0.5 ", 1)] + lines[100:]) + "\n")
    assert main([*args, str(bad)]) == 2
    assert capsys.readouterr().out.startswith(f"{bad}:100: ")


def test_check_run_takes_the_test_images_of_a_2012_form_run(tmp_path, capsys):
    lines = (require_shared(RUNS) / "baseline_occurrence_devel_sift.res").read_text().splitlines()
    ids = list(dict.fromkeys(line.split()[0] for line in lines))
    (tmp_path / "concepts.txt").write_text("c000\n")
    (tmp_path / "images.txt").write_text("".join(f"{i}\n" for i in ids))
    (tmp_path / "run.res").write_text("".join(f"{i} 0.5 1\n" for i in ids[:-1]))  # the last image left out
    args = ["check-run", "--concepts", str(tmp_path / "concepts.txt"), str(tmp_path / "run.res")]
    assert main(args) == 0
    capsys.readouterr()
    assert main([*args, "--images", str(tmp_path / "images.txt")]) == 2
    assert capsys.readouterr().out.startswith(f"{tmp_path / 'run.res'}:{len(ids)}: missing line(s)")


def test_label_stats_on_the_scene_split(tmp_path, capsys):
    scene = read_scene()
    for name, truth in (("train", scene.y_train), ("test", scene.y_test)):
        rows = [f"{name}{i},{c}" for i, row in enumerate(truth) for c, p in zip(scene.labels, row) if p]
        (tmp_path / f"{name}.csv").write_text("image_id,concept\n" + "\n".join(rows) + "\n")
    out = tmp_path / "stats.json"
    assert main(["label-stats", "--train", str(tmp_path / "train.csv"), "--test", str(tmp_path / "test.csv"),
                 "--json", str(out)]) == 0
    stats = json.loads(out.read_text())
    test_sets = [frozenset(np.flatnonzero(row)) for row in scene.y_test if row.any()]
    train_sets = {frozenset(np.flatnonzero(row)) for row in scene.y_train if row.any()}
    assert stats["unique_label_sets"] == pytest.approx(len(set(test_sets)) / len(test_sets))
    assert stats["novel_label_sets"] == pytest.approx(sum(s not in train_sets for s in test_sets) / len(test_sets))
    assert 0 < stats["unique_label_sets"] < 0.02  # scene: 6 labels, a handful of distinct sets


def _head(source, target, n):
    target.write_text("\n".join(source.read_text().splitlines()[:n]) + "\n")
    return target


def _with_row(source, target, row):
    target.write_text(source.read_text() + row + "\n")
    return target
