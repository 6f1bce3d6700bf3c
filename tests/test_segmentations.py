"""Importers of region-level data (SAIAPR TC-12, Escalante et al. 2008; MSRC-v2, Shotton et al.
2006; BSDS500, Martin et al. 2001; COCO panoptic, Kirillov et al. 2019; LabelMe, Russell et al.
2008) into the canonical form, and their rejects."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from annobench.images.decode import DecodeLimits, decode_image
from annobench.regions.features import region_features, rgb_to_lab
from annobench.regions.importers import import_segmentations, split_imported
from annobench.regions.matfile import write_mat
from annobench.regions.relations import spatial_relations
from annobench.regions.segmentation import (
    REGIONS_SCHEMA,
    SEGMENTATION_REJECTS_SCHEMA,
    Segmentation,
    read_label_map,
    regions_table,
    rejects_table,
    write_label_map,
)
from helpers import REAL, REAL_IMAGES, REPO, require_shared

MSRC = REAL / "segmentations" / "msrc_v2"
BSDS = REAL / "segmentations" / "bsds500"
LIMITS = DecodeLimits(max_pixels=10**8, min_width=1, min_height=1)


def run(source: str, root: Path, **options) -> tuple[dict[tuple[str, int], Segmentation], list]:
    segmentations, rejects = split_imported(import_segmentations(source, root, **options))
    return {(s.image_id, s.annotator): s for s in segmentations}, rejects


def reasons(rejects) -> set[tuple[str, int | None, str]]:
    return {(r.image_id, r.region_id, r.reason) for r in rejects}


def check_canonical(seg: Segmentation) -> None:
    assert seg.label_map.ndim == 2 and seg.label_map.dtype == np.int32
    present = set(np.unique(seg.label_map).tolist()) - {0}
    assert present == set(seg.labels)


# --- canonical ---------------------------------------------------------------------

def test_demo_canonical_import():
    found, rejects = run("canonical", REPO / "demo" / "segmentations")
    assert rejects == []
    assert sorted(found) == [("astronaut", 1), ("coins", 1)]
    assert found[("astronaut", 1)].labels == {1: "background", 2: "flag", 3: "person", 4: "shuttle", 5: "helmet"}
    assert set(found[("coins", 1)].labels.values()) == {"background", "coin"}
    for seg in found.values():
        check_canonical(seg)
    table = regions_table(found.values())
    assert table.schema.equals(REGIONS_SCHEMA) and table.num_rows == 5 + 24


def write_canonical(root: Path, maps: dict[str, np.ndarray], rows: list[tuple]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for image_id, label_map in maps.items():
        write_label_map(root / f"{image_id}.png", label_map)
    with open(root / "regions.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image_id", "region_id", "label"])
        writer.writerows(rows)


def test_canonical_error_cases_become_rejects(tmp_path):
    good = np.zeros((4, 6), dtype=np.int32)
    good[:2] = 1
    good[2:] = 2
    extra = good.copy()
    extra[0, 0] = 3  # in the map, not in regions.csv
    write_canonical(tmp_path, {"good": good, "extra": extra, "sized": good},
                    [("good", 1, "sky"), ("good", 2, "grass"), ("good", 4, "ghost"),
                     ("extra", 1, "sky"), ("extra", 2, ""), ("nomap", 1, "sky"), ("good", "x", "bad"),
                     ("sized", 1, "sky"), ("sized", 2, "sky")])
    Image.new("RGB", (6, 4)).save(tmp_path / "colour.png")
    found, rejects = run("canonical", tmp_path, image_sizes={"good": (4, 6), "extra": (4, 6), "sized": (5, 6)})
    assert found[("good", 1)].labels == {1: "sky", 2: "grass"}
    assert found[("extra", 1)].labels == {1: "sky", 2: None}  # an empty label is no label
    assert found[("extra", 1)].label_map[0, 0] == 0  # the unlisted region's pixels are unlabelled
    got = reasons(rejects)
    assert ("good", 4, "empty region: no pixels in the label map") in got
    assert ("extra", 3, "region in the label map has no row in regions.csv") in got
    assert ("nomap", None, "no label map nomap.png for rows of regions.csv") in got
    assert any(r.image_id == "good" and r.region_id is None and "'x' is not a positive integer" in r.reason
               for r in rejects)
    assert any(r.image_id == "colour" and r.region_id is None and "single-channel" in r.reason for r in rejects)
    assert ("sized", None, "label map 6x4 differs from its image 6x5") in got
    assert any(r.image_id == "colour" and r.reason == "unreadable label map: label map must be single-channel, not RGB"
               for r in rejects)
    assert rejects_table(rejects).schema.equals(SEGMENTATION_REJECTS_SCHEMA)
    for seg in found.values():
        check_canonical(seg)


def test_label_map_png_round_trip_8_and_16_bit(tmp_path):
    label_map = np.arange(300 * 2, dtype=np.int32).reshape(2, 300) % 1000
    write_label_map(tmp_path / "a.png", label_map)
    assert np.array_equal(read_label_map(tmp_path / "a.png"), label_map)
    Image.fromarray(np.array([[0, 1], [2, 255]], dtype=np.uint8)).save(tmp_path / "b.png")
    assert read_label_map(tmp_path / "b.png").tolist() == [[0, 1], [2, 255]]
    with pytest.raises(ValueError):
        write_label_map(tmp_path / "c.png", np.array([[70000]]))


def test_label_map_written_in_place_is_the_atomic_file(tmp_path):
    (seg,) = [s for s in split_imported(import_segmentations("bsds500", require_shared(BSDS), annotator=1,
                                                              wanted=lambda image_id: image_id == "105053"))[0]]
    write_label_map(tmp_path / "atomic.png", seg.label_map)
    write_label_map(tmp_path / "inside" / "in_place.png", seg.label_map, atomic=False)
    assert (tmp_path / "inside" / "in_place.png").read_bytes() == (tmp_path / "atomic.png").read_bytes()
    assert np.array_equal(read_label_map(tmp_path / "atomic.png"), seg.label_map)


def test_vocabulary_and_unknown_image_rejects():
    found, rejects = run("canonical", REPO / "demo" / "segmentations",
                         vocabulary={"background", "coin", "person"}, image_sizes={"coins": (303, 384)})
    assert sorted(found) == [("coins", 1)]
    got = reasons(rejects)
    assert ("astronaut", 2, "label 'flag' not in the vocabulary") in got
    assert ("astronaut", None, "no image with this id in the dataset") in got


# --- MSRC-v2 -----------------------------------------------------------------------

def test_msrc_v2_import():
    found, rejects = run("msrc_v2", require_shared(MSRC))
    assert rejects == []
    assert len(found) == 296
    assert sum(len(seg.labels) for seg in found.values()) == 937
    seg = found[("10_10_s", 1)]
    assert seg.labels == {1: "flower", 2: "flower"}
    assert seg.label_map.shape == (213, 320)
    # The void region (id 3, one past the two labels) is unlabelled now.
    assert 3 not in np.unique(seg.label_map)
    for seg in found.values():
        check_canonical(seg)


def test_msrc_v2_maps_have_their_photo_size():
    sizes = {}
    for path in (require_shared(MSRC) / "Images").iterdir():
        with Image.open(path) as image:
            sizes[path.stem] = (image.height, image.width)
    found, rejects = run("msrc_v2", MSRC, image_sizes=sizes)
    assert rejects == [] and len(found) == 296


def test_msrc_v2_bad_label_and_unreadable_file(tmp_path):
    folder = tmp_path / "newsegmentations_mats"
    folder.mkdir()
    newseg = np.array([[1, 1, 2, 2], [3, 3, 4, 4]], dtype=float)
    write_mat(folder / "a_GT.mat", {"newseg": newseg, "newlabels": np.array([[7.0, 99.0, 0.0]])})
    (folder / "b_GT.mat").write_bytes(b"not a mat file")
    write_mat(folder / "c_GT.mat", {"newseg": newseg + 0.5, "newlabels": np.array([[1.0]])})
    found, rejects = run("msrc_v2", tmp_path)
    seg = found[("a", 1)]
    assert seg.labels == {1: "sky"}  # class 7 in 1-based order
    assert seg.label_map.tolist() == [[1, 1, 0, 0], [0, 0, 0, 0]]  # 2, 3 rejected; 4 is void
    got = reasons(rejects)
    assert ("a", 2, "label 99 not in the MSRC-v2 classes") in got
    assert ("a", 3, "label 0 not in the MSRC-v2 classes") in got
    assert any(r.image_id == "b" and r.region_id is None and "unreadable" in r.reason for r in rejects)
    assert ("c", None, "label map has non-integer region ids") in got


# --- BSDS500 -------------------------------------------------------------------------

def test_bsds500_all_annotators_and_one():
    everyone, rejects = run("bsds500", require_shared(BSDS))
    assert rejects == []
    images = {image_id for image_id, _ in everyone}
    assert len(images) == 200
    per_image = {image_id: max(k for i, k in everyone if i == image_id) for image_id in images}
    assert min(per_image.values()) >= 4 and max(per_image.values()) <= 9
    assert all((i, k) in everyone for i, n in per_image.items() for k in range(1, n + 1))
    assert all(label is None for seg in everyone.values() for label in seg.labels.values())

    third, rejects = run("bsds500", BSDS, annotator=3)
    assert set(third) == {(i, 3) for i in images} and rejects == []
    assert np.array_equal(third[("105053", 3)].label_map, everyone[("105053", 3)].label_map)

    fifth, rejects = run("bsds500", BSDS, annotator=5)
    short = {i for i, n in per_image.items() if n < 5}
    assert len(fifth) == 200 - len(short)
    assert {r.image_id for r in rejects} == short
    assert all(r.region_id is None and r.reason.startswith("annotator 5 asked for") for r in rejects)
    with pytest.raises(ValueError):
        run("bsds500", BSDS, annotator=0)


def bsds_photo(image_id: str) -> np.ndarray:
    path = REAL_IMAGES / "bsds500" / "train" / f"{image_id}.jpg"
    return decode_image(path.read_bytes(), LIMITS).pixels


def features_and_relations_for_every_region(found: dict[tuple[str, int], Segmentation]) -> int:
    photos, labs = {}, {}
    regions = 0
    for (image_id, _), seg in sorted(found.items()):
        if image_id not in photos:
            photos[image_id] = bsds_photo(image_id)
            labs[image_id] = rgb_to_lab(photos[image_id])
        ids, features = region_features(photos[image_id], seg.label_map, lab=labs[image_id])
        assert ids.tolist() == sorted(seg.labels)
        assert features.shape == (len(ids), 27) and np.isfinite(features).all()
        relations = spatial_relations(seg.label_map)
        assert len(relations) == len(ids) * (len(ids) - 1)
        regions += len(ids)
    return regions


def test_bsds500_one_annotator_gives_features_and_relations_for_every_region():
    require_shared(REAL_IMAGES / "bsds500")
    found, _ = run("bsds500", require_shared(BSDS), annotator=1)
    assert features_and_relations_for_every_region(found) == sum(len(s.labels) for s in found.values())


def test_bsds500_all_annotators_give_features_and_relations_for_every_region():
    require_shared(REAL_IMAGES / "bsds500")
    found, _ = run("bsds500", require_shared(BSDS / "groundTruth" / "train"))
    first = sorted({image_id for image_id, _ in found})[:25]
    subset = {key: seg for key, seg in found.items() if key[0] in first}
    assert features_and_relations_for_every_region(subset) == sum(len(s.labels) for s in subset.values())


def test_bsds500_bad_file_and_duplicate_id(tmp_path):
    (tmp_path / "train").mkdir()
    (tmp_path / "test").mkdir()
    (tmp_path / "train" / "1.mat").write_bytes(b"MATLAB 5.0 broken")
    write_mat(tmp_path / "train" / "2.mat", {"groundTruth": np.ones((3, 3))})
    write_mat(tmp_path / "test" / "1.mat", {"x": np.ones((3, 3))})
    found, rejects = run("bsds500", tmp_path)
    assert found == {}
    assert {(r.image_id, r.source) for r in rejects} == {("1", "test/1.mat"), ("1", "train/1.mat"), ("2", "train/2.mat")}


# --- SAIAPR TC-12 --------------------------------------------------------------------

def saiapr_mask(shape: tuple[int, int], rows: slice, cols: slice) -> np.ndarray:
    mask = -np.ones(shape)  # SAIAPR: -1 outside the region, 0 inside
    mask[rows, cols] = 0
    return mask


def make_saiapr(root: Path) -> None:
    masks = root / "00" / "segmentation_masks"
    masks.mkdir(parents=True)
    shape = (6, 8)
    write_mat(masks / "25_1.mat", {"segimg_t": saiapr_mask(shape, slice(0, 3), slice(None))})
    write_mat(masks / "25_2.mat", {"segimg_t": saiapr_mask(shape, slice(3, 6), slice(0, 4))})
    write_mat(masks / "25_3.mat", {"segimg_t": saiapr_mask(shape, slice(3, 6), slice(4, 7))})
    write_mat(masks / "25_4.mat", {"segimg_t": saiapr_mask((5, 8), slice(0, 1), slice(None))})  # wrong size
    write_mat(masks / "25_5.mat", {"segimg_t": -np.ones(shape)})  # empty
    write_mat(masks / "25_6.mat", {"segimg_t": saiapr_mask(shape, slice(5, 6), slice(7, 8))})  # unknown label
    write_mat(masks / "25_7.mat", {"segimg_t": saiapr_mask(shape, slice(0, 1), slice(0, 1))})  # no labels row
    (masks / "25_8.mat").write_bytes(b"garbage")
    write_mat(masks / "26_1.mat", {"segimg_t": np.ones((4, 4), dtype=np.uint8)})  # a 0/1 mask: all inside
    write_mat(masks / "27_1.mat", {"segimg_t": np.full((4, 4), 3.0)})  # not a mask
    labels = ["25\t1\t10", "25\t2\t20", "25\t3\t20", "25\t4\t10", "25\t5\t10", "25\t6\t999", "25\t8\t10",
              "26\t1\t20", "27\t1\t10", "28 only-two-fields"]
    (root / "00" / "labels.txt").write_text("\n".join(labels) + "\n", encoding="utf-8")
    (root / "wlist.txt").write_text("10\tsky-blue\n20\tgrass\n", encoding="utf-8")


def test_saiapr_import_and_rejects(tmp_path):
    make_saiapr(tmp_path)
    found, rejects = run("saiapr", tmp_path)
    seg = found[("25", 1)]
    assert seg.labels == {1: "sky-blue", 2: "grass", 3: "grass"}
    assert seg.label_map[:3].tolist() == [[1] * 8] * 3
    assert seg.label_map[5].tolist() == [2, 2, 2, 2, 3, 3, 3, 0]  # region 6 was rejected, 7 too
    assert found[("26", 1)].labels == {1: "grass"} and (found[("26", 1)].label_map == 1).all()
    by_region = {(r.image_id, r.region_id): r.reason for r in rejects}
    assert by_region[("25", 4)] == "mask 8x5 differs from the image's other masks 8x6"
    assert by_region[("25", 5)] == "empty region: no pixels in the label map"
    assert by_region[("25", 6)] == "label 999 not in the vocabulary (wlist.txt)"
    assert by_region[("25", 7)] == "region has no row in the labels file"
    assert by_region[("25", 8)].startswith("unreadable mask")
    assert by_region[("27", 1)].startswith("unreadable mask") and "neither -1/0 nor 0/1" in by_region[("27", 1)]
    assert ("27", None) in by_region  # nothing left of image 27
    assert by_region[("28", None)].startswith("line 10 is not")
    assert {r.source for r in rejects if r.image_id == "25"} >= {"00/segmentation_masks/25_4.mat"}
    for seg in found.values():
        check_canonical(seg)


def test_saiapr_without_wlist_keeps_label_ids(tmp_path):
    make_saiapr(tmp_path)
    (tmp_path / "wlist.txt").unlink()
    found, _ = run("saiapr", tmp_path)
    assert found[("25", 1)].labels[6] == "999"


# --- COCO panoptic ---------------------------------------------------------------------

def encode_panoptic(ids: np.ndarray) -> np.ndarray:
    return np.stack([ids % 256, ids // 256 % 256, ids // 65536], axis=-1).astype(np.uint8)


def test_coco_panoptic_import_and_rejects(tmp_path):
    folder = tmp_path / "panoptic_val2017"
    folder.mkdir()
    ids = np.zeros((4, 5), dtype=np.int64)
    ids[:2] = 3_000_001  # sky (a big id, as real panoptic ids are)
    ids[2:, :2] = 258  # person
    ids[2:, 2:4] = 77  # unknown category
    ids[2:, 4] = 5  # not in segments_info: void
    Image.fromarray(encode_panoptic(ids)).save(folder / "000000000139.png")
    Image.fromarray(np.zeros((4, 5), dtype=np.uint8)).save(folder / "000000000285.png")  # not RGB
    document = {
        "categories": [{"id": 1, "name": "person", "isthing": 1}, {"id": 187, "name": "sky-other-merged"}],
        "annotations": [
            {"file_name": "000000000139.png", "image_id": 139, "segments_info": [
                {"id": 3_000_001, "category_id": 187}, {"id": 258, "category_id": 1},
                {"id": 77, "category_id": 999}, {"id": 4242, "category_id": 1}]},
            {"file_name": "000000000285.png", "image_id": 285, "segments_info": []},
            {"file_name": "000000000632.png", "image_id": 632, "segments_info": []},
        ],
    }
    (tmp_path / "panoptic_val2017.json").write_text(json.dumps(document), encoding="utf-8")
    found, rejects = run("coco_panoptic", tmp_path)
    seg = found[("000000000139", 1)]
    assert seg.labels == {1: "sky-other-merged", 2: "person"}
    assert seg.label_map.tolist() == [[1] * 5, [1] * 5, [2, 2, 0, 0, 0], [2, 2, 0, 0, 0]]
    got = {(r.image_id, r.region_id): r.reason for r in rejects}
    assert got[("000000000139", 3)] == "category 999 not in the categories"
    assert got[("000000000139", 4)] == "empty region: no pixels in the label map"
    assert "must be RGB" in got[("000000000285", None)]
    assert got[("000000000632", None)].startswith("unreadable panoptic PNG")


# --- LabelMe ------------------------------------------------------------------------------

def test_labelme_import_and_rejects(tmp_path):
    shapes = [
        {"label": "sky", "shape_type": "polygon", "points": [[0, 0], [9, 0], [9, 3], [0, 3]]},
        {"label": "car", "shape_type": "rectangle", "points": [[6, 8], [2, 5]]},
        {"label": "sun", "shape_type": "circle", "points": [[8, 8], [8, 9]]},
        {"label": "wire", "shape_type": "line", "points": [[0, 9], [9, 9]]},
        {"label": "hidden", "shape_type": "polygon", "points": [[3, 6], [5, 6], [5, 7], [3, 7]]},
        {"label": "cover", "shape_type": "polygon", "points": [[2, 5], [6, 5], [6, 8], [2, 8]]},
    ]
    document = {"imageHeight": 10, "imageWidth": 10, "imagePath": "street.jpg", "shapes": shapes}
    (tmp_path / "street.json").write_text(json.dumps(document), encoding="utf-8")
    (tmp_path / "broken.json").write_text(json.dumps({"shapes": []}), encoding="utf-8")
    found, rejects = run("labelme", tmp_path)
    seg = found[("street", 1)]
    assert seg.labels == {1: "sky", 3: "sun", 6: "cover"}  # the car and "hidden" lie under "cover"
    assert (seg.label_map[0:4, 0:10] == 1).all()
    assert (seg.label_map[5:9, 2:7] == 6).all()
    assert seg.label_map[8, 8] == 3
    got = {(r.image_id, r.region_id): r.reason for r in rejects}
    assert got[("street", 4)] == "shape not drawable: line with 2 points has no area"
    assert got[("street", 2)] == got[("street", 5)] == "empty region: no pixels in the label map"
    assert got[("broken", None)].startswith("unreadable LabelMe file")
    check_canonical(seg)


def test_unknown_source_is_an_error():
    with pytest.raises(ValueError, match="unknown segmentation source"):
        import_segmentations("pascal", REPO)
