"""The 27 SAIAPR TC-12 region features (SPEC 5), all regions of an image at once.

Carbonetto's features (UBC, 2002) as used for SAIAPR TC-12: shape, position,
and the mean, standard deviation and skewness of RGB and of CIE-Lab inside
each region. They are computed on the full-resolution image and label map.

Every sum is one `np.bincount` over the labelled pixels, so an image costs a
few passes over its pixels whatever its number of regions. Central moments
are taken in two passes (mean first, then powers of the deviations): raw
power sums lose the skewness of near-constant regions to cancellation.

Conventions (MATLAB's, as the reference implementation): coordinates are
1-based, standard deviations divide by N-1, skewness is the biased m3/m2^1.5.
Features 6-7 divide the region's coordinate std by the std (N-1) of that
coordinate over all W*H pixels of the image, which is what the reference
values show (not the std of the W column indices 1..W).
Where the SPEC leaves a value undefined we return 0: the standard deviation
of a one-pixel region, the std ratios of a one-pixel image, and the
skewness of all three channels of a colour space when any channel is
constant over the region (as the SPEC says).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from annobench.segmentations import dense_label_map
from annobench.tables import field

SHAPE_FEATURES = (
    "area", "width", "height", "mean_x", "mean_y", "std_x", "std_y", "boundary_area", "convexity",
)
COLOUR_FEATURES = tuple(
    f"{space}_{stat}_{channel}"
    for space, channels in (("rgb", "rgb"), ("lab", "lab"))
    for stat in ("mean", "std", "skew")
    for channel in channels
)
FEATURE_NAMES = SHAPE_FEATURES + COLOUR_FEATURES  # the SPEC's order, 1..27

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
    + [field(name, pa.float64(), f"SAIAPR region feature {k} (SPEC 5)") for k, name in enumerate(FEATURE_NAMES, 1)]
)


def rgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """CIE-Lab of 8-bit RGB values (..., 3) by the SPEC's formula (no gamma)."""
    channels = np.ascontiguousarray(np.moveaxis(rgb, -1, 0), dtype=np.float64)
    return np.moveaxis(_lab_channels(channels.reshape(3, -1)).reshape(channels.shape), 0, -1)


def _lab_channels(rgb: np.ndarray) -> np.ndarray:
    """Lab of channel-first RGB (3, P) as (3, P); channel-first keeps every step contiguous."""
    # Written out: a (3, 3) @ (3, P) matmul is several times slower in BLAS.
    weights = RGB_TO_XYZ.T / 255.0 / D65_WHITE[:, None]
    xyz = np.stack([w[0] * rgb[0] + w[1] * rgb[1] + w[2] * rgb[2] for w in weights])
    above = xyz > LAB_THRESHOLD
    f = np.where(above, np.cbrt(xyz), 7.787 * xyz + 16.0 / 116.0)
    lightness = np.where(above[1], 116.0 * f[1] - 16.0, 903.3 * xyz[1])  # f[1] = Y^(1/3) above
    return np.stack([lightness, 500.0 * (f[0] - f[1]), 200.0 * (f[1] - f[2])])


