"""The Hugging Face dataset card of a release (`release/data/README.md`).

YAML front matter with one `configs` entry per table (tables/NAME/*.parquet
as a single split) and its `dataset_info` features, so `datasets` types the
vector columns as fixed-length float32 lists; then a Markdown body on what
the tables are, how to read them, the box ground truth and box runs when
there are some, the licence, citation and provenance. Tables are found as
croissant.py finds them (every folder under tables/); box runs (runs/*.parquet
of artefact box_run) are described in their own section, not as configs.
Written without `datasets` (not a dependency of the workflow); the tests
load the card with it. Deterministic: same release, same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from annobench.core.fsutil import write_bytes_atomic
from annobench.core.tables import ROW_GROUP_ROWS
from annobench.release.croissant import (
    ARROW_DTYPE_NAMES,
    STORED_IMAGES,
    Table,
    box_run_tables,
    croissant_license,
    dataset_counts,
    field_description,
    readable_type,
    release_settings,
    release_tables,
    stored_image_types,
    table_summary,
)

# Licence ids the Hugging Face Hub knows (lower-case SPDX-like); others become `other`.
HF_LICENSES = {
    "afl-3.0", "apache-2.0", "bsd", "bsd-2-clause", "bsd-3-clause", "c-uda", "cc", "cc-by-2.0", "cc-by-2.5",
    "cc-by-3.0", "cc-by-4.0", "cc-by-nc-2.0", "cc-by-nc-3.0", "cc-by-nc-4.0", "cc-by-nc-nd-3.0", "cc-by-nc-nd-4.0",
    "cc-by-nc-sa-2.0", "cc-by-nc-sa-3.0", "cc-by-nc-sa-4.0", "cc-by-nd-4.0", "cc-by-sa-3.0", "cc-by-sa-4.0",
    "cc0-1.0", "cdla-permissive-1.0", "cdla-permissive-2.0", "cdla-sharing-1.0", "gpl-2.0", "gpl-3.0", "mit",
    "odbl", "odc-by", "pddl", "unknown", "unlicense",
}
# Upper bounds of the Hub's size_categories.
SIZE_CATEGORIES = [
    (1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"),
]
SPLIT = "train"  # the Hub's name for a config's only split; the benchmark's own split is a table


# ---------------------------------------------------------------- front matter


def hf_feature(arrow_type: pa.DataType) -> dict:
    """A column type in the `datasets` YAML feature syntax (`dtype`, `list` + `length`, `struct`)."""
    if pa.types.is_dictionary(arrow_type):
        return hf_feature(arrow_type.value_type)
    if pa.types.is_fixed_size_list(arrow_type):
        return {"list": hf_inner(arrow_type.value_type), "length": arrow_type.list_size}
    if pa.types.is_list(arrow_type):
        return {"list": hf_inner(arrow_type.value_type)}
    if pa.types.is_large_list(arrow_type):
        return {"large_list": hf_inner(arrow_type.value_type)}
    if pa.types.is_struct(arrow_type):
        return {"struct": [{"name": field.name, **hf_feature(field.type)} for field in arrow_type]}
    return {"dtype": ARROW_DTYPE_NAMES.get(str(arrow_type), str(arrow_type))}


def hf_inner(arrow_type: pa.DataType):
    """The element of a list: a bare dtype or field list where the syntax allows it."""
    feature = hf_feature(arrow_type)
    if list(feature) in (["dtype"], ["struct"]):
        return next(iter(feature.values()))
    return feature


def hf_license(license_id: str) -> dict:
    """`license` (and `license_name`/`license_link` for `other`) from the config's licence."""
    value = license_id.strip()
    if value.lower() in HF_LICENSES:
        return {"license": value.lower()}
    if not value or value.lower() == "other":
        return {"license": "other", "license_name": "unspecified"}
    if value.startswith(("http://", "https://")):
        return {"license": "other", "license_name": "custom", "license_link": value}
    return {"license": "other", "license_name": value.lower(), "license_link": croissant_license(value)}


