"""The localisation measure (Gilbert et al. 2016, section 2.5; Everingham et al. 2010): published AP
values on real boxes, and its rules worked by hand."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from annobench.benchmark.boxes.forms import read_box_run
from annobench.benchmark.boxes.measure import BoxMeasureError, evaluate_boxes, parse_thresholds, precision_recall
from annobench.benchmark.boxes.model import iou
from annobench.benchmark.boxes.truth import read_box_truth
from annobench.cli import main
from helpers import REAL, require_shared

BOXES = REAL / "boxes"
TOY = BOXES / "voc_toyexample"
PADILLA = BOXES / "padilla_odm"
COLUMNS = ["image_id", "concept", "xmin", "ymin", "xmax", "ymax"]


def published_ap(truth_path, run_path, threshold: str, interpolation: str) -> float:
    truth = read_box_truth(require_shared(truth_path), geometry="xywh")
    run = read_box_run(require_shared(run_path), geometry="xywh")
    result = evaluate_boxes(truth.boxes, run, [threshold], interpolation, image_ids=truth.image_ids)
    assert result["MAP"][threshold] == pytest.approx(next(iter(result["AP"][threshold].values())))
    return 100 * result["MAP"][threshold]


# ---------------------------------------------------------------- published values


@pytest.mark.parametrize("truth", ["gts_vocpascal_format", "gts_coco_format/toy_example_coco.JSON"])
@pytest.mark.parametrize("threshold, interpolation, expected", [
    ("0.5", "all", 89.58), ("0.5", "11", 88.64), ("0.75", "all", 50.97), ("0.75", "11", 49.24),
])
def test_voc_toy_example_gives_the_published_cat_ap(truth, threshold, interpolation, expected):
    ap = published_ap(TOY / truth, TOY / "dets_classname_abs_xywh", threshold, interpolation)
    assert ap == pytest.approx(expected, abs=0.005)


@pytest.mark.parametrize("interpolation, expected", [("all", 24.57), ("11", 26.84)])
def test_padilla_example_gives_the_published_person_ap(interpolation, expected):
    ap = published_ap(PADILLA / "groundtruths", PADILLA / "detections", "0.3", interpolation)
    assert ap == pytest.approx(expected, abs=0.005)


def test_padilla_precision_and_recall_are_those_the_repository_printed():
    """results.txt lists precision and recall down the ranking; the measure's true positives give them."""
    lines = require_shared(PADILLA / "results" / "results.txt").read_text().splitlines()
    printed = {line.split(":")[0]: json.loads(line.split(":", 1)[1].replace("'", '"'))
               for line in lines if line.startswith(("Precision:", "Recall:"))}
    truth = read_box_truth(PADILLA / "groundtruths", geometry="xywh")
    run = read_box_run(PADILLA / "detections", geometry="xywh")
    precision, recall = precision_recall(truth.boxes, run, "0.3")["person"]
    assert [f"{p:.2f}" for p in precision] == printed["Precision"]
    assert [f"{r:.2f}" for r in recall] == printed["Recall"]


# ---------------------------------------------------------------- IoU with the +1 convention, by hand


@pytest.mark.parametrize("a, b, expected", [
    ((0, 0, 9, 9), (5, 5, 14, 14), Fraction(25, 175)),  # 10x10 boxes sharing a 5x5 corner
    ((1, 1, 2, 2), (2, 2, 3, 3), Fraction(1, 7)),  # 2x2 boxes sharing one pixel
    ((0, 0, 4, 4), (4, 0, 8, 4), Fraction(5, 45)),  # sharing one column of 5 pixels
    ((0, 0, 4, 4), (5, 0, 9, 4), Fraction(0)),  # side by side: no pixel in common
    ((3, 3, 3, 3), (3, 3, 3, 3), Fraction(1)),  # one pixel: area 1, not 0
    ((0, 0, 9, 4), (2, 1, 5, 3), Fraction(12, 50)),  # one inside the other: 4x3 of 10x5
])
def test_iou_counts_pixels_inclusively(a, b, expected):
    assert iou(np.array([a]), np.array([b]))[0] == float(expected)
    assert iou(np.array([b]), np.array([a]))[0] == float(expected)


# ---------------------------------------------------------------- the rules, on hand-made boxes


def frame(rows, scored: bool) -> pd.DataFrame:
    columns = COLUMNS[:2] + (["score"] if scored else []) + COLUMNS[2:]
    return pd.DataFrame(rows, columns=columns).astype({c: "int64" for c in COLUMNS[2:]})


def measure(truth_rows, run_rows, thresholds=("0", "0.5"), **options) -> dict:
    return evaluate_boxes(frame(truth_rows, False), frame(run_rows, True), thresholds, **options)


