"""Region-level data for the workflow: import a shard's segmentations, compute
region features and spatial relations on the full-resolution images, and
the dataset-wide statistics and SAIAPR-style exports.
"""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from annobench.core.errors import AnnobenchError
from annobench.core.fsutil import atomic_path, write_bytes_atomic
from annobench.core.jobs import Job
from annobench.core.progress import Progress
from annobench.core.provenance import raw_file
from annobench.core.tables import field, write_table
from annobench.images.decode import DecodeLimits, ImageRejected, decode_image
from annobench.regions.features import (
    FEATURE_NAMES,
    REGION_FEATURES_SCHEMA,
    features_of_regions,
    features_table,
    rgb_to_lab,
)
from annobench.regions.importers import import_segmentations
from annobench.regions.matlimits import DEFAULT_MAX_BYTES, MatLimits
from annobench.regions.relations import (
    SPATIAL_RELATIONS_SCHEMA,
    relation_frequency_table,
    relations_of_regions,
    stacked_relations_table,
)
from annobench.regions.segmentation import (
    REGIONS_SCHEMA,
    SEGMENTATION_REJECTS_SCHEMA,
    Segmentation,
    SegmentationSourceError,
    renumber_regions,
    write_label_map,
)

# Names users give (config, command line) -> importer names.
KINDS = {"canonical": "canonical", "saiapr": "saiapr", "msrc": "msrc_v2", "bsds": "bsds500",
         "coco": "coco_panoptic", "labelme": "labelme"}
REGION_TABLES = ("regions", "region_features", "spatial_relations", "segmentation_rejects")
REGIONS_WITH_PATH = REGIONS_SCHEMA.append(
    field("label_path", pa.list_(pa.string()), "the label and its ancestors in the ontology, root first",
          nullable=True)
)
SCHEMAS = {
    "regions": REGIONS_WITH_PATH,
    "region_features": REGION_FEATURES_SCHEMA,
    "spatial_relations": SPATIAL_RELATIONS_SCHEMA,
    "segmentation_rejects": SEGMENTATION_REJECTS_SCHEMA,
}


class OntologyError(AnnobenchError):
    """The child -> parent pairs do not form a hierarchy."""


def read_ontology(path: Path | str) -> dict[str, str]:
    """CSV `child,parent` -> {child: parent}; a label with two parents or a cycle is an error."""
    parents: dict[str, str] = {}
    with open(path, newline="", encoding="utf-8-sig") as handle:
        for row in csv.DictReader(handle):
            child, parent = row["child"].strip(), row["parent"].strip()
            if parents.get(child, parent) != parent:
                raise OntologyError(f"{path}: {child!r} has two parents, {parents[child]!r} and {parent!r}")
            parents[child] = parent
    for label in parents:
        label_path(label, parents)  # raises on a cycle
    return parents


def label_path(label: str | None, parents: dict[str, str]) -> list[str] | None:
    if label is None or not parents:
        return None
    chain = [label]
    while chain[-1] in parents:
        chain.append(parents[chain[-1]])
        if chain[-1] in chain[:-1]:
            raise OntologyError(f"the ontology has a cycle: {' -> '.join(chain)}")
    return chain[::-1]


@dataclass
class RegionResult:
    """Rows of the regions and rejects tables; (image_id, annotator, ids, features) and
    (image_id, annotator, relations) blocks of the other two, stacked when written."""

    tables: dict[str, list] = dataclass_field(default_factory=lambda: {name: [] for name in REGION_TABLES})
    label_maps: dict[tuple[str, int], np.ndarray] = dataclass_field(default_factory=dict)


