"""GIST against LEAR's C implementation on real photos (Douze et al. 2009)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from PIL import Image

from annobench.visual.gist import GistParams, gist, gist_from_square, square_input
from helpers import SHARED, require_shared

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
        assert np.abs(ours - expected).max() <= 1e-6, name


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


def test_threads_get_the_same_vectors():
    # Each thread has its own work arrays; their alignment must not change the rounding either.
    photos = [np.asarray(Image.open(p)) for p in sorted((require_shared(REFERENCE) / "inputs").glob("*.png"))[:4]]
    grey = GistParams(colour=False)
    expected = [gist_from_square(photo, params) for params in (GistParams(), grey) for photo in photos]
    with ThreadPoolExecutor(4) as pool:
        vectors = list(pool.map(gist_from_square, photos * 2, [GistParams()] * 4 + [grey] * 4))
    assert all(np.array_equal(v, e) for v, e in zip(vectors, expected))


def lear_gist_float64(image: np.ndarray, params: GistParams) -> np.ndarray:
    """LEAR's C code transcribed with float64 numpy FFTs, as a reference for parameters LEAR's output lacks."""
    pixels = image.astype(np.float64)
    channels = pixels.transpose(2, 0, 1) if params.colour else pixels.mean(axis=2)[None]
    pad = params.padding
    padded = np.pad(np.log1p(channels), ((0, 0), (pad, pad), (pad, pad)), mode="symmetric")
    fy, fx = frequencies(*padded.shape[1:])
    s1 = params.prefilter_fc / np.sqrt(np.log(2.0))
    gain = np.exp(-(fx**2 + fy**2) / s1**2)
    whitened = padded - np.fft.ifft2(np.fft.fft2(padded) * gain).real
    local = np.fft.ifft2(np.fft.fft2(whitened.mean(axis=0) ** 2) * gain).real
    planes = (whitened / (0.2 + np.sqrt(np.abs(local))))[:, pad:-pad, pad:-pad]
    height, width = planes.shape[1:]
    fy, fx = frequencies(height, width)
    radius, angle = np.hypot(fx, fy), np.arctan2(fy, fx)
    ys = [k * height // params.blocks for k in range(params.blocks + 1)]
    xs = [k * width // params.blocks for k in range(params.blocks + 1)]
    out = []
    for plane in planes:
        spectrum = np.fft.fft2(plane)
        for scale, n_or in enumerate(params.orientations):
            for j in range(n_or):
                theta = (angle + np.pi * j / n_or + np.pi) % (2 * np.pi) - np.pi
                p1 = 0.3 / 1.85**scale
                radial = -3.5 * (radius / height / p1 - 1) * (radius / width / p1 - 1)
                g = np.exp(radial - 2 * np.pi * (n_or / 8) ** 2 * theta**2)
                magnitude = np.abs(np.fft.ifft2(spectrum * g))
                for a in range(params.blocks):  # block index x * N + y
                    out += [magnitude[ys[b] : ys[b + 1], xs[a] : xs[a + 1]].mean() for b in range(params.blocks)]
    return np.array(out)


def frequencies(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """LEAR's fy, fx (0 at the origin, then positive, then negative; -n/2 for even n)."""
    fy = np.fft.ifftshift(np.arange(height) - height // 2)
    fx = np.fft.ifftshift(np.arange(width) - width // 2)
    return np.meshgrid(fy, fx, indexing="ij")


@pytest.mark.parametrize("colour", [True, False])
def test_other_parameters_match_lear_transcribed_in_float64(colour):
    # An odd number of filters and a grid that does not divide the 40 x 52 image.
    params = GistParams(image_size=40, orientations=(3, 2), blocks=3, prefilter_fc=3.0, colour=colour)
    photo = np.asarray(Image.open(next((require_shared(REFERENCE) / "inputs").glob("*.png"))))[100:140, 90:142]
    ours = gist_from_square(photo, params)
    assert ours.shape == (params.dimension,)
    assert np.abs(ours - lear_gist_float64(photo, params)).max() <= 1e-5
