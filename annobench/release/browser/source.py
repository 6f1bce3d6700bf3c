"""The build the browser is made from: its tables, the catalogue of images,
and each image shard's rows of the per-image tables."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from annobench.benchmark.boxes.model import BOX_RUN_ARTEFACT, BOX_RUN_COLUMNS
from annobench.core.tables import META_ARTEFACT, read_metadata
from annobench.release.browser.files import image_page_path

RUN_COLUMNS = ("image_id", "concept", "score", "decision")
PAGE_COLUMNS = ["page_id", "title", "status"]  # what an image page shows of a page

Log = Callable[[str], None]


# ---------------------------------------------------------------- reading the build

def table_files(folder: Path) -> list[Path]:
    """The Parquet files of a table folder (not the hidden partial files of a running job)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.parquet") if not p.name.startswith("."))


def run_kind(name: str) -> str:
    """"submitted" for a participant's run (named GROUP/RUN in the submissions table), "baseline"
    for the build's own (named after their method: no slash)."""
    return "submitted" if "/" in name else "baseline"


SHARD_FILE = re.compile(r"shard-(\d+)\.parquet")


def read_file(path: Path, columns: list[str] | None = None, filters=None) -> pa.Table:
    """One Parquet file, with those of `columns` it has."""
    if columns is not None:
        names = pq.read_schema(path).names
        columns = [c for c in columns if c in names]
    return pq.read_table(path, columns=columns, filters=filters)


def read_all(files: list[Path], columns: list[str] | None = None) -> pa.Table | None:
    tables = [read_file(f, columns) for f in files]
    return pa.concat_tables(tables, promote_options="permissive") if tables else None


@dataclass
class Source:
    """The build folder the site is made from; every part may be absent."""

    root: Path

    def files(self, table: str) -> list[Path]:
        files = table_files(self.root / "tables" / table)
        if table == "caption_scores":  # the accepted submitted caption runs' rows, of the same columns
            files += list(self.submitted("captions").values())
        return files

    def submitted(self, subtask: str) -> dict[str, Path]:
        """The accepted submitted runs of a subtask (the `submissions` table): GROUP/RUN -> the run as
        its job wrote it for the browser (work/submissions/GROUP/RUN.parquet)."""
        folder = self.root / "tables" / "submissions"
        table = read_all(table_files(folder), ["name", "subtask", "status"])
        if table is None:
            return {}
        found = {}
        for row in table.to_pylist():
            path = self.root / "work" / "submissions" / f"{row['name']}.parquet"
            if row["subtask"] == subtask and row["status"] == "accepted" and path.is_file():
                found[row["name"]] = path
        return dict(sorted(found.items()))

    def shard_files(self, table: str) -> dict[int, Path] | None:
        """Shard number -> file, when the table is split by image shard; else None."""
        files = self.files(table)
        matches = [SHARD_FILE.fullmatch(f.name) for f in files]
        if not files or not all(matches):
            return None
        return {int(m.group(1)): f for m, f in zip(matches, files)}

    def features(self) -> list[str]:
        """Every table whose columns are exactly (image_id, vector)."""
        folder = self.root / "tables"
        names = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
        return [n for n in names if self.files(n) and pq.read_schema(self.files(n)[0]).names == ["image_id", "vector"]]

    def runs(self) -> dict[str, Path]:
        """Image-level runs: the baselines (region runs and other forms are left out) and the accepted
        submitted runs."""
        files = table_files(self.root / "runs")
        runs = {f.stem: f for f in files if set(RUN_COLUMNS) <= set(pq.read_schema(f).names)}
        return {**runs, **self.submitted("annotation")}

    def box_runs(self) -> dict[str, Path]:
        """Box runs (ImageCLEF 2016 subtask 1): the Parquet files of runs/ whose metadata names them so,
        and the accepted submitted box runs."""
        files = table_files(self.root / "runs")
        runs = {f.stem: f for f in files if read_metadata(f).get(META_ARTEFACT.decode()) == BOX_RUN_ARTEFACT}
        return {**runs, **self.submitted("boxes")}

    def table(self, table: str, columns: list[str] | None = None) -> pa.Table | None:
        return read_all(self.files(table), columns)


# ---------------------------------------------------------------- the catalogue of images

