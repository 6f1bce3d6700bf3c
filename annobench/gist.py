"""GIST as LEAR's C implementation computes it (Douze et al., 2009; SPEC 3).

Per channel: log(1 + I), 5-pixel symmetric padding, whitening with a
Gaussian transfer function (fc = 4, s1 = fc / sqrt(ln 2)), local contrast
normalisation by 0.2 + sqrt(local variance) (for colour the variance of the
channel mean), crop, then a bank of Gabor transfer functions applied in the
Fourier domain without boundary extension, and the magnitude of each
response averaged over an N x N grid of blocks. Output layout is LEAR's:
[channel][filter][block], block index x * N + y.

All transfer functions depend only on the image size and the parameters,
so they are built once per size; every DFT goes through OpenCV, which is
several times faster than numpy's on these sizes.
"""

from __future__ import annotations

import math
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


# Frequencies whose whitening gain is below this contribute less than float32
# rounding to LEAR's output and are left out of the lowpass.
LOWPASS_CUTOFF = 1e-9


@lru_cache(maxsize=8)
def lowpass_basis(n: int, fc: float) -> tuple[np.ndarray, np.ndarray]:
    """Factor Q (n x r) of LEAR's whitening lowpass along one axis: A = Q Q^T.

    LEAR multiplies the padded image's spectrum by exp(-(fx^2 + fy^2) / s1^2),
    which is separable, so the filtered image is A_y P A_x with A the real
    circulant matrix of exp(-f^2 / s1^2). With fc = 4 that transfer function
    is below 1e-9 beyond |f| = 21, so A has rank 85: two thin matrix products
    per axis replace two DFTs of an awkward size (266 = 2 * 7 * 19) and agree
    with them to float32 precision.
    """
    s1 = fc / math.sqrt(math.log(2.0))
    k = np.arange(n)
    f = np.where(k < n // 2, k, k - n).astype(np.float64)  # LEAR's fftshifted frequencies
    gain = np.exp(-(f * f) / (s1 * s1))
    kept = f[gain > LOWPASS_CUTOFF]
    weights = np.sqrt(gain[gain > LOWPASS_CUTOFF] / n)
    phase = 2.0 * np.pi * np.outer(np.arange(n), kept) / n
    nonzero_sine = kept != 0
    basis = np.concatenate([np.cos(phase) * weights, (np.sin(phase) * weights)[:, nonzero_sine]], axis=1)
    q = basis.astype(np.float32)
    return q, np.ascontiguousarray(q.T)


def lowpass(plane: np.ndarray, fc: float) -> np.ndarray:
    """LEAR's Gaussian lowpass (circular, on the padded size) of one plane."""
    qy, qyt = lowpass_basis(plane.shape[0], fc)
    qx, qxt = lowpass_basis(plane.shape[1], fc)
    return qy @ ((qyt @ plane) @ qx) @ qxt


@lru_cache(maxsize=8)
def gabor_filters(width: int, height: int, orientations: tuple[int, ...]) -> np.ndarray:
    """The Gabor transfer functions (n_filters, height, width, 2), LEAR's create_gabor.

    Each is repeated over two channels so cv2.multiply applies it to the real
    and imaginary parts of an OpenCV spectrum in one call.
    """
    fx, fy = _centred_frequencies(width, height)
    fr = np.sqrt(fx * fx + fy * fy)
    angle = np.arctan2(fy, fx)
    filters = []
    for scale, n_or in enumerate(orientations):
        for j in range(n_or):
            p0, p1 = 0.35, 0.3 / 1.85**scale
            p2, p3 = 16.0 * n_or**2 / 32.0**2, math.pi / n_or * j
            tmp = angle + p3
            tmp = np.where(tmp < -math.pi, tmp + 2 * math.pi, np.where(tmp > math.pi, tmp - 2 * math.pi, tmp))
            g = np.exp(
                -10.0 * p0 * (fr / height / p1 - 1) * (fr / width / p1 - 1) - 2.0 * p2 * math.pi * tmp * tmp
            )
            filters.append(g.astype(np.float32))
    stacked = np.stack(filters)
    return np.ascontiguousarray(np.repeat(stacked[..., None], 2, axis=-1))


def prefilter(channels: np.ndarray, fc: float, padding: int = 5) -> np.ndarray:
    """LEAR's (color_)prefilt on (C, H, W) float32 values in 0..255."""
    padded = [
        cv2.copyMakeBorder(cv2.log(plane + np.float32(1.0)), padding, padding, padding, padding, cv2.BORDER_REFLECT)
        for plane in channels
    ]
    whitened = [plane - lowpass(plane, fc) for plane in padded]
    mean = sum(whitened) / np.float32(len(whitened)) if len(whitened) > 1 else whitened[0]
    local = lowpass(mean * mean, fc)
    scale = np.float32(1.0) / (np.float32(0.2) + np.sqrt(np.abs(local)))
    return np.stack([(plane * scale)[padding:-padding, padding:-padding] for plane in whitened])


def block_means(magnitudes: np.ndarray, blocks: int) -> np.ndarray:
    """(C, H, W) -> (C, blocks, blocks) means over LEAR's down_N grid, indexed [c, x, y].

    Block edges are LEAR's: k * size / N in integer arithmetic.
    """
    n, height, width = magnitudes.shape
    if height % blocks == 0 and width % blocks == 0:
        rows = magnitudes.reshape(n, blocks, height // blocks, width).sum(axis=2)
        sums = rows.reshape(n, blocks, blocks, width // blocks).sum(axis=3)  # [c, y, x]
        return (sums / ((height // blocks) * (width // blocks))).transpose(0, 2, 1)
    ys = [k * height // blocks for k in range(blocks + 1)]
    xs = [k * width // blocks for k in range(blocks + 1)]
    sums = np.add.reduceat(np.add.reduceat(magnitudes, ys[:-1], axis=1), xs[:-1], axis=2)
    return (sums / np.outer(np.diff(ys), np.diff(xs))).transpose(0, 2, 1)


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
    pixels = np.asarray(image, dtype=np.float32)
    if pixels.ndim == 2:
        pixels = pixels[..., None]
    if params.colour and pixels.shape[2] == 1:
        pixels = np.repeat(pixels, 3, axis=2)
    channels = pixels.transpose(2, 0, 1) if params.colour else _grey(pixels)[None]
    height, width = channels.shape[1:]
    if min(height, width) < 8:
        raise ValueError(f"GIST needs at least 8x8 pixels, got {width}x{height}")
    filtered = prefilter(channels, params.prefilter_fc, params.padding)
    bank = gabor_filters(width, height, params.orientations)
    out = np.empty((len(filtered), params.n_filters, params.blocks, params.blocks), dtype=np.float32)
    buffer = np.empty((height, width, 2), dtype=np.float32)
    magnitude = np.empty((1, height, width), dtype=np.float32)
    for c, plane in enumerate(filtered):
        spectrum = cv2.dft(np.ascontiguousarray(plane), flags=cv2.DFT_COMPLEX_OUTPUT)
        for k in range(params.n_filters):
            cv2.multiply(spectrum, bank[k], dst=buffer)
            cv2.dft(buffer, dst=buffer, flags=cv2.DFT_INVERSE)  # unscaled, see below
            np.abs(buffer.view(np.complex64)[..., 0], out=magnitude[0])
            out[c, k] = block_means(magnitude, params.blocks)[0]
    # LEAR divides every magnitude by W * H; it is cheaper on the block means.
    out *= np.float32(1.0 / (width * height))
    return out.reshape(-1)


def _grey(pixels: np.ndarray) -> np.ndarray:
    if pixels.shape[2] == 1:
        return pixels[..., 0]
    # LEAR's grey GIST reads a PGM; we take the mean of R, G and B.
    return pixels.mean(axis=2)