def size_category(count: int) -> str:
    return next((name for bound, name in SIZE_CATEGORIES if count < bound), "1B<n<10B")


def stored_image_count(release_dir: Path) -> int:
    folder = release_dir / STORED_IMAGES
    return sum(1 for suffix in stored_image_types(release_dir) for _ in folder.glob(f"*/*{suffix}"))


def has_vectors(table: Table) -> bool:
    return any(pa.types.is_fixed_size_list(field.type) for field in table.schema)


def task_metadata(release_dir: Path, tables: list[Table]) -> dict:
    """Multi-label image annotation; region label maps add segmentation, vectors feature extraction."""
    categories, ids = ["image-classification"], ["multi-label-image-classification"]
    if (release_dir / "segmentations").is_dir():
        categories.append("image-segmentation")
        ids.append("semantic-segmentation")
    if any(has_vectors(table) for table in tables):
        categories.append("image-feature-extraction")
    if any(table.artefact == "boxes" for table in tables):
        categories.append("object-detection")
    return {"task_categories": sorted(categories), "task_ids": sorted(ids)}


def has_empty_row_group(table: Table) -> bool:
    return any(
        metadata.row_group(index).num_rows == 0
        for metadata in (pq.ParquetFile(path).metadata for path in table.files)
        for index in range(metadata.num_row_groups)
    )


def config_entry(table: Table, default: bool) -> dict:
    entry = {"config_name": table.name, "data_files": [{"split": SPLIT, "path": table.pattern}]}
    if default:
        entry["default"] = True
    if has_empty_row_group(table):
        # datasets 5.2 reads in batches of the first row group's size, 0 for an empty file.
        entry["batch_size"] = ROW_GROUP_ROWS
    return entry


def info_entry(table: Table) -> dict:
    features = [{"name": field.name, **hf_feature(field.type)} for field in table.schema]
    # No `splits`: the Hub wants their num_bytes as `datasets` would count them.
    return {"config_name": table.name, "features": features}


def front_matter(release_dir: Path, settings: dict, tables: list[Table]) -> dict:
    names = [table.name for table in tables]
    # `images` (one row per image) is what most readers want first.
    default = "images" if "images" in names else names[0] if names else None
    return {
        "pretty_name": settings["title"] or settings["name"],
        **hf_license(settings["license"]),
        **task_metadata(release_dir, tables),
        "tags": sorted({"annobench", "croissant", "image-annotation", *keyword_tags(settings["keywords"])}),
        "size_categories": [size_category(stored_image_count(release_dir))],
        "configs": [config_entry(table, table.name == default) for table in tables],
        "dataset_info": [info_entry(table) for table in tables],
    }


def keyword_tags(keywords: list[str]) -> list[str]:
    """Config keywords as Hub tags: lower case, words joined by hyphens."""
    return ["-".join(keyword.lower().split()) for keyword in keywords if keyword.strip()]


# ---------------------------------------------------------------- body


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def tables_overview(tables: list[Table]) -> list[str]:
    lines = ["| config (table) | rows | files | description |", "| --- | ---: | ---: | --- |"]
    lines += [f"| `{table.name}` | {table.rows:,} | {len(table.files)} | {cell(table_summary(table))} |"
              for table in tables]
    return lines


def column_lines(table: Table) -> list[str]:
    lines = [f"### `{table.name}`", "", f"`{table.pattern}`", "", "| column | type | description |",
             "| --- | --- | --- |"]
    lines += [f"| `{cell(field.name)}` | `{cell(readable_type(field.type))}` | {cell(field_description(field))} |"
              for field in table.schema]
    return lines + [""]