@dataclass(frozen=True)
class RegionSettings:
    """What the region stage reads from the config, read once where its job starts."""

    kind: str  # a name users give: canonical, saiapr, msrc, bsds, coco, labelme
    options: dict  # keyword options of the importer
    stripe_fraction: float  # of the spatial relations
    parents: dict[str, str]  # the ontology: label -> parent
    limits: DecodeLimits  # of the raw photos' decoding
    every_seconds: float = 10.0  # between progress lines
    mat_limits: MatLimits = MatLimits()  # what one MATLAB file may make the reader allocate

    @classmethod
    def from_config(cls, config: dict) -> "RegionSettings":
        settings = config["segmentations"]
        return cls(
            kind=settings["kind"], options=source_options(settings), stripe_fraction=settings["stripe_fraction"],
            parents=read_ontology(settings["ontology"]) if settings["ontology"] else {},
            limits=DecodeLimits.from_config(config["ingest"]), every_seconds=config["progress"]["log_every_seconds"],
            mat_limits=MatLimits.from_config(settings),
        )


def process_segmentations(
    settings: RegionSettings, root: Path | str, images: dict[str, str], sizes: dict[str, tuple[int, int]],
    wanted: Callable[[str], bool], log: Callable[[str], None] = print,
) -> RegionResult:
    """Every segmentation of the wanted images: canonical maps, regions, features, relations, rejects.

    images: image_id -> raw file (features need the full-resolution pixels);
    sizes: image_id -> (height, width) after EXIF orientation, for the size check.
    """
    result = RegionResult()
    progress = Progress("regions", len(images), log, settings.every_seconds)
    decoded_id, rgb, lab = None, None, None
    for item in import_segmentations(KINDS[settings.kind], root, image_sizes=sizes, wanted=wanted,
                                     mat_limits=settings.mat_limits, **settings.options):
        if not isinstance(item, Segmentation):
            result.tables["segmentation_rejects"].append(item.row())
            continue
        if item.image_id != decoded_id:  # annotators of an image come together: decode once
            decoded_id = item.image_id
            try:
                rgb = decode_image(Path(images[item.image_id]).read_bytes(), settings.limits).pixels
                lab = rgb_to_lab(rgb)
            except (ImageRejected, OSError) as error:
                rgb = None
                reason = f"image not usable: {error}"
            progress.step()
        if rgb is None:
            result.tables["segmentation_rejects"].append(
                {"image_id": item.image_id, "annotator": item.annotator, "region_id": None, "reason": reason,
                 "source": None})
            continue
        add_segmentation(result, item, rgb, lab, settings.stripe_fraction, settings.parents)
    progress.finish()
    return result


def add_segmentation(result: RegionResult, seg: Segmentation, rgb: np.ndarray, lab: np.ndarray,
                     stripe_fraction: float, parents: dict[str, str]) -> None:
    result.label_maps[(seg.image_id, seg.annotator)] = seg.label_map
    result.tables["regions"].extend(
        {**row, "label_path": label_path(row["label"], parents)} for row in seg.region_rows()
    )
    regions = renumber_regions(seg.label_map)  # shared by features and relations
    ids, features = features_of_regions(rgb, regions, lab=lab)
    result.tables["region_features"].append((seg.image_id, seg.annotator, ids, features))
    relations = relations_of_regions(regions, stripe_fraction)
    result.tables["spatial_relations"].append((seg.image_id, seg.annotator, relations))


def write_region_outputs(result: RegionResult, table_paths: dict[str, str], maps_dir: Path | str,
                         params_hash: str) -> None:
    with atomic_path(maps_dir) as partial:
        partial.mkdir()
        for (image_id, annotator), label_map in sorted(result.label_maps.items()):
            write_label_map(partial / f"annotator-{annotator}" / f"{image_id}.png", label_map, atomic=False)
    stacked = {"region_features": features_table, "spatial_relations": stacked_relations_table}
    for name in REGION_TABLES:
        rows = result.tables[name]
        table = stacked[name](rows) if name in stacked else pa.Table.from_pylist(rows, schema=SCHEMAS[name])
        write_table(table, table_paths[name], name, params_hash)


