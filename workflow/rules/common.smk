# Shared set-up: the image inventory (which images, which shard), output
# paths and the fingerprints that make a rule rerun when its code changes.

import math
import re
import sys
from pathlib import Path

sys.path.insert(0, workflow.basedir)  # annobench from this checkout

from annobench.core import layout
from annobench.visual.bow import sampling_plan
from annobench.core.config import ingest_params
from annobench.visual.stage import FEATURES
from annobench.core.fingerprint import code_fingerprint, folder_state, params_hash
from annobench.sources.inventory import InventoryError, build_inventory
from annobench.text.stage import TEXT_TABLES, text_plan_for
from annobench.regions.stage import REGION_TABLES, region_params
from annobench.sources.warc_index import index_for, write_shard_slices

OUT = config["output"]

try:
    # Web archives are read once and their catalogue cached (work/warc/): the inventory and the
    # text plan below come from it.
    WARC_KEY = index_for(config, log=logger.info).key if config["input"]["warc"] else ""
    INVENTORY = build_inventory(config)
except (InventoryError, FileNotFoundError) as error:
    raise WorkflowError(f"cannot list the input images: {error}")

SHARDS = layout.shard_ids(INVENTORY.n_shards)
if WARC_KEY:  # each shard's part of the catalogue, so a job does not load the whole of it
    write_shard_slices(index_for(config), OUT, INVENTORY.n_shards)

try:
    TEXT_PLAN = text_plan_for(config, INVENTORY.n_shards)
except InventoryError as error:
    raise WorkflowError(f"cannot read the page mapping: {error}")
# The text jobs' mapping file: with input.warc, the table the catalogue's mapping is released as.
if config["input"]["warc"]:
    PAGE_MAP = f"{OUT}/tables/warc_page_map/all.parquet"
else:
    PAGE_MAP = config["input"]["page_map"] if TEXT_PLAN else []

# Regions rerun when any file of the segmentation source changes (size or mtime).
SEGMENTATION_STATE = folder_state(config["input"]["segmentations"])
logger.info(f"annobench: {INVENTORY.n_images} images in {INVENTORY.n_shards} shard(s) -> {OUT}")


wildcard_constraints:
    shard=r"\d{%d}" % layout.SHARD_WIDTH,


def out(relative):
    """A path under the output folder; Snakemake wildcards pass through."""
    return f"{OUT}/{relative}"


def script_code(script, *modules):
    """Fingerprint of a script, the annobench modules it (or `modules`) imports, and their libraries."""
    return code_fingerprint(Path(workflow.basedir) / "scripts" / script, *modules)


# Time limits for cluster schedulers (resource `runtime`, minutes): seconds per
# image, about ten times what one core of the development machine needs
# (README, Benchmarks), because a job past its limit is killed and cluster
# cores and raw image sizes differ; plus a floor for start-up and slow disks.
SECONDS_PER_IMAGE = {
    "ingest": 0.5, "colorhist": 0.02, "getlf": 0.02, "gist": 0.2, "bow_sample": 0.2, "bow_encode": 0.6,
    "text": 1.0, "regions": 1.0,
}


def shard_runtime(stage):
    """Resource function: minutes a shard job of `stage` may take, from its shard's image count."""
    def runtime(wildcards):
        images = len(INVENTORY.shards[int(wildcards.shard)])
        return 10 + math.ceil(images * SECONDS_PER_IMAGE[stage] / 60)

    return runtime


def shard_listing(wildcards):
    return INVENTORY.fingerprint(int(wildcards.shard))


def feature_inputs(feature):
    """Input function of a feature rule: its shard's images, and the projection if it needs one."""
    def inputs(wildcards):
        files = {
            "images": out(layout.table_file("images", wildcards.shard)),
            "resized": out(layout.resized_dir(wildcards.shard)),
        }
        if FEATURES[feature].needs_projection:
            files["projection"] = rules.getlf_projection.output[0]
        return files

    return inputs


def bow_sample_file(kind, shard):
    """Intermediate: a shard's sampled descriptors of one kind, for codebook training."""
    return out(f"work/bow_sample/{kind}/shard-{shard}.npy")


def one_of(names):
    """A wildcard pattern that matches exactly these names (and nothing when there are none)."""
    return "|".join(re.escape(n) for n in sorted(names)) or "(?!)"


def baseline_inputs(wildcards):
    """Inputs of one baseline run: the benchmark tables, the overlap feature's neighbours (for
    Dutta's subsets), the run's feature's neighbours, text if it is a co-occurrence run."""
    run = BASELINES[wildcards.run]
    files = {**BENCHMARK_TABLES, "overlap": out(f"work/neighbours/{BENCHMARK['overlap']['feature']}.parquet")}
    if run["feature"]:
        files["neighbours"] = out(f"work/neighbours/{run['feature']}.parquet")
    if run["kind"] == "cooccurrence":
        files["text_terms"] = expand(out(layout.table_file("text_terms", "{shard}")), shard=SHARDS)
    return files


def run_spec(runs):
    """Params function: the `run` wildcard's kind and feature in `runs` (only its own run's
    settings, so another run's change reruns nothing here)."""
    return lambda wildcards: runs[wildcards.run]


def baseline_files(run):
    """The four files of a baseline run."""
    return {"run": out(f"runs/{run}.parquet"), "run_text": out(f"runs/{run}.txt"),
            "evaluation": out(f"evaluations/{run}.json"), "per_concept": out(f"tables/concept_results/{run}.parquet")}


def box_baseline_files(run):
    """The three files of a box baseline run."""
    return {"run": out(f"runs/{run}.parquet"), "run_text": out(f"runs/{run}.txt"),
            "evaluation": out(f"evaluations/{run}.json")}


