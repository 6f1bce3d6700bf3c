"""The 27 SAIAPR TC-12 region features (Escalante et al. 2008, section 4.4; Carbonetto's
code), all regions of an image at once.

Carbonetto's features (UBC, 2002) as used for SAIAPR TC-12: shape, position,
and the mean, standard deviation and skewness of RGB and of CIE-Lab inside
each region. They are computed on the full-resolution image and label map.

Every sum is one `np.bincount` over the labelled pixels, so an image costs a
few passes over its pixels whatever its number of regions. Central moments
are taken in two passes (mean first, then powers of the deviations): raw
power sums lose the skewness of near-constant regions to cancellation.
Sums of integers (coordinates, 8-bit values) are exact in any order and come
from (region, value) histograms; sums of floats keep one fixed order (pixel
order within LANES bins), so the features do not change by a bit when the
code around them does.

Conventions (MATLAB's, as the reference implementation): coordinates are
1-based, standard deviations divide by N-1, skewness is the biased m3/m2^1.5.
Features 6-7 divide the region's coordinate std by the std (N-1) of that
coordinate over all W*H pixels of the image, which is what the reference
values show (not the std of the W column indices 1..W).
Where the definition leaves a value undefined we return 0: the standard deviation
of a one-pixel region, the std ratios of a one-pixel image, and the
skewness of all three channels of a colour space when any channel is
constant over the region (docs/tables.md, region_features).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from annobench.core.tables import field
from annobench.regions.segmentation import DenseLabelMap, key_columns, renumber_regions

SHAPE_FEATURES = (
    "area", "width", "height", "mean_x", "mean_y", "std_x", "std_y", "boundary_area", "convexity",
)
COLOUR_FEATURES = tuple(
    f"{space}_{stat}_{channel}"
    for space, channels in (("rgb", "rgb"), ("lab", "lab"))
    for stat in ("mean", "std", "skew")
    for channel in channels
)
FEATURE_NAMES = SHAPE_FEATURES + COLOUR_FEATURES  # the reference implementation's order, 1..27

# sRGB -> XYZ as a right-multiplied matrix ([R G B] x M), applied to RGB/255
# without gamma linearisation, as the reference does.
RGB_TO_XYZ = np.array(
    [[0.412453, 0.212671, 0.019334], [0.357580, 0.715160, 0.119193], [0.180423, 0.072169, 0.950227]]
)
D65_WHITE = np.array([0.950456, 1.0, 1.088754])
LAB_THRESHOLD = 0.008856

# Per-region sums spread over this many interleaved bins: bincount adding
# neighbouring pixels (runs of one region) into one bin stalls on each add.
LANES = 8

# A variance this small relative to the squared mean is rounding noise of a
# constant channel (the smallest real variance of 8-bit data is ~1e-7).
CONSTANT_RELATIVE_VARIANCE = 1e-20

REGION_FEATURES_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "key of the image"),
        field("annotator", pa.int16(), "which segmentation of the image (1 when the source has one)"),
        field("region_id", pa.int32(), "region id in the label map (> 0)"),
    ]
    + [field(name, pa.float64(), f"SAIAPR region feature {k} (Escalante et al. 2008, section 4.4)")
       for k, name in enumerate(FEATURE_NAMES, 1)]
)


def rgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """CIE-Lab of 8-bit RGB values (..., 3) by the reference implementation's formula (no gamma), as
    a view of a channel-first array, so each Lab channel is contiguous.

    A photo has several times fewer colours than pixels and the cube roots
    dominate, so Lab is computed once per distinct colour and spread back.
    """
    if rgb.dtype != np.uint8:
        channels = np.ascontiguousarray(np.moveaxis(rgb, -1, 0), dtype=np.float64)
        return np.moveaxis(_lab_channels(channels.reshape(3, -1)).reshape(channels.shape), 0, -1)
    colours, index = _distinct_colours(rgb)
    lab = np.take(_lab_channels(colours), index, axis=1)
    return np.moveaxis(lab.reshape((3,) + rgb.shape[:-1]), 0, -1)


def _lab_channels(rgb: np.ndarray) -> np.ndarray:
    """Lab of channel-first RGB (3, P) as (3, P); channel-first keeps every step contiguous."""
    # Written out: a (3, 3) @ (3, P) matmul is several times slower in BLAS.
    weights = RGB_TO_XYZ.T / 255.0 / D65_WHITE[:, None]
    xyz = np.stack([w[0] * rgb[0] + w[1] * rgb[1] + w[2] * rgb[2] for w in weights])
    above = xyz > LAB_THRESHOLD
    f = np.where(above, np.cbrt(xyz), 7.787 * xyz + 16.0 / 116.0)
    lightness = np.where(above[1], 116.0 * f[1] - 16.0, 903.3 * xyz[1])  # f[1] = Y^(1/3) above
    return np.stack([lightness, 500.0 * (f[0] - f[1]), 200.0 * (f[1] - f[2])])


def _distinct_colours(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(colours, index): the distinct colours of 8-bit RGB (..., 3) as channel-first float64
    (3, U), and each pixel's colour 0..U-1 (flattened)."""
    keys = ((rgb[..., 0].astype(np.int32) << 16) | (rgb[..., 1].astype(np.int32) << 8) | rgb[..., 2]).ravel()
    position = np.arange(keys.size, dtype=np.int32)
    slot_of = _colour_slots()
    slot_of[keys] = position  # one pixel of each colour stands for it, whichever
    representative = np.take(slot_of, keys)
    chosen = representative == position
    index = np.take(np.cumsum(chosen, dtype=np.int32) - 1, representative)
    distinct = keys[chosen]
    colours = np.stack([distinct >> 16, (distinct >> 8) & 0xFF, distinct & 0xFF]).astype(np.float64)
    return colours, index


