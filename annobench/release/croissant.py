"""MLCommons Croissant 1.0 metadata of a release (`release/data/croissant.json`).

Every folder under `tables/` becomes a FileSet with one RecordSet whose fields
read its Parquet columns; each Parquet file under `artefacts/` and `runs/` a
FileObject (with its sha256) with one RecordSet (box ground truth, its rejects
and box runs among them (ImageCLEF 2016 subtask 1), each with a line saying
what it holds); the stored images a FileSet with a RecordSet of `image_id`, `path` and the image itself. Other released
files (label maps, text runs, evaluations, exports, reports) are listed as
FileSets or FileObjects without records. Nothing here needs mlcroissant: the
workflow's environment writes the JSON-LD by hand, the tests read it back.

Output is deterministic: paths are relative, keys and lists sorted, no times.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from annobench.benchmark.boxes.model import BOX_RUN_ARTEFACT
from annobench.core.config import release_identity
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.provenance import sha256_file
from annobench.release.integrity import REFERENCES, is_rejects

CROISSANT_1_0 = "http://mlcommons.org/croissant/1.0"

# The @context of the Croissant 1.0 specification, plus the 1.1 array terms
# (isArray, arrayShape) so vectors also carry their shape for 1.1 readers.
CONTEXT = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

MEDIA_TYPES = {
    ".csv": "text/csv",
    ".html": "text/html",
    ".jpg": "image/jpeg",
    ".json": "application/json",
    ".jsonl": "application/jsonlines",
    ".md": "text/markdown",
    ".parquet": "application/x-parquet",
    ".png": "image/png",
    ".scofeat": "text/plain",
    ".txt": "text/plain",
}

PARQUET = MEDIA_TYPES[".parquet"]
# Arrow's names of float types, as numpy and `datasets` spell them.
ARROW_DTYPE_NAMES = {"float": "float32", "double": "float64", "halffloat": "float16"}
# Folders of single Parquet files that are not tables: one FileObject and RecordSet each.
PARQUET_FILE_FOLDERS = ("artefacts", "runs")
# Folders of other released files, listed as FileSets (one per file type) without records.
OTHER_FILE_FOLDERS = ("evaluations", "exports", "reports", "runs", "segmentations")
STORED_IMAGES = "resized"
# What the box artefacts hold (ImageCLEF 2016 subtask 1, Gilbert et al. 2016), said once for
# Croissant and the dataset card: their Parquet files carry column descriptions but no description of the whole table.
BOX_SUMMARIES = {
    "boxes": "box ground truth: one row per box instance, in inclusive integer pixel coordinates of "
             "the original image after EXIF orientation (width = xmax - xmin + 1)",
    "box_rejects": "boxes of the box ground truth left out, as read, each with the reason",
    "box_notes": "boxes of the box ground truth kept after a change (clipped to their image), as read, each "
                 "with what was done",
    BOX_RUN_ARTEFACT: "a box run: one row per box in the run's order, with its concept, confidence "
                      "and inclusive pixel corners in the original image",
}


@dataclass(frozen=True)
class Table:
    """Parquet files read as one table: a folder under tables/, or one single file."""

    name: str
    pattern: str  # glob relative to the release folder
    files: tuple[Path, ...]

    @cached_property
    def schema(self) -> pa.Schema:
        return pq.read_schema(self.files[0])

    @cached_property
    def rows(self) -> int:
        return sum(pq.ParquetFile(path).metadata.num_rows for path in self.files)

    @property
    def artefact(self) -> str:
        return file_metadata(self.schema).get("annobench.artefact", "")


def file_metadata(schema: pa.Schema) -> dict[str, str]:
    """The schema's key-value metadata as text (annobench.* keys, pandas' own)."""
    return {key.decode(): value.decode() for key, value in (schema.metadata or {}).items()}


def field_description(field: pa.Field) -> str:
    return (field.metadata or {}).get(b"description", b"").decode()


def release_tables(release_dir: Path) -> list[Table]:
    """Every table of the release, one per folder under tables/ (sorted by name).

    A folder whose files have different columns (a folder of unrelated
    tables) gives one table per file instead, named FOLDER_STEM.
    """
    tables = []
    for folder in sorted(path for path in (release_dir / "tables").iterdir() if path.is_dir()):
        files = tuple(sorted(folder.glob("*.parquet")))
        if not files:
            continue
        if len({tuple(pq.read_schema(path).names) for path in files}) == 1:
            tables.append(Table(folder.name, f"tables/{folder.name}/*.parquet", files))
        else:
            tables += [single_file_table(release_dir, path, f"{folder.name}_{path.stem}") for path in files]
    return tables


def dataset_counts(tables: list[Table]) -> str:
    """What the release holds, counted in its tables (never taken from the config): images and
    rejected inputs, pages, concepts, the benchmark's splits."""
    by_name = {table.name: table for table in tables}
    counts = []
    if "images" in by_name:
        rejected = by_name["rejects"].rows if "rejects" in by_name else 0
        counts.append(f"{by_name['images'].rows:,} images"
                      + (f" ({rejected:,} input{'s' if rejected > 1 else ''} rejected)" if rejected else ""))
    for name, noun in (("pages", "pages"), ("concepts", "concepts")):
        if name in by_name:
            counts.append(f"{by_name[name].rows:,} {noun}")
    if "splits" in by_name:
        splits = Counter(value for path in by_name["splits"].files
                         for value in pq.read_table(path, columns=["split"]).column(0).to_pylist())
        counts.append("splits " + ", ".join(f"{splits[name]:,} {name}" for name in sorted(splits)))
    return "; ".join(counts)


