"""Decode any image file a user can point at into 8-bit sRGB RGB.

Order of operations: read the header, refuse decompression bombs and images
below the minimum size before decoding, decode the first frame, apply the
EXIF orientation, convert the colour space to sRGB (through the embedded ICC
profile where there is one), bring 16-bit data to 8 bits and composite alpha
on white. Every step taken is recorded in `conversion`, so a released image
can be traced back to what was done to it.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageCms, UnidentifiedImageError

EXIF_ORIENTATION_TAG = 0x0112

# What each EXIF orientation needs to display upright (as ImageOps.exif_transpose).
ORIENTATION_TRANSPOSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}

SRGB_PROFILE = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB"))


class ImageRejected(Exception):
    """The file cannot become a dataset image; the message is the rejects reason."""


@dataclass(frozen=True)
class DecodedImage:
    pixels: np.ndarray  # height x width x 3, uint8, sRGB
    mode: str  # Pillow mode of the file as stored
    format: str  # Pillow format name
    orientation: int  # EXIF orientation applied (1 = none)
    conversion: str  # the steps taken, ';'-separated

    @property
    def width(self) -> int:
        return self.pixels.shape[1]

    @property
    def height(self) -> int:
        return self.pixels.shape[0]


@dataclass(frozen=True)
class DecodeLimits:
    max_pixels: int
    min_width: int
    min_height: int
    colour_management: bool = True

    @classmethod
    def from_config(cls, ingest: dict) -> "DecodeLimits":
        return cls(
            max_pixels=ingest["max_pixels"],
            min_width=ingest["min_width"],
            min_height=ingest["min_height"],
            colour_management=ingest["colour_management"],
        )


def decode_image(data: bytes, limits: DecodeLimits) -> DecodedImage:
    if not data:
        raise ImageRejected("empty file")
    # Our own limit is checked on the header below; Pillow's guard must not
    # fire first with a different threshold.
    Image.MAX_IMAGE_PIXELS = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            image = Image.open(io.BytesIO(data))
        except UnidentifiedImageError:
            raise ImageRejected("not a recognised image format") from None
        except Exception as exc:  # Pillow raises many types on corrupt headers
            raise ImageRejected(f"unreadable header: {_describe(exc)}") from None
        with image:
            steps: list[str] = []
            _check_pixels(image.size, limits)  # first: reading a PNG's EXIF may decode the whole image
            orientation = _exif_orientation(image, steps)
            _check_size(image.size, orientation, limits)
            try:
                image.load()
            except Exception as exc:
                raise ImageRejected(f"cannot decode: {_describe(exc)}") from None
            mode, fmt = image.mode, image.format or "unknown"
            if fmt == "PSD":
                steps.append("psd merged image")  # its frames are layers
            elif getattr(image, "n_frames", 1) > 1:
                steps.append(f"frame 1 of {image.n_frames}")
            if orientation != 1:
                image = image.transpose(ORIENTATION_TRANSPOSE[orientation])
                steps.append(f"exif orientation {orientation}")
            pixels = _to_srgb(image, limits.colour_management, steps)
    if any("EXIF" in str(w.message) for w in caught):
        steps.append("corrupt exif")
    return DecodedImage(
        pixels=pixels, mode=mode, format=fmt, orientation=orientation, conversion=";".join(steps)
    )


def oriented_size(path) -> tuple[int, int] | None:
    """(height, width) as decode_image would give them, from the header only; None if unreadable."""
    Image.MAX_IMAGE_PIXELS = None
    try:
        with warnings.catch_warnings(), Image.open(path) as image:
            warnings.simplefilter("ignore")
            width, height = image.size
            orientation = _exif_orientation(image, [])
    except Exception:
        return None
    return (width, height) if orientation in (5, 6, 7, 8) else (height, width)


def _describe(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def _exif_orientation(image: Image.Image, steps: list[str]) -> int:
    try:
        value = image.getexif().get(EXIF_ORIENTATION_TAG, 1)
    except Exception:
        steps.append("exif unreadable, orientation ignored")
        return 1
    if value in ORIENTATION_TRANSPOSE or value == 1:
        return int(value)
    steps.append(f"exif orientation {value!r} invalid, ignored")
    return 1


def _check_pixels(size: tuple[int, int], limits: DecodeLimits) -> None:
    width, height = size
    if width * height > limits.max_pixels:
        raise ImageRejected(
            f"over pixel limit: {width}x{height} = {width * height} pixels > {limits.max_pixels}"
        )


def _check_size(size: tuple[int, int], orientation: int, limits: DecodeLimits) -> None:
    width, height = size
    if orientation in (5, 6, 7, 8):
        width, height = height, width
    if width < limits.min_width or height < limits.min_height:
        raise ImageRejected(
            f"too small: {width}x{height} < minimum {limits.min_width}x{limits.min_height}"
        )


def _to_srgb(image: Image.Image, colour_management: bool, steps: list[str]) -> np.ndarray:
    image = _to_8bit(image, steps)
    alpha = None
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or (
        image.mode in ("P", "L", "RGB") and "transparency" in image.info
    ):
        image = image.convert("RGBA")
        alpha = np.asarray(image.getchannel("A"))
        image = image.convert("RGB")
    icc = image.info.get("icc_profile") if colour_management else None
    rgb = _apply_icc(image, icc, steps) if icc else None
    if rgb is None:
        rgb = _plain_rgb(image, steps)
    pixels = np.asarray(rgb, dtype=np.uint8)
    if alpha is not None and alpha.min() < 255:
        pixels = composite_on_white(pixels, alpha)
        steps.append("alpha composited on white")
    return np.ascontiguousarray(pixels)


def _to_8bit(image: Image.Image, steps: list[str]) -> Image.Image:
    """Scale 16/32-bit integer and float greyscale to 8 bits (Pillow would clip)."""
    if image.mode.startswith("I"):
        values = np.asarray(image).astype(np.float64)
        top = 65535.0 if values.max(initial=0) <= 65535 else float(values.max())
        steps.append(f"{image.mode} scaled to 8 bit")
        return Image.fromarray(_round_to_uint8(values * 255.0 / top), mode="L")
    if image.mode == "F":
        values = np.asarray(image).astype(np.float64)
        scale = 255.0 if values.max(initial=0) <= 1.0 else 1.0
        steps.append("float scaled to 8 bit")
        return Image.fromarray(_round_to_uint8(values * scale), mode="L")
    return image


def _round_to_uint8(values: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(values), 0, 255).astype(np.uint8)


def _apply_icc(image: Image.Image, icc: bytes, steps: list[str]) -> Image.Image | None:
    try:
        profile = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        description = ImageCms.getProfileDescription(profile).strip() or "unnamed"
        if image.mode not in ("RGB", "CMYK", "L", "LAB"):
            image = image.convert("RGB")
        converted = ImageCms.profileToProfile(image, profile, SRGB_PROFILE, outputMode="RGB")
    except Exception as exc:
        steps.append(f"icc profile ignored ({_describe(exc)})")
        return None
    steps.append(f"icc {description} -> sRGB")
    return converted


def _plain_rgb(image: Image.Image, steps: list[str]) -> Image.Image:
    if image.mode == "RGB":
        return image
    if image.mode == "LAB":
        steps.append("LAB -> sRGB")
        lab = ImageCms.ImageCmsProfile(ImageCms.createProfile("LAB"))
        return ImageCms.profileToProfile(image, lab, SRGB_PROFILE, outputMode="RGB")
    steps.append(f"{image.mode} -> RGB")
    return image.convert("RGB")


def composite_on_white(rgb: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """rgb * a + 255 * (1 - a), rounded, in integers."""
    a = alpha.astype(np.uint32)[..., None]
    out = (rgb.astype(np.uint32) * a + 255 * (255 - a) + 127) // 255
    return out.astype(np.uint8)
