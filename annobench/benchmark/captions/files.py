"""Caption files: reference descriptions and caption runs, and the `captions` table.

References (several per image, kept in file order):
- CSV `image_id,caption` with a header, one row per reference;
- COCO caption JSON: {"annotations": [{"image_id", "caption", ...}, ...], ...};
- an object {image_id: [caption, ...]} (the form of CLIPScore's example refs.json).

Runs (one caption per image):
- CSV `image_id,caption` with a header;
- COCO results JSON: [{"image_id", "caption"}, ...];
- an object {image_id: caption}.

The form is recognised by content (JSON starts with `[` or `{`). Image ids are strings
(COCO's integer ids become their decimal text). Errors name the file and the line (CSV,
1-based, the header being line 1) or the record (JSON list, 0-based) or the image (object).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

import pyarrow as pa

from annobench.core.errors import AnnobenchError
from annobench.core.fsutil import parse_user_json, read_user_text
from annobench.core.tables import field, rows_to_table, write_table

CSV_COLUMNS = ("image_id", "caption")
CAPTIONS_TABLE = Path("tables/captions/all.parquet")

CAPTIONS_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "key of the image"),
        field("reference", pa.int32(), "the reference's number within its image, from 1, in file order"),
        field("text", pa.string(), "the reference description as read"),
        field("source", pa.string(), "where it was read: FORM:FILE:POSITION"),
    ]
)


class CaptionError(AnnobenchError):
    """Caption inputs that cannot be used (what and where in the message)."""


@dataclass(frozen=True)
class Reference:
    text: str
    source: str  # FORM:FILE:POSITION, e.g. csv:refs.csv:line 7


@dataclass(frozen=True)
class References:
    """Each image's reference descriptions in file order (images sorted by id)."""

    images: Mapping[str, tuple[Reference, ...]]
    path: str
    form: str

    def texts(self, image_id: str) -> list[str]:
        return [reference.text for reference in self.images[image_id]]

    def summary(self) -> dict:
        return {"path": self.path, "format": self.form, "images": len(self.images),
                "references": sum(len(refs) for refs in self.images.values())}


@dataclass(frozen=True)
class CaptionRun:
    """One caption per image of the run."""

    captions: Mapping[str, str]
    path: str
    form: str


# --- low-level reading ----------------------------------------------------------------

def _load_json(path: Path, text: str):
    return parse_user_json(text, str(path), CaptionError)


def _is_json(text: str) -> bool:
    return text.lstrip()[:1] in ("[", "{")


