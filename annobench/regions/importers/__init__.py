"""Importers of region-level data (SAIAPR TC-12, Escalante et al. 2008; MSRC-v2, Shotton et al.
2006; BSDS500, Martin et al. 2001; COCO panoptic, Kirillov et al. 2019; LabelMe, Russell et al.
2008) from real sources into the canonical form (annobench.regions.segmentation), one module
per format; `import_segmentations` runs one and applies the checks every source gets.

Importers never raise on bad input: each yields `Segmentation`s and
`SegmentationReject`s (image_id, annotator, region_id or None for the whole
image, reason, source file). What is checked everywhere: the map is 2-D
with non-negative integer ids; a labelled region has pixels; a region in
the map has a label row (sources with labels); a label is in the source's
vocabulary; with `image_sizes`, the map has its image's size. A source that
cannot be read at all raises ValueError: that is a wrong path or option,
not bad data.

Source specifics: each importer's module says its layout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from annobench.regions.importers.bsds500 import import_bsds500
from annobench.regions.importers.canonical import import_canonical
from annobench.regions.importers.coco_panoptic import import_coco_panoptic
from annobench.regions.importers.common import unlabel
from annobench.regions.importers.labelme import import_labelme
from annobench.regions.importers.msrc_v2 import import_msrc_v2
from annobench.regions.importers.saiapr import import_saiapr
from annobench.regions.matlimits import MatLimits
from annobench.regions.segmentation import Imported, Segmentation, SegmentationReject

SOURCES = ("canonical", "saiapr", "msrc_v2", "bsds500", "coco_panoptic", "labelme")
MAT_SOURCES = ("saiapr", "msrc_v2", "bsds500")  # read through annobench.regions.matfile


def import_segmentations(
    source: str,
    root: Path | str,
    image_sizes: Mapping[str, tuple[int, int]] | None = None,
    vocabulary: Iterable[str] | None = None,
    wanted: Callable[[str], bool] | None = None,
    mat_limits: MatLimits | None = None,
    **options,
) -> Iterator[Imported]:
    """Segmentations and rejects of one source, in a stable order.

    image_sizes: image_id -> (height, width) of the dataset's images; when
    given, a map of another size, or of an image not in the dataset, is
    rejected. vocabulary: when given, regions whose label is not in it are
    rejected (the sources with label ids check their own vocabulary anyway).
    wanted: when given, only image ids it accepts are read at all (a shard's
    share of the source). mat_limits: what one MATLAB file of the MAT_SOURCES may
    make the reader allocate (default MatLimits()). options: passed to the
    source's importer.
    """
    importers = {
        "canonical": import_canonical, "saiapr": import_saiapr, "msrc_v2": import_msrc_v2,
        "bsds500": import_bsds500, "coco_panoptic": import_coco_panoptic, "labelme": import_labelme,
    }
    if source not in importers:
        raise ValueError(f"unknown segmentation source {source!r}; known: {', '.join(SOURCES)}")
    if source in MAT_SOURCES and mat_limits is not None:
        options["mat_limits"] = mat_limits
    items = importers[source](Path(root), wanted=wanted or (lambda image_id: True), **options)
    if vocabulary is not None:
        items = _restrict_to_vocabulary(items, frozenset(vocabulary))
    if image_sizes is not None:
        items = _check_image_sizes(items, image_sizes)
    return items


def split_imported(items: Iterable[Imported]) -> tuple[list[Segmentation], list[SegmentationReject]]:
    segmentations, rejects = [], []
    for item in items:
        (segmentations if isinstance(item, Segmentation) else rejects).append(item)
    return segmentations, rejects


def _restrict_to_vocabulary(items: Iterable[Imported], vocabulary: frozenset[str]) -> Iterator[Imported]:
    for item in items:
        if not isinstance(item, Segmentation):
            yield item
            continue
        outside = [r for r, label in item.labels.items() if label is not None and label not in vocabulary]
        for region_id in outside:
            yield SegmentationReject(item.image_id, region_id, f"label {item.labels[region_id]!r} not in the vocabulary",
                                     item.annotator)
        if not outside:
            yield item
            continue
        labels = {r: label for r, label in item.labels.items() if r not in outside}
        if not labels:
            yield SegmentationReject(item.image_id, None, "no regions left", item.annotator)
            continue
        yield Segmentation(item.image_id, unlabel(item.label_map, outside), labels, item.annotator)


def _check_image_sizes(items: Iterable[Imported], sizes: Mapping[str, tuple[int, int]]) -> Iterator[Imported]:
    for item in items:
        if isinstance(item, Segmentation):
            size = sizes.get(item.image_id)
            if size is None:
                item = SegmentationReject(item.image_id, None, "no image with this id in the dataset", item.annotator)
            elif tuple(size) != item.label_map.shape:
                height, width = item.label_map.shape
                item = SegmentationReject(
                    item.image_id, None,
                    f"label map {width}x{height} differs from its image {size[1]}x{size[0]}", item.annotator,
                )
        yield item
