"""Content-selection files: ground truth (a description CSV with an instance CSV, or Flickr30k
Entities phrase records) and runs, read into the model of annobench.benchmark.selection.model.

- Instances CSV `image_id,instance[,xmin,ymin,xmax,ymax]`: one row per box instance,
  inclusive integer pixel coordinates (optional, but all four or none).
- Description CSV `image_id,description,instance`: one row per instance a description
  mentions. A description is known only through its rows, so one that mentions no
  instance cannot be written and is not counted in M.
- Flickr30k Entities JSON (as josiahwang/phraseloceval ships it): a list of phrase records
  {"image": "IMAGEID#k", "entity", "box": [x, y, w, h], ...}; caption k is description k.
- Run CSV `image_id,instance`: one row per selected instance.

In every file an instance mentioned or selected twice counts once (the measure uses sets).
Errors name the file and the line (CSV, 1-based, the header being line 1) or the record
(JSON, its 0-based index in the list).
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path

from annobench.benchmark.selection.model import Box, ImageTruth, SelectionError, SelectionTruth
from annobench.core.fsutil import read_user_json, read_user_text

INSTANCE_COLUMNS = ("image_id", "instance")
COORDINATE_COLUMNS = ("xmin", "ymin", "xmax", "ymax")
DESCRIPTION_COLUMNS = ("image_id", "description", "instance")
RUN_COLUMNS = ("image_id", "instance")
TRUTH_FORMATS = ("csv", "flickr30k_entities")


def truth_format(path: Path | str) -> str:
    """"flickr30k_entities" when the file holds a JSON list, else "csv"."""
    return "flickr30k_entities" if read_user_text(path, SelectionError).lstrip().startswith("[") else "csv"


def read_selection_truth(path: Path | str, instances: Path | str | None = None) -> SelectionTruth:
    """The ground truth, its format recognised by content: a JSON list is Flickr30k Entities
    (which holds its own boxes: no `instances`), anything else a description CSV (which
    needs `instances`)."""
    path = Path(path)
    if truth_format(path) == "flickr30k_entities":
        if instances is not None:
            raise SelectionError(f"{path} holds Flickr30k Entities records with their own boxes; "
                                 "an instances file is only for a description CSV")
        return read_flickr30k_entities(path)
    if instances is None:
        raise SelectionError(f"{path}: a description CSV needs the images' box instances (an instances CSV)")
    return read_description_csv(path, read_instances_csv(instances))


# --- CSV files ------------------------------------------------------------------

def _csv_table(path: Path, required: tuple[str, ...], optional: tuple[str, ...] = ()):
    """(the optional columns the header has, an iterator of (line, {column: stripped value})
    over the data rows). A missing required column, a row of the wrong length or an empty
    required value is an error naming its line."""
    reader = csv.reader(io.StringIO(read_user_text(path, SelectionError)))
    records = _records(reader, path)
    header = [name.strip() for name in next(records, [])]
    missing = [name for name in required if name not in header]
    if missing:
        raise SelectionError(f"{path}:1: missing column(s) {', '.join(missing)} "
                             f"(the header must name {','.join(required)})")
    present = tuple(name for name in optional if name in header)
    position = {name: header.index(name) for name in required + present}

    def rows():
        for fields in records:
            if not any(value.strip() for value in fields):
                continue  # a blank line
            if len(fields) != len(header):
                raise SelectionError(f"{path}:{reader.line_num}: {len(fields)} fields, the header has {len(header)}")
            row = {name: fields[column].strip() for name, column in position.items()}
            empty = [name for name in required if not row[name]]
            if empty:
                raise SelectionError(f"{path}:{reader.line_num}: empty {', '.join(empty)}")
            yield reader.line_num, row

    return present, rows()


def _records(reader, path: Path):
    """The reader's rows; a csv.Error (a field past the csv module's size limit) as a SelectionError naming
    its line."""
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise SelectionError(f"{path}:{reader.line_num}: {error}") from None
        yield fields


def read_instances_csv(path: Path | str) -> dict[str, dict[str, Box | None]]:
    """image_id -> instance -> its box (None without coordinate columns)."""
    path = Path(path)
    given, rows = _csv_table(path, INSTANCE_COLUMNS, COORDINATE_COLUMNS)
    if given and len(given) != len(COORDINATE_COLUMNS):
        absent = [name for name in COORDINATE_COLUMNS if name not in given]
        raise SelectionError(f"{path}:1: box coordinates need all of {','.join(COORDINATE_COLUMNS)}; "
                             f"missing {', '.join(absent)}")
    boxes: dict[str, dict[str, Box | None]] = defaultdict(dict)
    first_line: dict[tuple[str, str], int] = {}
    for line, row in rows:
        key = (row["image_id"], row["instance"])
        if key in first_line:
            raise SelectionError(f"{path}:{line}: instance {key[1]!r} of image {key[0]!r} repeats line "
                                 f"{first_line[key]}")
        first_line[key] = line
        boxes[key[0]][key[1]] = _box_from_row(row, path, line) if given else None
    return dict(boxes)


def _box_from_row(row: dict, path: Path, line: int) -> Box:
    values = []
    for name in COORDINATE_COLUMNS:
        try:
            values.append(int(row[name]))
        except ValueError:
            raise SelectionError(f"{path}:{line}: {name} {row[name]!r} is not an integer") from None
    box = Box(*values)
    if box.xmax < box.xmin or box.ymax < box.ymin:
        raise SelectionError(f"{path}:{line}: empty box (xmax < xmin or ymax < ymin): {values}")
    return box


def read_description_csv(path: Path | str, boxes: dict[str, dict[str, Box | None]]) -> SelectionTruth:
    """Descriptions of the images of `boxes` (from read_instances_csv). Images with instances
    but no description are left out (counted in notes["images_without_descriptions"])."""
    path = Path(path)
    mentioned: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    for line, row in _csv_table(path, DESCRIPTION_COLUMNS)[1]:
        image_id, instance = row["image_id"], row["instance"]
        if image_id not in boxes:
            raise SelectionError(f"{path}:{line}: image {image_id!r} has no box instances in the instances file")
        if instance not in boxes[image_id]:
            raise SelectionError(f"{path}:{line}: instance {instance!r} is not among image {image_id!r}'s "
                                 "box instances")
        mentioned[image_id][row["description"]].add(instance)
    if not mentioned:
        raise SelectionError(f"{path}: no descriptions")
    images = {image_id: ImageTruth(boxes[image_id], _frozen(descriptions))
              for image_id, descriptions in sorted(mentioned.items())}
    return SelectionTruth(images, {"format": "csv",
                                   "images_without_descriptions": len(set(boxes) - set(mentioned))})


def _frozen(descriptions: dict[str, set]) -> dict[str, frozenset]:
    return {key: frozenset(instances) for key, instances in sorted(descriptions.items())}


def read_selection_run(path: Path | str, truth: SelectionTruth) -> dict[str, frozenset]:
    """image_id -> selected instances. A line naming an image that is not evaluated, or an
    instance that is not one of the image's boxes, is an error naming the line."""
    path = Path(path)
    selected: dict[str, set] = defaultdict(set)
    for line, row in _csv_table(path, RUN_COLUMNS)[1]:
        image_id, instance = row["image_id"], row["instance"]
        if image_id not in truth.images:
            raise SelectionError(f"{path}:{line}: image {image_id!r} is not an image of the ground truth")
        if instance not in truth.images[image_id].boxes:
            raise SelectionError(f"{path}:{line}: instance {instance!r} is not among image {image_id!r}'s "
                                 "box instances")
        selected[image_id].add(instance)
    return {image_id: frozenset(instances) for image_id, instances in sorted(selected.items())}


