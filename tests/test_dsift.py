"""Dense SIFT against OpenCV's SIFT descriptor on real photos, and the colour variants."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pyarrow.parquet as pq
import pytest

from annobench.cli import main
from annobench.images.decode import DecodeLimits, decode_image
from annobench.images.resize import resize_area
from annobench.visual.dsift import KINDS, DsiftParams, channels, describe, grid
from helpers import bsds_photos, can_play_other_cpus, python_as_cpu

LIMITS = DecodeLimits(10**8, 32, 32)
# OpenCV describes given keypoints on its first pyramid level: the image blurred
# from an assumed sigma 0.5 to 1.6. Our smoothing is set to the same blur.
OPENCV_BLUR = math.sqrt(1.6**2 - 0.5**2)


def stored_photos(n: int) -> list[np.ndarray]:
    return [resize_area(decode_image(p.read_bytes(), LIMITS).pixels, 240) for p in bsds_photos(n)]


def test_descriptors_equal_opencv_sift_at_the_same_keypoints():
    params = DsiftParams(smoothing_sigma=OPENCV_BLUR)
    opencv = cv2.SIFT_create(0, 3, 0.04, 10, 1.6, cv2.CV_32F)
    similarities = []
    for rgb in stored_photos(12):
        grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
        points, ours = describe(np.repeat(grey[..., None], 3, axis=2), "sift", params)
        # Keypoint size s gives OpenCV spatial bins of 1.5 s pixels.
        keypoints = [cv2.KeyPoint(float(x), float(y), params.bin_size / 1.5, 0) for x, y in points]
        kept, theirs = opencv.compute(grey, keypoints)
        assert len(kept) == len(keypoints)
        theirs = theirs / np.maximum(np.linalg.norm(theirs, axis=1, keepdims=True), 1e-12)
        similarities.append((ours * theirs).sum(axis=1))
    similarities = np.concatenate(similarities)
    assert np.median(similarities) >= 0.95
    assert np.percentile(similarities, 5) >= 0.85


def test_grid_and_shapes_for_every_kind():
    rgb = stored_photos(1)[0]
    params = DsiftParams()
    assert list(grid(240, params)[:3]) == [8, 14, 20] and grid(240, params)[-1] <= 240 - 8
    for kind in KINDS:
        points, descriptors = describe(rgb, kind, params)
        per_channel = descriptors.reshape(len(points), -1, 128)
        assert per_channel.shape[1] == (1 if kind == "sift" else 3)
        norms = np.linalg.norm(per_channel, axis=2)
        assert np.allclose(norms[norms > 0], 1.0, atol=1e-5)
        assert per_channel.max() <= 0.2 / 0.2 + 1e-6  # clipped then renormalised


def test_colour_channels_follow_their_definitions():
    rgb = stored_photos(1)[0]
    r, g, b = (rgb[..., i].astype(np.float64) for i in range(3))
    params = DsiftParams()
    o1, o2, o3 = channels(rgb, "opponentsift", params)
    np.testing.assert_allclose(o1, (r - g) / math.sqrt(2), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(o2, (r + g - 2 * b) / math.sqrt(6), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(o3, (r + g + b) / math.sqrt(3), rtol=1e-5, atol=1e-4)
    c1, c2, c3 = channels(rgb, "csift", params)
    np.testing.assert_allclose(c1, o1 / (o3 + params.csift_epsilon), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c3, o3, rtol=1e-6)
    with pytest.raises(ValueError, match="unknown dense SIFT kind"):
        channels(rgb, "hog", params)


def test_dsift_command_writes_raw_descriptors(tmp_path):
    photo = bsds_photos(1)[0]
    out = tmp_path / "d.parquet"
    assert main(["feature", "dsift", "--kind", "rgbsift", str(photo), "--out", str(out)]) == 0
    table = pq.read_table(out)
    rgb = decode_image(photo.read_bytes(), LIMITS).pixels
    points, descriptors = describe(rgb, "rgbsift", DsiftParams())
    assert table.num_rows == len(points)
    assert table.column("x").to_pylist() == points[:, 0].tolist()
    stored = np.stack(table.column("descriptor").to_numpy(zero_copy_only=False))
    np.testing.assert_array_equal(stored, descriptors)


def test_several_kinds_at_once_give_each_kinds_own_descriptors_bit_for_bit():
    from annobench.visual.dsift import describe_kinds

    params = DsiftParams()
    for rgb in stored_photos(3):
        points, together = describe_kinds(rgb, list(KINDS), params)
        for kind in KINDS:
            alone_points, alone = describe(rgb, kind, params)
            assert np.array_equal(points, alone_points)
            assert together[kind].tobytes() == alone.tobytes(), kind
        # O3 is described once for the two kinds that have it: their last channel is one array.
        assert np.array_equal(together["opponentsift"][:, 256:], together["csift"][:, 256:])
    with pytest.raises(ValueError, match="unknown dense SIFT kind 'hog'"):
        describe_kinds(rgb, ["sift", "hog"], params)


DESCRIBE_RUN = """
import hashlib, sys
import numpy as np
from annobench.visual.dsift import KINDS, DsiftParams, describe_kinds
photos = np.load(sys.argv[1])
digest = hashlib.sha256()
for rgb in photos:
    points, described = describe_kinds(rgb, list(KINDS), DsiftParams())
    for kind in KINDS:
        digest.update(described[kind].tobytes())
print(digest.hexdigest())
"""


def numpy_dispatched() -> list[str]:
    """The CPU features numpy's SIMD code is dispatched on (disabling them all leaves its baseline)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__
    except ImportError:  # numpy 1
        from numpy.core._multiarray_umath import __cpu_dispatch__
    return list(__cpu_dispatch__)


def test_descriptors_are_the_same_bits_whatever_the_cpu_offers(tmp_path):
    """The CPU a job runs on chooses OpenBLAS's kernel and the SIMD code of OpenCV and numpy; here
    this machine plays older CPUs (OPENBLAS_CORETYPE, OPENCV_CPU_DISABLE, NPY_DISABLE_CPU_FEATURES),
    and every kind's descriptors of real photos must keep their bits."""
    can_play_other_cpus()
    photos = tmp_path / "photos.npy"
    np.save(photos, np.stack([rgb[:160, :160] for rgb in stored_photos(6)]))
    settings = {"this CPU": {}, "Haswell kernel": {"OPENBLAS_CORETYPE": "Haswell"},
                "Sandybridge kernel": {"OPENBLAS_CORETYPE": "Sandybridge"},
                "SSE3 kernel, OpenCV without AVX, numpy without AVX2": {
                    "OPENBLAS_CORETYPE": "Prescott", "OPENCV_CPU_DISABLE": "AVX512_SKX,AVX2,FMA3,AVX",
                    "NPY_DISABLE_CPU_FEATURES": " ".join(numpy_dispatched())}}
    digests = {name: python_as_cpu(DESCRIBE_RUN, str(photos), **variables) for name, variables in settings.items()}
    assert len(set(digests.values())) == 1, digests