def box_baseline_inputs(wildcards):
    """Inputs of one box run: the images' sizes, the benchmark's concepts, splits and boxes, and
    the knn run of its feature (whole_image) or that feature's neighbours (knn_transfer)."""
    run = BOX_RUNS[wildcards.run]
    files = {"images": expand(out(layout.table_file("images", "{shard}")), shard=SHARDS),
             "concepts": BENCHMARK_TABLES["concepts"], "splits": BENCHMARK_TABLES["splits"],
             "boxes": BOX_TRUTH["boxes"]}
    if run["kind"] == "whole_image":
        files["knn_run"] = out(f"runs/knn_{run['feature']}.parquet")
    else:
        files["neighbours"] = out(f"work/neighbours/{run['feature']}.parquet")
    return files


def selection_files(name):
    """A selection baseline's evaluation, and its run unless it is the human upper bound."""
    files = {"evaluation": out(f"evaluations/selection_{name}.json")}
    if name != "human":
        files["run"] = out(f"runs/selection_{name}.csv")
    return files


def browse_settings():
    """The browser's settings: release.browse with the release's title."""
    return {**config["release"]["browse"], "title": config["release"]["title"]}


# The browser's image pages run as one job per image shard when there are several (issue 29).
BROWSE_BY_SHARD = bool(config["release"]["browse"]["enabled"]) and INVENTORY.n_shards > 1
BROWSE_PARTS = ["images", "overlays"] if config["input"]["segmentations"] else ["images"]


def browse_norms_inputs(wildcards):
    """A shard's feature tables."""
    return [out(layout.table_file(name, wildcards.shard)) for name in FEATURE_TABLES]


def browse_shard_inputs(wildcards):
    """A browse_shard job reads its shard's prepared folder and files, and every shard's images (the
    catalogue: each page links its neighbours and grid page)."""
    from annobench.release.browser.source import PER_IMAGE

    tables = ["images"]
    if TEXT_PLAN:
        tables += [t for t in TEXT_TABLES if t in PER_IMAGE]
    if config["input"]["segmentations"]:
        tables += [t for t in REGION_TABLES if t in PER_IMAGE]
    files = {
        "prepared": out(f"work/browse/shard-{wildcards.shard}"),
        "plan": out("work/browse/plan.json"),
        "catalogue": expand(out(layout.table_file("images", "{shard}")), shard=SHARDS),
        "tables": [out(layout.table_file(t, wildcards.shard)) for t in tables if t != "images"],
    }
    if config["input"]["segmentations"]:
        files["maps"] = out(f"segmentations/shard-{wildcards.shard}")
    return files


def neighbour_block_file(feature, test_block, training_block):
    """Intermediate: one part of a feature's neighbour search (test block x training block)."""
    return out(f"work/neighbour_blocks/{feature}/test-{test_block:03d}-train-{training_block:03d}.parquet")


def neighbour_searches_split():
    """Whether the search runs as test blocks x training blocks (else one job per feature)."""
    return len(NEIGHBOUR_BLOCKS["test"]) * len(NEIGHBOUR_BLOCKS["training"]) > 1


def neighbours_inputs(wildcards):
    """Inputs of a feature's neighbours table: its parts in test-block-major order, or the
    feature's shards when one job searches them all."""
    if not neighbour_searches_split():
        return {"features": expand(out(layout.table_file(wildcards.feature, "{shard}")), shard=SHARDS),
                "splits": BENCHMARK_TABLES["splits"]}
    parts = [neighbour_block_file(wildcards.feature, test, training)
             for test in range(len(NEIGHBOUR_BLOCKS["test"])) for training in range(len(NEIGHBOUR_BLOCKS["training"]))]
    return {"parts": parts, "splits": BENCHMARK_TABLES["splits"]}


def neighbour_block_shards(side, block):
    return [SHARDS[shard] for shard in NEIGHBOUR_BLOCKS[side][int(block)]]


def neighbour_block_inputs(wildcards):
    """A part's inputs: the feature's shards of its test block and of its training block."""
    def tables(side, block):
        return [out(layout.table_file(wildcards.feature, shard)) for shard in neighbour_block_shards(side, block)]

    return {"queries": tables("test", wildcards.test_block),
            "reference": tables("training", wildcards.training_block),
            "splits": BENCHMARK_TABLES["splits"]}


def caption_block_tables(blocks, block):
    """The images tables of the shards of a Meteor block (rule caption_meteor_block)."""
    return [out(layout.table_file("images", SHARDS[shard])) for shard in blocks[int(block)]]


def neighbour_block_images(side, block):
    return sum(len(INVENTORY.shards[shard]) for shard in NEIGHBOUR_BLOCKS[side][int(block)])


# Minutes a neighbour search may take per (image, image) pair of its blocks at 5,000 dimensions:
# 1.7e-7 s per (test, training) pair measured (837 s for 10,000 x 500,000, README, Benchmarks),
# 0.3 of a block's images test and 0.6 training, times four (slower cores, unlucky vectors).
NEIGHBOUR_MINUTES_PER_PAIR = 2e-9


def neighbour_block_resources(wildcards, what):
    """mem_mb / runtime of a part: the test vectors of its test block are held (20 kB at
    5,000 float32 a vector: 24 kB an image covers every image a test image), the training
    vectors streamed; measured 712 MiB for 6,000 test images of 5,000-d."""
    test = neighbour_block_images("test", wildcards.test_block)
    if what == "mem_mb":
        return 1024 + (24 * test) // 1000
    return 10 + math.ceil(NEIGHBOUR_MINUTES_PER_PAIR * test * neighbour_block_images("training", wildcards.training_block))