def single_file_table(release_dir: Path, path: Path, name: str) -> Table:
    return Table(name, path.relative_to(release_dir).as_posix(), (path,))


def parquet_file_tables(release_dir: Path) -> list[Table]:
    """Each Parquet file of artefacts/ and runs/ as its own table, named FOLDER_STEM."""
    return [
        single_file_table(release_dir, path, f"{folder}_{path.stem}")
        for folder in PARQUET_FILE_FOLDERS
        for path in sorted((release_dir / folder).glob("*.parquet"))
    ]


def box_run_tables(release_dir: Path) -> list[Table]:
    """The box runs among the Parquet files of runs/ (their metadata names artefact box_run)."""
    return [table for table in parquet_file_tables(release_dir)
            if table.name.startswith("runs_") and table.artefact == BOX_RUN_ARTEFACT]


def stored_image_types(release_dir: Path) -> list[str]:
    """Extensions of the stored images present (".jpg", ".png"), sorted."""
    suffixes = {path.suffix for path in (release_dir / STORED_IMAGES).glob("*/*")}
    return sorted(suffixes & {".jpg", ".png"})


# ---------------------------------------------------------------- fields


def croissant_type(arrow_type: pa.DataType) -> str | None:
    """The Croissant data type of an Arrow scalar type (None: not representable)."""
    if pa.types.is_dictionary(arrow_type):
        return croissant_type(arrow_type.value_type)
    checks = [
        (pa.types.is_boolean, "sc:Boolean"),
        (pa.types.is_integer, "sc:Integer"),
        (pa.types.is_floating, "sc:Float"),
        (pa.types.is_timestamp, "sc:DateTime"),
        (pa.types.is_date, "sc:Date"),
        (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t), "sc:Text"),
    ]
    return next((name for check, name in checks if check(arrow_type)), None)


def readable_type(arrow_type: pa.DataType) -> str:
    """A column type in few characters: float32[960], list<string>, int32."""
    if pa.types.is_dictionary(arrow_type):
        return readable_type(arrow_type.value_type)
    if pa.types.is_fixed_size_list(arrow_type):
        return f"{readable_type(arrow_type.value_type)}[{arrow_type.list_size}]"
    if is_list(arrow_type):
        return f"list<{readable_type(arrow_type.value_type)}>"
    if pa.types.is_large_string(arrow_type):
        return "string"
    return ARROW_DTYPE_NAMES.get(str(arrow_type), str(arrow_type))


def is_list(arrow_type: pa.DataType) -> bool:
    return pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type)


