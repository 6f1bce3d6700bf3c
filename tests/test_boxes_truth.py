"""Box ground truth (ImageCLEF 2016 subtask 1, Gilbert et al. 2016; PASCAL VOC devkit conventions,
Everingham et al. 2010): every form read on real files, boxes derived from the real MSRC-v2
segmentations, and a rejects row, with its reason, for every kind of bad box."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from annobench.benchmark.boxes.model import BoxInputError
from annobench.benchmark.boxes.truth import boxes_from_segmentations, read_box_truth, truth_form
from annobench.benchmark.image_list import read_image_list
from annobench.cli import main
from annobench.core.tables import read_metadata
from annobench.regions.importers import import_segmentations
from annobench.regions.importers.msrc_v2 import MSRC_V2_CLASSES
from annobench.regions.segmentation import Segmentation
from helpers import REAL, require_shared

TOY = REAL / "boxes" / "voc_toyexample"
VOC = TOY / "gts_vocpascal_format"
COCO = TOY / "gts_coco_format" / "toy_example_coco.JSON"
PADILLA = REAL / "boxes" / "padilla_odm"
MSRC = REAL / "segmentations" / "msrc_v2"
CORNERS = ["image_id", "concept", "xmin", "ymin", "xmax", "ymax"]


def reasons(truth) -> list[tuple]:
    """(image_id, instance or None for a whole file, reason) of every rejects row."""
    return [(image_id, None if pd.isna(instance) else int(instance), reason)
            for image_id, instance, reason in truth.rejects[["image_id", "instance", "reason"]].itertuples(
                index=False, name=None)]


# ---------------------------------------------------------------- the real files


def test_voc_xml_is_read_as_written():
    truth = read_box_truth(require_shared(VOC))
    assert truth.rejects.empty and len(truth.boxes) == 12 and truth.image_ids and len(truth.image_ids) == 10
    first = truth.boxes.iloc[0]
    # 2007_000549.xml: <xmin>1</xmin> <ymin>49</ymin> <xmax>341</xmax> <ymax>499</ymax>
    assert (first.image_id, first.instance, first.concept) == ("2007_000549", 1, "cat")
    assert (first.xmin, first.ymin, first.xmax, first.ymax) == (1, 49, 341, 499)
    assert first.source == "voc:2007_000549.xml:object 1"
    two = truth.boxes[truth.boxes.image_id == "2008_002045"]
    assert two.instance.tolist() == [1, 2]


def test_coco_json_gives_the_voc_boxes_back():
    """The COCO file was converted from the VOC files with w = xmax - xmin; its area (w + 1)(h + 1)."""
    voc, coco = read_box_truth(require_shared(VOC)), read_box_truth(COCO)
    assert coco.rejects.empty
    key = CORNERS + ["instance"]
    assert coco.boxes[key].sort_values(key).to_numpy().tolist() == voc.boxes[key].sort_values(key).to_numpy().tolist()
    areas = [a["area"] for a in json.loads(COCO.read_text())["annotations"]]
    widths = (coco.boxes.xmax - coco.boxes.xmin + 1) * (coco.boxes.ymax - coco.boxes.ymin + 1)
    assert widths.tolist() == areas
    assert set(coco.image_ids) == set(voc.image_ids)


def test_box_text_files_and_tables_are_read(tmp_path):
    truth = read_box_truth(require_shared(PADILLA / "groundtruths"), geometry="xywh")
    assert truth.rejects.empty and len(truth.boxes) == 15 and len(truth.image_ids) == 7
    # 00001.txt: "person 25 16 38 56": xmax = left + width (Padilla's reading), 39 pixels wide.
    assert truth.boxes.iloc[0][CORNERS].tolist() == ["00001", "person", 25, 16, 63, 72]
    truth.boxes[CORNERS].to_csv(tmp_path / "boxes.csv", index=False)
    table = read_box_truth(tmp_path / "boxes.csv")
    assert truth_form(tmp_path / "boxes.csv") == "csv" and table.image_ids is None
    assert table.boxes[CORNERS].equals(truth.boxes[CORNERS])
    pq.write_table(truth.boxes_table(), tmp_path / "boxes.parquet")
    assert read_box_truth(tmp_path / "boxes.parquet").boxes[["instance", *CORNERS]].equals(
        truth.boxes[["instance", *CORNERS]])


def test_msrc_boxes_enclose_their_regions_exactly():
    root = require_shared(MSRC)
    truth = boxes_from_segmentations("msrc_v2", root)
    assert truth.rejects.empty and len(truth.image_ids) == 296
    maps = {item.image_id: item for item in import_segmentations("msrc_v2", root, wanted=lambda i: i < "12")
            if isinstance(item, Segmentation)}
    assert len(maps) > 10
    for image_id, item in maps.items():
        expected = []
        for region_id, label in sorted(item.labels.items()):
            rows, columns = np.nonzero(item.label_map == region_id)
            expected.append([label, columns.min(), rows.min(), columns.max(), rows.max()])
        got = truth.boxes[truth.boxes.image_id == image_id]
        assert got[CORNERS[1:]].to_numpy().tolist() == expected
        assert got.instance.tolist() == list(range(1, len(expected) + 1))


def test_msrc_labels_go_through_the_vocabulary():
    everything = boxes_from_segmentations("msrc_v2", require_shared(MSRC))
    vocabulary = [c for c in MSRC_V2_CLASSES if c != "grass"]
    truth = boxes_from_segmentations("msrc_v2", MSRC, vocabulary)
    grass = everything.boxes[everything.boxes.concept == "grass"]
    assert len(grass) > 50
    assert len(truth.boxes) + len(truth.rejects) == len(everything.boxes)
    assert set(truth.rejects.reason) == {"unknown concept 'grass' (not in the vocabulary)"}
    rejected = truth.rejects[["image_id", "instance"]].astype({"instance": "int64"})
    assert rejected.to_numpy().tolist() == grass[["image_id", "instance"]].astype({"instance": "int64"}).to_numpy().tolist()
    assert everything.boxes[everything.boxes.concept != "grass"][["image_id", "instance"]].to_numpy().tolist() == \
        truth.boxes[["image_id", "instance"]].to_numpy().tolist()  # rejects leave their numbers unused


# ---------------------------------------------------------------- every kind of bad box


def edited_voc(tmp_path: Path, edits: dict[str, tuple[str, str]]) -> Path:
    folder = tmp_path / "voc"
    shutil.copytree(require_shared(VOC), folder)
    for name, (old, new) in edits.items():
        path = folder / name
        text = path.read_text()
        assert old in text, (name, old)
        path.write_text(text.replace(old, new, 1))
    return folder


def test_bad_voc_boxes_become_rejects_with_their_reason(tmp_path):
    folder = edited_voc(tmp_path, {
        "2007_000549.xml": ("<xmax>341</xmax>", "<xmax>0</xmax>"),  # xmax < xmin
        "2007_003525.xml": ("<ymin>1</ymin>", "<ymin>400</ymin>"),  # ymax < ymin
        "2007_004856.xml": ("<xmax>335</xmax>", "<xmax>369</xmax>"),  # the image is 368 wide
        "2007_005460.xml": ("<name>cat</name>", "<name>lion</name>"),
        "2007_005688.xml": ("<ymax>251</ymax>", "<ymax>n/a</ymax>"),
        "2008_006599.xml": ("</annotation>", "</annotation"),  # not XML
    })
    images = tmp_path / "images.txt"
    kept = [p.stem for p in sorted(VOC.glob("*.xml")) if p.stem != "2010_004175"]
    images.write_text("\n".join(kept) + "\n")
    truth = read_box_truth(folder, vocabulary=["cat", "dog"], images=read_image_list(images))
    found = reasons(truth)
    assert found[:5] == [
        ("2007_000549", 1, "xmax 0 < xmin 1"),
        ("2007_003525", 1, "ymax 375 < ymin 400"),
        ("2007_004856", 1, "outside the image (368x500)"),
        ("2007_005460", 1, "unknown concept 'lion' (not in the vocabulary)"),
        ("2007_005688", 1, "ymax missing or not a number"),
    ]
    assert found[5][:2] == ("2008_006599", None) and found[5][2].startswith("unreadable VOC XML")
    assert found[6:] == [("2010_004175", 1, "unknown image '2010_004175' (not in the image list)")]
    # The second box of 2007_005688 keeps its number 2; 12 boxes = 5 kept + 7 rejected, one with its file.
    assert truth.boxes[truth.boxes.image_id == "2007_005688"].instance.tolist() == [2]
    assert len(truth.boxes) == 12 - 7
    assert truth.rejects.loc[0, ["xmin", "ymin", "xmax", "ymax"]].tolist() == [1.0, 49.0, 0.0, 499.0]


def test_bad_coco_annotations_become_rejects(tmp_path):
    data = json.loads(require_shared(COCO).read_text())
    data["annotations"][0]["iscrowd"] = 1
    data["annotations"][1]["category_id"] = 7
    data["annotations"][2]["bbox"][2] = -5.0
    data["annotations"][3]["image_id"] = 99
    data["annotations"][4]["bbox"] = [1, 2, 3]
    data["annotations"][5]["bbox"] = [72.4, 122.5, 315.2, 211.0]  # rounded to whole pixels
    (tmp_path / "coco.json").write_text(json.dumps(data))
    truth = read_box_truth(tmp_path / "coco.json")
    assert reasons(truth)[:3] == [
        ("2007_000549", 1, "crowd region (iscrowd = 1): a group of instances, not one box instance"),
        ("2007_003525", 1, "category id 7 is not in categories"),
        ("2007_004856", 1, "negative width or height"),
    ]
    assert reasons(truth)[3][2] == "image id 99 is not in images"
    assert reasons(truth)[4][2] == "bbox [1, 2, 3] is not four numbers [x, y, w, h]"
    # 72.4 -> 72; 122.5 -> 123 (halves up); 72.4 + 315.2 = 387.6 -> 388; 122.5 + 211 = 333.5 -> 334.
    rounded = truth.boxes[truth.boxes.image_id == "2007_005688"]
    assert rounded[["instance", "xmin", "ymin", "xmax", "ymax"]].to_numpy().tolist() == [[2, 72, 123, 388, 334]]


def test_bad_table_rows_become_rejects(tmp_path):
    path = tmp_path / "boxes.csv"
    path.write_text("image_id,concept,xmin,ymin,xmax,ymax,note\n"
                    "a,cat,1,2,10,20,fine\n"
                    "a,cat,1.5,2,10,20,fractional\n"
                    ",cat,1,2,10,20,no image\n"
                    "b,,1,2,10,20,no concept\n"
                    "b,dog,5,5,4,9,too narrow\n"
                    "b,dog,5,5,5,5,one pixel\n")
    truth = read_box_truth(path)
    assert [(i, n, r) for i, n, r in reasons(truth)] == [
        ("a", 2, "coordinates must be whole pixels: xmin 1.5"),
        ("", 1, "empty image_id"),
        ("b", 1, "no concept name"),
        ("b", 2, "xmax 4 < xmin 5"),
    ]
    assert truth.boxes[["image_id", "instance", "xmin", "xmax"]].to_numpy().tolist() == [["a", 1, 1, 10],
                                                                                          ["b", 3, 5, 5]]
    assert truth.rejects.source.tolist()[0] == "csv:boxes.csv:3"
    (tmp_path / "other.csv").write_text("image_id,label,x,y\n")
    with pytest.raises(BoxInputError, match="needs the columns"):
        read_box_truth(tmp_path / "other.csv")


def test_unknown_forms_are_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("no boxes here\n")
    with pytest.raises(BoxInputError, match="not a box ground truth"):
        truth_form(tmp_path / "notes.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BoxInputError, match="holds neither"):
        truth_form(tmp_path / "empty")


# ---------------------------------------------------------------- the boxes command


def test_boxes_command_writes_the_tables(tmp_path, capsys):
    folder = edited_voc(tmp_path, {"2007_000549.xml": ("<xmax>341</xmax>", "<xmax>0</xmax>")})
    out = tmp_path / "out"
    assert main(["boxes", "--truth", str(folder), "--out", str(out)]) == 0
    boxes = pq.read_table(out / "tables" / "boxes" / "all.parquet").to_pandas()
    rejects = pq.read_table(out / "tables" / "box_rejects" / "all.parquet").to_pandas()
    assert len(boxes) == 11 and rejects.reason.tolist() == ["xmax 0 < xmin 1"]
    assert read_metadata(out / "tables" / "boxes" / "all.parquet")["annobench.artefact"] == "boxes"
    first = (out / "tables" / "boxes" / "all.parquet").read_bytes()
    assert main(["boxes", "--truth", str(folder), "--out", str(out)]) == 0
    assert (out / "tables" / "boxes" / "all.parquet").read_bytes() == first
    assert "11 boxes of 10 images, 1 rejects rows" in capsys.readouterr().out


def test_boxes_command_derives_boxes_from_segmentations(tmp_path):
    out = tmp_path / "out"
    require_shared(MSRC)
    assert main(["boxes", "--truth", str(MSRC), "--segmentations", "msrc_v2", "--out", str(out)]) == 0
    boxes = pd.read_parquet(out / "tables" / "boxes" / "all.parquet")
    assert boxes.image_id.nunique() == 296 and set(boxes.concept) <= set(MSRC_V2_CLASSES)


def test_segmentations_of_other_sizes_or_images_are_rejected_whole(tmp_path):
    root = require_shared(MSRC)
    maps = {item.image_id: item.label_map.shape for item in import_segmentations(
        "msrc_v2", root, wanted=lambda i: i in ("10_10_s", "10_12_s")) if isinstance(item, Segmentation)}
    (height, width), (other_height, other_width) = maps["10_10_s"], maps["10_12_s"]
    (tmp_path / "images.csv").write_text(f"image_id,width,height\n10_10_s,{width},{height}\n"
                                         f"10_12_s,{other_width + 1},{other_height}\n")
    truth = boxes_from_segmentations("msrc_v2", root, images=read_image_list(tmp_path / "images.csv"))
    assert set(truth.boxes.image_id) == {"10_10_s"}
    found = dict(((image_id, reason) for image_id, _, reason in reasons(truth)))
    assert found["10_12_s"] == (f"segmentation rejected: label map {other_width}x{other_height} differs from its image "
                              f"{other_width + 1}x{other_height}")
    others = {image_id for image_id in found if image_id not in ("10_10_s", "10_12_s")}
    assert len(others) == 294 and {found[i] for i in others} == {
        "segmentation rejected: no image with this id in the dataset"}
