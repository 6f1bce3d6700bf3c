"""Region-level data in its canonical form, which every importer yields
and the region features and relations read.

Canonical form, per image and annotator: a label map (2-D int32 array,
0 = unlabelled, region ids > 0) and a label per region (a string, or None
when the source has no labels). On disk: a 16-bit PNG label map per image
and a `regions` table `image_id, annotator, region_id, label`.

`annotator` tells several segmentations of one image apart (BSDS500 has
4-9 per photo); it is 1 for sources with one segmentation per image, so
`image_id` stays the key of the image's pixels everywhere.

Region ids keep the source's numbering where the source numbers its regions
with small integers (canonical, SAIAPR, MSRC-v2, BSDS500), so a region can
be traced back; COCO panoptic segments and LabelMe shapes are numbered 1..n
in the order the file lists them. A rejected region leaves its id unused
and its pixels unlabelled.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path

import numpy as np
import pyarrow as pa
from PIL import Image

from annobench.core.errors import AnnobenchError
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.tables import field

REGIONS_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "key of the image"),
        field("annotator", pa.int16(), "which segmentation of the image (1 when the source has one)"),
        field("region_id", pa.int32(), "region id in the label map (> 0)"),
        field("label", pa.string(), "the region's label (null when the source has none)", nullable=True),
    ]
)

SEGMENTATION_REJECTS_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "image the rejected data belongs to"),
        field("annotator", pa.int16(), "segmentation of the image, when known", nullable=True),
        field("region_id", pa.int32(), "rejected region; null when the whole image is", nullable=True),
        field("reason", pa.string(), "why it is not in the dataset"),
        field("source", pa.string(), "file the problem was found in", nullable=True),
    ]
)


@dataclass(frozen=True)
class Segmentation:
    image_id: str
    label_map: np.ndarray  # (H, W) int32, 0 = unlabelled
    labels: dict[int, str | None]  # exactly the region ids present in label_map
    annotator: int = 1

    def region_rows(self) -> list[dict]:
        return [
            {"image_id": self.image_id, "annotator": self.annotator, "region_id": region_id, "label": label}
            for region_id, label in sorted(self.labels.items())
        ]


class SegmentationSourceError(AnnobenchError):
    """A segmentation source that cannot be read at all (empty, missing, malformed listing): a wrong
    path or kind, not bad data of one image. The message names the file and what was expected."""


@dataclass(frozen=True)
class SegmentationReject:
    image_id: str
    region_id: int | None
    reason: str
    annotator: int | None = None
    source: str | None = None

    def row(self) -> dict:
        return {
            "image_id": self.image_id, "annotator": self.annotator, "region_id": self.region_id,
            "reason": self.reason, "source": self.source,
        }


Imported = Segmentation | SegmentationReject


def regions_table(segmentations: Iterable[Segmentation]) -> pa.Table:
    rows = [row for seg in segmentations for row in seg.region_rows()]
    return pa.Table.from_pylist(rows, schema=REGIONS_SCHEMA)


def rejects_table(rejects: Iterable[SegmentationReject]) -> pa.Table:
    return pa.Table.from_pylist([r.row() for r in rejects], schema=SEGMENTATION_REJECTS_SCHEMA)


def key_columns(keys: list[tuple[str, int]], lengths: list[int]) -> dict[str, pa.Array]:
    """image_id and annotator columns of a table stacked from blocks of rows, one
    (image_id, annotator) and length per block."""
    block = np.repeat(np.arange(len(keys)), lengths)
    return {
        "image_id": pa.array([image_id for image_id, _ in keys], pa.string()).take(block),
        "annotator": pa.array(np.array([annotator for _, annotator in keys], dtype=np.int16)[block]),
    }


def write_label_map(path: Path | str, label_map: np.ndarray, atomic: bool = True) -> None:
    """Store a label map as a 16-bit greyscale PNG, flushed to disk.

    atomic=False writes it in place, for a folder that is itself written
    atomically: a partial file and a scan for stale ones per map would cost
    more than the map.
    """
    if label_map.size and (label_map.min() < 0 or label_map.max() > 0xFFFF):
        raise ValueError("a PNG label map holds region ids 0..65535")
    png = io.BytesIO()
    Image.fromarray(label_map.astype(np.uint16)).save(png, format="PNG")
    if atomic:
        write_bytes_atomic(path, png.getvalue())
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(png.getvalue())
        handle.flush()
        os.fsync(handle.fileno())


def read_label_map(path: Path | str) -> np.ndarray:
    """A canonical PNG label map (8- or 16-bit greyscale, or palette indices) as int32."""
    with Image.open(path) as image:
        if image.mode not in ("L", "P", "1", "I", "I;16", "I;16B", "I;16L"):
            raise ValueError(f"label map must be single-channel, not {image.mode}")
        return np.asarray(image).astype(np.int32)


@dataclass(frozen=True)
class DenseLabelMap:
    """A label map renumbered so that id ids[k] is k + 1 (0 stays unlabelled): per-region
    sums then index arrays of n + 1, whatever the source's ids."""

    ids: np.ndarray  # the region ids > 0 present, ascending
    dense: np.ndarray  # the renumbered map, in the smallest unsigned type that holds n
    counts: np.ndarray  # pixels per dense value 0..n (0: the unlabelled ones)

    # What coordinate_cells and coordinate_counts computed: features and relations share it.
    _cache: dict = dataclass_field(default_factory=dict, init=False, compare=False, repr=False)

    def coordinate_cells(self, axis: int) -> np.ndarray:
        """dense * size + coordinate of each pixel along axis (1: columns, 0: rows): one bin
        per (region, coordinate), neighbours in different bins along columns."""
        if ("cells", axis) not in self._cache:
            size = self.dense.shape[axis]
            cells = self.dense.astype(np.intp)
            cells *= size
            cells += np.arange(size).reshape((1, size) if axis == 1 else (size, 1))
            self._cache[("cells", axis)] = cells.ravel()
        return self._cache[("cells", axis)]

    def coordinate_counts(self, axis: int) -> np.ndarray:
        """(n, size): pixels of each region at each coordinate along axis."""
        if ("counts", axis) not in self._cache:
            size, n = self.dense.shape[axis], self.ids.size
            counts = np.bincount(self.coordinate_cells(axis), minlength=(n + 1) * size)
            self._cache[("counts", axis)] = counts.reshape(n + 1, size)[1:]
        return self._cache[("counts", axis)]