def regions_shard_job(job: Job) -> list[dict]:
    """Rule regions_shard: the regions of the shard's usable images (its images table), from the raw
    photos and segmentations as listed now, or, replaying a record, where it read them.

    Returns the raw files read (segmentation source and photos) for the provenance record.
    """
    from annobench.sources.ids import shard_of
    from annobench.sources.inventory import build_inventory

    if job.recorded_raw is None:
        inventory = build_inventory(job.config)
        paths, n_shards = {s.image_id: s.path for s in inventory.shards[job.shard]}, inventory.n_shards
        root = job.config["input"]["segmentations"]
    else:
        paths = {r["key"]: r["absolute_path"] for r in job.raw("image")}
        n_shards, root = job.params["n_shards"], job.raw_root("segmentation")
    shard = job.shard
    rows = pq.read_table(job.input("images"), columns=["image_id", "width", "height", "source_path", "sha256"])
    rows = rows.to_pydict()
    sizes = {i: (h, w) for i, w, h in zip(rows["image_id"], rows["width"], rows["height"])}
    try:
        result = process_segmentations(RegionSettings.from_config(job.config), root, {i: paths[i] for i in sizes},
                                       sizes, wanted=lambda image_id: shard_of(image_id, n_shards) == shard,
                                       log=job.log)
    except SegmentationSourceError as error:  # the build goes on without regions, and says why
        job.log(f"no regions: {error}")
        result = unreadable_source_result(error, root, first_shard=shard == 0)
    write_region_outputs(result, {name: job.output(name) for name in REGION_TABLES}, job.output("maps"),
                         job.params["params_hash"])
    return raw_segmentation_files(root) + [
        raw_file(paths[i], source, sha, role="image", key=i)
        for i, source, sha in zip(rows["image_id"], rows["source_path"], rows["sha256"])
    ]


def unreadable_source_result(error: SegmentationSourceError, root: str | Path, first_shard: bool) -> RegionResult:
    """No regions, and a rejects row (image_id empty: the whole source) giving the reason; in the first
    shard only, so the rejects table holds it once."""
    result = RegionResult()
    if first_shard:
        result.tables["segmentation_rejects"].append(
            {"image_id": "", "annotator": None, "region_id": None, "reason": str(error), "source": str(root)})
    return result


def raw_segmentation_files(root: str | Path) -> list[dict]:
    """Every file of the segmentation source: importers read by name, so all may matter."""
    root = Path(root)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return [raw_file(f, f.relative_to(root).as_posix() if f != root else f.name, role="segmentation") for f in files]


def region_params(settings: dict) -> dict:
    """The segmentations settings that decide the region tables (their params hash): a MAT size
    limit left at its default is left out, so builds made before the limit existed keep their hash."""
    return {key: value for key, value in settings.items()
            if not (key == "mat_max_bytes" and value == DEFAULT_MAX_BYTES)}


def source_options(settings: dict) -> dict:
    options = {key: value for key, value in settings["options"].items() if value not in ("", None)}
    if settings["kind"] == "bsds":
        options["annotator"] = settings["annotator"]
    return options


# --- over all shards -------------------------------------------------------------

# The tables of statistics over all shards, each in its own folder as tables/NAME/all.parquet.
STATS_TABLES = ("region_label_frequencies", "regions_per_image", "relation_frequencies")
STATS_SCHEMAS = {
    "region_label_frequencies": pa.schema([
        field("label", pa.string(), "a region label"),
        field("regions", pa.int64(), "regions with this label"),
        field("images", pa.int64(), "images with at least one such region"),
        field("mean_area", pa.float64(), "mean region area as a share of the image (feature area)"),
    ]),
    "regions_per_image": pa.schema([
        field("image_id", pa.string(), "key of the image"),
        field("annotator", pa.int16(), "which segmentation of the image"),
        field("regions", pa.int32(), "regions in the segmentation"),
        field("labelled", pa.int32(), "of which labelled"),
    ]),
}


