"""Box ground truth in a build, without the workflow: the geometry and outside settings, boxes a
little outside their image clipped (with notes), labels against kept boxes, and the build's
closing rejects summary."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annobench.benchmark.annotation.ground_truth import truth_from_boxes
from annobench.benchmark.boxes.commands import boxes_main
from annobench.benchmark.boxes.model import BoxInputError
from annobench.benchmark.boxes.stage import (
    BoxConfigError,
    build_box_truth,
    check_config,
    consistency_summary,
    label_box_consistency,
    write_consistency,
)
from annobench.benchmark.boxes.truth import read_box_truth
from annobench.benchmark.image_list import ImageList, read_images
from annobench.core.rejects import reason_shape, rejects_summary


def _config(**boxes) -> dict:
    section = {"source": "text", "path": "x", "geometry": "xyxy", "outside": "reject", "baselines": [], **boxes}
    return {"input": {"segmentations": ""}, "segmentations": {},
            "benchmark": {"ground_truth": {"source": "csv"}, "baselines": ["knn"], "vocabulary": "",
                          "boxes": section, "selection": {"truth": "", "instances": ""}}}


@pytest.mark.parametrize("boxes, ground_truth, message", [
    ({"source": "xywh"}, "csv", "benchmark.boxes.source xywh is now source: text with geometry: xywh"),
    ({"geometry": ""}, "csv", "benchmark.boxes.source is text but benchmark.boxes.geometry is empty"),
    ({"source": ""}, "boxes", "benchmark.ground_truth.source is boxes but benchmark.boxes.source is empty"),
])
def test_box_settings_a_build_cannot_follow_are_refused(boxes, ground_truth, message):
    config = _config(**boxes)
    config["benchmark"]["ground_truth"]["source"] = ground_truth
    with pytest.raises(BoxConfigError, match=message):
        check_config(config)


def _voc_like(folder: Path) -> Path:
    """Three 640x480 images: a box ending one row past its image (VOC's ymax 481), one inside, one
    wholly below the image."""
    folder.mkdir()
    (folder / "a.txt").write_text("chair 10 300 200 481\nperson 5 5 50 60\n")
    (folder / "b.txt").write_text("chair 10 500 20 520\n")
    return folder


IMAGES = ImageList(("a", "b"), {"a": (640, 480), "b": (640, 480)})


def test_a_box_a_little_outside_is_rejected_or_clipped_with_a_note(tmp_path):
    folder = _voc_like(tmp_path / "truth")
    rejected = read_box_truth(folder, images=IMAGES, geometry="xyxy")
    assert rejected.rejects["reason"].tolist() == ["outside the image (640x480)"] * 2
    assert rejected.boxes["concept"].tolist() == ["person"] and rejected.notes.empty
    clipped = read_box_truth(folder, images=IMAGES, geometry="xyxy", outside="clip")
    assert clipped.boxes[["image_id", "instance", "concept", "ymax"]].values.tolist() == [
        ["a", 1, "chair", 480], ["a", 2, "person", 60]]
    assert clipped.notes[["image_id", "instance", "ymax", "note", "source"]].values.tolist() == [
        ["a", 1, 481.0, "clipped to the image (640x480): ymax 481 -> 480", "text:a.txt:1"]]
    assert clipped.rejects["reason"].tolist() == [
        "outside the image (640x480); no pixel of it is inside, so it cannot be clipped"]


def test_the_boxes_command_clips_on_request_and_says_what_it_rejected(tmp_path, capsys):
    folder = _voc_like(tmp_path / "truth")
    (tmp_path / "images.csv").write_text("image_id,width,height\na,640,480\nb,640,480\n")
    err = io.StringIO()
    assert boxes_main(str(folder), str(tmp_path / "out"), images=str(tmp_path / "images.csv"), err=err,
                      geometry="xyxy", outside="clip") == 0
    notes = pd.read_parquet(tmp_path / "out" / "tables" / "box_notes")
    assert notes["note"].tolist() == ["clipped to the image (640x480): ymax 481 -> 480"]
    assert "1 clipped" in capsys.readouterr().out
    assert "1 ground-truth box(es) of" in err.getvalue() and "1 outside the image" in err.getvalue()
    assert boxes_main(str(folder), str(tmp_path / "out2"), err=io.StringIO()) == 2  # no geometry: refused


def _images_table(path: Path, sizes: dict[str, tuple[int, int]]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"image_id": list(sizes), "width": [w for w, _ in sizes.values()],
                             "height": [h for _, h in sizes.values()]}), path)
    return str(path)


def test_a_build_refuses_the_wrong_geometry_naming_the_config_key(tmp_path):
    folder = tmp_path / "truth"
    folder.mkdir()
    for name in "abc":  # corners near the far side of 100x100 images: read as xywh they leave
        (folder / f"{name}.txt").write_text("cat 40 50 90 95\n")
    images = _images_table(tmp_path / "build" / "tables" / "images" / "shard-00000.parquet",
                           {name: (100, 100) for name in "abc"})
    outputs = {name: str(tmp_path / "out" / f"{name}.parquet") for name in ("boxes", "box_rejects", "box_notes")}
    config = _config(path=str(folder), geometry="xywh")
    with pytest.raises(BoxInputError, match=r"read as xywh, 3 boxes leave their image; read as xyxy, every box "
                                            r"fits: benchmark.boxes.geometry: xyxy"):
        build_box_truth(config, [images], None, None, "", outputs, print)
    logged = []
    build_box_truth(_config(path=str(folder)), [images], None, None, "", outputs, logged.append)
    assert len(pd.read_parquet(outputs["boxes"])) == 3 and pd.read_parquet(outputs["box_notes"]).empty
    assert read_images(tmp_path / "build").sizes == {name: (100, 100) for name in "abc"}


def test_labels_from_boxes_are_the_concepts_of_the_kept_boxes():
    boxes = pd.DataFrame({"image_id": ["a", "a", "a", "b"], "concept": ["cat", "dog", "cat", "dog"]})
    assert truth_from_boxes(boxes).label_sets() == {"a": frozenset({"cat", "dog"}), "b": frozenset({"dog"})}


def test_the_consistency_report_names_each_disagreement(tmp_path):
    pd.DataFrame({"image_id": ["a", "a", "b", "c"], "concept": ["chair", "cat", "dog", "cat"]}).to_parquet(
        tmp_path / "truth.parquet")
    pd.DataFrame({"image_id": ["a", "b", "b"], "concept": ["cat", "dog", "bird"]}).to_parquet(tmp_path / "boxes.parquet")
    pd.DataFrame({"image_id": ["a", "d", None], "concept": ["chair", "cow", None]}).to_parquet(
        tmp_path / "rejects.parquet")
    found = label_box_consistency(tmp_path / "truth.parquet", tmp_path / "boxes.parquet", tmp_path / "rejects.parquet")
    write_consistency(found, tmp_path / "reports" / "box_label_consistency.csv")
    assert (tmp_path / "reports" / "box_label_consistency.csv").read_text().splitlines() == [
        "image_id,concept,labelled,boxes,rejected_boxes,finding",
        "a,chair,true,0,1,label whose boxes were all rejected",
        "b,bird,false,1,0,boxes without the label",
        "c,cat,true,0,0,label without a box",
    ]
    assert consistency_summary(tmp_path)[0].startswith("image labels and kept boxes disagree on 3 (image, concept)")


def test_the_rejects_summary_counts_every_table_by_reason(tmp_path):
    tables = tmp_path / "tables"
    for name, column, values in [("box_rejects", "reason", ["outside the image (500x375)"] * 3
                                  + ["unknown concept 'lion' (not in the vocabulary)"]),
                                 ("rejects", "reason", []),
                                 ("box_notes", "note", ["clipped to the image (640x480): ymax 481 -> 480"])]:
        (tables / name).mkdir(parents=True)
        pq.write_table(pa.table({column: pa.array(values, pa.string())}), tables / name / "all.parquet")
    lines = rejects_summary(tmp_path)
    assert lines[0].startswith("annobench: rejects of this build, by table and reason")
    assert lines[1:] == ["  box_notes: 1 kept after a change",
                         "          1  clipped to the image: ymax N -> N",
                         "  box_rejects: 4 rejected",
                         "          3  outside the image",
                         "          1  unknown concept '…'"]
    assert reason_shape("xmax 0 < xmin 1") == "xmax N < xmin N"
    assert rejects_summary(tmp_path / "absent")[0].startswith("annobench: nothing rejected")
