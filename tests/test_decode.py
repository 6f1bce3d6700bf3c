"""Decoding real files of every kind docs/tables.md lists for images into 8-bit sRGB."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from annobench.images.decode import DecodeLimits, ImageRejected, decode_image

LIMITS = DecodeLimits(max_pixels=100_000_000, min_width=32, min_height=32, colour_management=True)
IMAGE_ENDINGS = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".psd", ".pgm", ".pbm", ".jp2", ".webp", ".gif"}

# The real files that must be refused, and the start of the reason each gets.
EXPECTED_REJECTS = {
    "formats/00r0_gray_l.jp2": "too small: 76x13",
    "formats/exif_gps.jpg": "too small: 8x8",
    "formats/multiple_exif.jpg": "too small: 1x1",
}


def decode_file(path, limits=LIMITS):
    return decode_image(path.read_bytes(), limits)


def test_every_real_image_decodes_or_gets_a_specific_reason(real_images):
    files = sorted(p for p in real_images.rglob("*") if p.suffix.lower() in IMAGE_ENDINGS)
    assert len(files) >= 240
    rejected = {}
    for path in files:
        try:
            decoded = decode_file(path)
        except ImageRejected as exc:
            rejected[path.relative_to(real_images).as_posix()] = str(exc)
            continue
        assert decoded.pixels.dtype == np.uint8 and decoded.pixels.ndim == 3 and decoded.pixels.shape[2] == 3
        assert decoded.pixels.flags.c_contiguous
    assert rejected.keys() == EXPECTED_REJECTS.keys()
    for name, prefix in EXPECTED_REJECTS.items():
        assert rejected[name].startswith(prefix), rejected[name]


@pytest.mark.parametrize("orientation", range(0, 9))
def test_exif_orientation_shows_every_landscape_photo_upright(real_images, orientation):
    folder = real_images / "exif_orientation"
    upright = decode_file(folder / "Landscape_1.jpg").pixels.astype(np.int16)
    decoded = decode_file(folder / f"Landscape_{orientation}.jpg")
    assert decoded.pixels.shape == upright.shape
    # The generator stamps the orientation number on each photo, hence not 0.
    assert np.abs(decoded.pixels.astype(np.int16) - upright).mean() < 6.0
    if orientation >= 2:
        # Without the tag the stored pixels are visibly not upright.
        stored = np.asarray(Image.open(folder / f"Landscape_{orientation}.jpg").convert("RGB")).astype(np.int16)
        assert stored.shape != upright.shape or np.abs(stored - upright).mean() > 20.0


@pytest.mark.parametrize("orientation", [2, 4, 6, 8])
def test_exif_orientation_on_hopper(real_images, orientation):
    formats = real_images / "formats"
    upright = decode_file(formats / "hopper.jpg").pixels.astype(np.int16)
    decoded = decode_file(formats / f"hopper_orientation_{orientation}.jpg")
    assert decoded.orientation == orientation
    assert np.abs(decoded.pixels.astype(np.int16) - upright).mean() < 6.0


@pytest.mark.parametrize("name", ["pil_sample_cmyk.jpg", "tiff_strip_cmyk_jpeg.tif"])
def test_cmyk_becomes_the_right_rgb_colours(real_images, name):
    decoded = decode_file(real_images / "formats" / name)
    assert decoded.mode == "CMYK"
    red_corner, dark_corner = decoded.pixels[0, 0].astype(int), decoded.pixels[-1, -1].astype(int)
    assert red_corner[0] > 200 and red_corner[1] < 60 and red_corner[2] < 60, red_corner
    assert dark_corner.max() < 30, dark_corner


@pytest.mark.parametrize("name", ["p_trns_single.png", "rgb_trns.png", "uncompressed_la.png"])
def test_alpha_is_composited_on_white(real_images, name):
    path = real_images / "formats" / name
    rgba = np.asarray(Image.open(path).convert("RGBA")).astype(np.int32)
    alpha = rgba[..., 3:]
    expected = (rgba[..., :3] * alpha + 255 * (255 - alpha) + 127) // 255
    decoded = decode_file(path)
    assert (alpha == 0).any(), "the file should have transparent pixels"
    assert np.array_equal(decoded.pixels, expected.astype(np.uint8))
    assert (decoded.pixels[alpha[..., 0] == 0] == 255).all()
    assert "alpha composited on white" in decoded.conversion


def test_sixteen_bit_grey_is_scaled_not_clipped(real_images):
    decoded = decode_file(real_images / "formats" / "hopper_16bit.pgm")
    reference = decode_file(real_images / "formats" / "hopper_gray.jpg").pixels[..., 0].astype(float)
    grey = decoded.pixels[..., 0].astype(float)
    assert 0.9 < grey.mean() / reference.mean() < 1.1
    assert np.corrcoef(grey.ravel(), reference.ravel())[0, 1] > 0.95


def test_embedded_icc_profile_is_applied(real_images):
    path = real_images / "formats" / "icc_profile_big.jpg"
    managed = decode_file(path)
    plain = decode_image(path.read_bytes(), DecodeLimits(100_000_000, 32, 32, colour_management=False))
    assert "-> sRGB" in managed.conversion
    assert np.abs(managed.pixels.astype(int) - plain.pixels.astype(int)).max() > 5


def test_greyscale_with_a_space_in_its_name(real_images):
    decoded = decode_file(real_images / "caffe" / "cat gray.jpg")
    assert decoded.mode == "L"
    assert (decoded.pixels[..., 0] == decoded.pixels[..., 1]).all()


def _png_header_only(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) + chunk(b"IEND", b"")


def test_decompression_bomb_is_refused_from_its_header():
    with pytest.raises(ImageRejected, match=r"over pixel limit: 60000x60000 = 3600000000 pixels > 100000000"):
        decode_image(_png_header_only(60000, 60000), LIMITS)


def test_pixel_limit_comes_from_the_config(real_images):
    path = real_images / "bsds500" / "train" / "100075.jpg"
    with pytest.raises(ImageRejected, match="over pixel limit"):
        decode_image(path.read_bytes(), DecodeLimits(100_000, 32, 32))


@pytest.mark.parametrize(
    "payload, reason",
    [(b"", "empty file"), (b"this is not an image at all", "not a recognised image format")],
)
def test_garbage_gets_a_reason(payload, reason):
    with pytest.raises(ImageRejected, match=reason):
        decode_image(payload, LIMITS)


def test_truncated_jpeg_is_refused(real_images):
    data = (real_images / "bsds500" / "train" / "100075.jpg").read_bytes()
    with pytest.raises(ImageRejected, match="cannot decode: image file is truncated"):
        decode_image(data[: len(data) // 2], LIMITS)


def _encode(frames: list[Image.Image], fmt: str, **options) -> bytes:
    buffer = io.BytesIO()
    frames[0].save(buffer, fmt, save_all=len(frames) > 1, append_images=frames[1:], **options)
    return buffer.getvalue()


def test_gif_takes_the_first_frame():
    frames = [Image.new("RGB", (40, 40), colour) for colour in ((255, 0, 0), (0, 0, 255))]
    decoded = decode_image(_encode(frames, "GIF"), LIMITS)
    assert tuple(decoded.pixels[20, 20]) == (255, 0, 0)
    assert "frame 1 of 2" in decoded.conversion


def test_webp_with_alpha(real_images):
    photo = Image.open(real_images / "bsds500" / "train" / "100075.jpg").convert("RGBA")
    photo.putalpha(0)
    decoded = decode_image(_encode([photo], "WEBP", lossless=True), LIMITS)
    assert decoded.format == "WEBP"
    assert (decoded.pixels == 255).all()