def region_statistics(regions_tables: list[str], features_tables: list[str], relations_tables: list[str],
                      out_paths: dict[str, str], figure_path: str, params_hash: str) -> dict[str, float]:
    regions = pa.concat_tables([pq.read_table(p) for p in regions_tables]).to_pydict()
    features = pa.concat_tables([pq.read_table(p, columns=["image_id", "annotator", "region_id", FEATURE_NAMES[0]])
                                 for p in features_tables]).to_pydict()
    area = {(i, a, r): v for i, a, r, v in zip(features["image_id"], features["annotator"], features["region_id"],
                                              features[FEATURE_NAMES[0]])}
    per_label: dict[str, list] = defaultdict(list)
    per_image: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
    label_images: dict[str, set] = defaultdict(set)
    for image_id, annotator, region_id, label in zip(regions["image_id"], regions["annotator"],
                                                     regions["region_id"], regions["label"]):
        per_image[(image_id, annotator)][0] += 1
        if label is not None:
            per_image[(image_id, annotator)][1] += 1
            per_label[label].append(area.get((image_id, annotator, region_id), np.nan))
            label_images[label].add(image_id)
    frequencies = sorted(
        ({"label": label, "regions": len(areas), "images": len(label_images[label]),
          "mean_area": float(np.nanmean(areas)) if len(areas) else 0.0} for label, areas in per_label.items()),
        key=lambda row: (-row["regions"], row["label"]),
    )
    counts = relation_counts_of(relations_tables)
    tables = {
        "region_label_frequencies": pa.Table.from_pylist(frequencies,
                                                         schema=STATS_SCHEMAS["region_label_frequencies"]),
        "regions_per_image": pa.Table.from_pylist(
            [{"image_id": i, "annotator": a, "regions": n, "labelled": k} for (i, a), (n, k) in sorted(per_image.items())],
            schema=STATS_SCHEMAS["regions_per_image"]),
        "relation_frequencies": relation_frequency_table(counts),
    }
    for name, table in tables.items():
        write_table(table, out_paths[name], name, params_hash)
    write_bytes_atomic(figure_path, top_labels_figure(frequencies[:50]))
    all_areas = np.array(features[FEATURE_NAMES[0]], dtype=np.float64)
    return {"segmentations": len(per_image), "regions": len(regions["image_id"]),
            "mean_regions_per_image": len(regions["image_id"]) / max(1, len(per_image)),
            "mean_region_area": float(all_areas.mean()) if all_areas.size else 0.0}


def relation_counts_of(relations_tables: Iterable[str]) -> Counter:
    counts: Counter = Counter()
    for path in relations_tables:
        table = pq.read_table(path, columns=["topology", "horizontal", "vertical"]).to_pydict()
        counts["pairs"] += len(table["topology"])
        for column in ("topology", "horizontal", "vertical"):
            counts.update(table[column])
    return counts


def top_labels_figure(frequencies: list[dict], width: int = 1000, bar: int = 18) -> bytes:
    """A horizontal bar chart of regions per label, drawn with OpenCV (PNG bytes, deterministic)."""
    import cv2  # here: the per-shard jobs never draw, and OpenCV takes a while to import

    height = 60 + bar * max(1, len(frequencies))
    canvas = np.full((height, width, 3), 255, np.uint8)
    cv2.putText(canvas, f"Top {len(frequencies)} labels by regions", (10, 30), cv2.FONT_HERSHEY_SIMPLEX, 0.7,
                (0, 0, 0), 1, cv2.LINE_AA)
    most = max((row["regions"] for row in frequencies), default=1)
    left, right = 220, width - 80
    for k, row in enumerate(frequencies):
        y = 50 + k * bar
        length = int((right - left) * row["regions"] / most)
        cv2.rectangle(canvas, (left, y + 2), (left + max(length, 1), y + bar - 3), (180, 110, 40), -1)
        cv2.putText(canvas, row["label"][:28], (10, y + bar - 5), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1,
                    cv2.LINE_AA)
        cv2.putText(canvas, str(row["regions"]), (left + length + 5, y + bar - 5), cv2.FONT_HERSHEY_SIMPLEX, 0.45,
                    (60, 60, 60), 1, cv2.LINE_AA)
    ok, png = cv2.imencode(".png", canvas)
    return png.tobytes()


