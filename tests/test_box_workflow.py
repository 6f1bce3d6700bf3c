"""The ImageCLEF 2016 subtasks 1 and 3 in the workflow, end to end on real photos (issue 27): box ground truth,
box baselines from the k-NN runs, content-selection baselines, all on the leaderboard, the same
bytes at --cores 1 and --cores 2.

Two builds: 80 MSRC-v2 photos with box truth derived from their segmentations, and the 11 PASCAL
VOC photos of boxes/voc_toyexample with their VOC XML boxes (image-level labels made from the XML,
a given split that leaves cats on the test images)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers import MSRC, REAL, require_shared, run_snakemake, shared_build, tree_bytes


VOC = REAL / "boxes" / "voc_toyexample"
FEATURES = ["colorhist", "gist"]
BOX_RUNS = [f"{kind}_{feature}" for kind in ("whole_image", "knn_transfer") for feature in FEATURES]
SELECTION_RUNS = ["random", "largest", "human"]
VOC_TEST = ["2007_000733", "2007_005688", "2008_002045", "2010_004175"]  # 0, 2, 2 and 1 cats
MSRC_PHOTOS = 80


def _benchmark(**sections) -> dict:
    """A small benchmark: random and k-NN on two cheap features, both box baselines."""
    return {"baselines": ["random", "knn"], "features": FEATURES, "overlap": {"feature": "gist", "neighbours": 10},
            "knn": {"neighbours": 5}, **sections}


def _common(workdir: Path, **sections) -> dict:
    return {"output": "out", "features": {"bow": {"kinds": ["sift"], "words": 20, "iterations": 10}},
            "release": {"browse": {"enabled": False}}, **sections}


def voc_config(workdir: Path) -> Path:
    """The toy example's photos; image-level labels, split lists and two descriptions per test image
    (the first cat, every cat: instance numbers are the objects' order in the XML) made from the XML."""
    require_shared(VOC)
    labels, descriptions = ["image_id,concept"], ["image_id,description,instance"]
    for xml in sorted((VOC / "gts_vocpascal_format").glob("*.xml")):
        names = re.findall(r"<name>\s*(\S+?)\s*</name>", xml.read_text(encoding="utf-8"))
        labels += [f"{xml.stem},{name}" for name in sorted(set(names))]
        if names:
            descriptions.append(f"{xml.stem},first,1")
            descriptions += [f"{xml.stem},every,{n}" for n in range(1, len(names) + 1)]
    ids = sorted(p.stem for p in (VOC / "images").glob("*.jpg"))
    files = {"labels.csv": labels, "descriptions.csv": descriptions, "test.txt": VOC_TEST,
             "train.txt": [i for i in ids if i not in VOC_TEST]}
    for name, lines in files.items():
        (workdir / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    benchmark = _benchmark(
        images="all", ground_truth={"source": "csv", "path": str(workdir / "labels.csv")},
        split={"lists": {"train": str(workdir / "train.txt"), "test": str(workdir / "test.txt")}},
        knn={"neighbours": 3}, overlap={"feature": "gist", "neighbours": 3},
        boxes={"source": "voc", "path": str(VOC / "gts_vocpascal_format")},
        selection={"truth": str(workdir / "descriptions.csv")})
    config = _common(workdir, input={"images": str(VOC / "images"), "page_map": "", "segmentations": ""},
                     benchmark=benchmark)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def msrc_config(workdir: Path) -> Path:
    """The first 80 MSRC-v2 photos, image labels and boxes from their segmentations."""
    require_shared(MSRC)
    photos = sorted(p for p in (MSRC / "Images").iterdir() if p.is_file())[:MSRC_PHOTOS]
    (workdir / "images.csv").write_text("image_id,path\n" + "".join(f"{p.stem},{p}\n" for p in photos))
    benchmark = _benchmark(ground_truth={"source": "regions", "path": ""}, region_split={"subset_sizes": [5]},
                           boxes={"source": "segmentations"})
    config = _common(workdir, input={"images": "", "image_list": str(workdir / "images.csv"), "page_map": "",
                                     "segmentations": str(MSRC)},
                     segmentations={"kind": "msrc"}, benchmark=benchmark)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def build(make_config, cores: int):
    """What shared_build runs: the config `make_config` writes, built on `cores` cores."""
    def make(workdir: Path) -> None:
        run_snakemake(workdir, "--cores", str(cores), "--configfile", str(make_config(workdir)))

    return make


@pytest.fixture(scope="session")
def voc_build(tmp_path_factory) -> Path:
    return shared_build(tmp_path_factory, "voc_boxes", build(voc_config, 2)) / "out"


@pytest.fixture(scope="session")
def voc_build_one_core(tmp_path_factory) -> Path:
    return shared_build(tmp_path_factory, "voc_boxes_one_core", build(voc_config, 1)) / "out"


@pytest.fixture(scope="session")
def msrc_boxes_build(tmp_path_factory) -> Path:
    return shared_build(tmp_path_factory, "msrc_boxes", build(msrc_config, 2)) / "out"


@pytest.fixture(scope="session")
def msrc_boxes_build_one_core(tmp_path_factory) -> Path:
    return shared_build(tmp_path_factory, "msrc_boxes_one_core", build(msrc_config, 1)) / "out"


def check_box_runs(out: Path) -> dict[str, dict]:
    """Every box baseline is written, evaluated in [0, 1] and on both leaderboards; returns the evaluations."""
    splits = pd.read_parquet(out / "tables" / "splits")
    test = set(splits.loc[splits["split"] == "test", "image_id"])
    evaluations = {}
    for name in BOX_RUNS:
        run = pd.read_parquet(out / "runs" / f"{name}.parquet")
        assert set(run["image_id"]) <= test and len(run), name
        assert (out / "runs" / f"{name}.txt").read_text().strip(), name
        result = json.loads((out / "evaluations" / f"{name}.json").read_text())
        assert list(result["MAP"]) == ["0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"]
        assert all(value is not None and 0 <= value <= 1 for value in result["MAP"].values()), name
        assert result["counts"]["images"] == len(test)
        evaluations[name] = result
    for feature in FEATURES:  # a whole-image box finds its object at t = 0 more easily than at 0.5
        whole = evaluations[f"whole_image_{feature}"]["MAP"]
        assert whole["0"] >= whole["0.5"]
    board = pd.read_parquet(out / "tables" / "box_leaderboard")
    assert sorted(board["run"]) == sorted(BOX_RUNS)
    markdown = (out / "reports" / "leaderboard.md").read_text()
    assert "## Localisation (boxes, ImageCLEF 2016 subtask 1)" in markdown
    assert all(f"| {name} |" in markdown for name in BOX_RUNS)
    return evaluations


def same_bytes(first: Path, second: Path) -> None:
    """Every data file of the two builds is byte-identical (logs and job records hold times)."""
    before, after = tree_bytes(first), tree_bytes(second)
    assert sorted(before) == sorted(after)
    assert [k for k in before if before[k] != after[k]] == []


def test_voc_toyexample_box_and_selection_baselines(voc_build):
    out = voc_build
    boxes = pd.read_parquet(out / "tables" / "boxes")
    assert len(boxes) == 12 and set(boxes["concept"]) == {"cat"}
    assert pd.read_parquet(out / "tables" / "box_rejects").empty
    evaluations = check_box_runs(out)
    # The test images hold 5 cats on 3 images: one whole-image box per image finds at most 3 at t = 0.
    assert evaluations["whole_image_gist"]["counts"]["truth_boxes"] == 5
    board = pd.read_parquet(out / "tables" / "selection_leaderboard").set_index("run")
    assert sorted(board.index) == sorted(f"selection_{name}" for name in SELECTION_RUNS)
    for name in SELECTION_RUNS:
        result = json.loads((out / "evaluations" / f"selection_{name}.json").read_text())
        assert result["images"] == 3 and all(0 <= result[m]["mean"] <= 1 for m in ("P", "R", "F"))
    # Human upper bound: P = R by symmetry (Gilbert et al. 2016, equations 3-4).
    assert board.loc["selection_human", "P mean"] == board.loc["selection_human", "R mean"]
    assert (out / "runs" / "selection_random.csv").read_text().startswith("image_id,instance\n")
    assert "## Content selection (ImageCLEF 2016 subtask 3)" in (out / "reports" / "leaderboard.md").read_text()


def test_voc_toyexample_same_bytes_on_one_and_two_cores(voc_build, voc_build_one_core):
    same_bytes(voc_build, voc_build_one_core)


def test_msrc_boxes_from_segmentations(msrc_boxes_build):
    out = msrc_boxes_build
    boxes = pd.read_parquet(out / "tables" / "boxes")
    concepts = set(pd.read_parquet(out / "tables" / "concepts")["concept"])
    assert len(boxes) > MSRC_PHOTOS and set(boxes["concept"]) <= concepts
    regions = pd.read_parquet(out / "tables" / "regions").dropna(subset=["label"])
    truth = pd.read_parquet(out / "tables" / "ground_truth")
    # Every image's box concepts are its image-level labels (both come from its labelled regions).
    assert (boxes.groupby("image_id")["concept"].apply(frozenset).to_dict()
            == truth.groupby("image_id")["concept"].apply(frozenset).to_dict())
    assert set(regions["image_id"]) >= set(boxes["image_id"])
    check_box_runs(out)


def test_msrc_same_bytes_on_one_and_two_cores(msrc_boxes_build, msrc_boxes_build_one_core):
    same_bytes(msrc_boxes_build, msrc_boxes_build_one_core)


def test_segmentation_boxes_need_segmentations(tmp_path):
    """A bad combination is refused when the workflow is planned, with a message naming the keys."""
    config = yaml.safe_load(voc_config(tmp_path).read_text())
    config["benchmark"]["boxes"] = {"source": "segmentations"}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = run_snakemake(tmp_path, "-n", "--configfile", str(tmp_path / "config.yaml"), check=False)
    assert result.returncode != 0
    assert "benchmark.boxes.source is segmentations but input.segmentations is empty" in result.stdout
