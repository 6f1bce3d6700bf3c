"""Colorhist (576-d) and GETLF (256-d) (Villegas and Paredes 2014, section 2.3).

Both start from the same quantisation: the top `bits` bits of R, G and B
form one bin, R most significant: bin = (R >> 6) * 16 + (G >> 6) * 4 + (B >> 6)
for 2 bits per channel (64 bins).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.lib.stride_tricks import sliding_window_view

from annobench.core.tables import field, vector_column, write_table


def colour_bins(rgb: np.ndarray, bits: int = 2) -> np.ndarray:
    """Per-pixel bin index (H, W) of an 8-bit RGB image, 2**(3*bits) bins."""
    shift = 8 - bits
    q = (rgb >> shift).astype(np.int32)
    return (q[..., 0] << (2 * bits)) | (q[..., 1] << bits) | q[..., 2]


def grid_edges(size: int, cells: int) -> np.ndarray:
    """Cell edges floor(k * size / cells), k = 0..cells."""
    return (np.arange(cells + 1) * size) // cells


def colorhist(rgb: np.ndarray, grid: int = 3, bits: int = 2) -> np.ndarray:
    """grid x grid cells in row-major order, each an L1-normalised colour histogram."""
    n_bins = 1 << (3 * bits)
    height, width = rgb.shape[:2]
    row_of = np.repeat(np.arange(grid), np.diff(grid_edges(height, grid)))
    col_of = np.repeat(np.arange(grid), np.diff(grid_edges(width, grid)))
    cell = row_of[:, None] * grid + col_of[None, :]
    counts = np.bincount((cell * n_bins + colour_bins(rgb, bits)).ravel(), minlength=grid * grid * n_bins)
    return _l1_rows(counts.reshape(grid * grid, n_bins)).reshape(-1)


@dataclass(frozen=True)
class GetlfParams:
    window: int = 41
    step: int = 21
    projections: int = 8
    bits: int = 2
    seed: int = 0

    @classmethod
    def from_config(cls, getlf: dict) -> "GetlfParams":
        return cls(
            window=getlf["window"],
            step=getlf["step"],
            projections=getlf["projections"],
            bits=getlf["bits_per_channel"],
            seed=getlf["seed"],
        )

    @property
    def dimension(self) -> int:
        return 1 << self.projections


def getlf_projection(params: GetlfParams) -> np.ndarray:
    """The random vectors (projections x bins), standard normal, from the configured seed."""
    n_bins = 1 << (3 * params.bits)
    return np.random.default_rng(params.seed).standard_normal((params.projections, n_bins))


def window_starts(size: int, window: int, step: int) -> np.ndarray:
    """Top-left corners of the windows along one axis.

    As many windows as fit entirely, every `step` pixels, the leftover margin
    split evenly (the extra pixel goes after); a side shorter than the window
    gets one window covering all of it.
    """
    if size <= window:
        return np.array([0])
    count = (size - window) // step + 1
    offset = (size - ((count - 1) * step + window)) // 2
    return offset + step * np.arange(count)


def getlf(rgb: np.ndarray, params: GetlfParams, projection: np.ndarray) -> np.ndarray:
    """L1-normalised histogram of the sign words of all local colour histograms."""
    n_bins = 1 << (3 * params.bits)
    bins = colour_bins(rgb, params.bits)
    height, width = bins.shape
    win_h, win_w = min(params.window, height), min(params.window, width)
    views = sliding_window_view(bins, (win_h, win_w))
    ys = window_starts(height, params.window, params.step)
    xs = window_starts(width, params.window, params.step)
    windows = views[ys[:, None], xs[None, :]].reshape(len(ys) * len(xs), win_h * win_w)
    offsets = (np.arange(len(windows)) * n_bins)[:, None]
    local = np.bincount((windows + offsets).ravel(), minlength=len(windows) * n_bins)
    local = _l1_rows(local.reshape(len(windows), n_bins))
    signs = (local @ projection.T) > 0
    words = signs.astype(np.int64) @ (1 << np.arange(params.projections))
    return _l1_rows(np.bincount(words, minlength=params.dimension)[None, :])[0]


def _l1_rows(counts: np.ndarray) -> np.ndarray:
    totals = counts.sum(axis=1, keepdims=True)
    return (counts / np.where(totals == 0, 1, totals)).astype(np.float32)


def colorhist_extractor(params: dict, _projection=None):
    return lambda rgb: colorhist(rgb, params["grid"], params["bits_per_channel"])


def getlf_extractor(params: dict, projection: np.ndarray):
    getlf_params = GetlfParams.from_config(params)
    return lambda rgb: getlf(rgb, getlf_params, projection)


def projection_for(params: dict) -> np.ndarray:
    return getlf_projection(GetlfParams.from_config(params))


def write_projection(params: dict, path: Path | str) -> np.ndarray:
    """The GETLF projection vectors as a small table: anyone can recompute a word by hand."""
    projection = projection_for(params)
    n_projections, n_bins = projection.shape
    schema = pa.schema(
        [
            field("bit", pa.int8(), "bit of the GETLF word this vector decides (value 2**bit)"),
            field("vector", pa.list_(pa.float64(), n_bins), "standard normal vector over the colour bins"),
        ]
    )
    table = pa.Table.from_arrays(
        [pa.array(np.arange(n_projections), pa.int8()), vector_column(projection, pa.float64())], schema=schema
    )
    write_table(table, path, "getlf_projection", params=params)
    return projection


def read_projection(path: Path | str) -> np.ndarray:
    vectors = pq.read_table(path).column("vector").combine_chunks()
    return vectors.values.to_numpy().reshape(len(vectors), -1)
