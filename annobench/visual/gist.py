"""GIST as LEAR's C implementation computes it (Douze et al. 2009; Oliva and Torralba 2001).

Per channel: log(1 + I), 5-pixel symmetric padding, whitening with a
Gaussian transfer function (fc = 4, s1 = fc / sqrt(ln 2)), local contrast
normalisation by 0.2 + sqrt(local variance) (for colour the variance of the
channel mean), crop, then a bank of Gabor transfer functions applied in the
Fourier domain without boundary extension, and the magnitude of each
response averaged over an N x N grid of blocks. Output layout is LEAR's:
[channel][filter][block], block index x * N + y.

All transfer functions depend only on the image size and the parameters,
so they are built once per size; every DFT goes through OpenCV, which is
several times faster than numpy's on these sizes. The 60 inverse DFTs of a
colour image (3 channels x 20 filters) are most of the time; the rest is
kept to few passes over the data: the filters go in pairs (gabor_pairs), the
whitening lowpass is two thin matrix products per axis (LowpassBasis), and
the large arrays are reused from image to image (Workspace).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np


@dataclass(frozen=True)
class GistParams:
    image_size: int = 256  # the input is rescaled and centre-cropped to this square
    orientations: tuple[int, ...] = (8, 8, 4)  # per scale, finest first
    blocks: int = 4  # N of the N x N grid
    prefilter_fc: float = 4.0
    padding: int = 5
    colour: bool = True

    @classmethod
    def from_config(cls, gist: dict) -> "GistParams":
        return cls(
            image_size=gist["image_size"],
            orientations=tuple(gist["orientations_per_scale"]),
            blocks=gist["blocks"],
            prefilter_fc=gist["prefilter_fc"],
            colour=gist["colour"],
        )

    @property
    def n_filters(self) -> int:
        return sum(self.orientations)

    @property
    def dimension(self) -> int:
        return (3 if self.colour else 1) * self.n_filters * self.blocks**2


def _centred_frequencies(width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """LEAR's fx = i - width/2, fy = j - height/2, fftshifted to put 0 at the origin."""
    fx = np.arange(width, dtype=np.float64) - width / 2.0
    fy = np.arange(height, dtype=np.float64) - height / 2.0
    fx, fy = np.meshgrid(fx, fy)
    return _fftshift(fx), _fftshift(fy)


