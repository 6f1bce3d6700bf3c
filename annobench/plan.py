"""What a build makes, decided from its config and inputs before any job runs.

The workflow's rule files read every name they share from one `Plan`, made
once while Snakemake parses them: which images fall into which shard, which
features, baseline runs, neighbour searches, box, caption and illustration
runs the build has, how the work is cut into jobs. Made here rather than in
the rule files, the plan can be tested without Snakemake, and a config that
asks for something the build cannot make fails before any job, with one
message (`PlanError`).

A small build (fewer images than `sharding.merge_below_images`) runs each
family of per-run and per-feature jobs of the benchmark as one job: their
start-up (Python, its libraries, Snakemake's bookkeeping: about half a CPU
second a job) outweighs the work of a run on a few images. The job functions
are the same, so the outputs are the same bytes either way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from annobench.benchmark.annotation import stage as annotation_stage
from annobench.benchmark.boxes import stage as box_stage
from annobench.benchmark.campaign.submissions import SubmissionsError, find_submissions
from annobench.benchmark.captions import stage as caption_stage
from annobench.benchmark.illustration import stage as illustration_stage
from annobench.benchmark.neighbours.blocks import block_plan, shard_blocks
from annobench.benchmark.selection import stage as selection_stage
from annobench.core import layout
from annobench.core.config import release_identity, unnamed_release
from annobench.core.errors import AnnobenchError
from annobench.core.fingerprint import folder_state
from annobench.sources.inventory import Inventory, InventoryError, build_inventory
from annobench.text.stage import TextPlan, text_plan_for

GLOBAL_FEATURES = ("colorhist", "getlf", "gist")


class PlanError(AnnobenchError):
    """The config asks for something this build cannot make (the message says what)."""


@dataclass(frozen=True)
class Plan:
    out: str  # the output folder
    inventory: Inventory
    warc_key: str  # the web archives' catalogue key, or "" without input.warc
    text: TextPlan | None  # None: no pages
    page_map: str | list  # the text jobs' mapping file ([] without text)
    search_log: str  # input.search_log, the search keywords' log ("" without one)
    regions_on: bool  # input.segmentations is set
    segmentation_state: str  # regions rerun when any file of the source changes
    bow_kinds: list[str]
    benchmark_on: bool
    baselines: dict[str, dict]  # annotation baseline run -> its kind and feature
    neighbours: dict[str, int]  # feature -> nearest training images each test image needs
    neighbour_blocks: dict[str, list[list[int]]]  # test / training blocks of shard indices
    boxes_on: bool
    box_runs: dict[str, dict]
    selection_runs: list[str]
    caption_runs: dict[str, dict]
    caption_blocks: list[list[int]]  # Meteor's blocks of shard indices
    illustration_runs: list[str]
    illustration_blocks: int  # blocks of pages: their queries are read, then ranked, by a job each
    illustration_text_runs: list[str]  # the baselines ranked by blocks of queries (illustration_rank)
    browse_by_shard: bool  # the browser's image pages as a job per shard
    merged: bool  # a small build: each family of per-run jobs as one job
    notes: list[str] = field(default_factory=list)  # what planning tells the user
    # features.cnn NAME -> its table, the settings its jobs depend on, its files' state and size, its
    # vector's dimension: the networks that passed their check (annobench.visual.cnn)
    cnn_models: dict[str, dict] = field(default_factory=dict)
    # The round (annobench.benchmark.campaign): "GROUP/RUN" -> its job's spec, for the submitted runs
    # that get a job; the runs rejected here, with their reasons, for the campaign_results job.
    submissions: dict[str, dict] = field(default_factory=dict)
    submission_rejects: list[dict] = field(default_factory=list)

    @property
    def shards(self) -> list[str]:
        return layout.shard_ids(self.inventory.n_shards)

    @property
    def global_tables(self) -> list[str]:
        """The tables of the features a shard job computes from the stored images: the global features
        and each configured network's."""
        return [*GLOBAL_FEATURES, *(model["table"] for model in self.cnn_models.values())]

    @property
    def feature_tables(self) -> list[str]:
        """Every feature table a shard gets: the global features, the networks' and the bags of words."""
        return [*self.global_tables, *(f"bow_{kind}" for kind in self.bow_kinds)]

    @property
    def neighbour_search_split(self) -> bool:
        """Whether the search runs as test blocks x training blocks (else one job per feature)."""
        return len(self.neighbour_blocks["test"]) * len(self.neighbour_blocks["training"]) > 1

    @property
    def browse_parts(self) -> list[str]:
        return ["images", "overlays"] if self.regions_on else ["images"]


