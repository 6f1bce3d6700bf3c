"""GIST against LEAR's C implementation on real photos (SPEC 3)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from annobench.gist import GistParams, gist, gist_from_square, square_input
from conftest import SHARED, require_shared

REFERENCE = SHARED / "reference" / "gist_lear"


def lear_reference() -> dict[str, np.ndarray]:
    table = require_shared(REFERENCE) / "gist_lear_color_960.tsv"
    lines = table.read_text().splitlines()
    assert lines[0].split("\t")[0] == "input"
    return {f[0]: np.array(f[1:], dtype=np.float64) for f in (line.split("\t") for line in lines[1:])}


def test_colour_gist_matches_lear_on_all_40_inputs():
    reference = lear_reference()
    assert len(reference) == 40
    for name, expected in reference.items():
        pixels = np.asarray(Image.open(REFERENCE / "inputs" / name))
        ours = gist_from_square(pixels).astype(np.float64)
        assert ours.shape == (960,)
        assert np.corrcoef(ours, expected)[0, 1] >= 0.9999, name
        assert np.abs(ours - expected).max() <= 1e-3, name


def test_lear_layout_is_channel_filter_block_with_column_major_blocks():
    reference = lear_reference()
    name = next(iter(reference))
    pixels = np.asarray(Image.open(REFERENCE / "inputs" / name))
    # The same values with the blocks in row-major order (y * 4 + x) would not match.
    ours = gist_from_square(pixels).reshape(3, 20, 4, 4)
    expected = reference[name].reshape(3, 20, 4, 4)
    assert np.abs(ours - expected).max() < 1e-5
    assert np.abs(ours - expected.transpose(0, 1, 3, 2)).max() > 1e-3


def test_grey_gist_has_320_values_and_follows_the_image():
    params = GistParams(colour=False)
    photo = np.asarray(Image.open(next((require_shared(REFERENCE) / "inputs").glob("*.png"))))
    grey = gist_from_square(photo, params)
    assert grey.shape == (320,) == (params.dimension,)
    assert not np.array_equal(grey, gist_from_square(photo[::-1], params))


def test_square_input_rescales_and_crops_the_centre():
    rng = np.random.default_rng(1)
    wide = rng.integers(0, 256, (160, 240, 3)).astype(np.uint8)
    square = square_input(wide, 256)
    assert square.shape == (256, 256, 3) and square.dtype == np.float32
    already = rng.integers(0, 256, (256, 256, 3)).astype(np.uint8)
    assert square_input(already, 256) is already
    assert gist(wide).shape == (960,)


def test_too_small_for_gist():
    with pytest.raises(ValueError, match="at least 8x8"):
        gist_from_square(np.zeros((4, 4, 3), np.uint8), GistParams(image_size=4))