def loading_lines(tables: list[Table]) -> list[str]:
    names = [table.name for table in tables]
    example = "images" if "images" in names else names[0] if names else "TABLE"
    vector = next((table for table in tables if has_vectors(table)), None)
    lines = [
        "Each folder under `tables/` is one table (a Hugging Face config, a Croissant record set);",
        "all its Parquet files share one schema. From a copy of this folder:",
        "",
        "```python",
        "import pandas as pd, pyarrow.dataset as ds, duckdb",
        f'pd.read_parquet("tables/{example}")',
        f'ds.dataset("tables/{example}").to_table()',
        f"duckdb.sql(\"select * from read_parquet('tables/{example}/*.parquet')\")",
        "",
        "import datasets",
        f'table = datasets.load_dataset("path/to/this/folder", "{example}", split="{SPLIT}")',
    ]
    if vector:
        dimension = next(field.type.list_size for field in vector.schema if pa.types.is_fixed_size_list(field.type))
        lines += [f'vectors = datasets.load_dataset("path/to/this/folder", "{vector.name}", split="{SPLIT}")'
                  f'.with_format("numpy")  # {dimension}-d float32']
    lines += [
        "",
        "import mlcroissant as mlc",
        'croissant = mlc.Dataset(jsonld="croissant.json")',
        f'records = croissant.records(record_set="{example}")',
        "```",
        "",
        f"Every config has a single split, `{SPLIT}`, holding all rows: it is not the benchmark's",
        "split, which is the `split` column of the `splits` table when there is one.",
        f"The stored images are under `{STORED_IMAGES}/shard-NNNNN/IMAGE_ID.*` (the Croissant",
        "record set `resized_images` reads them with their `image_id`).",
    ]
    empty = [f"`{table.name}`" for table in tables if table.rows == 0]
    if empty:
        lines += [f"Tables without rows ({', '.join(empty)}) load with `datasets` only when streaming",
                  "(`streaming=True`): it writes no cache file for an empty split."]
    return lines


FOLDERS = [
    (STORED_IMAGES, "the stored resized images every visual feature is computed from"),
    ("segmentations", "canonical 16-bit region label maps, `shard-NNNNN/annotator-K/IMAGE_ID.png` (0 = unlabelled)"),
    ("artefacts", "bag-of-words codebooks and GETLF's random projection (Parquet)"),
    ("runs", "baseline runs, as Parquet and in the ImageCLEF 2012 text form"),
    ("evaluations", "every measure of every run (JSON)"),
    ("exports", "legacy text forms (ImageCLEF 2012 concept lists, SAIAPR TC-12 files, WEBUPV text features) "
                "and CSV copies (the search keywords, the text-illustration truth)"),
    ("reports", "leaderboard, label frequency plots, benchmark diagnostics, the round's results and figures"),
    ("kit", "the participant's kit of the round: development truth, test inputs, example runs, and `data/` "
            "(links to the images, features and text)"),
]


def folder_lines(release_dir: Path) -> list[str]:
    lines = ["| folder | files | what |", "| --- | ---: | --- |"]
    for folder, what in FOLDERS:
        if (release_dir / folder).is_dir():
            count = sum(1 for path in (release_dir / folder).rglob("*") if path.is_file())
            lines.append(f"| `{folder}/` | {count:,} | {what} |")
    return lines


# The overlap thresholds whose MAP the card shows: the headline pair of Gilbert et al. 2016 (Table 1).
HEADLINE_THRESHOLDS = ("0", "0.5")


def box_run_map(release_dir: Path, run: Table) -> dict:
    """MAP by threshold key from the run's evaluation (evaluations/NAME.json), {} without one."""
    path = release_dir / "evaluations" / f"{run.name.removeprefix('runs_')}.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8")).get("MAP") or {}


def map_cell(value) -> str:
    return "–" if value is None or value != value else f"{value:.4f}"  # value != value: NaN


