"""The stored resized image (Villegas and Paredes 2014, section 2.3: at most 240 pixels, aspect ratio
kept): every visual feature is computed from it."""

from __future__ import annotations

import cv2
import numpy as np

EXTENSIONS = {"jpeg": ".jpg", "png": ".png"}


def target_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    """Largest size with both sides <= max_side and the aspect ratio kept; never upscale."""
    longest = max(width, height)
    if longest <= max_side:
        return width, height
    scale = max_side / longest
    if width >= height:
        return max_side, max(1, round(height * scale))
    return max(1, round(width * scale)), max_side


def resize_area(pixels: np.ndarray, max_side: int) -> np.ndarray:
    height, width = pixels.shape[:2]
    new_width, new_height = target_size(width, height, max_side)
    if (new_width, new_height) == (width, height):
        return pixels
    return cv2.resize(pixels, (new_width, new_height), interpolation=cv2.INTER_AREA)


def encode(pixels: np.ndarray, resize: dict) -> bytes:
    """Encode RGB pixels in the configured format; deterministic for a given OpenCV build."""
    bgr = cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR)
    if resize["format"] == "jpeg":
        ok, buffer = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, resize["jpeg_quality"]])
    else:
        ok, buffer = cv2.imencode(".png", bgr, [cv2.IMWRITE_PNG_COMPRESSION, resize["png_compression"]])
    if not ok:
        raise RuntimeError(f"OpenCV could not encode a {pixels.shape} image as {resize['format']}")
    return buffer.tobytes()


def read_stored(path) -> np.ndarray:
    """Decode a stored resized image back to RGB (what features must start from)."""
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION)
    if bgr is None:
        raise OSError(f"cannot read stored image {path}")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