def test_at_zero_the_box_is_ignored_but_not_above():
    truth = [("a", "cat", 0, 0, 9, 9)]
    far = [("a", "cat", 0.9, 100, 100, 120, 120)]
    result = measure(truth, far)
    assert result["MAP"] == {"0": 1.0, "0.5": 0.0}
    elsewhere = [("b", "cat", 0.9, 0, 0, 9, 9)]  # the right place, on an image without a cat
    assert measure(truth, elsewhere)["MAP"] == {"0": 0.0, "0.5": 0.0}


def test_at_zero_an_image_takes_as_many_hits_as_it_has_boxes():
    truth = [("a", "cat", 0, 0, 9, 9), ("a", "cat", 20, 20, 29, 29), ("b", "cat", 0, 0, 9, 9)]
    run = [("a", "cat", 0.9, 50, 50, 60, 60), ("a", "cat", 0.8, 50, 50, 70, 70), ("a", "cat", 0.7, 0, 0, 1, 1),
           ("b", "cat", 0.6, 5, 5, 6, 6)]
    # Ranks: TP, TP, FP (a has only two cats), TP: precision 1, 1, 2/3, 3/4 at recall 1/3, 2/3, 2/3, 1.
    assert measure(truth, run, ["0"])["MAP"]["0"] == pytest.approx(1 / 3 + 1 / 3 + 1 / 3 * 3 / 4)


def test_a_duplicate_detection_is_a_false_positive():
    truth = [("a", "cat", 0, 0, 9, 9), ("b", "cat", 0, 0, 9, 9)]
    run = [("a", "cat", 0.9, 0, 0, 9, 9), ("a", "cat", 0.8, 0, 0, 9, 9), ("b", "cat", 0.7, 0, 0, 9, 9)]
    # TP, FP, TP: precision 1, 1/2, 2/3 at recall 1/2, 1/2, 1.
    result = measure(truth, run, ["0.5"])
    assert result["MAP"]["0.5"] == pytest.approx(0.5 * 1 + 0.5 * 2 / 3)
    eleven = measure(truth, run, ["0.5"], interpolation="11")["MAP"]["0.5"]
    assert eleven == pytest.approx((6 * 1 + 5 * 2 / 3) / 11)  # levels 0-0.5 reach precision 1, 0.6-1 reach 2/3


def test_a_box_whose_best_truth_box_is_taken_is_false_even_if_another_would_do():
    truth = [("a", "cat", 0, 0, 9, 9), ("a", "cat", 2, 0, 11, 9)]
    run = [("a", "cat", 0.9, 0, 0, 9, 9), ("a", "cat", 0.8, 0, 0, 9, 9)]
    # The second box's best truth box is the first (IoU 1), already matched; the other has IoU 80/120 >= 0.5,
    # but the VOC rule compares only with the best.
    assert iou(np.array([run[1][3:]]), np.array([truth[1][2:]]))[0] == pytest.approx(2 / 3)
    assert measure(truth, run, ["0.5"])["MAP"]["0.5"] == pytest.approx(0.5)
    assert measure(truth, run, ["0"])["MAP"]["0"] == pytest.approx(1.0)


def test_ties_keep_the_run_order_and_a_run_without_scores_ranks_in_its_order():
    truth = [("a", "cat", 0, 0, 9, 9)]
    miss, hit = ("a", "cat", 0.5, 50, 50, 59, 59), ("a", "cat", 0.5, 0, 0, 9, 9)
    assert measure(truth, [miss, hit], ["0.5"])["MAP"]["0.5"] == pytest.approx(0.5)
    assert measure(truth, [hit, miss], ["0.5"])["MAP"]["0.5"] == pytest.approx(1.0)
    unscored = [row[:2] + (np.nan,) + row[3:] for row in (miss, hit)]
    assert measure(truth, unscored, ["0.5"])["MAP"]["0.5"] == pytest.approx(0.5)


def test_a_concept_the_run_never_predicts_lowers_map():
    truth = [("a", "cat", 0, 0, 9, 9), ("b", "dog", 0, 0, 9, 9)]
    run = [("a", "cat", 0.9, 0, 0, 9, 9), ("a", "bird", 0.8, 0, 0, 9, 9)]  # bird has no truth: not averaged
    result = measure(truth, run)
    assert result["AP"]["0.5"] == {"cat": 1.0, "dog": 0.0}
    assert result["MAP"] == {"0": 0.5, "0.5": 0.5}
    assert result["counts"]["run_boxes_of_concepts_without_truth"] == 1