def array_length(arrow_type: pa.DataType) -> int:
    """Length of a list type: its fixed size, or -1 when rows differ."""
    return arrow_type.list_size if pa.types.is_fixed_size_list(arrow_type) else -1


def field_ids(record_set: str, names: list[str]) -> dict[str, str]:
    """An @id per column: RECORD_SET/COLUMN with characters other than letters, digits and
    _.+- replaced by _ (mlcroissant refuses ids with spaces); made unique by a suffix."""
    ids: dict[str, str] = {}
    for name in names:
        base = f"{record_set}/" + re.sub(r"[^A-Za-z0-9_.+-]", "_", name)
        candidate, n = base, 1
        while candidate in ids.values():
            n += 1
            candidate = f"{base}_{n}"
        ids[name] = candidate
    return ids


def column_field(field_id: str, source: dict, field: pa.Field) -> dict | None:
    """A cr:Field reading one Parquet column (None for nested types Croissant 1.0 cannot read)."""
    arrow_type = field.type.value_type if is_list(field.type) else field.type
    data_type = croissant_type(arrow_type)
    if data_type is None:
        return None
    node = {
        "@type": "cr:Field",
        "@id": field_id,
        "name": field.name,
        "dataType": data_type,
        "source": {**source, "extract": {"column": field.name}},
    }
    description = field_description(field)
    if is_list(field.type):
        # `repeated` is Croissant 1.0's list; isArray/arrayShape (1.1) keep the length.
        node.update(repeated=True, isArray=True, arrayShape=str(array_length(field.type)))
        if array_length(field.type) > 0:
            description = f"{description} ({readable_type(field.type)})".strip()
    if description:
        node["description"] = description
    return node


def table_record_set(table: Table, source: dict, referable: dict[str, str] | None = None) -> dict:
    """A table as a record set; a column that is a key of another record set (`referable`: column
    -> the @id of the field it names, annobench.release.integrity's keys) references it."""
    ids = field_ids(table.name, table.schema.names)
    fields = [column_field(ids[field.name], source, field) for field in table.schema]
    for node in fields:
        target = (referable or {}).get(node["name"]) if node is not None else None
        if target and not target.startswith(f"{table.name}/") and not is_rejects(table.name):
            node["references"] = {"field": {"@id": target}}
    node = {
        "@type": "cr:RecordSet",
        "@id": table.name,
        "name": table.name,
        "description": table_summary(table),
        "field": [field for field in fields if field is not None],
    }
    return node


def key_fields(columns: dict[str, list[str]]) -> dict[str, str]:
    """Column -> the @id of the field it names, for the dataset's one-column keys whose record set
    the release has (image_id -> images/image_id, page_id, concept, duplicate_of)."""
    return {reference.columns[0]: field_ids(reference.target, columns[reference.target])[reference.target_columns[0]]
            for reference in REFERENCES
            if len(reference.columns) == 1 and reference.target_columns[0] in columns.get(reference.target, [])}


def table_summary(table: Table) -> str:
    """One line on a table: its own description when it has one, else its artefact and columns."""
    metadata = file_metadata(table.schema)
    if metadata.get("annobench.description"):
        return metadata["annobench.description"]
    if table.artefact in BOX_SUMMARIES:
        return f"{BOX_SUMMARIES[table.artefact]}: " + ", ".join(table.schema.names)
    artefact = f"annobench artefact `{table.artefact}`" if table.artefact else "table"
    return f"{artefact}: " + ", ".join(table.schema.names)


# ---------------------------------------------------------------- distribution


def file_object(release_dir: Path, path: Path) -> dict:
    relative = path.relative_to(release_dir).as_posix()
    return {
        "@type": "cr:FileObject",
        "@id": relative,
        "name": relative,
        "contentUrl": relative,
        "contentSize": f"{path.stat().st_size} B",
        "encodingFormat": MEDIA_TYPES.get(path.suffix, "application/octet-stream"),
        "sha256": sha256_file(path),
    }