@dataclass
class Catalogue:
    """Every usable image in id order: its shard, stored picture and place in the grid."""

    table: pa.Table
    per_page: int
    ids: list[str] = field(init=False)
    shards: np.ndarray = field(init=False)
    index: pd.Index = field(init=False)

    def __post_init__(self):
        self.ids = self.table.column("image_id").to_pylist()
        self.shards = self.table.column("shard").to_numpy().astype(np.int64)
        self.index = pd.Index(self.ids, dtype=object)

    @classmethod
    def load(cls, source: Source, per_page: int) -> "Catalogue":
        columns = ["image_id", "shard", "resized_path", "resized_width", "resized_height"]
        table = source.table("images", columns)
        if table is None:
            table = pa.table({c: pa.array([], pa.string() if c in ("image_id", "resized_path") else pa.int32())
                              for c in columns})
        table = table.sort_by([("image_id", "ascending")]).combine_chunks()
        return cls(table, per_page)

    def __len__(self) -> int:
        return len(self.ids)

    def positions(self, ids) -> np.ndarray:
        """Positions of ids in the catalogue (-1 for an id that is not an image)."""
        values = ids.to_pylist() if hasattr(ids, "to_pylist") else list(ids)
        return self.index.get_indexer(pd.Index(values, dtype=object))

    def page_of(self, position: int) -> int:
        return position // self.per_page

    def pages(self) -> int:
        return max(1, -(-len(self) // self.per_page))

    def page_path(self, position: int) -> str:
        return image_page_path(int(self.shards[position]), self.ids[position])

    def shard_numbers(self) -> list[int]:
        return sorted(set(self.shards.tolist()))


# ---------------------------------------------------------------- per-image tables, shard by shard

# The per-image tables an image page reads, and the columns it uses.
PER_IMAGE = {
    "images": None,
    "text_terms": ["image_id", "term", "score", "rank"],
    "image_urls": ["image_id", "page_id", "img_src", "url", "occurrences"],
    "text_rejects": ["image_id", "page_id", "reason"],
    "regions": ["image_id", "annotator", "region_id", "label", "label_path"],
    "spatial_relations": ["image_id", "annotator", "region_i", "region_j", "topology", "horizontal", "vertical"],
    "segmentation_rejects": ["image_id", "annotator", "region_id", "reason"],
    "ground_truth": ["image_id", "concept", "agreement", "derived"],
    "splits": ["image_id", "split"],
    "duplicates": ["image_id", "duplicate_of", "group_size"],
    "boxes": ["image_id", "instance", "concept", "xmin", "ymin", "xmax", "ymax"],
    "box_rejects": ["image_id", "instance", "concept", "xmin", "ymin", "xmax", "ymax", "reason"],
    "captions": ["image_id", "reference", "text", "source"],
    "page_captions": ["image_id", "page_id", "kind", "text", "keep", "reason"],
    "search_keywords": ["image_id", "query", "engine", "rank"],
    "caption_scores": ["image_id", "run", "caption", "meteor"],
}


def decided(schema: pa.Schema) -> ds.Expression:
    """Rows a run decided (its `decision` is a bool or a 0/1 number)."""
    if pa.types.is_boolean(schema.field("decision").type):
        return ds.field("decision") == True  # noqa: E712 (an Arrow expression, not a Python test)
    return ds.field("decision") != 0


class PerImage:
    """Reads a per-image table for one image shard: straight from its shard file when the
    table is split by shard, else from a copy regrouped by shard in a scratch folder."""

    def __init__(self, source: Source, catalogue: Catalogue, scratch: Path, top_terms: int, log: Log,
                 regroup: bool = True):
        """regroup=False: the non-sharded tables were regrouped before (by rule browse_prepare)
        and are added with `adopt`."""
        self.source, self.catalogue, self.scratch, self.log = source, catalogue, scratch, log
        self.filters = {"text_terms": ds.field("rank") <= top_terms}
        self.sharded: dict[str, dict[int, Path]] = {}
        self.bucketed: set[str] = set()
        self.runs, self.box_runs = [], []
        for name, columns in PER_IMAGE.items():
            if name == "text_terms" and top_terms <= 0:
                continue
            shard_files = source.shard_files(name)
            if regroup or shard_files:
                self.add(name, source.files(name), columns, self.filters.get(name), shard_files)
        if not regroup:
            return
        runs = source.runs()
        self.runs = sorted(runs)
        for name, path in sorted(runs.items()):
            self.add(f"run:{name}", [path], ["image_id", "concept", "score"], decided(pq.read_schema(path)), None)
        box_runs = source.box_runs()
        self.box_runs = sorted(box_runs)
        for name, path in sorted(box_runs.items()):
            self.add(f"box_run:{name}", [path], list(BOX_RUN_COLUMNS), None, None)

    def add(self, key: str, files: list[Path], columns, filters, shard_files) -> None:
        if shard_files:
            self.sharded[key] = shard_files
        elif files:
            self.log(f"browse: regrouping {key} by image shard")
            self.bucket(key, files, columns, filters)
            self.bucketed.add(key)

    def bucket(self, key: str, files: list[Path], columns, filters) -> None:
        dataset = ds.dataset([str(f) for f in files], format="parquet")
        if columns is not None:
            columns = [c for c in columns if c in dataset.schema.names]
        scanner = dataset.scanner(columns=columns, filter=filters, batch_size=1 << 18, use_threads=False)
        schema = scanner.projected_schema.append(pa.field("browse_shard", pa.int64()))

        def with_shards():
            for batch in scanner.to_batches():
                positions = self.catalogue.positions(batch.column("image_id"))
                keep = positions >= 0
                if keep.any():
                    batch = batch.filter(pa.array(keep))
                    shards = pa.array(self.catalogue.shards[positions[keep]])
                    yield pa.RecordBatch.from_arrays([*batch.columns, shards], schema=schema)

        ds.write_dataset(with_shards(), self.folder(key), schema=schema, format="ipc", use_threads=False,
                         partitioning=ds.partitioning(pa.schema([schema.field("browse_shard")])))

    def adopt(self, bucketed: list[str], runs: list[str], box_runs: list[str]) -> None:
        """Take the tables regrouped by an earlier job (their files already under `scratch`)."""
        self.bucketed.update(bucketed)
        self.runs, self.box_runs = list(runs), list(box_runs)

    def folder(self, key: str) -> Path:
        return self.scratch / hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]

    def has(self, key: str) -> bool:
        return key in self.sharded or key in self.bucketed

    def read(self, key: str, shard: int) -> pa.Table | None:
        if key in self.sharded:
            path = self.sharded[key].get(shard)
            name = key.split(":")[0]
            return read_file(path, PER_IMAGE.get(name), self.filters.get(name)) if path else None
        folder = self.folder(key) / str(shard)
        if key in self.bucketed and folder.is_dir():
            return ds.dataset(folder, format="ipc").to_table()
        return None


@dataclass
class Rows:
    """One image's rows of a table (up to a cap) and how many it has."""

    rows: list[dict]
    total: int


class GroupedRows:
    """Each image's rows of a table, kept in Arrow and made Python rows only when
    its page asks: a shard's relations as Python dicts would take a gigabyte."""

    def __init__(self, shown: pa.Table, groups: dict[str, tuple[int, int, int]]):
        self.shown, self.groups = shown, groups

    def get(self, image_id: str, default: Rows | None = None) -> Rows | None:
        if image_id not in self.groups:
            return default
        first, n, count = self.groups[image_id]
        return Rows(self.shown.slice(first, n).to_pylist(), count)


def group_by_image(table: pa.Table | None, order: list[tuple[str, str]], cap: int | None = None
                   ) -> dict[str, Rows] | GroupedRows:
    """Rows grouped by image_id, each group sorted by `order` and cut at `cap`."""
    if table is None or table.num_rows == 0:
        return {}
    order = [o for o in order if o[0] in table.column_names]
    table = table.sort_by([("image_id", "ascending"), *order]).combine_chunks()
    runs = pc.run_end_encode(table.column("image_id").combine_chunks())
    ends = runs.run_ends.to_numpy().astype(np.int64)
    starts = np.concatenate([[0], ends[:-1]])
    counts = ends - starts
    shown = counts if cap is None else np.minimum(counts, cap)
    first_shown = np.cumsum(shown) - shown
    take = np.repeat(starts, shown) + np.arange(int(shown.sum())) - np.repeat(first_shown, shown)
    return GroupedRows(table.take(pa.array(take)), {
        image_id: (first, n, count) for image_id, first, n, count
        in zip(runs.values.to_pylist(), first_shown.tolist(), shown.tolist(), counts.tolist())})
