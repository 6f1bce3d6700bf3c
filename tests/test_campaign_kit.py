"""The kit, the test truth and submitted runs of the box and content-selection subtasks (Gilbert et
al. 2016, subtasks 1 and 3), on real data without a build: the PASCAL VOC toy example's cat boxes
and detections, and half of the Flickr30k Entities test images' descriptions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annobench.benchmark.annotation.ground_truth import GROUND_TRUTH_SCHEMA
from annobench.benchmark.boxes.measure import DEFAULT_THRESHOLDS, evaluate_boxes
from annobench.benchmark.boxes.truth import read_box_truth
from annobench.benchmark.campaign.kit import build_kit
from annobench.benchmark.campaign.runs import submission_result
from annobench.benchmark.image_list import ImageList
from annobench.benchmark.splits import SPLITS_SCHEMA
from annobench.benchmark.vocabulary import Concept, concepts_table
from annobench.core.config import deep_merge, load_config
from annobench.core.jobs import Job
from helpers import REAL, require_shared

VOC = REAL / "boxes" / "voc_toyexample"
FLICKR = REAL / "content_selection" / "flickr30k_entities" / "annotation_test_half.json"


@pytest.fixture(scope="module")
def kit(tmp_path_factory) -> dict:
    """A kit of the VOC images (boxes; every other one a test image) and the Flickr30k images
    (content selection; likewise), with the inputs its job reads."""
    from PIL import Image

    require_shared(VOC)
    require_shared(FLICKR)
    root = tmp_path_factory.mktemp("kit")
    vocabulary = [name.strip() for name in (VOC / "voc.names").read_text().splitlines() if name.strip()]
    voc_ids = sorted(p.stem for p in (VOC / "gts_vocpascal_format").glob("*.xml"))
    sizes = {p.stem: Image.open(p).size for p in (VOC / "images").glob("*.jpg")}
    boxes = read_box_truth(VOC / "gts_vocpascal_format", vocabulary,
                           ImageList(tuple(voc_ids), {i: sizes[i] for i in voc_ids})).boxes_table()
    flickr_ids = sorted({record["image"].split("#")[0] for record in pd.read_json(FLICKR).to_dict("records")})
    split = {image_id: ("test" if k % 2 else "train") for k, image_id in enumerate(voc_ids)}
    split.update({image_id: ("test" if k % 2 else "dev") for k, image_id in enumerate(flickr_ids)})
    tables = root / "tables"
    tables.mkdir()
    pq.write_table(concepts_table([Concept(name) for name in vocabulary]), tables / "concepts.parquet")
    frame = boxes.to_pandas()[["image_id", "concept"]].drop_duplicates()
    pq.write_table(pa.Table.from_pandas(frame.assign(agreement=1.0, derived=False), schema=GROUND_TRUTH_SCHEMA,
                                        preserve_index=False), tables / "ground_truth.parquet")
    pq.write_table(pa.table({"image_id": sorted(split), "split": [split[i] for i in sorted(split)]},
                            schema=SPLITS_SCHEMA), tables / "splits.parquet")
    sizes.update({image_id: (500, 375) for image_id in flickr_ids})  # no pictures: any size will do
    ids = sorted(split)
    pq.write_table(pa.table({"image_id": ids, "width": [sizes[i][0] for i in ids],
                             "height": [sizes[i][1] for i in ids]}), tables / "images.parquet")
    pq.write_table(boxes, tables / "boxes.parquet")
    config = deep_merge(load_config(), {"output": str(root), "benchmark": {
        "ground_truth": {"source": "csv"}, "selection": {"truth": str(FLICKR)}}})
    inputs = {"concepts": str(tables / "concepts.parquet"), "ground_truth": str(tables / "ground_truth.parquet"),
              "splits": str(tables / "splits.parquet"), "images": [str(tables / "images.parquet")],
              "boxes": str(tables / "boxes.parquet")}
    raw = build_kit(config, inputs, root / "kit", root / "truth", lambda line: None)
    return {"root": root, "config": config, "raw": raw, "split": split, "boxes": boxes.to_pandas()}


def test_the_kit_gives_the_box_and_selection_inputs_and_keeps_their_test_truth(kit):
    root, split = kit["root"], kit["split"]
    test = {i for i, s in split.items() if s == "test"}
    images = pd.read_csv(root / "kit/test/boxes/test_images.csv")
    assert set(images["image_id"].astype(str)) == test
    assert (images[["width", "height"]] > 0).all().all()
    development = pd.read_parquet(root / "kit/development/boxes/boxes.parquet")
    truth = pd.read_parquet(root / "truth/boxes/boxes.parquet")
    assert set(development["image_id"]).isdisjoint(test) and set(truth["image_id"]) <= test
    assert len(development) + len(truth) == len(kit["boxes"])
    instances = pd.read_csv(root / "kit/test/selection/instances.csv", dtype=str)
    descriptions = pd.read_csv(root / "truth/selection/descriptions.csv", dtype=str)
    assert set(instances["image_id"]) == set(descriptions["image_id"]) and set(instances["image_id"]) <= test
    assert list(instances.columns) == ["image_id", "instance", "xmin", "ymin", "xmax", "ymax"]
    kit_descriptions = pd.read_csv(root / "kit/development/selection/descriptions.csv", dtype=str)
    assert set(kit_descriptions["image_id"]).isdisjoint(test) and len(kit_descriptions)
    assert not (root / "kit/test/selection/descriptions.csv").exists()
    # the test truth's description rows are nowhere in the kit
    truth_rows = set(descriptions.itertuples(index=False, name=None))
    for path in (root / "kit").rglob("*.csv"):
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        if {"image_id", "description", "instance"} <= set(frame.columns):
            assert truth_rows.isdisjoint(frame[["image_id", "description", "instance"]].itertuples(index=False,
                                                                                                      name=None))
    # nor are the test boxes, in any table of the kit or in the example box run
    from annobench.benchmark.boxes.forms import read_box_run

    columns = ["image_id", "concept", "xmin", "ymin", "xmax", "ymax"]
    test_boxes = set(truth[columns].astype(str).itertuples(index=False, name=None))
    tables = [pd.read_csv(p, dtype=str) for p in (root / "kit").rglob("*.csv")]
    tables += [pd.read_parquet(p).astype(str) for p in (root / "kit").rglob("*.parquet")]
    tables.append(read_box_run(root / "kit/runs/boxes/example.txt").astype(str))
    for frame in tables:
        if set(columns) <= set(frame.columns):
            assert test_boxes.isdisjoint(frame[columns].itertuples(index=False, name=None))
    assert [r["role"] for r in kit["raw"]] == ["selection_truth"]
    readme = (root / "kit/README.md").read_text()
    assert "annobench check-box-run" in readme and "annobench check-selection-run" in readme


def job_for(kit: dict, group: str, run: str, run_path: Path, subtask: str, geometry: str | None = None) -> Job:
    root = kit["root"]
    meta = {"group": group, "run": run, "subtask": subtask, "modality": "visual", "external_data": False,
            "external_data_description": "", **({"geometry": geometry} if geometry else {})}
    return Job(rule="submission", config=kit["config"], params={"submission": {"group": group, "run": run,
                                                                               "metadata": meta}},
               inputs={"run": str(run_path), "kit": str(root / "kit"), "truth": str(root / "truth")},
               outputs={}, input_files=[], output_files=[])


def test_box_runs_are_checked_against_the_kit_and_scored_on_the_test_images_only(kit, tmp_path):
    root, test = kit["root"], {i for i, s in kit["split"].items() if s == "test"}
    detections = tmp_path / "detections"
    detections.mkdir()
    for path in (VOC / "dets_classname_abs_xywh").glob("*.txt"):
        if path.stem in test:
            shutil.copy(path, detections / path.name)
    unnamed = job_for(kit, "alpha", "detections", detections, "boxes")
    result, _ = submission_result(unnamed.params["submission"], detections, unnamed)
    # A folder of detections files does not say its geometry: the metadata must.
    assert result["status"] == "rejected" and "the run's metadata key geometry:" in result["problems"][0]["message"]
    job = job_for(kit, "alpha", "detections", detections, "boxes", geometry="xywh")
    result, _ = submission_result(job.params["submission"], detections, job)
    # The kit gives the test images' sizes: a detection past its image's edge is refused, by file and line.
    assert result["status"] == "rejected" and len(result["problems"]) == 1
    problem = result["problems"][0]
    name, message = problem["message"].split(": ", 1)
    assert message.startswith("the box leaves its image")
    lines = (detections / name).read_text().splitlines()
    (detections / name).write_text("\n".join(lines[:problem["line"] - 1] + lines[problem["line"]:]) + "\n")
    result, _ = submission_result(job.params["submission"], detections, job)
    assert result["status"] == "accepted" and result["form"] == "detections", result["problems"]
    truth = pd.read_parquet(root / "truth/boxes/boxes.parquet")
    from annobench.benchmark.boxes.forms import read_box_run

    expected = evaluate_boxes(truth, read_box_run(detections, geometry="xywh"), DEFAULT_THRESHOLDS,
                              image_ids=sorted(pd.read_csv(root / "kit/test/boxes/test_images.csv")["image_id"]))
    assert result["evaluation"]["MAP"] == expected["MAP"] and result["evaluation"]["run"] == "alpha/detections"
    # every detections file: the training images' are not test images, so the run is rejected
    everything = tmp_path / "everything"
    shutil.copytree(VOC / "dets_classname_abs_xywh", everything)
    result, _ = submission_result(job.params["submission"], everything, job_for(kit, "alpha", "everything",
                                                                                everything, "boxes", "xywh"))
    assert result["status"] == "rejected" and result["evaluation"] is None
    unknown = {p["message"].split(":")[0] for p in result["problems"] if "unknown image" in p["message"]}
    assert unknown == {f"{path.stem}.txt" for path in everything.glob("*.txt") if path.stem not in test}
    example = root / "kit/runs/boxes/example.txt"
    result, _ = submission_result(job.params["submission"], example, job_for(kit, "e", "x", example, "boxes"))
    assert result["status"] == "accepted", result["problems"]


def test_selection_runs_are_checked_against_the_test_instances(kit, tmp_path):
    root = kit["root"]
    example = root / "kit/runs/selection/example.csv"
    job = job_for(kit, "beta", "random", example, "selection")
    result, _ = submission_result(job.params["submission"], example, job)
    assert result["status"] == "accepted", result["problems"]
    evaluation = result["evaluation"]
    assert evaluation["images"] == pd.read_csv(root / "truth/selection/descriptions.csv")["image_id"].nunique()
    assert 0 < evaluation["F"]["mean"] < 1
    broken = tmp_path / "broken.csv"
    lines = example.read_text().splitlines()
    image = lines[1].split(",")[0]
    broken.write_text("\n".join([*lines[:3], f"{image},no-such-instance", "not-an-image,1", *lines[3:]]) + "\n")
    result, _ = submission_result(job.params["submission"], broken, job_for(kit, "beta", "broken", broken,
                                                                            "selection"))
    assert result["status"] == "rejected"
    assert [(p["line"], p["message"].split(" is ")[0]) for p in result["problems"]] == [
        (4, "instance 'no-such-instance'"), (5, "image 'not-an-image'")]