# --- Flickr30k Entities ------------------------------------------------------------

def read_flickr30k_entities(path: Path | str) -> SelectionTruth:
    """Phrase records -> the model: an image's instances are its entities that have a box;
    caption k is description k and mentions the boxed entities of its phrases.

    A phrase whose entity has no box anywhere in the image (Flickr30k Entities leaves scene
    and non-visual phrases unboxed; the phraseloceval files have none) mentions no instance
    and is skipped (notes["phrases_without_box"]); a caption left with no instance is not a
    description (notes["captions_without_instances"]). An entity mentioned twice in a
    caption counts once (notes["repeated_mentions"]). One entity given two different boxes
    in an image is an error."""
    path = Path(path)
    records = _json_records(path)
    boxes: dict[str, dict[str, Box]] = defaultdict(dict)
    where: dict[tuple[str, str], int] = {}
    phrases = []
    for index, record in enumerate(records):
        image_id, caption, entity, box = _phrase(record, path, index)
        phrases.append((image_id, caption, entity))
        if box is None:
            continue
        known = boxes[image_id].get(entity)
        if known is not None and known != box:
            raise SelectionError(f"{path}: record [{index}]: entity {entity!r} of image {image_id!r} has another "
                                 f"box in record [{where[image_id, entity]}]")
        boxes[image_id][entity] = box
        where.setdefault((image_id, entity), index)
    return _flickr_truth(phrases, boxes, path)


