"""Dense SIFT on whole images at once (Lowe 2004; van de Sande et al. 2010 colour variants).

A descriptor at grid point c is Lowe's: 4 x 4 spatial bins of `bin_size`
pixels times 8 orientations, each pixel's gradient magnitude shared between
the two nearest orientations and, bilinearly, the nearest spatial bins,
weighted by a Gaussian window of sigma = 2 bins centred on c; then L2
normalisation, clipping at 0.2 and L2 again. Conventions are OpenCV's
(dx = I(x+1) - I(x-1), dy = I(y-1) - I(y+1), angle 0 along +x, layout
[row bin][column bin][orientation]), so a descriptor equals OpenCV's SIFT
descriptor of the keypoint at c with size bin_size / 1.5 and angle 0.

Nothing is computed one keypoint at a time: the gradient of the channel is
split into 8 orientation planes, and the weight of a pixel in a bin is
separable (bilinear weight x Gaussian, in x and in y), so pooling all bins
of all grid points is two passes per plane, along y then along x.

The same image gives the same bits on every machine: OpenCV's blur and
gradient angles run its baseline code (`opencv_baseline`), and the pooling
adds its terms in a fixed order with numpy's elementwise operations, each
rounded alone. Two matrix products would be cheaper to write, but BLAS
splits and fuses their sums by the CPU's kernel: OpenBLAS's Haswell,
SkylakeX and Sandybridge kernels give three different sets of descriptors
of the same photos, as OpenCV's AVX2 and baseline paths give two.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
import pyarrow as pa

from annobench.core.tables import field, vector_column, write_table

N_ORIENTATIONS = 8
N_BINS = 4  # spatial bins per side
KINDS = ("sift", "rgbsift", "opponentsift", "csift")


@dataclass(frozen=True)
class DsiftParams:
    step: int = 6
    bin_size: int = 4
    smoothing_sigma: float = 0.44
    clip: float = 0.2
    csift_epsilon: float = 1.0

    @classmethod
    def from_config(cls, dsift: dict) -> "DsiftParams":
        return cls(
            step=dsift["step"],
            bin_size=dsift["bin_size"],
            smoothing_sigma=dsift["smoothing_sigma"],
            clip=dsift["clip"],
            csift_epsilon=dsift["csift_epsilon"],
        )

    @property
    def margin(self) -> int:
        """Grid points keep this far from the border, so the 4 x 4 bins lie inside the image."""
        return 2 * self.bin_size


def grid(size: int, params: DsiftParams) -> np.ndarray:
    """Descriptor centres along one axis: every `step` pixels from `margin` while the bins fit."""
    return np.arange(params.margin, size - params.margin, params.step)


def channels(rgb: np.ndarray, kind: str, params: DsiftParams) -> list[np.ndarray]:
    """The float32 planes a kind describes (0..255 scale)."""
    r, g, b = (rgb[..., i].astype(np.float32) for i in range(3))
    if kind == "sift":
        return [(r + g + b) / 3.0]
    if kind == "rgbsift":
        return [r, g, b]
    o1 = (r - g) / math.sqrt(2.0)
    o2 = (r + g - 2.0 * b) / math.sqrt(6.0)
    o3 = (r + g + b) / math.sqrt(3.0)
    if kind == "opponentsift":
        return [o1, o2, o3]
    if kind == "csift":
        denominator = o3 + params.csift_epsilon
        return [o1 / denominator, o2 / denominator, o3]
    raise ValueError(f"unknown dense SIFT kind {kind!r}; known: {', '.join(KINDS)}")


# The planes of each kind, by name: a plane two kinds share (O3, computed the
# same way for both) is described once, giving the same bits as for each kind alone.
KIND_PLANES = {
    "sift": ("intensity",),
    "rgbsift": ("r", "g", "b"),
    "opponentsift": ("o1", "o2", "o3"),
    "csift": ("c1", "c2", "o3"),
}


def _planes(rgb: np.ndarray, kinds: list[str], params: DsiftParams) -> dict[str, np.ndarray]:
    """Each distinct plane the kinds describe, computed once."""
    planes: dict[str, np.ndarray] = {}
    for kind in kinds:
        if planes.keys() >= set(KIND_PLANES[kind]):
            continue
        for name, plane in zip(KIND_PLANES[kind], channels(rgb, kind, params)):
            planes.setdefault(name, plane)
    return planes


@lru_cache(maxsize=8)
def bin_weights(params: DsiftParams) -> tuple[tuple[tuple[int, np.float32], ...], ...]:
    """For each of the N_BINS bins along an axis: (u, weight) of every pixel at offset u from the
    grid point that the bin weighs, the bilinear share of the bin (1 - |u - centre of bin| /
    bin_size) times the Gaussian window exp(-u^2 / (2 (2 bin_size)^2))."""
    width = params.bin_size
    sigma = N_BINS / 2.0 * width
    bins = []
    for b in range(N_BINS):
        centre = (b - (N_BINS - 1) / 2.0) * width
        offsets = range(math.floor(centre - width) + 1, math.ceil(centre + width))
        bins.append(tuple((u, np.float32((1.0 - abs(u - centre) / width) * math.exp(-(u * u) / (2.0 * sigma * sigma))))
                          for u in offsets))
    return tuple(bins)


def pool(values: np.ndarray, params: DsiftParams) -> np.ndarray:
    """(size, ...) -> (N_BINS, points, ...): each bin of each grid point along the first axis, the
    weighted sum of the pixels it weighs, added in order of u (pixels beyond the edge weigh
    nothing)."""
    size, points = values.shape[0], grid(values.shape[0], params)
    bins = bin_weights(params)
    reach = max(abs(u) for weights in bins for u, _ in weights)
    padded = np.zeros((size + 2 * reach, *values.shape[1:]), np.float32)
    padded[reach : reach + size] = values
    pooled = np.empty((N_BINS, len(points), *values.shape[1:]), np.float32)
    term = np.empty(pooled.shape[1:], np.float32)
    first = reach + (int(points[0]) if len(points) else 0)
    rows = slice(first, first + params.step * len(points), params.step)
    for out, weights in zip(pooled, bins):
        for k, (u, weight) in enumerate(weights):
            shifted = padded[rows.start + u : rows.stop + u : rows.step]
            np.multiply(shifted, weight, out=out if k == 0 else term)
            if k:
                np.add(out, term, out=out)
    return pooled


@contextlib.contextmanager
def opencv_baseline():
    """OpenCV's baseline code in this thread for the block: not the SIMD (AVX2, AVX-512) and IPP
    routines it picks by the CPU, which round differently (a blur or an angle with AVX2 is not the
    float32 without it). Only here: IPP's inverse DFT, which GIST runs, is five times faster. The
    SIMD setting is the process's: no other thread may run OpenCV meanwhile (none does)."""
    optimized, ipp = cv2.useOptimized(), cv2.ipp.useIPP()
    cv2.setUseOptimized(False)  # dispatched SIMD off for the process, IPP off for this thread
    try:
        yield
    finally:
        cv2.setUseOptimized(optimized)
        cv2.ipp.setUseIPP(ipp)


