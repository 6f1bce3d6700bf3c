"""The index's figures, collected from the whole build table by table:
counts, label and concept frequencies, regions per segmentation, relations,
splits, rejects by reason and feature norms."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from annobench.core.tables import field as column
from annobench.release.browser.source import Catalogue, Log, Source, read_file, run_kind
from annobench.text.search_log import REJECTS as SEARCH_REJECTS
from annobench.text.search_log import reason_shape as search_reason_shape

# Caps on what one page lists, so no HTML file grows with the collection.
REJECT_EXAMPLES = 5          # ids shown per reason group


@dataclass
class Figures:
    counts: dict[str, int] = field(default_factory=dict)
    region_labels: Counter = field(default_factory=Counter)        # label -> regions
    region_label_images: Counter = field(default_factory=Counter)  # label -> images
    regions_per_segmentation: Counter = field(default_factory=Counter)
    relations: dict[str, Counter] = field(default_factory=dict)
    concepts: Counter = field(default_factory=Counter)             # concept -> images
    splits: Counter = field(default_factory=Counter)
    rejects: dict[tuple[str, str], list] = field(default_factory=dict)  # (where, reason) -> [count, ids]
    norms: dict[str, dict] = field(default_factory=dict)

    def labels_by_frequency(self) -> list[str]:
        return [label for label, _ in sorted(self.region_labels.items(), key=lambda kv: (-kv[1], kv[0]))]


def count_rows(files: list[Path]) -> int:
    return sum(pq.read_metadata(f).num_rows for f in files)


def count_images(files: list[Path]) -> int:
    """Distinct image ids; tables are split by image shard, so per-file counts add up."""
    return sum(pc.count_distinct(read_file(f, ["image_id"]).column("image_id")).as_py() for f in files)


def collect_counts(source: Source, catalogue: Catalogue, runs: list[str]) -> dict[str, int]:
    counts = {"images": len(catalogue)}
    for key, table in (("rejects", "rejects"), ("duplicates", "duplicates"), ("pages", "pages"),
                       ("regions", "regions"), ("spatial relations", "spatial_relations"),
                       ("concepts", "concepts"), ("ground truth labels", "ground_truth"), ("boxes", "boxes"),
                       ("box rejects", "box_rejects"), ("search keywords", "search_keywords"),
                       ("search log lines rejected", "search_keyword_rejects")):
        if source.files(table):
            counts[key] = count_rows(source.files(table))
    for key, table in (("images with text terms", "text_terms"), ("images with pages", "image_urls"),
                       ("images with regions", "regions"), ("images with ground truth", "ground_truth"),
                       ("images with boxes", "boxes"), ("images with search keywords", "search_keywords")):
        if source.files(table):
            counts[key] = count_images(source.files(table))
    for kind, count in Counter(run_kind(name) for name in runs).items():
        counts[f"{kind} runs"] = count
    for kind, count in Counter(run_kind(name) for name in source.box_runs()).items():
        counts[f"{kind} box runs"] = count
    return counts


def collect_regions(source: Source, figures: Figures) -> None:
    for path in source.files("regions"):
        table = read_file(path, ["image_id", "annotator", "label"])
        if "label" in table.column_names:
            labelled = table.filter(pc.is_valid(table.column("label")))
            for row in labelled.group_by("label").aggregate([("image_id", "count"),
                                                              ("image_id", "count_distinct")]).to_pylist():
                figures.region_labels[row["label"]] += row["image_id_count"]
                figures.region_label_images[row["label"]] += row["image_id_count_distinct"]
        keys = [k for k in ("image_id", "annotator") if k in table.column_names]
        sizes = table.group_by(keys).aggregate([([], "count_all")]).column("count_all").to_pylist()
        figures.regions_per_segmentation.update(sizes)


def collect_relations(source: Source, figures: Figures) -> None:
    for path in source.files("spatial_relations"):
        table = read_file(path, ["topology", "horizontal", "vertical"])
        for name in table.column_names:
            counts = figures.relations.setdefault(name, Counter())
            for row in table.group_by(name).aggregate([([], "count_all")]).to_pylist():
                counts[row[name]] += row["count_all"]


def collect_benchmark(source: Source, figures: Figures) -> None:
    for path in source.files("ground_truth"):
        table = read_file(path, ["image_id", "concept"])
        for row in table.group_by("concept").aggregate([("image_id", "count_distinct")]).to_pylist():
            figures.concepts[row["concept"]] += row["image_id_count_distinct"]
    for path in source.files("splits"):
        for row in read_file(path, ["split"]).group_by("split").aggregate([([], "count_all")]).to_pylist():
            figures.splits[row["split"]] += row["count_all"]


def reason_group(reason: str | None) -> str:
    """A reason without its particulars: `cannot decode: image file is truncated` -> `cannot decode`."""
    return (reason or "(none)").split(":", 1)[0].strip()


def collect_rejects(source: Source, figures: Figures) -> None:
    """Each stage's rejects by reason, with example ids (the search log's: example line numbers)."""
    for where, table_name in (("ingest", "rejects"), ("text", "text_rejects"),
                              ("segmentation", "segmentation_rejects"), ("search log", SEARCH_REJECTS)):
        key, group = ("line", search_reason_shape) if table_name == SEARCH_REJECTS else ("image_id", reason_group)
        for path in source.files(table_name):
            table = read_file(path, [key, "reason"])
            for value, reason in zip(table.column(key).to_pylist(), table.column("reason").to_pylist()):
                example = (value or "") if key == "image_id" else (f"line {value}" if value is not None else "")
                entry = figures.rejects.setdefault((where, group(reason or "")), [0, []])
                entry[0] += 1
                entry[1] = sorted(set(entry[1]) | {example})[:REJECT_EXAMPLES]


def vector_norms(path: Path) -> tuple[np.ndarray, int]:
    column = read_file(path, ["vector"]).column("vector").combine_chunks()
    dim = column.type.list_size
    values = column.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
    return np.sqrt(np.einsum("ij,ij->i", values, values, dtype=np.float64)), dim


NORMS_SCHEMA = pa.schema([
    column("feature", pa.string(), "a feature table (columns image_id, vector)"),
    column("file", pa.string(), "its shard file's name"),
    column("dim", pa.int32(), "the vectors' dimension"),
    column("norms", pa.list_(pa.float64()), "each row's L2 norm, in the file's row order"),
])


def shard_norms(feature_files: list[Path]) -> pa.Table:
    """The feature norms of one shard's feature files (rule browse_norms), read by the index job
    in place of the vectors: at 510,123 images the vectors are gigabytes, the norms megabytes."""
    files, norms, dims = [Path(f) for f in feature_files], [], []
    for path in files:
        values, dim = vector_norms(path)
        norms.append(values)
        dims.append(dim)
    lengths = np.array([0, *map(len, norms)], dtype=np.int32)
    values = pa.ListArray.from_arrays(pa.array(np.cumsum(lengths), pa.int32()),
                                      pa.array(np.concatenate([np.zeros(0), *norms]), pa.float64()))
    return pa.Table.from_arrays([pa.array([f.parent.name for f in files], pa.string()),
                                 pa.array([f.name for f in files], pa.string()), pa.array(dims, pa.int32()),
                                 values], schema=NORMS_SCHEMA)


def read_shard_norms(norm_files: list[Path]) -> dict[tuple[str, str], tuple[np.ndarray, int]]:
    """(feature, file name) -> (norms, dim) from browse_norms' tables."""
    found = {}
    for path in norm_files:
        table = pq.read_table(path)
        norms = table.column("norms").combine_chunks()
        flat, offsets = norms.values.to_numpy(), norms.offsets.to_numpy()  # offsets index values
        rows = zip(table.column("feature").to_pylist(), table.column("file").to_pylist(),
                   table.column("dim").to_pylist())
        for k, (feature, name, dim) in enumerate(rows):
            found[(feature, name)] = (flat[offsets[k]:offsets[k + 1]], dim)
    return found


def collect_norms(source: Source, figures: Figures, log: Log, known: dict | None = None) -> None:
    """Every feature's norms; a shard file's come from `known` (read_shard_norms) when there."""
    known = known or {}
    for feature in source.features():
        parts, dim = [], 0
        for path in source.files(feature):
            norms, dim = known.get((feature, path.name)) or vector_norms(path)
            parts.append(norms)
        norms = np.concatenate(parts) if parts else np.zeros(0)
        finite = norms[np.isfinite(norms)]
        figures.norms[feature] = {"dim": dim, "vectors": len(norms), "non_finite": len(norms) - len(finite),
                                  "zero": int((finite == 0).sum()), "norms": finite}
        log(f"browse: feature norms of {feature} ({len(norms):,} vectors)")


def collect_figures(source: Source, catalogue: Catalogue, runs: list[str], log: Log,
                    known_norms: dict | None = None) -> Figures:
    figures = Figures(counts=collect_counts(source, catalogue, runs))
    collect_regions(source, figures)
    collect_relations(source, figures)
    collect_benchmark(source, figures)
    collect_rejects(source, figures)
    collect_norms(source, figures, log, known_norms)
    return figures