def test_map_restricted_to_images_with_at_least_n_boxes():
    truth = [("a", "cat", 0, 0, 9, 9), ("a", "cat", 20, 0, 29, 9), ("b", "cat", 0, 0, 9, 9), ("b", "dog", 5, 5, 9, 9),
             ("c", "dog", 0, 0, 9, 9)]
    run = [("a", "cat", 0.9, 0, 0, 9, 9), ("a", "cat", 0.8, 20, 0, 29, 9), ("b", "cat", 0.7, 50, 50, 59, 59),
           ("c", "dog", 0.6, 0, 0, 9, 9)]
    everything = measure(truth, run, ["0.5"])
    # cat: TP, TP, FP of 3 -> 2/3; dog: b's dog never found, c's found first -> precision 1 at recall 1/2.
    assert everything["AP"]["0.5"] == pytest.approx({"cat": 2 / 3, "dog": 0.5})
    restricted = measure(truth, run, ["0.5"], min_boxes=2)
    # Images a and b (2 boxes each): c's dog and its run box leave; b's dog is never found.
    assert restricted["AP"]["0.5"] == pytest.approx({"cat": 2 / 3, "dog": 0.0})
    assert restricted["counts"]["images"] == 2 and restricted["counts"]["truth_boxes"] == 4
    assert restricted["counts"]["run_boxes"] == 3
    assert measure(truth, run, ["0.5"], min_boxes=3)["MAP"]["0.5"] != measure(truth, run, ["0.5"])["MAP"]["0.5"]


def test_eleven_point_levels_are_compared_exactly():
    # Ten cats, three found first: recall reaches exactly 0.3, which counts for the level 0.3.
    truth = [(f"i{k}", "cat", 0, 0, 9, 9) for k in range(10)]
    run = [(f"i{k}", "cat", 0.9, 0, 0, 9, 9) for k in range(3)]
    assert measure(truth, run, ["0.5"], interpolation="11")["MAP"]["0.5"] == pytest.approx(4 / 11)


def test_thresholds_are_decimal_keys_and_bad_ones_are_refused():
    assert parse_thresholds("0, 0.50,0.75,1.0") == ("0", "0.5", "0.75", "1")
    for bad in ("0.5,0.50", "1.5", "-0.1", "half", "nan"):
        with pytest.raises(BoxMeasureError):
            parse_thresholds(bad)


# ---------------------------------------------------------------- the command


def test_evaluate_boxes_command_writes_every_threshold(tmp_path, capsys):
    require_shared(TOY)
    out = tmp_path / "toy.json"
    code = main(["evaluate-boxes", "--truth", str(TOY / "gts_coco_format" / "toy_example_coco.JSON"),
                 "--run", str(TOY / "dets_classname_abs_xywh"), "--geometry", "xywh", "--json", str(out)])
    assert code == 0, capsys.readouterr().err
    result = json.loads(out.read_text())
    keys = ["0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"]
    assert list(result["MAP"]) == sorted(keys) and set(result["AP"]) == set(keys)
    assert result["MAP"]["0.5"] == pytest.approx(0.8958, abs=5e-5)
    assert result["settings"] == {"thresholds": keys, "interpolation": "all", "min_boxes": 0}
    assert result["counts"]["images"] == 10 and result["counts"]["truth_boxes"] == 12
    # A box that is a hit at a threshold is one at every lower threshold (the first for its truth box).
    ordered = [result["MAP"][key] for key in keys]
    assert ordered == sorted(ordered, reverse=True) and ordered[0] > ordered[-1]


def test_evaluate_boxes_reads_coco_results_through_the_coco_truth(tmp_path, capsys):
    coco = json.loads(require_shared(TOY / "gts_coco_format" / "toy_example_coco.JSON").read_text())
    numbers = {image["file_name"].rsplit(".", 1)[0]: image["id"] for image in coco["images"]}
    results = [{"image_id": numbers[p.stem], "category_id": 0, "score": float(fields[1]),
                "bbox": [float(v) for v in fields[2:]]}
               for p in sorted((TOY / "dets_classname_abs_xywh").glob("*.txt"))
               for fields in (line.split() for line in p.read_text().splitlines())]
    (tmp_path / "results.json").write_text(json.dumps(results))
    out = tmp_path / "coco.json"
    assert main(["evaluate-boxes", "--truth", str(TOY / "gts_coco_format" / "toy_example_coco.JSON"),
                 "--run", str(tmp_path / "results.json"), "--thresholds", "0.75", "--interpolation", "11",
                 "--json", str(out)]) == 0
    assert json.loads(out.read_text())["MAP"]["0.75"] == pytest.approx(0.4924, abs=5e-5)


