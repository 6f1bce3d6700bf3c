"""Content selection (ImageCLEF 2016 subtask 3, Gilbert et al. 2016): eq. 3-5 by hand, the readers, the baselines, the
human upper bound and the command, on hand-made truth and on the shared Flickr30k Entities half."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from fractions import Fraction

import pytest

from annobench.benchmark.selection.baselines import largest_selection, random_selection
from annobench.benchmark.selection.files import (
    read_flickr30k_entities,
    read_selection_run,
    read_selection_truth,
    truth_format,
)
from annobench.benchmark.selection.measure import ImageScores, human_scores, image_scores, run_scores, summarise
from annobench.benchmark.selection.model import Box, ImageTruth, SelectionError, SelectionTruth
from helpers import REAL, REPO, require_shared

FLICKR = REAL / "content_selection" / "flickr30k_entities" / "annotation_test_half.json"


def truth_of(images: dict[str, tuple[list[str], list[set[str]]]]) -> SelectionTruth:
    """image_id -> (instances, descriptions), without coordinates."""
    return SelectionTruth({
        image_id: ImageTruth({i: None for i in instances},
                             {str(m): frozenset(g) for m, g in enumerate(descriptions)})
        for image_id, (instances, descriptions) in images.items()
    })


# Image A: G_1 = {a, b}, G_2 = {b, c, d}; a run selecting S = {b, c, e}.
HAND = {"A": (["a", "b", "c", "d", "e"], [{"a", "b"}, {"b", "c", "d"}]), "B": (["x", "y"], [{"x"}])}


# --- eq. 3-5 by hand ------------------------------------------------------------

def test_one_image_by_hand():
    scores = image_scores([frozenset("ab"), frozenset("bcd")], frozenset("bce"))
    # |G_1 ∩ S| = |{b}| = 1, |G_2 ∩ S| = |{b, c}| = 2, |S| = 3
    # P = (1/2)(1/3 + 2/3) = 1/2
    # R = (1/2)(1/2 + 2/3) = (1/2)(7/6) = 7/12
    # F = 2 (1/2)(7/12) / (1/2 + 7/12) = (7/12) / (13/12) = 7/13
    assert scores == ImageScores(Fraction(1, 2), Fraction(7, 12), Fraction(7, 13))


def test_zero_over_zero_counts_as_zero():
    # Nothing shared: P = (1/1)(0/1) = 0, R = (1/1)(0/1) = 0, F = 0/0 = 0.
    assert image_scores([frozenset("p")], frozenset("q")) == ImageScores(0, 0, 0)
    # S = ∅: every |G ∩ S| / |S| is 0/0 = 0, every |G ∩ S| / |G| is 0/|G| = 0, F = 0/0 = 0.
    assert image_scores([frozenset("p"), frozenset("pq")], frozenset()) == ImageScores(0, 0, 0)


def test_selecting_everything_gives_full_recall_and_the_mean_share_as_precision():
    # S = {a, b, c, d}: R = (1/2)(2/2 + 1/1) = 1; P = (1/2)(2/4 + 1/4) = 3/8;
    # F = 2 (3/8)(1) / (3/8 + 1) = (3/4) / (11/8) = 6/11.
    assert image_scores([frozenset("ab"), frozenset("c")], frozenset("abcd")) == \
        ImageScores(Fraction(3, 8), Fraction(1), Fraction(6, 11))


def test_an_image_missing_from_the_run_scores_zero_and_stays_in_the_means():
    truth = truth_of(HAND)
    scores = run_scores(truth, {"A": frozenset("bce")})  # B is not in the run: S = ∅
    assert scores["B"] == ImageScores(0, 0, 0)
    summary = summarise(scores)
    # P: values 1/2 and 0, mean 1/4, population std sqrt(((1/4)^2 + (1/4)^2) / 2) = 1/4;
    # R: 7/12 and 0 -> 7/24 ± 7/24; F: 7/13 and 0 -> 7/26 ± 7/26.
    assert summary["images"] == 2
    for key, value in (("P", Fraction(1, 4)), ("R", Fraction(7, 24)), ("F", Fraction(7, 26))):
        assert summary[key]["mean"] == pytest.approx(float(value), abs=1e-15)
        assert summary[key]["std"] == pytest.approx(float(value), abs=1e-15)


def test_a_selection_outside_the_image_is_refused():
    truth = truth_of(HAND)
    with pytest.raises(SelectionError, match="'z'.*not among its box instances"):
        run_scores(truth, {"A": frozenset("bz")})
    with pytest.raises(SelectionError, match="'C'.*not an image of the ground truth"):
        run_scores(truth, {"C": frozenset("a")})


def test_a_mean_over_no_image_is_nan():
    summary = summarise({})
    assert summary["images"] == 0 and summary["F"]["mean"] != summary["F"]["mean"]


# --- the human upper bound -------------------------------------------------------

def test_human_upper_bound_by_hand():
    truth = truth_of({"A": (["a", "b", "c"], [{"a"}, {"a", "b"}, {"b", "c"}]), "B": (["x"], [{"x"}])})
    # j = 1: S = {a} against {a, b}, {b, c}: P = (1/2)(1/1 + 0/1) = 1/2, R = (1/2)(1/2 + 0/2) = 1/4,
    #        F = 2 (1/2)(1/4) / (3/4) = 1/3
    # j = 2: S = {a, b} against {a}, {b, c}: P = (1/2)(1/2 + 1/2) = 1/2, R = (1/2)(1/1 + 1/2) = 3/4,
    #        F = 2 (1/2)(3/4) / (5/4) = 3/5
    # j = 3: S = {b, c} against {a}, {a, b}: P = (1/2)(0/2 + 1/2) = 1/4, R = (1/2)(0/1 + 1/2) = 1/4, F = 1/4
    # Image: P = (1/2 + 1/2 + 1/4)/3 = 5/12, R = (1/4 + 3/4 + 1/4)/3 = 5/12,
    #        F = (1/3 + 3/5 + 1/4)/3 = (71/60)/3 = 71/180. B has one description: left out.
    scores = human_scores(truth)
    assert scores == {"A": ImageScores(Fraction(5, 12), Fraction(5, 12), Fraction(71, 180))}


def test_human_upper_bound_on_flickr30k_entities():
    truth = read_flickr30k_entities(require_shared(FLICKR))
    scores = human_scores(truth)
    eligible = [i for i, image in truth.images.items() if len(image.descriptions) >= 2]
    assert sorted(scores) == sorted(eligible) and len(scores) > 500
    # P and R are equal image by image (swap j and m in the sums), so also their means and stds.
    assert all(s.precision == s.recall for s in scores.values())
    # The mean of harmonic means is at most the mean of arithmetic means: F_I <= P_I.
    assert all(0 <= s.f <= s.precision <= 1 for s in scores.values())
    summary = summarise(scores)
    assert summary["P"] == summary["R"]
    assert 0 < summary["F"]["mean"] < summary["P"]["mean"] < 1
    # ... but not description by description: the symmetry is one of the image's pairs (j, m).
    unequal = 0
    for image in truth.images.values():
        descriptions = list(image.descriptions.values())
        for j, run in enumerate(descriptions):
            held_out = image_scores(descriptions[:j] + descriptions[j + 1:], run)
            unequal += held_out.precision != held_out.recall
    assert unequal > 100


# --- baselines ----------------------------------------------------------------

def test_random_baseline_takes_min_three_reproducibly_and_independently_of_image_order():
    truth = read_flickr30k_entities(require_shared(FLICKR))
    chosen = random_selection(truth, seed=7)
    assert chosen == random_selection(truth, seed=7)
    assert chosen != random_selection(truth, seed=8)
    for image_id, image in truth.images.items():
        assert len(chosen[image_id]) == min(3, len(image.boxes)) and chosen[image_id] <= set(image.boxes)
    # Reversed order, and only every other image: each image keeps its choice.
    subset = SelectionTruth({i: truth.images[i] for i in sorted(truth.images, reverse=True)[::2]})
    assert random_selection(subset, seed=7) == {i: chosen[i] for i in subset.images}
    assert summarise(run_scores(truth, chosen)) == summarise(run_scores(truth, random_selection(truth, seed=7)))


def test_random_baseline_is_a_uniform_subset():
    truth = truth_of({"A": (list("abcde"), [{"a"}])})
    counts = dict.fromkeys("abcde", 0)
    for seed in range(3000):
        for instance in random_selection(truth, seed)["A"]:
            counts[instance] += 1
    # Each instance is in a uniformly random 3-subset of 5 with probability 3/5 (1800 of 3000;
    # the binomial standard deviation is about 27).
    assert all(abs(count - 1800) < 130 for count in counts.values()), counts


def test_largest_first_by_area_with_the_plus_one_convention_and_ties_by_id():
    boxes = {
        "p": Box(0, 0, 9, 9),    # 10 x 10 = 100
        "q": Box(5, 5, 15, 13),  # 11 x 9 = 99
        "r": Box(0, 0, 19, 4),   # 20 x 5 = 100, ties with p; p < r
        "s": Box(3, 3, 3, 3),    # 1 x 1 = 1
    }
    truth = SelectionTruth({"A": ImageTruth(boxes, {"0": frozenset("s")}),
                            "B": ImageTruth({"t": Box(0, 0, 0, 0)}, {"0": frozenset("t")})})
    assert boxes["q"].area == 99 and boxes["s"].area == 1
    assert largest_selection(truth) == {"A": frozenset("pqr"), "B": frozenset("t")}
    assert largest_selection(truth, k=2) == {"A": frozenset("pr"), "B": frozenset("t")}
    assert largest_selection(truth, k=1)["A"] == frozenset("p")
    with pytest.raises(SelectionError, match="no box coordinates"):
        largest_selection(truth_of(HAND))
    with pytest.raises(SelectionError, match="k must be a positive integer"):
        largest_selection(truth, k=0)


# --- readers ------------------------------------------------------------------

def write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def hand_files(tmp_path):
    instances = write(tmp_path / "instances.csv", "image_id,instance,xmin,ymin,xmax,ymax\n"
                      "A,a,0,0,9,9\nA,b,0,0,4,4\nA,c,2,2,3,3\nA,d,0,0,0,0\nA,e,1,1,8,8\nB,x,0,0,1,1\nB,y,0,0,5,5\n"
                      "C,z,0,0,1,1\n")
    descriptions = write(tmp_path / "descriptions.csv", "image_id,description,instance\n"
                         "A,1,a\nA,1,b\nA,2,b\nA,2,c\nA,2,d\nA,2,c\nB,1,x\n")
    return instances, descriptions


def test_description_and_instance_csvs(tmp_path):
    instances, descriptions = hand_files(tmp_path)
    assert truth_format(descriptions) == "csv"
    truth = read_selection_truth(descriptions, instances)
    assert set(truth.images) == {"A", "B"}  # C has instances but no description: left out
    assert truth.notes["images_without_descriptions"] == 1
    assert truth.images["A"].descriptions == {"1": frozenset("ab"), "2": frozenset("bcd")}  # c twice: once
    assert truth.images["A"].boxes["e"] == Box(1, 1, 8, 8)
    run = read_selection_run(write(tmp_path / "run.csv", "image_id,instance\nA,b\nA,c\nA,e\nA,e\n"), truth)
    assert run == {"A": frozenset("bce")}
    assert run_scores(truth, run)["A"] == ImageScores(Fraction(1, 2), Fraction(7, 12), Fraction(7, 13))


def test_instances_without_coordinates(tmp_path):
    instances = write(tmp_path / "i.csv", "instance,image_id\nu,A\nv,A\n")
    truth = read_selection_truth(write(tmp_path / "d.csv", "image_id,description,instance\nA,0,u\n"), instances)
    assert truth.images["A"].boxes == {"u": None, "v": None}


@pytest.mark.parametrize("name, text, message", [
    ("descriptions.csv", "image_id,instance\nA,a\n", r"descriptions.csv:1: missing column\(s\) description"),
    ("descriptions.csv", "image_id,description,instance\nA,1,a\nA,1,q\n",
     r"descriptions.csv:3: instance 'q' is not among image 'A'"),
    ("descriptions.csv", "image_id,description,instance\nA,1,a\nD,1,a\n",
     r"descriptions.csv:3: image 'D' has no box instances"),
    ("descriptions.csv", "image_id,description,instance\nA,,a\n", r"descriptions.csv:2: empty description"),
    ("descriptions.csv", "image_id,description,instance\n", r"descriptions.csv: no descriptions"),
    ("instances.csv", "image_id,instance\nA,a\n A , a \n", r"instances.csv:3: instance 'a' of image 'A' repeats line 2"),
    ("instances.csv", "image_id,instance,xmin,ymin\nA,a,1,1\n", r"instances.csv:1: .*missing xmax, ymax"),
    ("instances.csv", "image_id,instance,xmin,ymin,xmax,ymax\nA,a,1,1,x,3\n", r"instances.csv:2: xmax 'x' is not"),
    ("instances.csv", "image_id,instance,xmin,ymin,xmax,ymax\nA,a,5,1,4,3\n", r"instances.csv:2: empty box"),
    ("instances.csv", "image_id,instance\n,a\n", r"instances.csv:2: empty image_id"),
    ("instances.csv", "image_id,instance\nA,a,9\n", r"instances.csv:2: 3 fields, the header has 2"),
])
def test_csv_reader_errors_name_file_and_line(tmp_path, name, text, message):
    instances, descriptions = hand_files(tmp_path)
    write(tmp_path / name, text)
    with pytest.raises(SelectionError, match=message):
        read_selection_truth(descriptions, instances)


@pytest.mark.parametrize("text, message", [
    ("image_id\nA\n", r"run.csv:1: missing column\(s\) instance"),
    ("image_id,instance\nA,b\nA,z\n", r"run.csv:3: instance 'z' is not among image 'A'"),
    ("image_id,instance\nC,z\n", r"run.csv:2: image 'C' is not an image of the ground truth"),
    ("image_id,instance\nA,\n", r"run.csv:2: empty instance"),
])
def test_run_reader_errors_name_the_line(tmp_path, text, message):
    truth = read_selection_truth(*reversed(hand_files(tmp_path)))
    with pytest.raises(SelectionError, match=message):
        read_selection_run(write(tmp_path / "run.csv", text), truth)


def test_the_truth_format_decides_whether_instances_are_needed(tmp_path):
    instances, descriptions = hand_files(tmp_path)
    with pytest.raises(SelectionError, match="needs the images' box instances"):
        read_selection_truth(descriptions)
    records = write(tmp_path / "f.json", json.dumps([{"image": "1#0", "entity": "e", "box": [0, 0, 2, 2]}]))
    assert truth_format(records) == "flickr30k_entities"
    with pytest.raises(SelectionError, match="holds Flickr30k Entities records with their own boxes"):
        read_selection_truth(records, instances)


def test_flickr30k_entities_records(tmp_path):
    records = [
        {"image": "7#0", "entity": "1", "box": [10, 20, 5, 4]},   # caption 0 mentions 1 and 2,
        {"image": "7#0", "entity": "2", "box": [0, 0, 3, 3]},
        {"image": "7#0", "entity": "1", "box": [10, 20, 5, 4]},   # 1 again: once
        {"image": "7#1", "entity": "3", "box": None},             # an unboxed phrase: skipped, and caption 1
        {"image": "7#2", "entity": 2, "box": [0, 0, 3, 3]},       # is no description; caption 2 mentions 2
        {"image": "8#0", "entity": "4", "box": []},               # image 8 has no boxed entity
    ]
    truth = read_flickr30k_entities(write(tmp_path / "f.json", json.dumps(records)))
    assert list(truth.images) == ["7"]
    assert truth.images["7"].boxes == {"1": Box(10, 20, 14, 23), "2": Box(0, 0, 2, 2)}  # x + w - 1
    assert truth.images["7"].boxes["1"].area == 5 * 4
    assert truth.images["7"].descriptions == {"0": frozenset({"1", "2"}), "2": frozenset({"2"})}
    assert truth.notes == {"format": "flickr30k_entities", "phrases": 6, "phrases_without_box": 2,
                           "repeated_mentions": 1, "captions_without_instances": 2,
                           "images_without_descriptions": 1}


@pytest.mark.parametrize("records, message", [
    ({"image": "1#0"}, "expected a JSON list"),
    ([{"image": "1", "entity": "e", "box": [0, 0, 1, 1]}], r"record \[0\]: 'image' must be IMAGEID#k"),
    ([{"image": "1#0", "entity": "", "box": [0, 0, 1, 1]}], r"record \[0\]: empty or invalid 'entity'"),
    ([{"image": "1#0", "entity": "e", "box": [0, 0, 1]}], r"record \[0\]: 'box' must be \[x, y, w, h\]"),
    ([{"image": "1#0", "entity": "e", "box": [0, 0, 0, 3]}], r"record \[0\]: 'box' has an empty width"),
    ([{"image": "1#0", "entity": "e", "box": [0, 0, 2, 2]}, {"image": "1#1", "entity": "e", "box": [0, 0, 3, 2]}],
     r"record \[1\]: entity 'e' of image '1' has another box in record \[0\]"),
    (["x"], r"record \[0\]: not a JSON object"),
])
def test_flickr30k_entities_reader_errors_name_the_record(tmp_path, records, message):
    with pytest.raises(SelectionError, match=message):
        read_flickr30k_entities(write(tmp_path / "f.json", json.dumps(records)))


def test_flickr30k_entities_half_reads_as_its_records_say():
    path = require_shared(FLICKR)
    records = json.loads(path.read_text(encoding="utf-8"))
    truth = read_flickr30k_entities(path)
    captions = {r["image"] for r in records}
    assert len(truth.images) == len({c.split("#")[0] for c in captions})
    assert sum(len(i.descriptions) for i in truth.images.values()) == len(captions)
    for record in records[:200]:
        image_id, caption = record["image"].split("#")
        x, y, w, h = record["box"]
        assert truth.images[image_id].boxes[record["entity"]] == Box(x, y, x + w - 1, y + h - 1)
        assert record["entity"] in truth.images[image_id].descriptions[caption]


# --- the command --------------------------------------------------------------

def evaluate_selection(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "annobench.cli", "evaluate-selection", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO)


def test_command_on_csv_files_gives_the_hand_computed_figures(tmp_path):
    instances, descriptions = hand_files(tmp_path)
    run = write(tmp_path / "run.csv", "image_id,instance\nA,b\nA,c\nA,e\n")
    done = evaluate_selection("--truth", descriptions, "--instances", instances, "--run", run,
                              "--json", tmp_path / "out.json")
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "out.json").read_text())
    # A: P 1/2, R 7/12, F 7/13 (test_one_image_by_hand); B is not in the run: 0, 0, 0.
    assert result["images"] == 2 and result["images_not_in_run"] == 1
    assert result["P"]["mean"] == pytest.approx(1 / 4) and result["R"]["mean"] == pytest.approx(7 / 24)
    assert result["F"] == {"mean": pytest.approx(7 / 26), "std": pytest.approx(7 / 26)}
    assert result["run"] == str(run) and result["truth"]["format"] == "csv"
    assert result["truth"]["images_without_descriptions"] == 1


def test_command_baselines_record_their_settings(tmp_path):
    instances, descriptions = hand_files(tmp_path)
    out = tmp_path / "out.json"
    done = evaluate_selection("--truth", descriptions, "--instances", instances, "--baseline", "largest",
                              "--k", 2, "--json", out)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["run"] == "largest" and result["settings"] == {"k": 2, "std": "population"}
    # A: the two largest are a (100) and e (64): |G_1 ∩ S| = 1, |G_2 ∩ S| = 0,
    # P = (1/2)(1/2 + 0/2) = 1/4, R = (1/2)(1/2 + 0/3) = 1/4, F = 1/4.
    # B: x (4) and y (36): S = {x, y}, G = {x}: P = 1/2, R = 1, F = 2/3.
    assert result["P"]["mean"] == pytest.approx((1 / 4 + 1 / 2) / 2)
    assert result["F"]["mean"] == pytest.approx((1 / 4 + 2 / 3) / 2)
    done = evaluate_selection("--truth", descriptions, "--instances", instances, "--baseline", "random",
                              "--seed", 5, "--json", out)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["settings"] == {"k": 3, "seed": 5, "std": "population"}


def test_command_human_bound_on_flickr30k_entities(tmp_path):
    path = require_shared(FLICKR)
    out = tmp_path / "human.json"
    done = evaluate_selection("--truth", path, "--human", "--json", out)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["P"] == result["R"]
    assert all(0 <= result[key][part] <= 1 for key in "PRF" for part in ("mean", "std"))
    assert result["images"] + result["images_left_out"] == result["truth"]["images"]
    assert result["run"] == "human" and result["truth"]["format"] == "flickr30k_entities"


def test_command_reads_the_same_truth_as_csv_and_as_json(tmp_path):
    """The Flickr30k Entities half written as the two CSVs scores the same as read from its JSON."""
    truth = read_flickr30k_entities(require_shared(FLICKR))
    with open(tmp_path / "instances.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image_id", "instance", "xmin", "ymin", "xmax", "ymax"])
        for image_id, image in truth.images.items():
            for instance, box in image.boxes.items():
                writer.writerow([image_id, instance, box.xmin, box.ymin, box.xmax, box.ymax])
    with open(tmp_path / "descriptions.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image_id", "description", "instance"])
        for image_id, image in truth.images.items():
            for key, instances in image.descriptions.items():
                writer.writerows([image_id, key, instance] for instance in sorted(instances))
    for mode in (["--human"], ["--baseline", "largest"], ["--baseline", "random", "--seed", "3"]):
        results = []
        for source in (["--truth", FLICKR], ["--truth", tmp_path / "descriptions.csv",
                                             "--instances", tmp_path / "instances.csv"]):
            out = tmp_path / "out.json"
            done = evaluate_selection(*source, *mode, "--json", out)
            assert done.returncode == 0, done.stderr
            results.append({key: value for key, value in json.loads(out.read_text()).items() if key != "truth"})
        assert results[0] == results[1], mode


@pytest.mark.parametrize("args, message", [
    (["--human", "--k", "2"], "--k and --seed are settings of --baseline"),
    (["--run", "{tmp}/missing.csv"], "missing.csv: no such file"),
    (["--run", "{tmp}/bad_run.csv"], "bad_run.csv:2: instance 'z' is not among image 'A'"),
    (["--baseline", "random", "--k", "0"], "argument --k: '0' is not a positive integer"),
    (["--baseline", "largest", "--seed", "1"], "--seed is a setting of --baseline random"),
])
def test_command_bad_input_exits_2_with_one_line(tmp_path, args, message):
    instances, descriptions = hand_files(tmp_path)
    write(tmp_path / "bad_run.csv", "image_id,instance\nA,z\n")
    done = evaluate_selection("--truth", descriptions, "--instances", instances,
                              *(a.format(tmp=tmp_path) for a in args), "--json", tmp_path / "out.json")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out.json").exists()
