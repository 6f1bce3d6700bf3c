"""The image-level annotation part of the benchmark stage (docs/measures.md: ImageCLEF 2012 task
page, Villegas and Paredes 2014, Dutta et al. 2018): ground truth, splits, baseline runs and their
evaluation. The neighbours the baselines use come from neighbours.stage; the leaderboard and
diagnostics are written by annobench.benchmark.report.

Each function is one Snakemake job, callable without Snakemake. Test images
are always taken in image_id order, so runs and evaluations are the same
bytes whatever the shards or cores.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from annobench.benchmark.annotation import ground_truth as gt
from annobench.benchmark.json_form import json_bytes
from annobench.benchmark.neighbours.stage import read_neighbours
from annobench.benchmark.settings import BenchmarkSettings
from annobench.benchmark.splits import assign_splits, splits_from_lists, splits_table
from annobench.benchmark.vocabulary import (
    GroundTruthError,
    concepts_table,
    read_concepts_table,
    read_vocabulary,
    vocabulary_from_labels,
)
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.jobs import Job
from annobench.core.provenance import raw_file
from annobench.core.tables import rows_of_images, write_table


# -- planning (called from the Snakefile) ----------------------------------

def enabled(config: dict) -> bool:
    return bool(config["benchmark"]["ground_truth"]["source"])


def baseline_runs(config: dict, has_text: bool) -> dict[str, dict]:
    """Run name -> what it needs: {'kind': ..., 'feature': ... or None}."""
    settings = config["benchmark"]
    runs = {}
    for kind in settings["baselines"]:
        if kind in ("knn", "cooccurrence"):
            if kind == "cooccurrence" and not has_text:
                continue
            for feature in settings["features"]:
                runs[f"{kind}_{feature}"] = {"kind": kind, "feature": feature}
        else:
            runs[kind] = {"kind": kind, "feature": None}
    return runs


def neighbours_needed(config: dict, runs: dict[str, dict]) -> dict[str, int]:
    """Feature -> how many neighbours to keep (the most any user of that feature needs)."""
    settings = config["benchmark"]
    wanted = {settings["overlap"]["feature"]: settings["overlap"]["neighbours"]}
    for run in runs.values():
        if run["feature"]:
            k = settings["knn"]["neighbours"] if run["kind"] == "knn" else settings["cooccurrence"]["neighbours"]
            wanted[run["feature"]] = max(wanted.get(run["feature"], 0), k)
    if settings["captions"]["references"]:  # the caption baselines look at each feature's neighbours
        for feature in settings["features"]:
            wanted[feature] = max(wanted.get(feature, 0), settings["captions"]["neighbours"])
    return dict(sorted(wanted.items()))


def truth_job_settings(config: dict) -> dict:
    """The settings the ground-truth job depends on, with every file named by its state (size and
    time), never by its path: a job record is then the same for two builds in different folders."""
    from annobench.core.fingerprint import folder_state

    settings = config["benchmark"]
    source, split = settings["ground_truth"], settings["split"]
    return {
        "vocabulary": folder_state(settings["vocabulary"]) if settings["vocabulary"] else "",
        "ground_truth": {**source, "path": folder_state(source["path"]) if source["path"] else ""},
        "images": settings["images"],
        "split": {**split, "lists": {name: folder_state(path) for name, path in sorted(split["lists"].items())}},
        "exports": settings["exports"],
        "ontology": folder_state(config["segmentations"]["ontology"]) if config["segmentations"]["ontology"] else "",
    }


def baseline_job_settings(config: dict) -> dict:
    """The settings a baseline job depends on (the English word list by its state, not its path)."""
    from annobench.core.fingerprint import file_state

    settings = config["benchmark"]
    words = settings["cooccurrence"]["english_words_file"]
    return {**{key: settings[key] for key in ("k", "seed", "knn", "overlap", "evaluation")},
            "cooccurrence": {**settings["cooccurrence"], "english_words_file": file_state(words) if words else ""}}


# -- ground truth and splits -------------------------------------------------

def build_truth(settings: BenchmarkSettings, images_tables: list[str], regions_tables: list[str],
                paths: dict[str, str], log, boxes_tables: list[str] = ()) -> list[dict]:
    """Concepts, ground truth, splits and the ImageCLEF 2012 exports. Returns the raw inputs read.
    boxes_tables: the boxes table, for ground truth from boxes."""
    source = settings.ground_truth
    raw_inputs = _truth_raw_inputs(settings)
    parents = settings.parents()
    vocabulary = read_vocabulary(settings.vocabulary) if settings.vocabulary else None
    truth = _read_source(source, vocabulary, regions_tables, log, boxes_tables)
    if vocabulary is None:
        vocabulary = vocabulary_from_labels(truth.rows["concept"].unique(), parents)
    truth = gt.restrict_to_vocabulary(truth, vocabulary)
    if source["source"] == "csv" and truth.notes:
        raise GroundTruthError(f"{source['path']}: {truth.notes[-1]}")
    image_ids = _ingested_ids(images_tables)
    known = set(image_ids)
    unknown = sorted(set(truth.rows["image_id"]) - known)
    if unknown and len(unknown) == truth.rows["image_id"].nunique():
        raise GroundTruthError(
            f"none of the {len(unknown)} images of the ground truth ({source['source']} {source['path']}) is in "
            f"this build, e.g. {', '.join(unknown[:3])}: point benchmark.ground_truth at these images' labels "
            f"(a plain 'snakemake' in the checkout also reads the demo's demo/config.yaml)")
    if unknown:
        log(f"{len(unknown)} ground-truth image(s) are not in the built images (rejected or absent), "
            f"left out: {', '.join(unknown[:10])}")
        truth = gt.GroundTruth(truth.rows[truth.rows["image_id"].isin(known)].reset_index(drop=True), truth.notes)
    for note in truth.notes:
        log(note)
    if settings.images == "annotated":
        image_ids = sorted(set(truth.rows["image_id"]))
    splits = _splits(settings.split, image_ids, log)
    params = _truth_params(settings, raw_inputs)
    write_table(concepts_table(vocabulary), paths["concepts"], "concepts", params=params)
    write_table(gt.ground_truth_table(truth), paths["ground_truth"], "ground_truth", params=params)
    split_params = {**settings.split, "lists": _digest(raw_inputs, "split_list")}
    write_table(splits_table(image_ids, splits), paths["splits"], "splits", params=split_params)
    files = gt.export_imageclef2012(truth, vocabulary, paths["export"], settings.exports["annotation_files"])
    counts = pd.Series([s for s in splits if s]).value_counts().to_dict()
    log(f"{len(vocabulary)} concepts, {len(truth.rows)} ground-truth rows on {truth.rows['image_id'].nunique()} "
        f"images; splits {counts}; {files} ImageCLEF 2012 files")
    return raw_inputs


def _read_source(source: dict, vocabulary, regions_tables: list[str], log,
                 boxes_tables: list[str] = ()) -> gt.GroundTruth:
    kind = source["source"]
    if kind == "csv":
        return gt.read_truth_csv(source["path"])
    if kind in ("imageclef2012_concepts", "imageclef2012_annotations"):
        if vocabulary is None:
            raise GroundTruthError(f"ground truth from {kind} needs benchmark.vocabulary (the concept names)")
        reader = gt.read_concept_files if kind == "imageclef2012_concepts" else gt.read_annotation_files
        return reader(source["path"], vocabulary, source["raw"])
    if kind == "regions":
        if not regions_tables:
            raise GroundTruthError("ground truth from regions needs input.segmentations")
        regions = pd.concat([pd.read_parquet(p) for p in regions_tables], ignore_index=True)
        return gt.truth_from_regions(regions, source["lift_to_ancestors"])
    if kind == "boxes":
        if not boxes_tables:
            raise GroundTruthError("ground truth from boxes needs benchmark.boxes.source")
        boxes = pd.concat([pd.read_parquet(p, columns=["image_id", "concept"]) for p in boxes_tables],
                          ignore_index=True)
        return gt.truth_from_boxes(boxes)
    raise GroundTruthError(f"unknown ground-truth source {kind!r}")


def _truth_raw_inputs(settings: BenchmarkSettings) -> list[dict]:
    """Every file the ground-truth job reads, hashed once: vocabulary, ground-truth files, split
    lists, ontology. Each is named by its file name (or its path in its folder), never by where it is."""
    source = settings.ground_truth
    records = []
    if settings.vocabulary:
        records.append(raw_file(settings.vocabulary, Path(settings.vocabulary).name, role="vocabulary"))
    if source["source"] not in ("regions", "boxes") and source["path"]:
        records.extend(_source_files(source["path"]))
    for name, path in sorted(settings.split["lists"].items()):
        records.append(raw_file(path, f"{name}/{Path(path).name}", role="split_list"))
    if settings.ontology:
        records.append(raw_file(settings.ontology, Path(settings.ontology).name, role="ontology"))
    return records


def _truth_params(settings: BenchmarkSettings, raw_inputs: list[dict]) -> dict:
    """What the concepts and ground truth depend on: the files by content, never by path, so two
    builds of the same inputs in different folders write the same bytes."""
    source = settings.ground_truth
    return {"vocabulary": _digest(raw_inputs, "vocabulary"), "source": source["source"],
            "source_files": _digest(raw_inputs, "ground_truth"), "raw": source["raw"],
            "lift_to_ancestors": source["lift_to_ancestors"], "images": settings.images,
            "ontology": _digest(raw_inputs, "ontology")}


def _digest(raw_inputs: list[dict], role: str) -> str | None:
    """sha256 over the (name, sha256) of the raw inputs of one role; None when there are none."""
    import hashlib

    listing = "".join(f"{r['path']}\0{r['sha256']}\n" for r in raw_inputs if r["role"] == role)
    return hashlib.sha256(listing.encode("utf-8")).hexdigest() if listing else None


def _source_files(path: str) -> list[dict]:
    """The ground-truth files, named as the pages and photos are: relative to their folder."""
    root = Path(path)
    if root.is_file():
        return [raw_file(root, root.name, role="ground_truth")]
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return [raw_file(p, p.relative_to(root).as_posix(), role="ground_truth") for p in files]


def _ingested_ids(images_tables: list[str]) -> list[str]:
    ids = [pq.read_table(p, columns=["image_id"]).column(0).to_pylist() for p in images_tables]
    return sorted(i for part in ids for i in part)


def _splits(split: dict, image_ids: list[str], log) -> list[str | None]:
    if split["lists"]:
        splits = splits_from_lists(image_ids, split["lists"])
        left_out = sum(s is None for s in splits)
        if left_out:
            log(f"{left_out} image(s) are in no split list and are left out of the benchmark")
        return splits
    return assign_splits(image_ids, {name: split[name] for name in ("train", "dev", "test")}, split["seed"])


# -- loading what a baseline needs ------------------------------------------

class BenchmarkData:
    """Vocabulary, label sets and the train/test images, in image_id order."""

    def __init__(self, concepts_path: str, truth_path: str, splits_path: str):
        self.concepts = read_concepts_table(concepts_path)
        self.names = [c.name for c in self.concepts]
        self.label_sets = gt.read_ground_truth_table(truth_path).label_sets()
        splits = pq.read_table(splits_path).to_pandas()
        self.train_ids = sorted(splits.loc[splits["split"] == "train", "image_id"])
        self.test_ids = sorted(splits.loc[splits["split"] == "test", "image_id"])
        if not self.test_ids or not self.train_ids:
            raise GroundTruthError(
                f"the benchmark needs training and test images: {len(self.train_ids)} train, "
                f"{len(self.test_ids)} test (benchmark.split)")

    def truth(self, image_ids: list[str]) -> np.ndarray:
        return gt.truth_matrix(self.label_sets, image_ids, self.names)


# -- baselines ---------------------------------------------------------------

def build_baseline(name: str, kind: str, settings: BenchmarkSettings, inputs: dict, outputs: dict, log) -> dict:
    """Make one baseline run over the test images, write it (Parquet and ImageCLEF 2012 text),
    evaluate it and write the evaluation and its per-concept table. Returns the measures."""
    from annobench.benchmark.runs.files import write_run
    from annobench.benchmark.runs.model import Run

    data = BenchmarkData(inputs["concepts"], inputs["ground_truth"], inputs["splits"])
    scores, decisions = _baseline_matrices(kind, data, settings, inputs)
    run = Run(image_ids=data.test_ids, concepts=data.names, scores=scores, decisions=decisions, listed=None)
    write_run(run, outputs["run"], "parquet")
    write_run(run, outputs["run_text"], "imageclef2012")
    measures = evaluate_run(run, data.truth(data.test_ids), settings, inputs["overlap"], outputs["per_concept"],
                            name)
    write_bytes_atomic(outputs["evaluation"], json_bytes(measures))
    log(f"{name}: {len(data.test_ids)} test images; MAP-samples {measures['MAP-samples']:.4f}, "
        f"MF1-samples {measures['MF1-samples']:.4f}, F1_L {measures['F1_L']:.4f}")
    return measures


def _baseline_matrices(kind: str, data: BenchmarkData, settings: BenchmarkSettings, inputs: dict):
    from annobench.benchmark.annotation import baselines

    n_test, n_concepts, k, seed = len(data.test_ids), len(data.names), settings.k, settings.seed
    if kind == "random":
        return baselines.random_scores(n_test, n_concepts, seed, k=k, varying=True)
    if kind in ("most_frequent", "rarest", "random_k"):
        trivial = "random" if kind == "random_k" else kind
        # random_k draws from the next seed: its scores are not those of `random`.
        return baselines.trivial_run(trivial, data.truth(data.train_ids), n_test, k, seed + 1)
    neighbour_ids, distances = read_neighbours(inputs["neighbours"], data.test_ids)
    position = {image_id: j for j, image_id in enumerate(data.train_ids)}
    if kind not in ("knn", "cooccurrence"):
        raise ValueError(f"unknown baseline kind {kind!r}")
    count = settings.neighbours_of(kind)
    indices = np.array([[position[i] for i in row[:count]] for row in neighbour_ids], dtype=np.int64)
    if kind == "knn":
        return baselines.knn_label_transfer(indices, distances[:, :count], data.truth(data.train_ids))
    return _cooccurrence(data, indices, inputs["text_terms"], settings)


def _cooccurrence(data: BenchmarkData, indices: np.ndarray, text_tables: list[str], settings: BenchmarkSettings):
    from annobench.benchmark.annotation import baselines

    english = None
    if settings.cooccurrence["english_words_file"]:
        words = Path(settings.cooccurrence["english_words_file"]).read_text(encoding="utf-8").split()
        english = {w.strip().lower() for w in words}
    matrix, vocabulary = _training_text(text_tables, data.train_ids, english)
    columns = baselines.keyword_columns([list(c.keywords) for c in data.concepts], vocabulary)
    cooc = baselines.cooccurrence_matrix(matrix, columns)
    return baselines.cooccurrence_scores(indices, matrix, cooc)


def _training_text(text_tables: list[str], train_ids: list[str], english: set[str] | None):
    """The training images' English terms as one sparse matrix (rows in train_ids order), read a
    shard at a time: a first pass finds the vocabulary, a second adds up each shard's rows, so no
    more than one shard's text is ever in a data frame."""
    from annobench.benchmark.annotation import baselines

    train = pa.array(sorted(set(train_ids)))

    def shard_terms(path: str) -> pd.DataFrame:
        return rows_of_images(path, ["image_id", "term", "score"], train).to_pandas()

    words: set[str] = set()
    for path in text_tables:
        terms = shard_terms(path)["term"].unique()
        words.update(t for t in terms if baselines.is_english_term(t, english))
    vocabulary = sorted(words)
    matrix = None
    for path in text_tables:
        part, _ = baselines.text_terms_matrix(shard_terms(path), train_ids, english, vocabulary)
        matrix = part if matrix is None else matrix + part
    if matrix is None:
        matrix, _ = baselines.text_terms_matrix(pd.DataFrame(columns=["image_id", "term", "score"]), train_ids,
                                                english, vocabulary)
    return matrix.tocsr(), vocabulary