def _fftshift(a: np.ndarray) -> np.ndarray:
    # LEAR's fftshift moves the first ceil(n/2) samples to the end: np.fft.fftshift's roll.
    return np.roll(a, (a.shape[0] // 2, a.shape[1] // 2), axis=(0, 1))


# Spectra and inverse DFTs are stored in rows this many complex values longer
# than the image: rows of 2 KiB would put a column's values in the same cache
# sets and make OpenCV's inverse DFT 10-15% slower. The extra values stay 0.
ROW_PAD = 8

# Frequencies whose whitening gain is below this contribute less than float32
# rounding to LEAR's output and are left out of the lowpass.
LOWPASS_CUTOFF = 1e-9


@dataclass(frozen=True)
class LowpassBasis:
    """LEAR's whitening lowpass along one axis, A = Q Q^T, as float32 columns.

    LEAR multiplies the padded image's spectrum by exp(-(fx^2 + fy^2) / s1^2),
    which is separable, so the filtered image is A_y P A_x with A the real
    circulant matrix of exp(-f^2 / s1^2): Q holds the cosine and the sine of
    each kept frequency f, weighted by sqrt(gain / n). With fc = 4 the gain
    is below 1e-9 beyond |f| = 21, so Q is n x 85: two thin matrix products
    per axis replace two DFTs of an awkward size (266 = 2 * 7 * 19) and agree
    with them to float32 precision.

    The columns of f and -f are equal up to sign, so Q^T P is computed on the
    43 distinct columns and expanded; the expansion is exact. The way back
    keeps the 85 columns: summing the pairs first rounds differently, by up
    to 1e-6 in the output.
    """

    columns: np.ndarray  # Q (n x 85)
    distinct: np.ndarray  # (n x 43), columns == distinct[:, expand] * sign
    expand: np.ndarray
    sign: np.ndarray


@lru_cache(maxsize=8)
def lowpass_basis(n: int, fc: float) -> LowpassBasis:
    s1 = fc / math.sqrt(math.log(2.0))
    k = np.arange(n)
    f = np.where(k < n // 2, k, k - n).astype(np.float64)  # LEAR's fftshifted frequencies
    kept = f[np.exp(-(f * f) / (s1 * s1)) > LOWPASS_CUTOFF]
    magnitudes = np.unique(np.abs(kept))
    weights = np.sqrt(np.exp(-(magnitudes * magnitudes) / (s1 * s1)) / n)
    phase = 2.0 * np.pi * np.outer(k, magnitudes) / n
    with_sine = magnitudes != 0
    distinct = np.concatenate([np.cos(phase) * weights, (np.sin(phase) * weights)[:, with_sine]], axis=1)
    # Q: the cosine of every kept f, then the sine of every nonzero one (sin(-x) = -sin(x) exactly).
    cosine_column = np.searchsorted(magnitudes, np.abs(kept))
    sine_column = (len(magnitudes) + np.cumsum(with_sine) - 1)[cosine_column]
    expand = np.concatenate([cosine_column, sine_column[kept != 0]])
    sign = np.concatenate([np.ones(len(kept)), np.sign(kept[kept != 0])]).astype(np.float32)
    distinct = distinct.astype(np.float32)
    return LowpassBasis(distinct[:, expand] * sign, distinct, expand, sign)


def lowpass(planes: np.ndarray, fc: float, crop: int = 0, out: np.ndarray | None = None) -> np.ndarray:
    """LEAR's Gaussian lowpass (circular) of each (H, W) plane of (C, H, W), less `crop` pixels at each edge."""
    n, height, width = planes.shape
    along_y, along_x = lowpass_basis(height, fc), lowpass_basis(width, fc)
    # Q^T P Q on the distinct columns, then expanded; each product is one call for all planes.
    distinct = (along_y.distinct.T @ planes).reshape(-1, width) @ along_x.distinct
    distinct = distinct.reshape(n, along_y.distinct.shape[1], along_x.distinct.shape[1])
    coefficients = distinct[:, along_y.expand][:, :, along_x.expand] * np.outer(along_y.sign, along_x.sign)
    qy, qxt = along_y.columns, along_x.columns.T
    if crop:
        qy, qxt = qy[crop:-crop], qxt[:, crop:-crop]
    shape = (n, qy.shape[0], qxt.shape[1])
    out = np.empty(shape, np.float32) if out is None else out
    np.matmul((qy @ coefficients).reshape(-1, qxt.shape[0]), qxt, out=out.reshape(-1, shape[2]))
    return out


def _gabor(fx: np.ndarray, fy: np.ndarray, scale: int, n_orientations: int, j: int) -> np.ndarray:
    """One of LEAR's create_gabor transfer functions (float64)."""
    height, width = fx.shape
    fr = np.sqrt(fx * fx + fy * fy)
    p0, p1 = 0.35, 0.3 / 1.85**scale
    p2, p3 = 16.0 * n_orientations**2 / 32.0**2, math.pi / n_orientations * j
    tmp = np.arctan2(fy, fx) + p3
    tmp = np.where(tmp < -math.pi, tmp + 2 * math.pi, np.where(tmp > math.pi, tmp - 2 * math.pi, tmp))
    return np.exp(-10.0 * p0 * (fr / height / p1 - 1) * (fr / width / p1 - 1) - 2.0 * p2 * math.pi * tmp * tmp)


@lru_cache(maxsize=8)
def gabor_pairs(width: int, height: int, orientations: tuple[int, ...]) -> np.ndarray:
    """LEAR's Gabor filters 2p and 2p+1 folded into two transfer functions: (n_pairs, 2, height, width + ROW_PAD).

    A real filter G splits into its even part E(f) = (G(f) + G(-f)) / 2 and
    odd part O(f) = (G(f) - G(-f)) / 2. For a real plane with spectrum F,
    ifft(F E) = a and ifft(F (-i O)) = b are real and |ifft(F G)| = |a + i b|.
    So ifft(F (E_2p + i E_2p+1)) = a_2p + i a_2p+1 and
    ifft(F (O_2p+1 - i O_2p)) = b_2p + i b_2p+1: two inverse DFTs give both
    filters' magnitudes, sqrt(a^2 + b^2) of the real and of the imaginary
    parts: one cv2.magnitude of the two outputs instead of a complex abs per
    filter, which costs twice as much. An odd filter count is completed with
    a zero filter.
    """
    fx, fy = _centred_frequencies(width, height)
    specs = [(scale, n_or, j) for scale, n_or in enumerate(orientations) for j in range(n_or)]
    negative = np.ix_(-np.arange(height) % height, -np.arange(width) % width)
    pairs = np.zeros(((len(specs) + 1) // 2, 2, height, width + ROW_PAD), np.complex64)

    def even_and_odd(k: int) -> tuple[np.ndarray, np.ndarray] | tuple[float, float]:
        if k == len(specs):
            return 0.0, 0.0
        g = _gabor(fx, fy, *specs[k])
        mirrored = g[negative]  # G(-f)
        return (g + mirrored) / 2, (g - mirrored) / 2

    for p, (even, odd) in enumerate(pairs[..., :width]):
        even_first, odd_first = even_and_odd(2 * p)
        even_second, odd_second = even_and_odd(2 * p + 1)
        even[:] = even_first + 1j * even_second
        odd[:] = odd_second - 1j * odd_first
    return pairs


# log(1 + v) for every 8-bit value, exactly as cv2.log computes it on float32 pixels.
_LOG1P_UINT8 = cv2.log(np.arange(256, dtype=np.float32).reshape(1, 256) + np.float32(1.0))


def _log1p(plane: np.ndarray, out: np.ndarray) -> None:
    if plane.dtype == np.uint8:
        cv2.LUT(plane, _LOG1P_UINT8, dst=out)
    else:
        cv2.log(plane.astype(np.float32) + np.float32(1.0), dst=out)


def _reflect_borders(padded: np.ndarray, padding: int) -> None:
    """Fill the padding of each plane by mirroring its interior, as cv2.BORDER_REFLECT ('cba|abc')."""
    inner = slice(padding, -padding)
    mirrored = slice(2 * padding - 1, padding - 1, -1), slice(-padding - 1, -2 * padding - 1, -1)
    padded[:, inner, :padding] = padded[:, inner, mirrored[0]]
    padded[:, inner, -padding:] = padded[:, inner, mirrored[1]]
    padded[:, :padding] = padded[:, mirrored[0]]
    padded[:, -padding:] = padded[:, mirrored[1]]


@dataclass
class Workspace:
    """The large arrays of one image, reused from image to image.

    Fresh arrays of these sizes are new memory from the system on every image
    (glibc gives freed heap tops back), about 1000 page faults, 3 ms, per image.
    One per thread, for the last size used.
    """

    padded: np.ndarray  # (C, H + 2 pad, W + 2 pad) float32
    smooth: np.ndarray  # same, the lowpass
    filtered: np.ndarray  # (C, H, W) float32
    spectra: np.ndarray  # (C, H, W + ROW_PAD) complex64
    products: np.ndarray  # (2, H, W + ROW_PAD) complex64


_per_thread = threading.local()


def workspace(n_channels: int, height: int, width: int, padding: int) -> Workspace:
    """This thread's workspace, made anew when the size changes."""
    key = (n_channels, height, width, padding)
    if getattr(_per_thread, "key", None) != key:
        padded = (n_channels, height + 2 * padding, width + 2 * padding)
        _per_thread.key, _per_thread.workspace = key, Workspace(
            np.empty(padded, np.float32),
            np.empty(padded, np.float32),
            np.empty((n_channels, height, width), np.float32),
            _aligned_zeros((n_channels, height, width + ROW_PAD)),
            _aligned_zeros((2, height, width + ROW_PAD)),
        )
    return _per_thread.workspace


def _aligned_zeros(shape: tuple[int, ...]) -> np.ndarray:
    """complex64 zeros starting on a 64-byte boundary: OpenCV's DFT rounds differently on other alignments."""
    size = math.prod(shape) * 8
    raw = np.zeros(size + 64, np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start : start + size].view(np.complex64).reshape(shape)


def prefilter(channels: list[np.ndarray], fc: float, padding: int, work: Workspace) -> np.ndarray:
    """LEAR's (color_)prefilt of (H, W) planes with values 0..255, into work.filtered (C, H, W)."""
    planes = work.padded
    for plane, padded in zip(channels, planes):
        _log1p(plane, out=padded[padding:-padding, padding:-padding])
    _reflect_borders(planes, padding)
    planes -= lowpass(planes, fc, out=work.smooth)  # whitened
    mean = np.add.reduce(planes, axis=0)
    if len(planes) > 1:
        mean /= np.float32(len(planes))
    local = lowpass(np.multiply(mean, mean, out=mean)[None], fc, crop=padding)[0]
    scale = np.sqrt(np.abs(local, out=local), out=local)
    scale += np.float32(0.2)
    np.divide(np.float32(1.0), scale, out=scale)
    return np.multiply(planes[:, padding:-padding, padding:-padding], scale, out=work.filtered)


@lru_cache(maxsize=8)
def block_columns(width: int, blocks: int) -> np.ndarray:
    """0/1 matrix summing interleaved columns 2x + f of (width + ROW_PAD) pairs into f * blocks + LEAR's x block."""
    edges = [k * width // blocks for k in range(blocks + 1)]
    columns = np.zeros((2 * (width + ROW_PAD), 2 * blocks), np.float32)
    for b in range(blocks):
        for f in range(2):
            columns[2 * edges[b] + f : 2 * edges[b + 1] : 2, f * blocks + b] = 1.0
    return columns


def _row_strip_summer(plane: np.ndarray, edges: list[int]):
    """A function writing the column sums of plane's row strips edges[b]:edges[b + 1] into its argument's row b."""
    heights = np.diff(edges)
    if (heights == heights[0]).all():  # one call for all strips
        strips = plane.reshape(len(heights), heights[0], -1)
        return lambda out: np.add.reduce(strips, axis=1, out=out)
    strips = [plane[start:stop] for start, stop in zip(edges, edges[1:])]
    return lambda out: [np.add.reduce(strip, axis=0, out=row) for strip, row in zip(strips, out)]


def _as_2_channels(complex_plane: np.ndarray) -> np.ndarray:
    """(H, W) complex64 as the (H, W, 2) float32 array OpenCV takes for complex, sharing memory."""
    return complex_plane.view(np.float32).reshape(*complex_plane.shape, 2)


def gabor_block_means(filtered: np.ndarray, params: GistParams, work: Workspace) -> np.ndarray:
    """(C, n_filters, blocks, blocks) means of |response| over LEAR's blocks, indexed [c, k, x, y]."""
    n_channels, height, width = filtered.shape
    for plane, spectrum in zip(filtered, work.spectra):
        cv2.dft(plane, dst=_as_2_channels(spectrum[:, :width]), flags=cv2.DFT_COMPLEX_OUTPUT)
    row_edges = [k * height // params.blocks for k in range(params.blocks + 1)]
    strips = _magnitude_row_strips(gabor_pairs(width, height, params.orientations), work, row_edges)
    blocks = params.blocks
    sums = (strips @ block_columns(width, blocks)).reshape(len(strips), n_channels, blocks, 2, blocks)
    means = sums.transpose(1, 0, 3, 4, 2).reshape(n_channels, -1, blocks, blocks)[:, : params.n_filters]
    column_edges = [k * width // blocks for k in range(blocks + 1)]
    # LEAR divides every magnitude by W * H; it is cheaper on the block sums.
    areas = np.outer(np.diff(column_edges), np.diff(row_edges)) * float(width * height)
    return means / areas.astype(np.float32)


def _magnitude_row_strips(pairs: np.ndarray, work: Workspace, row_edges: list[int]) -> np.ndarray:
    """(n_pairs, C, blocks, 2 * (W + ROW_PAD)) column sums of |response| over each strip of rows.

    Columns interleave the pair's filters: 2x for filter 2p, 2x + 1 for 2p + 1.
    """
    spectra, products = work.spectra, work.products  # products: F * even, F * odd
    width = products.shape[2] - ROW_PAD
    even_dft, odd_dft = (_as_2_channels(product[:, :width]) for product in products)
    even_flat, odd_flat = (product.view(np.float32) for product in products)  # re, im interleaved
    sum_strips = _row_strip_summer(even_flat, row_edges)
    strips = np.empty((len(pairs), len(spectra), len(row_edges) - 1, even_flat.shape[1]), np.float32)
    for p, pair in enumerate(pairs):
        for c, spectrum in enumerate(spectra):
            np.multiply(spectrum, pair, out=products)  # whole rows: contiguous arrays are faster
            cv2.dft(even_dft, dst=even_dft, flags=cv2.DFT_INVERSE)  # unscaled, see gabor_block_means
            cv2.dft(odd_dft, dst=odd_dft, flags=cv2.DFT_INVERSE)
            cv2.magnitude(even_flat, odd_flat, even_flat)
            sum_strips(strips[p, c])
    return strips


def square_input(rgb: np.ndarray, size: int) -> np.ndarray:
    """Rescale so the shorter side is `size`, then crop the centre square (imresizecrop).

    Bilinear when enlarging (as Torralba's reference code), area averaging when
    shrinking; the result stays float32 so no rounding is added. An image that
    already has the size is returned as it is.
    """
    height, width = rgb.shape[:2]
    if (height, width) == (size, size):
        return rgb
    scale = max(size / height, size / width)
    new_h, new_w = max(size, round(height * scale)), max(size, round(width * scale))
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    resized = cv2.resize(rgb.astype(np.float32), (new_w, new_h), interpolation=interpolation)
    top, left = (new_h - size) // 2, (new_w - size) // 2
    return resized[top : top + size, left : left + size]


def gist(rgb: np.ndarray, params: GistParams = GistParams()) -> np.ndarray:
    """GIST of any image: square_input, then gist_from_square."""
    return gist_from_square(square_input(rgb, params.image_size), params)


def gist_extractor(params: dict, _projection=None):
    gist_params = GistParams.from_config(params)
    return lambda rgb: gist(rgb, gist_params)


def gist_from_square(image: np.ndarray, params: GistParams = GistParams()) -> np.ndarray:
    """GIST of an image that already has the working size: (H, W, 3) or (H, W), values 0..255."""
    channels = _channels(np.asarray(image), params.colour)
    height, width = channels[0].shape
    if min(height, width) < 8:
        raise ValueError(f"GIST needs at least 8x8 pixels, got {width}x{height}")
    work = workspace(len(channels), height, width, params.padding)
    filtered = prefilter(channels, params.prefilter_fc, params.padding, work)
    return gabor_block_means(filtered, params, work).reshape(-1)


def _channels(pixels: np.ndarray, colour: bool) -> list[np.ndarray]:
    """The planes GIST filters: R, G, B for colour (grey repeated), else one grey plane."""
    if pixels.dtype not in (np.uint8, np.float32):
        pixels = pixels.astype(np.float32)
    if pixels.ndim == 3 and pixels.shape[2] == 1:
        pixels = pixels[..., 0]
    if pixels.ndim == 2:
        return [pixels] * 3 if colour else [pixels]
    if colour:
        return list(cv2.split(pixels))
    # LEAR's grey GIST reads a PGM; we take the mean of R, G and B.
    return [pixels.astype(np.float32).mean(axis=2)]