def make_plan(config: dict, log: Callable[[str], None] = print) -> Plan:
    """The plan of the build `config` describes; PlanError when it cannot be built."""
    inventory, warc_key = _inventory(config, log)
    cnn_models, config, notes = _cnn_models(config)
    try:
        text = text_plan_for(config, inventory.n_shards)
    except InventoryError as error:
        raise PlanError(f"cannot read the page mapping: {error}") from None
    shard_sizes = [len(shard) for shard in inventory.shards]
    benchmark = config["benchmark"]
    benchmark_on = annotation_stage.enabled(config)
    baselines = annotation_stage.baseline_runs(config, has_text=bool(text)) if benchmark_on else {}
    if benchmark_on:
        notes += _check_benchmark(config, baselines, bool(text), [model["table"] for model in cnn_models.values()])
    for check in (box_stage.check_config, selection_stage.check_config, illustration_stage.check_config):
        try:
            check(config)
        except (AnnobenchError, ValueError) as error:
            raise PlanError(str(error)) from None
    unnamed = unnamed_release(config)
    if unnamed:
        identity = release_identity(config)
        notes.append(f"annobench: {' / '.join(unnamed)} not set: the release is named {identity['name']!r}, "
                     f"titled {identity['title']!r} (set them in your config's release section)")
    merge_below = config["sharding"]["merge_below_images"]
    runs = {"boxes": box_stage.box_baseline_runs(config), "captions": caption_stage.caption_runs(config),
            "selection": selection_stage.selection_runs(config),
            "illustration": illustration_stage.illustration_runs(config) if benchmark_on else []}
    submitted = _submissions(config, benchmark_on, box_stage.boxes_enabled(config), runs)
    return Plan(
        out=config["output"],
        inventory=inventory,
        warc_key=warc_key,
        text=text,
        page_map=_page_map(config, text),
        search_log=_search_log(config),
        regions_on=bool(config["input"]["segmentations"]),
        segmentation_state=folder_state(config["input"]["segmentations"]),
        bow_kinds=list(config["features"]["bow"]["kinds"]),
        benchmark_on=benchmark_on,
        baselines=baselines,
        neighbours=annotation_stage.neighbours_needed(config, baselines) if benchmark_on else {},
        neighbour_blocks=block_plan(benchmark["neighbours"], shard_sizes),
        boxes_on=box_stage.boxes_enabled(config),
        box_runs=box_stage.box_baseline_runs(config),
        selection_runs=selection_stage.selection_runs(config),
        caption_runs=caption_stage.caption_runs(config),
        caption_blocks=shard_blocks(shard_sizes, benchmark["captions"]["block_images"]),
        illustration_runs=illustration_stage.illustration_runs(config),
        illustration_blocks=illustration_stage.query_blocks(config, inventory.n_images),
        illustration_text_runs=illustration_stage.text_runs(config),
        browse_by_shard=bool(config["release"]["browse"]["enabled"]) and inventory.n_shards > 1,
        merged=inventory.n_images < merge_below,
        notes=notes,
        submissions={s.key: {**s.spec(), "path": s.path, "metadata_path": s.metadata_path}
                     for s in submitted if not s.reasons},
        submission_rejects=[s.row() for s in submitted if s.reasons],
        cnn_models=cnn_models,
    )