def file_set(set_id: str, pattern: str | list[str], media_type: str, description: str = "") -> dict:
    node = {"@type": "cr:FileSet", "@id": set_id, "name": set_id, "includes": pattern, "encodingFormat": media_type}
    if description:
        node["description"] = description
    return node


def table_distribution(release_dir: Path, table: Table) -> tuple[dict, dict]:
    """The table's file node and the `source` its fields read from."""
    if table.pattern.endswith("*.parquet"):
        node = file_set(table.pattern.rsplit("/", 1)[0], table.pattern, PARQUET)
        return node, {"fileSet": {"@id": node["@id"]}}
    node = file_object(release_dir, table.files[0])
    return node, {"fileObject": {"@id": node["@id"]}}


def other_file_sets(release_dir: Path) -> list[dict]:
    """A FileSet per (folder, file type) of the other released files, e.g. evaluations/*.json.

    Parquet files of artefacts/ and runs/ are left out: they are tables.
    """
    nodes = []
    for folder in OTHER_FILE_FOLDERS:
        files = [path.relative_to(release_dir / folder) for path in (release_dir / folder).rglob("*") if path.is_file()]
        for suffix in sorted({path.suffix for path in files}):
            if suffix == ".parquet" and folder in PARQUET_FILE_FOLDERS:
                continue
            depths = {len(path.parts) for path in files if path.suffix == suffix}
            node = file_set(f"{folder}/{suffix.lstrip('.') or 'files'}", include_patterns(folder, suffix, depths),
                            MEDIA_TYPES.get(suffix, "application/octet-stream"))
            nodes.append(node)
    return nodes


def include_patterns(folder: str, suffix: str, depths: set[int]) -> str | list[str]:
    """Glob(s) matching the files: FOLDER/*.ext for the top level, FOLDER/**/*.ext below it.

    Both are given when both exist, since readers differ on whether * crosses a slash.
    """
    patterns = [f"{folder}/*{suffix}"] if 1 in depths else []
    if max(depths) > 1:
        patterns.append(f"{folder}/**/*{suffix}")
    return patterns[0] if len(patterns) == 1 else patterns


# ---------------------------------------------------------------- stored images


def image_record_set(name: str, set_id: str, suffix: str) -> dict:
    """image_id (the file name without extension), path in the release, and the image."""
    source = {"fileSet": {"@id": set_id}}

    def from_file(field: str, file_property: str, data_type: str, regex: str | None, description: str) -> dict:
        extract = {**source, "extract": {"fileProperty": file_property}}
        if regex:
            extract["transform"] = {"regex": regex}
        return {"@type": "cr:Field", "@id": f"{name}/{field}", "name": field, "dataType": data_type,
                "description": description, "source": extract}

    return {
        "@type": "cr:RecordSet",
        "@id": name,
        "name": name,
        "description": f"the stored resized images ({suffix}) every visual feature is computed from",
        "field": [
            from_file("image_id", "filename", "sc:Text", rf"^(.*)\{suffix}$", "key of the image (tables/images)"),
            # The regex turns the path object mlcroissant yields into text.
            from_file("path", "fullpath", "sc:Text", r"^(.*)$", "the file, relative to the release folder"),
            from_file("image", "content", "sc:ImageObject", None, "the stored image"),
        ],
    }


def stored_images(release_dir: Path) -> tuple[list[dict], list[dict]]:
    """FileSets and RecordSets of the stored images, one per image type present."""
    suffixes = stored_image_types(release_dir)
    file_sets, record_sets = [], []
    for suffix in suffixes:
        set_id = f"{STORED_IMAGES}/{suffix.lstrip('.')}"
        name = "resized_images" if len(suffixes) == 1 else f"resized_images_{suffix.lstrip('.')}"
        file_sets.append(file_set(set_id, f"{STORED_IMAGES}/*/*{suffix}", MEDIA_TYPES[suffix],
                                  "stored resized images, resized/shard-NNNNN/IMAGE_ID"))
        record_sets.append(image_record_set(name, set_id, suffix))
    return file_sets, record_sets


# ---------------------------------------------------------------- document