# -- evaluation --------------------------------------------------------------

def evaluate_run(run, truth: np.ndarray, settings: BenchmarkSettings, overlap_path: str, per_concept_path: str,
                 name: str) -> dict:
    """Every measure on all test images, and again on the most and least overlapping ones; the
    per-concept table written beside them."""
    from annobench.benchmark.annotation.measure import per_concept_table

    measures = run_measures(run, truth, settings, overlap_path, name)
    seed, top_k = settings.evaluation["seed"], settings.k
    table = per_concept_table(truth, run.scores, run.decisions, run.concepts, run.listed)
    table.insert(0, "run", name)
    write_table(pa.Table.from_pandas(table, preserve_index=False), per_concept_path, "concept_results",
                params={"run": name, "seed": seed, "top_k": top_k})
    return measures


def run_measures(run, truth: np.ndarray, settings: BenchmarkSettings, overlap_path: str, name: str) -> dict:
    """The evaluation JSON of a run (a baseline's, or a submitted run's): every measure on all test
    images, and again on the most and least overlapping ones."""
    from annobench.benchmark.annotation.diagnostics import overlap_subsets, visual_overlap
    from annobench.benchmark.annotation.measure import evaluate

    seed, top_k = settings.evaluation["seed"], settings.k
    measures = evaluate(truth, run.scores, run.decisions, run.listed, seed=seed, top_k=top_k)
    _, distances = read_neighbours(overlap_path, run.image_ids)
    overlap = visual_overlap(distances, settings.overlap["neighbours"])
    subsets = {}
    for subset, rows in overlap_subsets(overlap, settings.overlap["share"]).items():
        listed = run.listed[rows] if run.listed is not None else None
        subsets[subset] = evaluate(truth[rows], run.scores[rows], run.decisions[rows], listed, seed=seed,
                                   top_k=top_k)
    return {**measures, "run": name, "subsets": subsets,
            "settings": {"seed": seed, "top_k": top_k, "overlap": settings.overlap}}


# -- the rules' jobs ----------------------------------------------------------

def truth_job(job: Job) -> list[dict]:
    """Rule benchmark_truth. Returns the raw inputs read (vocabulary, truth files, split lists, ontology)."""
    return build_truth(BenchmarkSettings.from_config(job.config), job.input_list("images"),
                       job.input_list("regions"), job.outputs, job.log, job.input_list("boxes"))


def baseline_job(job: Job) -> list[dict]:
    """Rule baseline: one baseline run (the `run` wildcard), written and evaluated. Returns the
    English word list when it is a co-occurrence run that read one."""
    settings = BenchmarkSettings.from_config(job.config)
    run = job.params["run"]
    build_baseline(job.wildcards["run"], run["kind"], settings, job.inputs, job.outputs, job.log)
    words = settings.cooccurrence["english_words_file"]
    if words and run["kind"] == "cooccurrence":
        return [raw_file(words, Path(words).name, role="english_words")]
    return []