def orientation_planes(plane: np.ndarray, params: DsiftParams) -> np.ndarray:
    """(8, H, W): gradient magnitude split linearly between the two nearest orientations."""
    with opencv_baseline():
        if params.smoothing_sigma > 0:
            plane = cv2.GaussianBlur(plane, (0, 0), params.smoothing_sigma)
        dx = np.zeros_like(plane)
        dy = np.zeros_like(plane)
        # Central differences, y pointing up; the one-pixel border has no gradient (as OpenCV's SIFT).
        dx[1:-1, 1:-1] = plane[1:-1, 2:] - plane[1:-1, :-2]
        dy[1:-1, 1:-1] = plane[:-2, 1:-1] - plane[2:, 1:-1]
        magnitude, angle = cv2.cartToPolar(dx, dy)
        position = angle * np.float32(N_ORIENTATIONS / (2.0 * math.pi))  # in [0, 8)
        planes = np.empty((N_ORIENTATIONS, *plane.shape), dtype=np.float32)
        for o in range(N_ORIENTATIONS):
            # Share of orientation o: 1 - circular distance to o, at least 0 (OpenCV calls vectorise).
            distance = cv2.absdiff(position, float(o))
            distance = cv2.min(distance, cv2.subtract(float(N_ORIENTATIONS), distance))
            share = cv2.max(cv2.subtract(1.0, distance), 0.0)
            cv2.multiply(share, magnitude, dst=planes[o])
    return planes