def region_features(
    rgb: np.ndarray, label_map: np.ndarray, lab: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(region ids, features): the ids > 0 present in the map, ascending, and an
    (n_regions, 27) float64 array in FEATURE_NAMES order.

    lab: `rgb_to_lab(rgb)`, when several label maps of one image (BSDS500
    annotators) share it; computed on the labelled pixels otherwise.
    """
    if rgb.shape[:2] != label_map.shape:
        raise ValueError(f"image {rgb.shape[:2]} and label map {label_map.shape} differ in size")
    height, width = label_map.shape
    ids, slot, counts = _compact_regions(label_map)
    if ids.size == 0:
        return ids, np.zeros((0, len(FEATURE_NAMES)))
    labelled = slot >= 0
    region = slot[labelled]
    rows, cols = np.nonzero(labelled)
    n = ids.size
    lanes = region * LANES + np.arange(region.size) % LANES

    x_min, x_max = _extremes(cols, region, n)
    y_min, y_max = _extremes(rows, region, n)
    bbox_w, bbox_h = x_max - x_min + 1.0, y_max - y_min + 1.0
    area = counts.astype(np.float64)
    boundary = np.bincount(region[_on_boundary(slot)[labelled]], minlength=n)

    coords = np.stack([cols + 1.0, rows + 1.0])  # MATLAB's 1-based pixel coordinates
    coord_mean, coord_std = _moments(coords, region, lanes, counts, skewness=False)
    colours = np.ascontiguousarray(rgb[labelled].T, dtype=np.float64)
    lab_values = _lab_channels(colours) if lab is None else np.ascontiguousarray(lab[labelled].T)
    rgb_stats = _moments(colours, region, lanes, counts)
    lab_stats = _moments(lab_values, region, lanes, counts)

    shape = [
        area / (width * height),
        bbox_w / width,
        bbox_h / height,
        coord_mean[:, 0] / width,
        coord_mean[:, 1] / height,
        _safe_ratio(coord_std[:, 0], _index_std(width, width * height)),
        _safe_ratio(coord_std[:, 1], _index_std(height, width * height)),
        boundary / area,
        1.0 - area / (bbox_w * bbox_h),
    ]
    return ids, np.column_stack(shape + [stat for stats in (rgb_stats, lab_stats) for stat in stats])


def _compact_regions(label_map: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ids present, per-pixel slot 0..n-1 (-1 where unlabelled) and pixel counts."""
    ids, dense = dense_label_map(label_map)
    counts = np.bincount(dense.ravel(), minlength=ids.size + 1)[1:]
    return ids, dense - 1, counts


def _extremes(values: np.ndarray, region: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    low = np.full(n, np.iinfo(np.int64).max)
    high = np.full(n, -1)
    np.minimum.at(low, region, values)
    np.maximum.at(high, region, values)
    return low.astype(np.float64) + 1.0, high.astype(np.float64) + 1.0


def _on_boundary(slot: np.ndarray) -> np.ndarray:
    """Pixels with a 4-neighbour in another region, unlabelled (-1), or outside the image."""
    padded = np.pad(slot, 1, constant_values=-2)
    centre = padded[1:-1, 1:-1]
    return (
        (padded[:-2, 1:-1] != centre)
        | (padded[2:, 1:-1] != centre)
        | (padded[1:-1, :-2] != centre)
        | (padded[1:-1, 2:] != centre)
    )


def _moments(
    values: np.ndarray, region: np.ndarray, lanes: np.ndarray, counts: np.ndarray, skewness: bool = True
) -> tuple[np.ndarray, ...]:
    """Per-region mean, std (N-1) and skewness of each row of values (C, P), as (n, C).

    region: each pixel's region 0..n-1; lanes: region * LANES + pixel % LANES.

    Skewness is zeroed for every channel of a region where any channel is
    constant (the SPEC: 0 for all three channels when any is undefined).
    """
    n = counts.size
    n_pixels = counts.astype(np.float64)[:, None]

    def per_region(channels: np.ndarray) -> np.ndarray:
        sums = [np.bincount(lanes, c, minlength=n * LANES).reshape(n, LANES).sum(axis=1) for c in channels]
        return np.column_stack(sums) / n_pixels

    mean = per_region(values)
    deviation = np.stack([channel - channel_mean[region] for channel, channel_mean in zip(values, mean.T)])
    squared = deviation * deviation
    m2 = per_region(squared)
    constant = m2 <= CONSTANT_RELATIVE_VARIANCE * np.maximum(mean**2, 1.0)
    m2 = np.where(constant, 0.0, m2)
    with np.errstate(divide="ignore", invalid="ignore"):
        std = np.where(n_pixels > 1, np.sqrt(m2 * n_pixels / (n_pixels - 1)), 0.0)
        if not skewness:
            return mean, std
        m3 = per_region(squared * deviation)
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


def feature_rows(image_id: str, annotator: int, ids: np.ndarray, features: np.ndarray) -> list[dict]:
    """Rows for REGION_FEATURES_SCHEMA."""
    return [
        {"image_id": image_id, "annotator": annotator, "region_id": int(region_id),
         **dict(zip(FEATURE_NAMES, map(float, values)))}
        for region_id, values in zip(ids, features)
    ]