def saiapr_exports(regions_tables: list[str], features_tables: list[str], relations_tables: list[str],
                   features_txt: str, labels_txt: str, relations_txt: str) -> int:
    """SAIAPR TC-12's text files: features.txt, labels.txt and the relation matrices (codes 1-7).

    The image column is the image id, with `_<annotator>` appended when the
    source has several segmentations of an image.
    """
    regions = pa.concat_tables([pq.read_table(p) for p in regions_tables]).to_pydict()
    label_of = {(i, a, r): l for i, a, r, l in zip(regions["image_id"], regions["annotator"], regions["region_id"],
                                                   regions["label"])}
    features = pa.concat_tables([pq.read_table(p) for p in features_tables]).to_pydict()
    several = any(a != 1 for a in regions["annotator"])
    key = (lambda i, a: f"{i}_{a}") if several else (lambda i, a: i)
    lines, label_lines = [], []
    order = sorted(range(len(features["image_id"])),
                   key=lambda n: (features["image_id"][n], features["annotator"][n], features["region_id"][n]))
    for n in order:
        image_id, annotator, region_id = features["image_id"][n], features["annotator"][n], features["region_id"][n]
        label = label_of.get((image_id, annotator, region_id)) or ""
        values = "\t".join(f"{features[name][n]:.9g}" for name in FEATURE_NAMES)
        lines.append(f"{key(image_id, annotator)}\t{region_id}\t{values}\t{label}\n")
        label_lines.append(f"{key(image_id, annotator)}\t{region_id}\t{label}\n")
    write_bytes_atomic(features_txt, "".join(lines).encode("utf-8"))
    write_bytes_atomic(labels_txt, "".join(label_lines).encode("utf-8"))
    write_bytes_atomic(relations_txt, relation_matrices_text(relations_tables, key).encode("utf-8"))
    return len(lines)


def relation_matrices_text(relations_tables: list[str], key) -> str:
    """Per segmentation: a `# image n` header, then the topo, x and y matrices (n rows each)."""
    from annobench.regions.relations import SAIAPR_CODES

    blocks = []
    per_image: dict[tuple[str, int], list] = defaultdict(list)
    for path in relations_tables:
        t = pq.read_table(path).to_pydict()
        for row in zip(t["image_id"], t["annotator"], t["region_i"], t["region_j"], t["topology"],
                       t["horizontal"], t["vertical"]):
            per_image[(row[0], row[1])].append(row[2:])
    for (image_id, annotator), pairs in sorted(per_image.items()):
        ids = sorted({p[0] for p in pairs} | {p[1] for p in pairs})
        index = {region: k for k, region in enumerate(ids)}
        matrices = np.zeros((3, len(ids), len(ids)), dtype=np.int8)
        for i, j, *names in pairs:
            matrices[:, index[i], index[j]] = [SAIAPR_CODES[name] for name in names]
        text = [f"# {key(image_id, annotator)} {len(ids)} regions {' '.join(map(str, ids))}"]
        for name, matrix in zip(("topo", "x_rels", "y_rels"), matrices):
            text.append(f"{name}")
            text.extend(" ".join(map(str, row)) for row in matrix)
        blocks.append("\n".join(text) + "\n")
    return "".join(blocks)


def region_stats_job(job: Job) -> None:
    """Rule region_stats: statistics over every shard's regions, and the SAIAPR exports."""
    regions, features, relations = (job.input_list(name) for name in ("regions", "features", "relations"))
    summary = region_statistics(regions, features, relations, {name: job.output(name) for name in STATS_TABLES},
                                job.output("figure"), job.params["params_hash"])
    job.log(f"{summary}")
    rows = saiapr_exports(regions, features, relations, job.output("saiapr_features"), job.output("saiapr_labels"),
                          job.output("saiapr_relations"))
    job.log(f"{rows} regions exported in SAIAPR form")