def box_lines(release_dir: Path, tables: list[Table]) -> list[str]:
    """What boxes are and how they are given; each box run with its size and headline MAP."""
    lines = ["Boxes, in the `boxes` table and in box runs, are inclusive integer pixel coordinates",
             "of the original image after EXIF orientation (width = xmax - xmin + 1). The",
             "stored images are resized: scale a box by `resized_width / width` (rows by",
             "`resized_height / height`) from `xmin` to `xmax + 1` to draw it on one."]
    if any(table.artefact == "box_rejects" for table in tables):
        lines += ["Boxes of the ground truth that were left out are in `box_rejects`, with the reason."]
    if any(table.artefact == "box_notes" for table in tables):
        lines += ["Boxes kept after a change (clipped to their image) are in `box_notes`, as read, with the change."]
    runs = box_run_tables(release_dir)
    if not runs:
        return lines
    maps = {run.name: box_run_map(release_dir, run) for run in runs}
    lines += ["", "### Box runs", "",
              "| run | file | boxes | " + " | ".join(f"MAP at IoU {t}" for t in HEADLINE_THRESHOLDS) + " |",
              "| --- | --- | ---: | " + " | ".join("---:" for _ in HEADLINE_THRESHOLDS) + " |"]
    lines += [f"| `{run.name.removeprefix('runs_')}` | `{run.pattern}` | {run.rows:,} | "
              + " | ".join(map_cell(maps[run.name].get(t)) for t in HEADLINE_THRESHOLDS) + " |" for run in runs]
    lines += ["", "MAP at IoU 0 counts a box as an image-level annotation; every threshold is in",
              "`evaluations/RUN.json`. Each box run is a Croissant record set (`runs_RUN`) and reads as",
              f'`pd.read_parquet("{runs[0].pattern}")`. Columns:', ""]
    return lines + column_lines(runs[0])[4:-1]  # its table of columns


def leaderboard_lines(release_dir: Path, name: str, header: list[str], cells) -> list[str]:
    """A Markdown table of a leaderboard table's rows (cells(row) -> their texts), none without it."""
    path = release_dir / "tables" / name / "all.parquet"
    rows = pq.read_table(path).to_pylist() if path.is_file() else []
    if not rows:
        return []
    return (["| " + " | ".join(header) + " |", "| --- | " + " | ".join("---:" for _ in header[1:]) + " |"]
            + ["| " + " | ".join(cells(row)) + " |" for row in rows] + [""])


def description_lines(release_dir: Path, tables: list[Table]) -> list[str]:
    """What the caption and illustration tables hold, with each run's headline figure (ImageCLEF 2016
    subtask 2 and teaser, Gilbert et al. 2016)."""
    artefacts = {table.artefact for table in tables}
    lines = []
    if "captions" in artefacts:
        lines += ["`captions` holds each image's reference descriptions (`source` says where each was read:",
                  "a file, or `page_captions:PAGE:KIND` for a caption found in a page). Caption runs are",
                  "`runs/caption_*.csv` (`image_id,caption`), scored by Meteor 1.5 against the references of",
                  "the test images; `caption_scores` has each run's caption and Meteor per image.", ""]
        lines += leaderboard_lines(
            release_dir, "caption_leaderboard", ["caption run", "Meteor mean ± std", "corpus", "images"],
            lambda r: [f"`{r['run']}`", f"{map_cell(r['meteor_mean'])} ± {map_cell(r['meteor_std'])}",
                       map_cell(r["meteor_corpus"]), f"{r['images']:,}"])
    if "queries" in artefacts:
        lines += ["`queries` holds the text-illustration queries: a page's text (BeautifulSoup `get_text()`",
                  "without scripts and styles) whose answer is `image_id`, the image it shows",
                  "(`exports/illustration_truth.csv` is the same truth as `evaluate-illustration` reads).",
                  "Ranking runs are `runs/illustration_*.csv` (`query_id,rank,image_id`).", ""]
        lines += leaderboard_lines(
            release_dir, "illustration_leaderboard", ["ranking run", "R@1", "R@10", "R@100", "chance R@10", "queries"],
            lambda r: [f"`{r['run']}`", *(map_cell(r[k]) for k in ("R@1", "R@10", "R@100", "chance R@10")),
                       f"{r['queries']:,}"])
    return lines[:-1] if lines and lines[-1] == "" else lines


