"""The round's parts without a build: the intervals (Villegas and Paredes 2014, section 3.3), the
submissions folder and its metadata, the caption and selection checkers, the results' order and
figures. The round on a real build is in test_campaign_workflow.py."""

from __future__ import annotations

import io
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from annobench.benchmark.annotation.measure import imageclef_2013_measures, imageclef_2013_samples
from annobench.benchmark.campaign.figures import interval_figure
from annobench.benchmark.campaign.intervals import sample_statistics, wilson_interval
from annobench.benchmark.campaign.kit import kit_query_ids
from annobench.benchmark.campaign.results import order_runs
from annobench.benchmark.campaign.submissions import SubmissionsError, find_submissions
from annobench.benchmark.captions.checker import check_caption_run_main, scan_caption_run
from annobench.benchmark.image_list import ImageList
from annobench.benchmark.selection.checker import scan_selection_run
from annobench.benchmark.selection.model import Box
from helpers import read_scene

EVERY_SUBTASK = dict.fromkeys(("annotation", "boxes", "captions", "selection", "illustration"))


# -- intervals ------------------------------------------------------------------------------

def test_intervals_of_zero_one_values_are_wilsons_score_interval():
    # Wilson's score interval (Wilson 1927) for 3 successes of 10 at 95 %: [0.1078, 0.6032]
    values = [1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    stats = sample_statistics(values)
    low, high = wilson_interval(stats["value"], stats["std"], stats["samples"])
    assert (round(low, 4), round(high, 4)) == (0.1078, 0.6032)
    assert wilson_interval(0.0, 0.0, 3)[0] == 0.0 and wilson_interval(1.0, 0.0, 3)[1] == 1.0


def test_intervals_of_a_mean_narrow_with_its_spread_and_size():
    wide = wilson_interval(0.4, 0.3, 20)
    narrow = wilson_interval(0.4, 0.1, 20)
    many = wilson_interval(0.4, 0.3, 2000)
    assert wide[0] < narrow[0] < 0.4 < narrow[1] < wide[1]
    assert many[1] - many[0] < (wide[1] - wide[0]) / 5
    assert wilson_interval(float("nan"), 0.1, 10) is None and wilson_interval(0.5, 0.1, 0) is None


def test_per_sample_measures_average_to_the_2013_measures_on_real_truth():
    scene = read_scene()
    truth = scene.y_test
    rng = np.random.default_rng(3)
    scores = rng.random(truth.shape)
    decisions = scores > 0.7
    samples = imageclef_2013_samples(truth, scores, decisions, seed=5)
    measures = imageclef_2013_measures(truth, scores, decisions, seed=5)
    for key in ("MAP-samples", "MF1-samples", "MF1-concepts"):
        assert math.isclose(float(np.mean(samples[key])), measures[key], rel_tol=0, abs_tol=1e-12)
    assert len(samples["MAP-samples"]) == truth.shape[0] and len(samples["MF1-concepts"]) == truth.shape[1]


# -- the submissions folder --------------------------------------------------------------

def metadata(group: str, run: str, subtask: str = "annotation", **extra) -> str:
    fields = {"group": group, "run": run, "subtask": subtask, "modality": "visual", "external_data": "no", **extra}
    return "".join(f"{key}: {value}\n" for key, value in fields.items())


def test_submissions_are_found_checked_and_limited(tmp_path):
    root = tmp_path / "submissions"
    (root / "alpha").mkdir(parents=True)
    for k in range(3):
        (root / "alpha" / f"run{k}.txt").write_text("x\n")
        (root / "alpha" / f"run{k}.yaml").write_text(metadata("alpha", f"run{k}"))
    (root / "beta").mkdir()
    (root / "beta" / "nometa.csv").write_text("x\n")
    (root / "beta" / "orphan.yaml").write_text(metadata("beta", "orphan"))
    (root / "beta" / "bad.csv").write_text("x\n")
    (root / "beta" / "bad.yaml").write_text(metadata("gamma", "other", subtask="boxes", modality="smell",
                                                     colour="red", external_data="yes"))
    (root / "beta" / "twice.csv").write_text("x\n")
    (root / "beta" / "twice.json").write_text("{}\n")
    (root / "beta" / "twice.yaml").write_text(metadata("beta", "twice", subtask="captions"))
    (root / "beta" / "broken.txt").write_text("x\n")
    (root / "beta" / "broken.yaml").write_text("group: [beta\n")
    found = {s.key: s for s in find_submissions(str(root), 2, {**EVERY_SUBTASK, "boxes": "no boxes here"})}
    assert [k for k, s in found.items() if not s.reasons] == ["alpha/run0", "alpha/run1"]
    assert "at most 2 runs" in found["alpha/run2"].reasons[0]
    found = {s.key: s for s in find_submissions(str(root), 10, {**EVERY_SUBTASK, "boxes": "no boxes here"})}
    assert found["beta/nometa"].reasons == ("no metadata file nometa.yaml beside the run",)
    assert "without a run file" in found["beta/orphan"].reasons[0]
    assert "2 run files named 'twice'" in found["beta/twice"].reasons[0]
    assert "not YAML" in found["beta/broken"].reasons[0]
    bad = "\n".join(found["beta/bad"].reasons)
    for expected in ("unknown key 'colour'", "group 'gamma'", "run 'other'", "no boxes subtask (no boxes here)",
                     "modality 'smell'", "say what in external_data_description"):
        assert expected in bad
    assert found["alpha/run0"].metadata == {"group": "alpha", "run": "run0", "subtask": "annotation",
                                            "modality": "visual", "external_data": False,
                                            "external_data_description": ""}
    assert find_submissions("", 10, EVERY_SUBTASK) == []
    with pytest.raises(SubmissionsError, match="no such folder"):
        find_submissions(str(tmp_path / "absent"), 10, EVERY_SUBTASK)


def test_names_outside_the_safe_characters_are_rejected(tmp_path):
    group = tmp_path / "sub" / "my group"
    group.mkdir(parents=True)
    (group / "run 1.txt").write_text("x\n")
    (group / "run 1.yaml").write_text(metadata("my group", "run 1"))
    (reasons,) = [s.reasons for s in find_submissions(str(tmp_path / "sub"), 10, EVERY_SUBTASK)]
    assert "group folder 'my group'" in reasons[0] and "run 'run 1'" in reasons[1]


# -- the caption and selection checkers -------------------------------------------------------

def test_caption_checker_names_every_faulty_line(tmp_path):
    run = tmp_path / "run.csv"
    run.write_text('image_id,caption\na,"a cat, sitting"\nb,\nc,one,two\na,again\nzz,unknown image\nd,"two\nlines"\n',
                   encoding="utf-8")
    problems, captions, form = scan_caption_run(run, ImageList(("a", "b", "c", "d"), None))
    assert form == "csv" and captions == {"a": "a cat, sitting", "d": "two\nlines"}
    assert [(p.line, p.message.split(" (")[0]) for p in problems] == [
        (3, "empty caption for image 'b'"), (4, "3 field(s), the header has 2"),
        (5, "image 'a' again"), (6, "image 'zz' is not a test image")]
    json_run = tmp_path / "run.json"
    json_run.write_text('[{"image_id": "a", "caption": "x"}, {"image_id": "a", "caption": "y"}, {"caption": "z"}]')
    problems, captions, form = scan_caption_run(json_run, ImageList(("a",), None))
    assert form == "coco_results" and captions == {"a": "x"}
    assert sorted(p.message for p in problems) == ["record 1: image 'a' again (first at record 0): a run gives one "
                                                   "caption per image", 'record 2: needs "image_id" and "caption"']
    out = io.StringIO()
    assert check_caption_run_main(run, None, out=out) == 2 and out.getvalue().count(str(run)) == 3
    (tmp_path / "bad.csv").write_bytes(b"image_id,caption\na,caf\xe9\n")
    assert "not valid UTF-8" in scan_caption_run(tmp_path / "bad.csv")[0][0].message


def test_selection_checker_reads_against_the_test_instances(tmp_path):
    instances = {"img1": {"1": Box(0, 0, 9, 9), "2": None}, "img2": {"a": None}}
    run = tmp_path / "run.csv"
    run.write_text("image_id,instance\nimg1,1\nimg1,1\nimg1,3\nimg3,1\nimg2,a,extra\n,a\nimg2,a\n")
    problems, selected = scan_selection_run(run, instances)
    assert selected == {"img1": frozenset({"1"}), "img2": frozenset({"a"})}
    assert [(p.line, p.message) for p in problems] == [
        (4, "instance '3' is not among image 'img1''s box instances"),
        (5, "image 'img3' is not a test image with box instances"),
        (6, "3 field(s), the header has 2"), (7, "empty image_id or instance")]
    (tmp_path / "empty.csv").write_text("image_id,instance\n")
    assert scan_selection_run(tmp_path / "empty.csv")[0][0].message == "empty run: no selected instances"
    (tmp_path / "header.csv").write_text("image,instance\n")
    assert "lacks column(s) image_id" in scan_selection_run(tmp_path / "header.csv")[0][0].message


# -- the kit's query ids --------------------------------------------------------------------

def test_kit_query_ids_name_the_page_never_the_image():
    queries = [("A%2Fp.html#cat", "A/p.html"), ("A%2Fp.html#dog", "A/p.html"), ("B.html#cat", "B.html")]
    ids = kit_query_ids(queries, seed=7)
    assert sorted(ids) == sorted(q for q, _ in queries)
    assert all("cat" not in i and "dog" not in i for i in ids.values())
    assert ids["A%2Fp.html#cat"].split("-")[0] == ids["A%2Fp.html#dog"].split("-")[0] != ids["B.html#cat"].split("-")[0]
    assert {ids["A%2Fp.html#cat"][-2:], ids["A%2Fp.html#dog"][-2:]} == {"-1", "-2"}
    assert kit_query_ids(queries, seed=8) != ids


# -- order and figures ----------------------------------------------------------------------

def test_runs_are_ordered_by_average_rank_then_mean_within_their_origin():
    rows = []
    values = {"b1": (0.5, 0.5, 0.5, 0.5), "b2": (0.6, 0.3, 0.5, 0.5), "s1": (0.9, 0.1, 0.1, 0.1),
              "s2": (0.2, 0.3, 0.3, 0.3), "s3": (0.3, 0.2, 0.2, 0.2)}
    for run, measures in values.items():
        origin = "baseline" if run.startswith("b") else "submission"
        for measure, value in zip(("MAP-samples", "MF1-samples", "MF1-concepts", "MF1-concepts (unseen)"), measures):
            rows.append({"run": run, "group": None if origin == "baseline" else "g", "origin": origin,
                         "subset": "all", "measure": measure, "value": value})
    order = order_runs(pd.DataFrame(rows), "annotation")
    # Baselines among baselines: b1 ranks 2, 1, 1.5, 1.5 and b2 1, 2, 1.5, 1.5, a tie at 1.5 that b1's higher
    # mean (0.5 against 0.475) breaks. Submissions among submissions: s2 3, 1, 1, 1 (1.5); s3 2, 2, 2, 2 (2);
    # s1 1, 3, 3, 3 (2.5): s1's best MAP-samples does not outweigh its three last places.
    assert order["run"].tolist() == ["b1", "b2", "s2", "s3", "s1"]
    assert order["average_rank"].tolist() == [1.5, 1.5, 1.5, 2.0, 2.5]
    assert order["position"].tolist() == [1, 2, 3, 4, 5]


def test_figures_escape_run_names_and_are_stable():
    rows = [{"run": 'g<1>/run&"x"', "origin": "submission", "value": 0.4, "ci_low": 0.3, "ci_high": 0.5},
            {"run": "baseline", "origin": "baseline", "value": None, "ci_low": None, "ci_high": None}]
    svg = interval_figure("MAP-samples <all>", rows)
    assert svg == interval_figure("MAP-samples <all>", rows)
    root = ET.fromstring(svg)
    texts = [element.text for element in root.iter() if element.text]
    assert 'g<1>/run&"x"' in texts and "baseline (n/a)" in texts and "MAP-samples <all>" in texts
    assert b"<1>" not in svg
