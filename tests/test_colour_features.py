"""Colorhist and GETLF on real photos (Villegas and Paredes 2014, section 2.3)."""

from __future__ import annotations

import numpy as np
import pytest

from annobench.images.decode import DecodeLimits, decode_image
from annobench.images.resize import resize_area
from annobench.visual.colour import (
    GetlfParams,
    colorhist,
    colour_bins,
    getlf,
    getlf_projection,
    read_projection,
    window_starts,
    write_projection,
)
from helpers import bsds_photos

LIMITS = DecodeLimits(10**8, 32, 32)


def photos(n: int) -> list[np.ndarray]:
    return [resize_area(decode_image(p.read_bytes(), LIMITS).pixels, 240) for p in bsds_photos(n)]


def test_colorhist_has_nine_normalised_cells_on_real_photos():
    for rgb in photos(10):
        hist = colorhist(rgb)
        assert hist.shape == (576,) and hist.dtype == np.float32
        np.testing.assert_allclose(hist.reshape(9, 64).sum(axis=1), 1.0, rtol=1e-6)
        assert (hist >= 0).all()


@pytest.mark.parametrize("colour, expected_bin", [((255, 0, 0), 48), ((0, 255, 0), 12), ((0, 0, 255), 3),
                                                  ((200, 100, 40), 3 * 16 + 1 * 4 + 0), ((0, 0, 0), 0)])
def test_pure_colour_puts_all_mass_in_its_bin(colour, expected_bin):
    image = np.empty((90, 120, 3), np.uint8)
    image[:] = colour
    cells = colorhist(image).reshape(9, 64)
    assert (cells[:, expected_bin] == 1.0).all()
    assert cells.sum() == 9.0


def test_quarter_turn_permutes_the_cells():
    # 480x321 (a BSDS photo less one column): both sides divide by 3, so the
    # rotated grid has the same cell edges, and cell (r, c) moves to (c, 2 - r).
    for rgb in (decode_image(p.read_bytes(), LIMITS).pixels for p in bsds_photos(5)):
        rgb = rgb[: rgb.shape[0] // 3 * 3, : rgb.shape[1] // 3 * 3]
        cells = colorhist(rgb).reshape(3, 3, 64)
        turned = colorhist(np.ascontiguousarray(np.rot90(rgb, k=-1))).reshape(3, 3, 64)
        for r in range(3):
            for c in range(3):
                np.testing.assert_array_equal(turned[c, 2 - r], cells[r, c])
        assert not np.array_equal(turned, cells)


def test_colour_bins_use_the_top_two_bits_red_first():
    pixel = np.array([[[0b11000000, 0b01000000, 0b10111111]]], np.uint8)
    assert colour_bins(pixel)[0, 0] == 3 * 16 + 1 * 4 + 2


def test_windows_fit_inside_and_are_centred():
    assert list(window_starts(240, 41, 21)) == [5, 26, 47, 68, 89, 110, 131, 152, 173, 194]
    assert window_starts(240, 41, 21)[-1] + 41 <= 240
    assert list(window_starts(30, 41, 21)) == [0]


def test_getlf_is_a_normalised_word_histogram_repeatable_and_seeded(tmp_path):
    params = GetlfParams(seed=11)
    projection = getlf_projection(params)
    assert projection.shape == (8, 64)
    for rgb in photos(10):
        first = getlf(rgb, params, projection)
        assert first.shape == (256,) and abs(first.sum() - 1.0) < 1e-6
        np.testing.assert_array_equal(first, getlf(rgb, params, getlf_projection(GetlfParams(seed=11))))
    other = GetlfParams(seed=12)
    changed = [not np.array_equal(getlf(rgb, params, projection), getlf(rgb, other, getlf_projection(other)))
               for rgb in photos(10)]
    assert all(changed)
    path = tmp_path / "projection.parquet"
    write_projection({"window": 41, "step": 21, "projections": 8, "bits_per_channel": 2, "seed": 11}, path)
    np.testing.assert_array_equal(read_projection(path), projection)


def test_getlf_word_by_hand():
    """The word of one window, recomputed from the projection as a user would."""
    rgb = photos(1)[0]
    params = GetlfParams(seed=3)
    projection = getlf_projection(params)
    image = rgb[:41, :41]  # exactly one window
    local = np.bincount(colour_bins(image).ravel(), minlength=64) / (41 * 41)
    word = sum(1 << bit for bit in range(8) if local @ projection[bit] > 0)
    expected = np.zeros(256, np.float32)
    expected[word] = 1.0
    np.testing.assert_array_equal(getlf(image, params, projection), expected)