@pytest.mark.parametrize("change, words", [
    (["--thresholds", "0.5,2"], "threshold '2' is not in [0, 1]"),
    (["--truth", "{tmp}/absent"], "No such file or directory"),
    (["--run", "{tmp}/broken.txt"], "broken.txt:2: field 3 (box 1): score '7' is outside [0, 1]"),
])
def test_evaluate_boxes_refuses_bad_input_with_status_2(tmp_path, capsys, change, words):
    require_shared(TOY)
    (tmp_path / "broken.txt").write_text("2007_000549 cat 0.9:10x10+1+1\n2007_000733 cat 7:10x10+1+1\n")
    args = {"--truth": str(TOY / "gts_vocpascal_format"), "--run": str(TOY / "dets_classname_abs_xywh"),
            "--geometry": "xywh", "--json": str(tmp_path / "x.json")}
    extra = []
    for flag, value in zip(change[::2], change[1::2]):
        if flag in args:
            args[flag] = value.format(tmp=tmp_path)
        else:
            extra += [flag, value]
    assert main(["evaluate-boxes", *[item for pair in args.items() for item in pair], *extra]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and words in said[0], said
    assert not (tmp_path / "x.json").exists()


# ------------------------------------------- against a plain reading of Gilbert et al. 2016, section 2.5


def reference_aps(truth_rows, run_rows, threshold: Fraction, interpolation: str) -> dict[str, float]:
    """Gilbert et al. 2016 (section 2.5) read literally, one box at a time, in exact arithmetic."""
    def pixels(box):
        return (box[2] - box[0] + 1) * (box[3] - box[1] + 1)

    def overlap(a, b):
        across = min(a[2], b[2]) - max(a[0], b[0]) + 1
        down = min(a[3], b[3]) - max(a[1], b[1]) + 1
        inter = max(0, across) * max(0, down)
        return Fraction(inter, pixels(a) + pixels(b) - inter)

    aps = {}
    for concept in sorted({row[1] for row in truth_rows}):
        truth = [(k, row) for k, row in enumerate(truth_rows) if row[1] == concept]
        ranked = sorted((row for row in run_rows if row[1] == concept), key=lambda row: -row[2])  # stable
        matched, used, hits = set(), {}, []
        for image_id, _, _, *box in ranked:
            mine = [(k, row[2:]) for k, row in truth if row[0] == image_id]
            if threshold == 0:
                hit = used.get(image_id, 0) < len(mine)
                used[image_id] = used.get(image_id, 0) + hit
            else:
                best, which = Fraction(-1), None
                for k, other in mine:
                    if overlap(box, other) > best:
                        best, which = overlap(box, other), k
                hit = which is not None and best >= threshold and which not in matched
                if hit:
                    matched.add(which)
            hits.append(hit)
        found = list(np.cumsum(hits)) if hits else []
        precision = [Fraction(int(f), r) for r, f in enumerate(found, 1)]
        recall = [Fraction(int(f), len(truth)) for f in found]
        if interpolation == "11":
            levels = [max([p for p, r in zip(precision, recall) if r >= Fraction(l, 10)], default=0)
                      for l in range(11)]
            aps[concept] = float(sum(levels) / 11)
            continue
        ap, previous = Fraction(0), Fraction(0)
        for r in range(len(recall)):
            if recall[r] > previous:
                ap += (recall[r] - previous) * max(precision[r:])
                previous = recall[r]
        aps[concept] = float(ap)
    return aps


@pytest.mark.parametrize("seed", range(6))
def test_the_vectorised_measure_agrees_with_a_literal_reading(seed):
    """Small boxes on a small canvas and one-decimal scores: IoU ties, score ties and duplicates abound."""
    rng = np.random.default_rng(seed)

    def boxes(n):
        corner = rng.integers(0, 12, size=(n, 2))
        return np.hstack([corner, corner + rng.integers(0, 8, size=(n, 2))]).tolist()

    images, concepts = [f"i{k}" for k in range(15)], ["cat", "dog", "sky"]
    truth_rows = [(rng.choice(images), rng.choice(concepts), *box) for box in boxes(40)]
    run_rows = [(rng.choice(images), rng.choice(concepts + ["bird"]), float(rng.integers(0, 11)) / 10, *box)
                for box in boxes(120)]
    run_rows += [run_rows[k] for k in rng.integers(0, len(run_rows), 10)]  # repeated detections
    thresholds = ["0", "0.1", "0.3", "0.5", "0.7", "1"]
    for interpolation in ("all", "11"):
        result = measure(truth_rows, run_rows, thresholds, interpolation=interpolation)
        for key in thresholds:
            expected = reference_aps(truth_rows, run_rows, Fraction(key), interpolation)
            assert result["AP"][key] == pytest.approx(expected, abs=1e-12), (key, interpolation)
