"""The 27 SAIAPR region features (Escalante et al. 2008, section 4.4; Carbonetto's code): the
reference values, and hand-checked cases."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from annobench.images.decode import DecodeLimits, decode_image
from annobench.regions.features import (
    FEATURE_NAMES,
    REGION_FEATURES_SCHEMA,
    features_table,
    region_features,
    rgb_to_lab,
)
from annobench.regions.importers import import_segmentations, split_imported
from annobench.regions.importers.msrc_v2 import MSRC_V2_CLASSES
from helpers import REAL, SHARED, require_shared

MSRC = REAL / "segmentations" / "msrc_v2"
REFERENCE = SHARED / "reference" / "region_features" / "msrc_v2_carbonetto27.tsv"
LIMITS = DecodeLimits(max_pixels=10**8, min_width=1, min_height=1)


def read_reference() -> tuple[list[str], list[dict]]:
    with open(require_shared(REFERENCE), newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        return list(reader.fieldnames), list(reader)


def msrc_photo(image_id: str) -> np.ndarray:
    (path,) = [p for p in (MSRC / "Images").glob(f"{image_id}.*") if p.suffix in (".png", ".bmp")]
    return decode_image(path.read_bytes(), LIMITS).pixels


def test_column_order_is_the_reference_header():
    header, _ = read_reference()
    assert header[:3] == ["image", "region", "label"]
    assert tuple(header[3:]) == FEATURE_NAMES
    assert len(FEATURE_NAMES) == 27
    assert REGION_FEATURES_SCHEMA.names[3:] == list(FEATURE_NAMES)


def test_each_feature_column_cites_where_it_is_defined():
    # The description travels into the Parquet metadata, the dataset card and croissant.json.
    for k, name in enumerate(FEATURE_NAMES, 1):
        description = REGION_FEATURES_SCHEMA.field(name).metadata[b"description"].decode()
        assert description == f"SAIAPR region feature {k} (Escalante et al. 2008, section 4.4)"


def test_every_labelled_msrc_region_matches_the_reference():
    _, reference = read_reference()
    segmentations, rejects = split_imported(import_segmentations("msrc_v2", require_shared(MSRC)))
    assert rejects == []
    by_image = {seg.image_id: seg for seg in segmentations}
    expected: dict[str, dict[int, dict]] = {}
    for row in reference:
        expected.setdefault(row["image"], {})[int(row["region"])] = row
    matched, worst = 0, 0.0
    for image_id, rows in expected.items():
        seg = by_image[image_id]
        ids, features = region_features(msrc_photo(image_id), seg.label_map)
        # The reference has exactly the labelled regions, numbered as newseg.
        assert ids.tolist() == sorted(rows), image_id
        for region_id, values in zip(ids.tolist(), features):
            row = rows[region_id]
            want = np.array([float(row[name]) for name in FEATURE_NAMES])
            np.testing.assert_allclose(values, want, rtol=1e-6, atol=1e-9, err_msg=f"{image_id} region {region_id}")
            assert seg.labels[region_id] == MSRC_V2_CLASSES[int(row["label"]) - 1]
            relative = np.abs(values - want) / np.maximum(np.abs(want), 1e-9)
            worst = max(worst, float(relative[np.abs(want) > 1e-6].max()))
            matched += 1
    assert matched == len(reference) == 937
    print(f"{matched} reference rows matched, worst relative error {worst:.2e}")


def test_rectangle_by_hand():
    label_map = np.zeros((10, 20), dtype=np.int32)
    label_map[2:6, 5:13] = 7  # rows 3..6, columns 6..13 in 1-based terms: 4 x 8 = 32 pixels
    rgb = np.full((10, 20, 3), 100, dtype=np.uint8)
    ids, features = region_features(rgb, label_map)
    assert ids.tolist() == [7]
    f = dict(zip(FEATURE_NAMES, features[0]))
    assert f["area"] == pytest.approx(32 / 200)
    assert f["width"] == pytest.approx(8 / 20) and f["height"] == pytest.approx(4 / 10)
    assert f["mean_x"] == pytest.approx(9.5 / 20) and f["mean_y"] == pytest.approx(4.5 / 10)
    # std of 6..13 (each 4 times) over the std of 1..20 across all 200 pixels, both N-1.
    xs = np.tile(np.arange(6, 14), 4)
    all_xs = np.tile(np.arange(1, 21), 10)
    assert f["std_x"] == pytest.approx(xs.std(ddof=1) / all_xs.std(ddof=1))
    assert f["boundary_area"] == pytest.approx((32 - 2 * 6) / 32)  # the 2 x 6 interior is not boundary
    assert f["convexity"] == pytest.approx(0.0)
    assert [f[f"rgb_mean_{c}"] for c in "rgb"] == pytest.approx([100, 100, 100])
    assert [f[f"rgb_std_{c}"] for c in "rgb"] == [0, 0, 0]
    assert [f[f"rgb_skew_{c}"] for c in "rgb"] == [0, 0, 0]
    assert [f[f"lab_skew_{c}"] for c in "lab"] == [0, 0, 0]


def test_colour_moments_against_direct_formulas():
    rng = np.random.default_rng(3)
    rgb = rng.integers(0, 256, size=(30, 40, 3), dtype=np.uint8)
    label_map = rng.integers(0, 4, size=(30, 40))
    ids, features = region_features(rgb, label_map)
    lab = rgb_to_lab(rgb)
    assert ids.tolist() == [1, 2, 3]
    for region_id, values in zip(ids, features):
        inside = label_map == region_id
        for offset, pixels in ((9, rgb[inside].astype(float)), (18, lab[inside])):
            mean = pixels.mean(axis=0)
            deviation = pixels - mean
            m2, m3 = (deviation**2).mean(axis=0), (deviation**3).mean(axis=0)
            np.testing.assert_allclose(values[offset:offset + 3], mean, rtol=1e-12)
            np.testing.assert_allclose(values[offset + 3:offset + 6], pixels.std(axis=0, ddof=1), rtol=1e-10)
            np.testing.assert_allclose(values[offset + 6:offset + 9], m3 / m2**1.5, rtol=1e-9, atol=1e-12)


def test_one_constant_channel_zeroes_all_three_skewnesses():
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
    rgb[..., 1] = 42
    ids, features = region_features(rgb, np.ones((8, 8), dtype=np.int32))
    f = dict(zip(FEATURE_NAMES, features[0]))
    assert [f[f"rgb_skew_{c}"] for c in "rgb"] == [0, 0, 0]
    assert f["rgb_std_r"] > 0 and f["rgb_std_g"] == 0
    assert f["lab_skew_l"] != 0  # Lab mixes the channels: none is constant


def test_single_pixel_region_and_gaps_in_ids():
    label_map = np.zeros((5, 5), dtype=np.int32)
    label_map[0, 0] = 3
    label_map[2:, 2:] = 9
    rgb = np.arange(75, dtype=np.uint8).reshape(5, 5, 3)
    ids, features = region_features(rgb, label_map)
    assert ids.tolist() == [3, 9]
    single = dict(zip(FEATURE_NAMES, features[0]))
    assert single["std_x"] == single["std_y"] == 0
    assert single["boundary_area"] == 1 and single["convexity"] == 0
    assert all(single[name] == 0 for name in FEATURE_NAMES if "_std_" in name or "_skew_" in name)
    assert np.isfinite(features).all()


def test_white_is_lab_100_0_0_and_shared_lab_gives_same_values():
    lab = rgb_to_lab(np.array([[255, 255, 255], [0, 0, 0]], dtype=np.uint8))
    np.testing.assert_allclose(lab[0], [100, 0, 0], atol=1e-4)
    np.testing.assert_allclose(lab[1], [0, 0, 0], atol=1e-12)
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, size=(20, 30, 3), dtype=np.uint8)
    label_map = rng.integers(0, 6, size=(20, 30))
    plain = region_features(rgb, label_map)[1]
    shared = region_features(rgb, label_map, lab=rgb_to_lab(rgb))[1]
    np.testing.assert_allclose(plain, shared, rtol=1e-12)


def test_empty_map_and_size_mismatch():
    ids, features = region_features(np.zeros((4, 4, 3), np.uint8), np.zeros((4, 4), np.int32))
    assert ids.size == 0 and features.shape == (0, 27)
    with pytest.raises(ValueError, match="differ"):
        region_features(np.zeros((4, 5, 3), np.uint8), np.zeros((4, 4), np.int32))


def test_lab_by_distinct_colours_is_the_per_pixel_formula_bit_for_bit():
    photo = decode_image(require_shared(REAL / "images" / "bsds500" / "train" / "105053.jpg").read_bytes(),
                         LIMITS).pixels
    by_colour = rgb_to_lab(photo)
    per_pixel = rgb_to_lab(photo.astype(np.float64))  # not 8-bit: the formula on every pixel
    assert by_colour.shape == per_pixel.shape == photo.shape
    assert by_colour.tobytes() == per_pixel.tobytes()


def test_features_table_stacks_what_region_features_returns():
    segmentations, _ = split_imported(import_segmentations("msrc_v2", require_shared(MSRC)))
    parts = []
    for seg in segmentations[:5]:
        parts.append((seg.image_id, seg.annotator, *region_features(msrc_photo(seg.image_id), seg.label_map)))
    table = features_table(parts)
    assert table.schema.equals(REGION_FEATURES_SCHEMA)
    rows = table.to_pylist()
    expected = [(image_id, annotator, int(region_id), list(values))
                for image_id, annotator, ids, features in parts for region_id, values in zip(ids, features)]
    got = [(r["image_id"], r["annotator"], r["region_id"], [r[name] for name in FEATURE_NAMES]) for r in rows]
    assert got == expected
    assert features_table([]).num_rows == 0