def search_lines(release_dir: Path, tables: list[Table]) -> list[str]:
    """What the search keywords are (the first textual data set of the ImageCLEF web collections,
    Gilbert et al. 2016, section 2.4), counted, and where their CSV copy is."""
    by_name = {table.name: table for table in tables}
    table = by_name["search_keywords"]
    images = by_name["images"].rows if "images" in by_name else 0
    found = {value for path in table.files for value in pq.read_table(path, columns=["image_id"]).column(0).to_pylist()}
    lines = [f"`search_keywords` holds the queries that found each image in a search engine: {table.rows:,} rows",
             f"(`image_id`, `query`, `engine`, `rank`, 1 = the first result) for {len(found):,} of the {images:,}",
             "images, read from the build's search log and joined to the images by `image_id` or by address."]
    if "search_keyword_rejects" in by_name:
        rejected = by_name["search_keyword_rejects"].rows
        lines += ["`search_keyword_rejects` lists the log's lines that name no image of the dataset or are",
                  f"malformed ({rejected:,} row{'' if rejected == 1 else 's'}), each with its line number and reason."]
    if (release_dir / "exports" / "search_keywords.csv").is_file():
        lines += ["`exports/search_keywords.csv` holds the same rows as CSV with the header",
                  "`image_id,query,engine,rank`, each image's rows together, in `image_id` order."]
    return lines


HEADLINE = {"annotation": "MAP-samples", "boxes": "MAP@0.5", "captions": "Meteor", "selection": "F",
            "illustration": "R@10"}


def round_lines(release_dir: Path) -> list[str]:
    """The round (ImageCLEF, annobench.benchmark.campaign): the submitted runs with their status, and
    each subtask's runs in the results' order with a headline measure and its 95 % interval."""
    submissions = _table_rows(release_dir, "submissions")
    order = _table_rows(release_dir, "results_order")
    if not order and not submissions:
        return []
    values = {(r["subtask"], r["run"], r["measure"]): r for r in _table_rows(release_dir, "results")
              if r["subset"] == "all"}
    lines = ["The participant's kit is `kit/` (its `README.md` says how to check a run). Every run, the",
             "baselines and the accepted submissions, is in `results` (every measure with its 95 % interval),",
             "in the order of `results_order`, and in `reports/results.md`.", ""]
    if submissions:
        accepted = sum(r["status"] == "accepted" for r in submissions)
        lines += [f"{len(submissions)} submitted runs, {accepted} accepted; a rejected run's problems are in "
                  "`submission_problems`.", "",
                  "| run | subtask | modality | external data | status | problems |",
                  "| --- | --- | --- | --- | --- | ---: |"]
        lines += [f"| `{cell(r['name'])}` | {r['subtask'] or '–'} | {r['modality'] or '–'} | "
                  f"{_external(r)} | {r['status']} | {r['reasons']} |" for r in submissions]
        lines += [""]
    lines += ["| subtask | # | run | origin | measure | value | 95 % interval |",
              "| --- | ---: | --- | --- | --- | ---: | --- |"]
    for r in order:
        measure = HEADLINE[r["subtask"]]
        value = values.get((r["subtask"], r["run"], measure), {})
        interval = (f"{value['ci_low']:.4f} – {value['ci_high']:.4f}"
                    if value.get("ci_low") is not None and value.get("ci_high") is not None else "–")
        lines.append(f"| {r['subtask']} | {r['position']} | `{cell(r['run'])}` | {r['origin']} | {measure} | "
                     f"{map_cell(value.get('value'))} | {interval} |")
    return lines


def _external(row: dict) -> str:
    if row["external_data"] is None:
        return "–"
    return cell(row["external_data_description"]) if row["external_data"] else "no"


def _table_rows(release_dir: Path, name: str) -> list[dict]:
    path = release_dir / "tables" / name / "all.parquet"
    return pq.read_table(path).to_pylist() if path.is_file() else []


def licence_lines(settings: dict) -> list[str]:
    value = settings["license"].strip()
    if not value or value.lower() in ("other", "unknown"):
        return ["The licence of this release is not specified. The licences of the source images, web pages",
                "and annotations apply: check them before reuse or redistribution."]
    return [f"`{value}`" if not value.startswith("http") else f"<{value}>",
            "", "The licences of the source images, web pages and annotations apply as well."]