def describe_plane(plane: np.ndarray, params: DsiftParams) -> np.ndarray:
    """(n_points, 128) descriptors of one plane, points in row-major grid order."""
    planes = orientation_planes(plane, params)  # (8, H, W)
    along_y = pool(planes.transpose(1, 0, 2), params)  # (4 row bins, n_y, 8, W)
    pooled = pool(along_y.transpose(3, 0, 1, 2), params)  # (4 column bins, n_x, 4 row bins, n_y, 8)
    n_x, n_y = pooled.shape[1], pooled.shape[3]
    descriptors = pooled.transpose(3, 1, 2, 0, 4).reshape(n_y * n_x, N_BINS * N_BINS * N_ORIENTATIONS)
    return normalise(descriptors, params.clip)


def normalise(descriptors: np.ndarray, clip: float) -> np.ndarray:
    """L2-normalise, clip at `clip`, L2-normalise again (all-zero rows stay zero)."""
    norms = np.sqrt(np.einsum("ij,ij->i", descriptors, descriptors))[:, None]
    clipped = np.minimum(descriptors, np.float32(clip) * norms)
    norms = np.sqrt(np.einsum("ij,ij->i", clipped, clipped))[:, None]
    clipped /= np.where(norms > 0, norms, np.float32(1.0))
    return clipped


def describe(rgb: np.ndarray, kind: str, params: DsiftParams) -> tuple[np.ndarray, np.ndarray]:
    """Grid point coordinates (n, 2) as (x, y), and descriptors (n, 128 * channels) of a kind."""
    points, descriptors = describe_kinds(rgb, [kind], params)
    return points, descriptors[kind]


def describe_kinds(rgb: np.ndarray, kinds: list[str], params: DsiftParams) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Grid points and the descriptors of several kinds, each distinct plane described once."""
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown:
        raise ValueError(f"unknown dense SIFT kind {unknown[0]!r}; known: {', '.join(KINDS)}")
    height, width = rgb.shape[:2]
    ys, xs = grid(height, params), grid(width, params)
    points = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2)
    described = {name: describe_plane(plane, params) for name, plane in _planes(rgb, kinds, params).items()}
    return points, {kind: np.concatenate([described[name] for name in KIND_PLANES[kind]], axis=1) for kind in kinds}


def write_descriptors(image_ids: list[str], images: list[np.ndarray], kind: str, params: DsiftParams,
                      path: Path | str) -> int:
    """Raw descriptors of the given images as a table image_id, x, y, descriptor."""
    ids, xs, ys, rows = [], [], [], []
    for image_id, rgb in zip(image_ids, images):
        points, descriptors = describe(rgb, kind, params)
        ids.extend([image_id] * len(points))
        xs.append(points[:, 0])
        ys.append(points[:, 1])
        rows.append(descriptors)
    descriptors = np.concatenate(rows) if rows else np.empty((0, 128), np.float32)
    dimension = descriptors.shape[1]
    schema = pa.schema(
        [
            field("image_id", pa.string(), "key of the image"),
            field("x", pa.int32(), "column of the descriptor centre"),
            field("y", pa.int32(), "row of the descriptor centre"),
            field("descriptor", pa.list_(pa.float32(), dimension), f"{kind} descriptor, [row bin][col bin][orientation] per channel"),
        ]
    )
    table = pa.Table.from_arrays(
        [pa.array(ids, pa.string()), pa.array(np.concatenate(xs).astype(np.int32) if xs else [], pa.int32()),
         pa.array(np.concatenate(ys).astype(np.int32) if ys else [], pa.int32()), vector_column(descriptors)],
        schema=schema,
    )
    write_table(table, path, f"dsift_{kind}", params={"kind": kind, **asdict(params)})
    return len(descriptors)