def _json_records(path: Path) -> list:
    records = read_user_json(path, SelectionError)
    if not isinstance(records, list):
        raise SelectionError(f"{path}: expected a JSON list of phrase records")
    return records


def _phrase(record, path: Path, index: int) -> tuple[str, str, str, Box | None]:
    """(image_id, caption number, entity id, box or None) of one phrase record."""
    def fail(message: str) -> SelectionError:
        return SelectionError(f"{path}: record [{index}]: {message}")

    if not isinstance(record, dict):
        raise fail("not a JSON object")
    image_id, sep, caption = str(record.get("image") or "").partition("#")
    if not (image_id.strip() and sep and caption.strip()):
        raise fail(f"'image' must be IMAGEID#k, got {record.get('image')!r}")
    entity = record.get("entity")
    if isinstance(entity, bool) or not isinstance(entity, (str, int)) or not str(entity).strip():
        raise fail(f"empty or invalid 'entity' {entity!r}")
    return image_id.strip(), caption.strip(), str(entity).strip(), _flickr_box(record.get("box"), fail)


def _flickr_box(value, fail) -> Box | None:
    """[x, y, w, h] (phraseloceval: right = x + w - 1) -> an inclusive Box; null or [] -> None."""
    if value is None or value == []:
        return None
    if (not isinstance(value, list) or len(value) != 4
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        raise fail(f"'box' must be [x, y, w, h] integers, got {value!r}")
    x, y, width, height = value
    if width < 1 or height < 1:
        raise fail(f"'box' has an empty width or height: {value!r}")
    return Box(x, y, x + width - 1, y + height - 1)


def _flickr_truth(phrases: list[tuple[str, str, str]], boxes: dict[str, dict[str, Box]], path: Path) -> SelectionTruth:
    mentioned: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    captions: set[tuple[str, str]] = set()
    without_box = repeated = 0
    for image_id, caption, entity in phrases:
        captions.add((image_id, caption))
        if entity not in boxes.get(image_id, {}):
            without_box += 1
        elif entity in mentioned[image_id][caption]:
            repeated += 1
        else:
            mentioned[image_id][caption].add(entity)
    images = {image_id: ImageTruth(dict(sorted(boxes[image_id].items())), _frozen(descriptions))
              for image_id, descriptions in sorted(mentioned.items()) if descriptions}
    if not images:
        raise SelectionError(f"{path}: no phrase mentions a boxed entity")
    described = sum(len(image.descriptions) for image in images.values())
    return SelectionTruth(images, {
        "format": "flickr30k_entities",
        "phrases": len(phrases),
        "phrases_without_box": without_box,
        "repeated_mentions": repeated,
        "captions_without_instances": len(captions) - described,
        "images_without_descriptions": len({image_id for image_id, _ in captions} - set(images)),
    })