@functools.cache
def _colour_slots() -> np.ndarray:
    """Scratch table over the 2^24 colours (64 MiB, allocated once; only the entries of
    the image at hand are written and then read, so it is never cleared)."""
    return np.empty(1 << 24, dtype=np.int32)


def region_features(
    rgb: np.ndarray, label_map: np.ndarray, lab: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(region ids, features): the ids > 0 present in the map, ascending, and an
    (n_regions, 27) float64 array in FEATURE_NAMES order.

    lab: `rgb_to_lab(rgb)`, when several label maps of one image (BSDS500
    annotators) share it; computed here otherwise.
    """
    return features_of_regions(rgb, renumber_regions(label_map), lab)


def features_of_regions(
    rgb: np.ndarray, regions: DenseLabelMap, lab: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """region_features of a map renumbered already (the stage renumbers once for features and relations)."""
    if rgb.shape[:2] != regions.dense.shape:
        raise ValueError(f"image {rgb.shape[:2]} and label map {regions.dense.shape} differ in size")
    if regions.ids.size == 0:
        return regions.ids, np.zeros((0, len(FEATURE_NAMES)))
    pixels = _LabelledPixels.of(regions)
    lab = rgb_to_lab(rgb) if lab is None else lab
    rgb_stats = _byte_moments([rgb[..., k] for k in range(3)], pixels)
    lab_stats = _float_moments([lab[..., k] for k in range(3)], pixels)
    colour = [stat for stats in (rgb_stats, lab_stats) for stat in stats]
    return regions.ids, np.column_stack(_shape_features(regions, pixels) + colour)


@dataclass(frozen=True)
class _LabelledPixels:
    """The labelled pixels of a renumbered map, row by row: what every per-region sum runs over."""

    select: slice | np.ndarray  # picks them out of a flattened image plane
    region: np.ndarray  # each one's region 0..n-1
    lanes: np.ndarray  # each one's bin: region * LANES + position % LANES
    counts: np.ndarray  # pixels per region

    @classmethod
    def of(cls, regions: DenseLabelMap) -> "_LabelledPixels":
        flat = regions.dense.ravel()
        select = slice(None) if regions.counts[0] == 0 else np.flatnonzero(flat)
        region = flat[select].astype(np.intp)
        region -= 1
        lanes = region * LANES
        whole = region.size - region.size % LANES
        rows_of_lanes = lanes[:whole].reshape(-1, LANES)  # a view: adds position % LANES without a division
        rows_of_lanes += np.arange(LANES)
        lanes[whole:] += np.arange(region.size - whole)
        return cls(select, region, lanes, regions.counts[1:])

    def values(self, plane: np.ndarray) -> np.ndarray:
        flat = plane.reshape(-1)
        return flat if isinstance(self.select, slice) else np.take(flat, self.select)

    def sums(self, weights: np.ndarray) -> np.ndarray:
        """Per-region sums of one value per pixel; the lanes are added last (bit for bit as ever)."""
        n = self.counts.size
        return np.bincount(self.lanes, weights, minlength=n * LANES).reshape(n, LANES).sum(axis=1)


def _shape_features(regions: DenseLabelMap, pixels: _LabelledPixels) -> list[np.ndarray]:
    """Features 1-9: area, bounding box, mean and std of the coordinates, boundary, convexity."""
    height, width = regions.dense.shape
    area = pixels.counts.astype(np.float64)
    x_low, x_high, x_mean, x_std = _coordinate_stats(regions, pixels, axis=1)
    y_low, y_high, y_mean, y_std = _coordinate_stats(regions, pixels, axis=0)
    bbox_w, bbox_h = x_high - x_low + 1.0, y_high - y_low + 1.0
    return [
        area / (width * height),
        bbox_w / width,
        bbox_h / height,
        x_mean / width,
        y_mean / height,
        _safe_ratio(x_std, _index_std(width, width * height)),
        _safe_ratio(y_std, _index_std(height, width * height)),
        _boundary_counts(regions.dense, pixels.counts.size) / area,
        1.0 - area / (bbox_w * bbox_h),
    ]


def _coordinate_stats(regions: DenseLabelMap, pixels: _LabelledPixels, axis: int) -> tuple[np.ndarray, ...]:
    """Per region: lowest and highest coordinate, mean and std along one axis (columns: 1,
    rows: 0), MATLAB's 1-based, from the (region, coordinate) histogram."""
    histogram = regions.coordinate_counts(axis)
    n, size = histogram.shape
    present = histogram > 0
    low = present.argmax(axis=1) + 1.0
    high = size - present[:, ::-1].argmax(axis=1) + 0.0
    one_based = np.arange(1, size + 1)
    mean = (histogram @ one_based) / pixels.counts  # integer sums: exact, whatever the order
    # A deviation depends on (region, coordinate) only: look it up by the pixel's cell,
    # row 0 of the table being the unlabelled pixels' (never read).
    deviation = np.zeros((n + 1, size))
    deviation[1:] = one_based - mean[:, None]
    second: list[np.ndarray] = []
    _add_power_sums(np.take(deviation, pixels.values(regions.coordinate_cells(axis))), pixels, second, None)
    mean, std = _statistics([mean], second, None, pixels.counts)
    return low, high, mean[:, 0], std[:, 0]


def _boundary_counts(dense: np.ndarray, n: int) -> np.ndarray:
    """Pixels per region with a 4-neighbour in another region, unlabelled, or outside the image."""
    centre = dense[1:-1, 1:-1]
    boundary = np.ones(dense.shape, dtype=bool)
    boundary[1:-1, 1:-1] = (
        (dense[:-2, 1:-1] != centre)
        | (dense[2:, 1:-1] != centre)
        | (dense[1:-1, :-2] != centre)
        | (dense[1:-1, 2:] != centre)
    )
    return np.bincount(dense[boundary], minlength=n + 1)[1:]


def _byte_moments(planes: list[np.ndarray], pixels: _LabelledPixels) -> tuple[np.ndarray, ...]:
    """_statistics of 8-bit channels: a value's deviation from its region's mean depends on
    (region, value) only, so it comes from a table of n x 256."""
    means, second, third = [], [], []
    n, base, levels = pixels.counts.size, pixels.region * 256, np.arange(256)
    for plane in planes:
        slots = base + pixels.values(plane)  # region * 256 + value
        histogram = np.bincount(slots, minlength=n * 256).reshape(n, 256)
        mean = (histogram @ levels) / pixels.counts  # integer sums: exact, whatever the order
        means.append(mean)
        _add_power_sums(np.take(levels - mean[:, None], slots), pixels, second, third)
    return _statistics(means, second, third, pixels.counts)


def _float_moments(planes: list[np.ndarray], pixels: _LabelledPixels) -> tuple[np.ndarray, ...]:
    """_statistics of float channels (Lab)."""
    means, second, third = [], [], []
    for plane in planes:
        values = pixels.values(plane)
        mean = pixels.sums(values) / pixels.counts
        means.append(mean)
        deviation = np.take(mean, pixels.region)
        np.subtract(values, deviation, out=deviation)
        _add_power_sums(deviation, pixels, second, third)
    return _statistics(means, second, third, pixels.counts)


def _add_power_sums(deviation: np.ndarray, pixels: _LabelledPixels, second: list, third: list | None) -> None:
    """Append the per-region sums of deviation^2 (and ^3) to second (and third)."""
    # In place where possible: a fresh multi-megabyte array costs page faults.
    powers = deviation * deviation
    second.append(pixels.sums(powers))
    if third is not None:
        powers *= deviation
        third.append(pixels.sums(powers))


def _statistics(
    means: list[np.ndarray], second: list[np.ndarray], third: list[np.ndarray] | None, counts: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Per-region mean, std (N-1) and skewness (n, C) of C channels, from each channel's
    means and sums of squared and cubed deviations (third None: no skewness).

    Skewness is zeroed for every channel of a region where any channel is
    constant (annobench's convention: 0 for all three channels when any is
    undefined).
    """
    n_pixels = counts.astype(np.float64)[:, None]
    mean = np.column_stack(means)
    m2 = np.column_stack(second) / n_pixels
    constant = m2 <= CONSTANT_RELATIVE_VARIANCE * np.maximum(mean**2, 1.0)
    m2 = np.where(constant, 0.0, m2)
    with np.errstate(divide="ignore", invalid="ignore"):
        std = np.where(n_pixels > 1, np.sqrt(m2 * n_pixels / (n_pixels - 1)), 0.0)
        if third is None:
            return mean, std
        m3 = np.column_stack(third) / n_pixels
        skew = np.where(constant.any(axis=1, keepdims=True), 0.0, m3 / m2**1.5)
    return mean, std, skew


def _index_std(size: int, n_pixels: int) -> float:
    """Std (N-1) of one coordinate over all n_pixels pixels of the image.

    Each index 1..size occurs n_pixels/size times: variance (size^2 - 1)/12
    divided by N, times N/(N-1).
    """
    if n_pixels < 2:
        return 0.0
    return float(np.sqrt((size * size - 1) / 12.0 * n_pixels / (n_pixels - 1)))


def _safe_ratio(numerator: np.ndarray, denominator: float) -> np.ndarray:
    return numerator / denominator if denominator > 0 else np.zeros_like(numerator)


def features_table(parts: list[tuple[str, int, np.ndarray, np.ndarray]]) -> pa.Table:
    """REGION_FEATURES_SCHEMA rows of many segmentations, each given as
    (image_id, annotator, region ids, features) as region_features returns them."""
    lengths = [ids.size for _, _, ids, _ in parts]
    values = np.concatenate([np.zeros((0, len(FEATURE_NAMES)))] + [features for *_, features in parts])
    region_ids = np.concatenate([np.zeros(0, dtype=np.int32)] + [ids for _, _, ids, _ in parts])
    columns = {
        **key_columns([(image_id, annotator) for image_id, annotator, *_ in parts], lengths),
        "region_id": region_ids.astype(np.int32),
        **{name: values[:, k] for k, name in enumerate(FEATURE_NAMES)},
    }
    return pa.Table.from_pydict(columns, schema=REGION_FEATURES_SCHEMA)