def _cnn_models(config: dict) -> tuple[dict[str, dict], dict, list[str]]:
    """The configured networks that load, with their layer, and take their recipe (each checked
    once and cached: annobench.visual.cnn). A network that fails is an error, or, when optional,
    left out with a note, and so is its table from benchmark.features (the config returned)."""
    import os

    from annobench.core.fingerprint import code_fingerprint
    from annobench.visual import cnn

    models, notes, dropped = {}, [], []
    code = code_fingerprint(cnn.__file__)
    for name, settings in sorted(config["features"]["cnn"].items()):
        try:
            dimension = cnn.checked_dimension(name, settings, config["output"], code)
        except cnn.CnnError as error:
            if not settings["optional"]:
                raise PlanError(str(error)) from None
            notes.append(f"annobench: features.cnn.{name} is optional and cannot be used, so the build goes on "
                         f"without table {cnn.table_name(name)}: {error}")
            dropped.append(cnn.table_name(name))
            continue
        models[name] = {"table": cnn.table_name(name), "settings": cnn.job_settings(settings),
                        "state": cnn.files_state(settings), "dimension": dimension,
                        "bytes": sum(os.path.getsize(path) for path in cnn.model_files(settings))}
    benchmark = config["benchmark"]
    if dropped and benchmark["overlap"]["feature"] in dropped:
        raise PlanError(f"benchmark.overlap.feature is {benchmark['overlap']['feature']}, whose network cannot be "
                        "used (see the note above)")
    if any(feature in dropped for feature in benchmark["features"]):
        kept = [feature for feature in benchmark["features"] if feature not in dropped]
        left_out = ", ".join(feature for feature in benchmark["features"] if feature in dropped)
        notes.append(f"annobench: the baselines run without {left_out} (benchmark.features)")
        config = {**config, "benchmark": {**benchmark, "features": kept}}
    return models, config, notes


def _submissions(config: dict, benchmark_on: bool, boxes_on: bool, runs: dict[str, list]) -> list:
    """The runs under input.submissions, each planned or rejected (annobench.benchmark.campaign.submissions)."""
    folder = config["input"]["submissions"]
    if folder and not benchmark_on:
        raise PlanError("input.submissions needs the benchmark: set benchmark.ground_truth.source")
    subtasks = {
        "annotation": None,
        "boxes": None if boxes_on else "benchmark.boxes.source is empty",
        "captions": None if runs["captions"] else "no caption runs: benchmark.captions.references is empty",
        "selection": None if runs["selection"] else "benchmark.selection.truth is empty",
        "illustration": None if runs["illustration"] else "benchmark.illustration.enabled is false",
    }
    try:
        return find_submissions(folder, config["benchmark"]["campaign"]["max_runs"], subtasks)
    except SubmissionsError as error:
        raise PlanError(str(error)) from None


def _inventory(config: dict, log: Callable[[str], None]) -> tuple[Inventory, str]:
    """The images and their shards; with web archives, from their catalogue, which is read once
    and cached under the output folder (work/warc/): the inventory is the catalogue's images."""
    from annobench.sources.warc_index import index_for

    try:
        warc_key = index_for(config, log=log).key if config["input"]["warc"] else ""
        return build_inventory(config), warc_key
    except (InventoryError, FileNotFoundError) as error:
        raise PlanError(f"cannot list the input images: {error}") from None


def _page_map(config: dict, text: TextPlan | None) -> str | list:
    """The text jobs' mapping file: with input.warc, the table the catalogue's mapping is released as."""
    if config["input"]["warc"]:
        return f"{config['output']}/tables/warc_page_map/all.parquet"
    return config["input"]["page_map"] if text else []


def _search_log(config: dict) -> str:
    """input.search_log, if it names a file (the search keywords' log, annobench.text.search_log)."""
    path = config["input"]["search_log"]
    if path and not os.path.isfile(path):
        raise PlanError(f"input.search_log: {path} is not a file (a CSV or JSON-lines log of queries, engines, "
                        "ranks and image addresses or ids)")
    return path


def _check_benchmark(config: dict, baselines: dict[str, dict], has_text: bool, cnn_tables: list[str]) -> list[str]:
    """Errors of the benchmark section that only the whole config shows; notes for the user."""
    benchmark = config["benchmark"]
    made = {*GLOBAL_FEATURES, *cnn_tables, *(f"bow_{kind}" for kind in config["features"]["bow"]["kinds"])}
    missing = sorted(set(annotation_stage.neighbours_needed(config, baselines)) - made)
    if missing:
        raise PlanError(f"benchmark.features / benchmark.overlap.feature name features this build does not "
                        f"make: {', '.join(missing)} (see features.bow.kinds and features.cnn)")
    if benchmark["ground_truth"]["source"] == "regions" and not config["input"]["segmentations"]:
        raise PlanError("benchmark.ground_truth.source is regions but input.segmentations is empty")
    if "cooccurrence" in benchmark["baselines"] and not has_text:
        return ["annobench: no text features (input.page_map is empty): co-occurrence baselines skipped"]
    return []