def release_settings(config: dict) -> dict:
    """The `release:` section of the config (or the section itself), with defaults."""
    section = config["release"] if isinstance(config.get("release"), dict) else config
    defaults = {"name": "", "title": "", "description": "", "version": "", "license": "",
                "citation": "", "url": "", "creators": [], "keywords": []}
    settings = {**defaults, **{key: value for key, value in section.items() if key in defaults and value is not None}}
    # A whole config names the release from its output folder where it gives no name or title.
    return {**settings, **release_identity(config)} if "output" in config else settings


def dataset_properties(settings: dict) -> dict:
    """Dataset-level properties; empty settings are left out (Croissant has no 'unknown')."""
    properties = {
        "name": settings["name"],
        "alternateName": settings["title"],
        "description": settings["description"] or settings["title"] or settings["name"],
        "version": settings["version"],
        "license": croissant_license(settings["license"]),
        "citeAs": settings["citation"].strip(),
        "url": settings["url"],
        "creator": [{"@type": "sc:Person", "name": name} for name in settings["creators"]],
        "keywords": sorted(settings["keywords"]),
    }
    return {key: value for key, value in properties.items() if value}


LICENSE_NOT_GIVEN = "not specified: the licences of the source images, pages and annotations apply"
# SPDX spells these ids in mixed case; the Hugging Face Hub and configs in lower case.
SPDX_SPELLINGS = {
    "apache-2.0": "Apache-2.0", "bsd-2-clause": "BSD-2-Clause", "bsd-3-clause": "BSD-3-Clause", "mit": "MIT",
    "odbl": "ODbL-1.0", "odc-by": "ODC-By-1.0", "pddl": "PDDL-1.0", "unlicense": "Unlicense",
    "gpl-2.0": "GPL-2.0-only", "gpl-3.0": "GPL-3.0-only", "cdla-permissive-1.0": "CDLA-Permissive-1.0",
    "cdla-permissive-2.0": "CDLA-Permissive-2.0", "cdla-sharing-1.0": "CDLA-Sharing-1.0",
}


def spdx_id(license_id: str) -> str:
    """The SPDX spelling of a licence id (Creative Commons ids are upper case)."""
    lower = license_id.lower()
    if lower in SPDX_SPELLINGS:
        return SPDX_SPELLINGS[lower]
    return license_id.upper() if lower.startswith("cc") else license_id


def croissant_license(license_id: str) -> str:
    """A licence as Croissant wants it, a URL (the SPDX page of an id); else says it is not given."""
    value = license_id.strip()
    if not value or value.lower() in ("other", "unknown"):
        return LICENSE_NOT_GIVEN
    if re.match(r"^https?://", value):
        return value
    return f"https://spdx.org/licenses/{spdx_id(value)}.html"


def croissant_metadata(release_dir: Path, config: dict) -> dict:
    """The release described as a Croissant 1.0 JSON-LD document."""
    release_dir = Path(release_dir)
    tables = release_tables(release_dir) + parquet_file_tables(release_dir)
    referable = key_fields({table.name: table.schema.names for table in tables})
    distribution, record_sets = [], []
    for table in tables:
        node, source = table_distribution(release_dir, table)
        distribution.append(node)
        record_sets.append(table_record_set(table, source, referable))
    image_sets, image_records = stored_images(release_dir)
    distribution += image_sets + other_file_sets(release_dir)
    properties = dataset_properties(release_settings(config))
    counts = dataset_counts(tables)
    if counts:
        properties["description"] = f"{properties['description'].rstrip('.')}. Holds {counts}."
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CROISSANT_1_0,
        **properties,
        "distribution": sorted(distribution, key=lambda node: node["@id"]),
        "recordSet": sorted(record_sets + image_records, key=lambda node: node["@id"]),
    }


def write_croissant(release_dir: Path, config: dict) -> Path:
    """Write release_dir/croissant.json and return its path."""
    path = Path(release_dir) / "croissant.json"
    text = json.dumps(croissant_metadata(release_dir, config), indent=1, sort_keys=True, ensure_ascii=False)
    # A new file, never a write through a hard link into the build's outputs.
    write_bytes_atomic(path, (text + "\n").encode("utf-8"))
    return path
