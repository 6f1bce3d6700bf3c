"""Canonical segmentations, our own form: <image_id>.png label maps (8- or
16-bit, 0 = unlabelled) and a regions.csv `image_id,region_id,label`. Region
ids are the maps' own. A folder with neither, or a regions.csv that is empty, not UTF-8 or without
its header, raises SegmentationSourceError.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from pathlib import Path

from annobench.core.fsutil import read_user_text
from annobench.regions.importers.common import assemble, int_or_none, relative, require_files
from annobench.regions.segmentation import Imported, SegmentationReject, SegmentationSourceError, read_label_map

COLUMNS = ("image_id", "region_id", "label")


def import_canonical(root: Path, wanted: Callable[[str], bool], regions_csv: str = "regions.csv") -> Iterator[Imported]:
    """root/<image_id>.png label maps (8/16-bit) and root/regions.csv
    (`image_id,region_id,label`; an empty label means none)."""
    labels, rejects = _read_regions_csv(root / regions_csv)
    maps = {p.stem: p for p in sorted(root.glob("*.png"))}
    if not labels and not rejects:
        require_files(list(maps.values()), root, f"<image_id>.png label maps and {regions_csv} "
                                                 f"({', '.join(COLUMNS)})")
    for image_id in sorted(i for i in set(maps) | set(labels) | set(rejects) if wanted(i)):
        source = relative(maps[image_id], root) if image_id in maps else regions_csv
        if image_id not in maps:
            yield from rejects.get(image_id, [])
            yield SegmentationReject(image_id, None, f"no label map {image_id}.png for rows of {regions_csv}",
                                     1, regions_csv)
            continue
        try:
            label_map = read_label_map(maps[image_id])
        except Exception as exc:  # Pillow raises many types on broken files
            yield from rejects.get(image_id, [])
            yield SegmentationReject(image_id, None, f"unreadable label map: {exc}", 1, source)
            continue
        yield from assemble(image_id, label_map, labels.get(image_id, {}), source,
                             rejects=rejects.get(image_id, []), label_table=regions_csv)


def _read_regions_csv(path: Path) -> tuple[dict[str, dict[int, str | None]], dict[str, list[SegmentationReject]]]:
    labels: dict[str, dict[int, str | None]] = {}
    rejects: dict[str, list[SegmentationReject]] = {}
    if not path.is_file():
        return labels, rejects
    reader = csv.DictReader(io.StringIO(read_user_text(path, SegmentationSourceError), newline=""))
    try:
        _check_header(reader.fieldnames, path)
        _read_region_rows(reader, path, labels, rejects)
    except csv.Error as error:  # e.g. a field past the csv module's size limit
        raise SegmentationSourceError(f"{path}: line {reader.line_num}: {error}") from None
    return labels, rejects


def _check_header(fieldnames: list[str] | None, path: Path) -> None:
    if fieldnames is None:
        raise SegmentationSourceError(f"{path}: empty, expected the header {','.join(COLUMNS)}")
    missing = set(COLUMNS) - set(fieldnames)
    if missing:
        raise SegmentationSourceError(f"{path}: lacks the columns {sorted(missing)}")


def _read_region_rows(reader: csv.DictReader, path: Path, labels: dict, rejects: dict) -> None:
    for line, row in enumerate(reader, start=2):
        image_id = (row["image_id"] or "").strip()
        region_id = int_or_none((row["region_id"] or "").strip())
        label = (row["label"] or "").strip() or None
        problem = None
        if region_id is None or region_id <= 0:
            problem = f"{path.name} line {line}: region_id {row['region_id']!r} is not a positive integer"
        elif region_id in labels.get(image_id, {}) and labels[image_id][region_id] != label:
            problem = f"{path.name} line {line}: region listed twice with different labels"
        if problem:
            rejects.setdefault(image_id, []).append(SegmentationReject(image_id, region_id, problem, 1, path.name))
            if region_id is not None and region_id > 0:
                labels.get(image_id, {}).pop(region_id, None)
            continue
        labels.setdefault(image_id, {})[region_id] = label
