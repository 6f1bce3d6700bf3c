"""Resized images (Villegas and Paredes 2014, section 2.3: at most 240 pixels, aspect ratio kept)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from annobench.images.decode import DecodeLimits, decode_image
from annobench.images.resize import encode, read_stored, resize_area, target_size
from helpers import bsds_photos


@pytest.mark.parametrize(
    "size, expected",
    [((481, 321), (240, 160)), ((321, 481), (160, 240)), ((240, 100), (240, 100)),
     ((100, 50), (100, 50)), ((1800, 1200), (240, 160)), ((1000, 3), (240, 1)), ((500, 500), (240, 240))],
)
def test_target_size_keeps_aspect_and_never_upscales(size, expected):
    assert target_size(*size, max_side=240) == expected


def test_resize_uses_area_interpolation_on_a_real_photo():
    pixels = decode_image(bsds_photos(1)[0].read_bytes(), DecodeLimits(10**8, 32, 32)).pixels
    resized = resize_area(pixels, 240)
    assert resized.shape == (160, 240, 3)
    assert np.array_equal(resized, cv2.resize(pixels, (240, 160), interpolation=cv2.INTER_AREA))
    # Area interpolation averages: the resized mean stays the source mean.
    assert abs(resized.mean() - pixels.mean()) < 0.5


def test_small_images_are_kept_as_they_are():
    pixels = np.random.default_rng(0).integers(0, 256, (50, 80, 3), dtype=np.uint8)
    assert resize_area(pixels, 240) is pixels


@pytest.mark.parametrize("fmt", ["jpeg", "png"])
def test_stored_file_decodes_back_to_the_resized_pixels(tmp_path, fmt):
    pixels = resize_area(decode_image(bsds_photos(2)[1].read_bytes(), DecodeLimits(10**8, 32, 32)).pixels, 240)
    config = {"format": fmt, "jpeg_quality": 95, "png_compression": 6}
    path = tmp_path / f"x.{fmt}"
    path.write_bytes(encode(pixels, config))
    stored = read_stored(path)
    assert stored.shape == pixels.shape
    error = np.abs(stored.astype(int) - pixels.astype(int))
    if fmt == "png":
        assert error.max() == 0
    else:
        assert error.mean() < 2.0
    assert encode(pixels, config) == encode(pixels.copy(), config)