def citation_lines(settings: dict) -> list[str]:
    citation = settings["citation"].strip()
    if not citation:
        return ["No citation was given for this release."]
    if citation.startswith("@"):
        return ["```bibtex", citation, "```"]
    return [citation]


def provenance_lines() -> list[str]:
    return [
        "This release was regenerated by annobench from the raw images, pages and",
        "segmentations; every file can be traced to the job that wrote it and that job's inputs:",
        "",
        "- `MANIFEST.jsonl`: one line per file (path, sha256, size, rows, the rule and job that made it);",
        "- `JOBS.jsonl`: one line per job (parameters, code fingerprint, inputs with their sha256, raw inputs);",
        "- `RELEASE.json`: code version, software versions, the configuration;",
        "- `ro-crate-metadata.json`: the same lineage as a Workflow Run RO-Crate;",
        "- `croissant.json`: MLCommons Croissant 1.0 metadata of the tables and images;",
        "- `browse/index.html`: a static browser of the images, their labels, regions and text",
        "  (when the release was built with `release.browse.enabled`).",
        "",
        "To check the release (hashes, sizes, lineage, raw inputs; `--recompute N` also rebuilds",
        "N sampled jobs and compares bytes):",
        "",
        "```",
        "annobench audit path/to/this/folder",
        "```",
    ]


def body(release_dir: Path, settings: dict, tables: list[Table]) -> list[str]:
    images = stored_image_count(release_dir)
    lines = [f"# {settings['title'] or settings['name']}", ""]
    if settings["description"]:
        lines += [settings["description"].strip(), ""]
    facts = [part for part in (dataset_counts(tables), f"{images:,} stored images", f"{len(tables)} tables") if part]
    if settings["version"]:
        facts.insert(0, f"version {settings['version']}")
    if settings["url"]:
        facts.append(f"<{settings['url']}>")
    if settings["creators"]:
        facts.append("released by " + ", ".join(settings["creators"]))
    lines += ["; ".join(facts) + ".", ""]
    lines += ["## Loading", ""] + loading_lines(tables) + [""]
    lines += ["## Tables", ""] + tables_overview(tables) + [""]
    lines += ["## Other files", ""] + folder_lines(release_dir) + [""]
    lines += ["## Columns", ""]
    for table in tables:
        lines += column_lines(table)
    if any(table.artefact == "boxes" for table in tables) or box_run_tables(release_dir):
        lines += ["## Boxes", ""] + box_lines(release_dir, tables) + [""]
    if {"captions", "queries"} & {table.artefact for table in tables}:
        lines += ["## Descriptions and text illustration", ""] + description_lines(release_dir, tables) + [""]
    if any(table.name == "search_keywords" for table in tables):
        lines += ["## Search keywords", ""] + search_lines(release_dir, tables) + [""]
    round_ = round_lines(release_dir)
    if round_:
        lines += ["## The round: submissions and results", ""] + round_ + [""]
    lines += ["## Licence", ""] + licence_lines(settings) + [""]
    lines += ["## Citation", ""] + citation_lines(settings) + [""]
    lines += ["## Provenance", ""] + provenance_lines()
    return lines


# ---------------------------------------------------------------- card


def dataset_card(release_dir: Path, config: dict) -> str:
    """The release's README.md: YAML front matter for the Hub, then the Markdown body."""
    release_dir = Path(release_dir)
    settings = release_settings(config)
    tables = release_tables(release_dir)
    yaml_text = yaml.safe_dump(front_matter(release_dir, settings, tables), sort_keys=False, allow_unicode=True,
                               width=120)
    return f"---\n{yaml_text}---\n\n" + "\n".join(body(release_dir, settings, tables)) + "\n"


def write_dataset_card(release_dir: Path, config: dict) -> Path:
    """Write release_dir/README.md and return its path."""
    path = Path(release_dir) / "README.md"
    write_bytes_atomic(path, dataset_card(release_dir, config).encode("utf-8"))
    return path