def renumber_regions(label_map: np.ndarray) -> DenseLabelMap:
    """The DenseLabelMap of a map of non-negative integer ids."""
    flat = label_map.ravel()
    if flat.size and flat.min() < 0:
        raise ValueError("label map has negative region ids")
    top = int(flat.max(initial=0))
    ids, counts = _region_counts(flat, top)
    dtype = np.min_scalar_type(ids.size)
    if _countable(flat, top):  # a lookup table over 0..top is cheaper than a search
        lookup = np.zeros(top + 1, dtype=dtype)
        lookup[ids] = np.arange(1, ids.size + 1)
        return DenseLabelMap(ids, lookup[label_map], counts)
    return DenseLabelMap(ids, np.searchsorted(ids, label_map, side="right").astype(dtype), counts)


def present_ids(label_map: np.ndarray) -> np.ndarray:
    """The region ids > 0 in a map of non-negative integer ids, ascending."""
    flat = label_map.ravel()
    return _region_counts(flat, int(flat.max(initial=0)))[0]


def _countable(flat: np.ndarray, top: int) -> bool:
    """Whether a bincount over 0..top is small next to the map."""
    return top <= 2 * flat.size + 65536


def _region_counts(flat: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """The ids > 0 present, ascending, and the pixels of 0 then of each id."""
    if _countable(flat, top):
        counts = np.bincount(flat, minlength=top + 1)
        ids = np.flatnonzero(counts[1:]) + 1
        return ids, np.concatenate((counts[:1], counts[ids]))
    distinct, counts = np.unique(flat, return_counts=True)
    unlabelled = counts[:1] if distinct[0] == 0 else np.zeros(1, dtype=counts.dtype)
    return distinct[distinct > 0], np.concatenate((unlabelled, counts[distinct > 0]))