def _image_id(value, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise CaptionError(f"{where}: image_id must be a string or an integer, got {value!r}")
    image_id = str(value).strip()
    if not image_id:
        raise CaptionError(f"{where}: empty image_id")
    return image_id


def _caption(value, where: str) -> str:
    if not isinstance(value, str):
        raise CaptionError(f"{where}: caption must be a string, got {value!r}")
    if not value.strip():
        raise CaptionError(f"{where}: empty caption")
    return value


def _csv_rows(path: Path, text: str) -> Iterator[tuple[str, str, str]]:
    """(image_id, caption, "line N") of each data row of an `image_id,caption` CSV."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        yield from _checked_rows(reader, path)
    except csv.Error as error:  # a field past the csv module's size limit
        raise CaptionError(f"{path}: line {reader.line_num}: {error}") from None


def _checked_rows(reader, path: Path) -> Iterator[tuple[str, str, str]]:
    header = next(reader, None)
    if header is None:
        raise CaptionError(f"{path}: empty file; expected a header {','.join(CSV_COLUMNS)}")
    names = [name.strip() for name in header]
    missing = [name for name in CSV_COLUMNS if name not in names]
    if missing:
        raise CaptionError(f"{path}: line 1: the header lacks column(s) {', '.join(missing)} "
                           f"(expected {','.join(CSV_COLUMNS)}, got {','.join(names)})")
    at = {name: names.index(name) for name in CSV_COLUMNS}
    start = reader.line_num + 1
    for row in reader:
        line, start = f"line {start}", reader.line_num + 1  # a quoted field may span lines
        if not row:
            continue
        where = f"{path}: {line}"
        if len(row) != len(names):
            raise CaptionError(f"{where}: {len(row)} field(s), the header has {len(names)}")
        yield _image_id(row[at["image_id"]], where), _caption(row[at["caption"]], where), line


# --- references -----------------------------------------------------------------------

def read_references(path: Path | str) -> References:
    """Reference descriptions from a CSV, COCO caption JSON or an {image: [captions]} object."""
    path = Path(path)
    text = read_user_text(path, CaptionError)
    if not _is_json(text):
        rows = [(image_id, Reference(caption, f"csv:{path.name}:{line}"))
                for image_id, caption, line in _csv_rows(path, text)]
        return _references(rows, path, "csv")
    data = _load_json(path, text)
    if isinstance(data, dict) and "annotations" in data:
        return _references(_coco_references(path, data["annotations"]), path, "coco")
    if isinstance(data, dict):
        return _references(_object_references(path, data), path, "json")
    raise CaptionError(f"{path}: JSON references must be an object: COCO captions ({{\"annotations\": [...]}}) "
                       "or {image_id: [caption, ...]}")


def _coco_references(path: Path, annotations) -> list[tuple[str, Reference]]:
    if not isinstance(annotations, list):
        raise CaptionError(f"{path}: \"annotations\" must be a list")
    rows = []
    for index, record in enumerate(annotations):
        where = f"{path}: annotation {index}"
        if not isinstance(record, dict) or "image_id" not in record or "caption" not in record:
            raise CaptionError(f"{where}: needs \"image_id\" and \"caption\"")
        position = f"annotation {record['id']}" if "id" in record else f"annotation {index}"
        rows.append((_image_id(record["image_id"], where),
                     Reference(_caption(record["caption"], where), f"coco:{path.name}:{position}")))
    return rows


def _object_references(path: Path, data: dict) -> list[tuple[str, Reference]]:
    rows = []
    for key, captions in data.items():
        where = f"{path}: image {key!r}"
        if not isinstance(captions, list):
            raise CaptionError(f"{where}: expected a list of captions, got {type(captions).__name__}")
        image_id = _image_id(key, where)
        for k, caption in enumerate(captions):
            rows.append((image_id, Reference(_caption(caption, f"{where}[{k}]"), f"json:{path.name}:{key}[{k}]")))
    return rows


def _references(rows: list[tuple[str, Reference]], path: Path, form: str) -> References:
    images: dict[str, list[Reference]] = {}
    for image_id, reference in rows:
        images.setdefault(image_id, []).append(reference)
    if not images:
        raise CaptionError(f"{path}: no reference captions")
    return References({image_id: tuple(images[image_id]) for image_id in sorted(images)}, str(path), form)


def captions_table(references: References) -> pa.Table:
    """The `captions` table: one row per reference, images sorted by id, references in file order."""
    rows = [{"image_id": image_id, "reference": number, "text": reference.text, "source": reference.source}
            for image_id, refs in references.images.items()
            for number, reference in enumerate(refs, start=1)]
    return rows_to_table(rows, CAPTIONS_SCHEMA)


def write_captions_table(references: References, out: Path | str) -> Path:
    """Write the `captions` table as OUT/tables/captions/all.parquet."""
    target = Path(out) / CAPTIONS_TABLE
    target.parent.mkdir(parents=True, exist_ok=True)
    write_table(captions_table(references), target, "captions",
                params={"references": references.path, "format": references.form})
    return target


# --- runs -----------------------------------------------------------------------------

def read_run(path: Path | str, references: References) -> CaptionRun:
    """One caption per image, every image one of the references'; a repeated or unknown image
    is an error naming its line (or record)."""
    path = Path(path)
    text = read_user_text(path, CaptionError)
    if not _is_json(text):
        return _run(((image_id, caption, line) for image_id, caption, line in _csv_rows(path, text)),
                    path, "csv", references)
    data = _load_json(path, text)
    if isinstance(data, list):
        return _run(_coco_results(path, data), path, "coco_results", references)
    if isinstance(data, dict):
        entries = ((_image_id(key, f"{path}: image {key!r}"), _caption(caption, f"{path}: image {key!r}"),
                    f"image {key!r}") for key, caption in data.items())
        return _run(entries, path, "json", references)
    raise CaptionError(f"{path}: a JSON run must be a COCO results list or an {{image_id: caption}} object")


def _coco_results(path: Path, records: list) -> Iterator[tuple[str, str, str]]:
    for index, record in enumerate(records):
        where = f"{path}: record {index}"
        if not isinstance(record, dict) or "image_id" not in record or "caption" not in record:
            raise CaptionError(f"{where}: needs \"image_id\" and \"caption\"")
        yield _image_id(record["image_id"], where), _caption(record["caption"], where), f"record {index}"


def _run(entries, path: Path, form: str, references: References) -> CaptionRun:
    captions: dict[str, str] = {}
    first_seen: dict[str, str] = {}
    for image_id, caption, position in entries:
        if image_id in captions:
            raise CaptionError(f"{path}: {position}: image {image_id!r} again (first at {first_seen[image_id]}); "
                               "a run gives one caption per image")
        if image_id not in references.images:
            raise CaptionError(f"{path}: {position}: image {image_id!r} is not an image of the references")
        captions[image_id] = caption
        first_seen[image_id] = position
    return CaptionRun(captions, str(path), form)
