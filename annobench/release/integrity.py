"""The dataset's keys, stated once and checked: every table's rows refer to things the dataset has.

A dataset's tables are joined by their keys. `image_id` names an image of `images` in every
table (in a rejects table, an input: an image of `images` or one the ingest rejected, listed in
`rejects`; `search_keywords` too, whose log lines naming any other image are rows of
`search_keyword_rejects`, a table without image_id); `page_id` a page of `pages`; `concept` a concept of `concepts`; a region its row of
`regions`; a box lies inside its image; a run's lines name images of `images`. Empty values are
allowed in rejects tables, whose rows may speak of a whole source.

`check_keys(folder)` reads a build's or a release's `tables/` and `runs/` (only the key
columns, a file at a time) and returns every dangling key with its table, column and value.
The build runs it before the release (rule integrity: a report, and a failing job when a key
dangles) and `annobench audit` runs it on a release.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from annobench.benchmark.boxes.model import outside_image
from annobench.core.errors import AnnobenchError
from annobench.core.fsutil import write_bytes_atomic

TABLES = "tables"
RUNS = "runs"
SHOWN_VALUES = 5  # dangling values named per table and key


class IntegrityError(AnnobenchError):
    """Some key of the dataset names nothing (the message lists each, table by table)."""


@dataclass(frozen=True)
class Reference:
    """Column(s) of a table that must name a row of another table."""

    columns: tuple[str, ...]
    target: str
    target_columns: tuple[str, ...]


@dataclass(frozen=True)
class Dangling:
    table: str  # a table name, or runs/FILE for a run
    key: str  # the column(s), as `a` or `(a, b)`
    target: str
    values: tuple[str, ...]  # the first dangling values
    rows: int  # rows whose key dangles

    def __str__(self) -> str:
        shown = ", ".join(self.values)
        more = f" and {self.rows - len(self.values)} more rows" if self.rows > len(self.values) else ""
        return f"{self.table}: {self.key} names no row of {self.target}: {shown}{more}"


# Each key and what it refers to: the same for every table that has the column(s).
IMAGE = Reference(("image_id",), "images", ("image_id",))
PAGE = Reference(("page_id",), "pages", ("page_id",))
CONCEPT = Reference(("concept",), "concepts", ("concept",))
DUPLICATE = Reference(("duplicate_of",), "images", ("image_id",))
REGION_KEY = ("image_id", "annotator", "region_id")
REGION = Reference(REGION_KEY, "regions", REGION_KEY)
RELATION_FROM = Reference(("image_id", "annotator", "region_i"), "regions", REGION_KEY)
RELATION_TO = Reference(("image_id", "annotator", "region_j"), "regions", REGION_KEY)
REFERENCES = (IMAGE, PAGE, CONCEPT, DUPLICATE, REGION, RELATION_FROM, RELATION_TO)
# Tables a key does not constrain: the targets themselves, and tables whose column of that name
# is not that key (`regions` per annotator and region; the region statistics count labels).
# Rejects of an input other than an image (a segmentation, a box file's line) name the image
# that input speaks of, which may be none the dataset has: "no image with this id" is one of
# their reasons, and the row is the record of it.
OTHER_INPUT_REJECTS = {"segmentation_rejects", "box_rejects"}
# The web archives' page map lists what the archives' pages show, ingested or not: it is the
# input mapping (as input.page_map's CSV is), and the text tables keep only ingested images.
INPUT_MAPS = {"warc_page_map"}
EXEMPT = {IMAGE: {"images", *OTHER_INPUT_REJECTS, *INPUT_MAPS}, PAGE: {"pages"}, CONCEPT: {"concepts"}, REGION: {"regions"}}
# Rejects tables list inputs the dataset did not take: their images are inputs, their keys may
# be empty (a row about a whole source).
INPUTS = "inputs"


def is_rejects(table: str) -> bool:
    return table == "rejects" or table.endswith("_rejects")


def check_keys(folder: Path | str) -> list[Dangling]:
    """Every dangling key of the build or release in `folder` (its tables/ and runs/)."""
    folder = Path(folder)
    tables = {path.name: path for path in sorted((folder / TABLES).iterdir()) if path.is_dir()} \
        if (folder / TABLES).is_dir() else {}
    targets = _targets(tables)
    problems = []
    for name, path in tables.items():
        problems += _table_problems(name, _files(path), targets)
    for run in sorted((folder / RUNS).glob("*.parquet")) if (folder / RUNS).is_dir() else []:
        problems += _run_problems(f"{RUNS}/{run.name}", run, targets)
    problems += _box_problems(tables)
    return problems


def _files(table: Path) -> list[Path]:
    return sorted(table.glob("*.parquet"))


def _targets(tables: dict[str, Path]) -> dict[str, set]:
    """The key values each target table holds (a set of values, or of tuples for a compound key)."""
    targets: dict[str, set] = {}
    for reference in REFERENCES:
        if reference.target in tables and reference.target not in targets:
            targets[reference.target] = _values(_files(tables[reference.target]), reference.target_columns)
    rejected = _values(_files(tables["rejects"]), ("image_id",)) if "rejects" in tables else set()
    targets[INPUTS] = targets.get("images", set()) | rejected
    return targets


def _values(files: list[Path], columns: tuple[str, ...]) -> set:
    values: set = set()
    for path in files:
        table = pq.read_table(path, columns=list(columns))
        lists = [table.column(c).to_pylist() for c in columns]
        values.update(lists[0] if len(columns) == 1 else zip(*lists))
    return values


def _table_problems(name: str, files: list[Path], targets: dict[str, set]) -> list[Dangling]:
    if not files:
        return []
    names = set(pq.read_schema(files[0]).names)
    problems = []
    for reference in REFERENCES:
        if not set(reference.columns) <= names or name in EXEMPT.get(reference, set()):
            continue
        if is_rejects(name) and reference not in (IMAGE, PAGE):
            continue  # a rejected region or box is not in the tables of kept ones
        if reference.target not in targets:
            continue  # the build has no such table (no pages, no concepts): nothing to refer to
        target = INPUTS if reference is IMAGE and is_rejects(name) else reference.target
        dangling = _dangling(files, reference.columns, targets[target], allow_empty=is_rejects(name))
        if dangling:
            problems.append(_problem(name, reference, target, dangling))
    return problems


def _run_problems(name: str, path: Path, targets: dict[str, set]) -> list[Dangling]:
    if "image_id" not in pq.read_schema(path).names or "images" not in targets:
        return []
    dangling = _dangling([path], ("image_id",), targets["images"], allow_empty=False)
    return [_problem(name, IMAGE, "images", dangling)] if dangling else []


def _dangling(files: list[Path], columns: tuple[str, ...], known: set, allow_empty: bool) -> Counter:
    """The key values of `files` not in `known`, with their row counts."""
    found: Counter = Counter()
    for path in files:
        table = pq.read_table(path, columns=list(columns))
        if len(columns) == 1:
            column = table.column(columns[0]).drop_null()  # no value: nothing named
            if pa.types.is_dictionary(column.type):
                column = column.cast(column.type.value_type)
            # The file's distinct values against the set: a value set of all the target's keys
            # for every file would make the check grow with shards x images.
            missing = [value for value in column.unique().to_pylist() if value not in known]
            values = column.filter(pc.is_in(column, value_set=pa.array(missing, type=column.type))).to_pylist() \
                if missing else []
        else:
            rows = zip(*(table.column(c).to_pylist() for c in columns))
            values = [row for row in rows if row not in known]
        found.update(value for value in values if not (allow_empty and value in ("", None)))
    return found


def _problem(table: str, reference: Reference, target: str, dangling: Counter) -> Dangling:
    key = reference.columns[0] if len(reference.columns) == 1 else f"({', '.join(reference.columns)})"
    values = tuple(str(value) for value, _ in sorted(dangling.items(), key=lambda item: str(item[0]))[:SHOWN_VALUES])
    return Dangling(table, key, f"{target}.{'/'.join(reference.target_columns)}" if target != INPUTS
                    else "images or rejects (the inputs)", values, sum(dangling.values()))


def _box_problems(tables: dict[str, Path]) -> list[Dangling]:
    """Every box inside its image, whose size `images` gives: the range the box reader allows,
    0..width and 0..height (pixels numbered from 0 or, as VOC, from 1)."""
    if "boxes" not in tables or "images" not in tables:
        return []
    sizes = {}
    for path in _files(tables["images"]):
        table = pq.read_table(path, columns=["image_id", "width", "height"]).to_pydict()
        sizes.update(zip(table["image_id"], zip(table["width"], table["height"])))
    outside: Counter = Counter()
    for path in _files(tables["boxes"]):
        boxes = pq.read_table(path, columns=["image_id", "xmin", "ymin", "xmax", "ymax"]).to_pydict()
        for image_id, *box in zip(boxes["image_id"], boxes["xmin"], boxes["ymin"], boxes["xmax"], boxes["ymax"]):
            size = sizes.get(image_id)
            if size is not None and (box[2] < box[0] or box[3] < box[1] or outside_image(*box, size)):
                outside[f"{image_id} {tuple(box)} in {size[0]}x{size[1]}"] += 1
    if not outside:
        return []
    return [Dangling("boxes", "(xmin, ymin, xmax, ymax)", "its image's width and height",
                     tuple(sorted(outside)[:SHOWN_VALUES]), sum(outside.values()))]


def report_markdown(problems: list[Dangling], checked: list[str]) -> str:
    """The keys the dataset states, and whether each resolves."""
    lines = ["# The dataset's keys", "",
             f"Checked: {len(checked)} tables ({', '.join(checked)}) and the runs.", "",
             "| key | names a row of |", "| --- | --- |"]
    lines += [f"| `{', '.join(r.columns)}` | `{r.target}` ({', '.join(r.target_columns)}) |" for r in REFERENCES]
    lines += ["| `image_id` of a rejects table | `images` or `rejects` (an input) |",
              f"| `image_id` of {' and '.join(sorted(OTHER_INPUT_REJECTS))} | any: the image their input names |",
              f"| `image_id` of {', '.join(sorted(INPUT_MAPS))} | any: the archives' mapping, an input |",
              "| a box | its image: within 0..width and 0..height (VOC numbers pixels from 1) |", ""]
    lines += [f"- {problem}" for problem in problems] or ["Every key resolves."]
    return "\n".join(lines) + "\n"


def integrity_job(job) -> None:
    """Rule integrity: the keys of the build's tables and runs; its report, or a failing job
    naming every dangling key."""
    problems = check_keys(job.out_dir)
    checked = sorted(path.name for path in (job.out_dir / TABLES).iterdir() if path.is_dir())
    for problem in problems:
        job.log(f"dangling key: {problem}")
    if problems:
        raise IntegrityError("the dataset's keys do not resolve:\n" + "\n".join(map(str, problems)))
    write_bytes_atomic(job.output("report"), report_markdown(problems, checked).encode("utf-8"))
    job.log(f"every key of {len(checked)} tables and the runs resolves")
