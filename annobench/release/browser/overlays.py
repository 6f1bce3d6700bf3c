"""The regions drawn over a stored picture: a colour per label, the same on
every page, and a semi-transparent outlined PNG per segmentation."""

from __future__ import annotations

import colorsys
import io
from pathlib import Path

import numpy as np
from PIL import Image

FILL_ALPHA = 110             # overlay: regions semi-transparent, outlines opaque


def palette_colour(index: int) -> tuple[int, int, int]:
    """Well-separated colours: hues a golden angle apart, three lightness levels."""
    hue = (index * 0.618033988749895) % 1.0
    lightness = (0.50, 0.38, 0.62)[index % 3]
    red, green, blue = colorsys.hls_to_rgb(hue, lightness, 0.80)
    return round(red * 255), round(green * 255), round(blue * 255)


def hex_colour(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


class Palette:
    """A colour per region label, the most frequent labels first, the same on every page;
    regions without a label are coloured by their id."""

    def __init__(self, labels_by_frequency: list[str]):
        self.order = {label: k for k, label in enumerate(labels_by_frequency)}

    def colour(self, label: str | None, region_id: int) -> tuple[int, int, int]:
        if label is None or label not in self.order:
            return palette_colour(len(self.order) + int(region_id))
        return palette_colour(self.order[label])


def nearest_resize(labels: np.ndarray, width: int, height: int) -> np.ndarray:
    """Nearest-neighbour resampling by pixel centres (exact, independent of any library)."""
    rows = ((np.arange(height) + 0.5) * labels.shape[0] / height).astype(np.int64)
    cols = ((np.arange(width) + 0.5) * labels.shape[1] / width).astype(np.int64)
    return labels[np.minimum(rows, labels.shape[0] - 1)][:, np.minimum(cols, labels.shape[1] - 1)]


def region_edges(labels: np.ndarray) -> np.ndarray:
    """Labelled pixels with a 4-neighbour of another region."""
    edges = np.zeros(labels.shape, dtype=bool)
    vertical = labels[1:, :] != labels[:-1, :]
    horizontal = labels[:, 1:] != labels[:, :-1]
    edges[1:, :] |= vertical
    edges[:-1, :] |= vertical
    edges[:, 1:] |= horizontal
    edges[:, :-1] |= horizontal
    return edges & (labels != 0)


def overlay_png(label_map: np.ndarray, width: int, height: int, colours: dict[int, tuple[int, int, int]]) -> bytes:
    """The regions as a semi-transparent PNG at the stored picture's size, outlined.

    Each pixel is (region, on its outline); with at most 256 such pairs the PNG is
    a palette image (a quarter of the bytes to compress), else RGBA."""
    labels = nearest_resize(label_map, width, height).astype(np.int64)
    codes = labels * 2 + region_edges(labels)
    present = np.bincount(codes.ravel()) > 0  # codes are small: a count beats a sort
    values, inverse = np.flatnonzero(present), (np.cumsum(present) - 1)[codes]
    palette = np.array([pixel_colour(int(v) // 2, bool(v % 2), colours) for v in values], dtype=np.uint8)
    buffer = io.BytesIO()
    if len(values) <= 256:
        image = Image.fromarray(inverse.reshape(labels.shape).astype(np.uint8), "P")
        image.putpalette(palette[:, :3].tobytes(), "RGB")
        image.save(buffer, "PNG", transparency=palette[:, 3].tobytes(), compress_level=6)
    else:
        Image.fromarray(palette[inverse.reshape(labels.shape)], "RGBA").save(buffer, "PNG", compress_level=6)
    return buffer.getvalue()


def pixel_colour(region_id: int, outline: bool, colours: dict[int, tuple[int, int, int]]) -> tuple[int, ...]:
    """Unlabelled pixels and regions without a row stay clear; fills are semi-transparent,
    outlines opaque and darker."""
    rgb = colours.get(region_id)
    if region_id == 0 or rgb is None:
        return (0, 0, 0, 0)
    if outline:
        return (rgb[0] // 2, rgb[1] // 2, rgb[2] // 2, 255)
    return (*rgb, FILL_ALPHA)


def read_label_map(path: Path) -> np.ndarray | None:
    if not path.is_file():
        return None
    with Image.open(path) as image:
        return np.asarray(image)
