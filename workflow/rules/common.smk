# Shared set-up: the build's plan (which images, which shard, which features, runs and jobs:
# annobench.plan), output paths and the fingerprints that make a rule rerun when its code
# changes. Every name a rule file uses is defined above it, here or in its own file.

import math
import re
import sys
from pathlib import Path

sys.path.insert(0, workflow.basedir)  # annobench from this checkout

from annobench.benchmark.captions.stage import caption_run_name
from annobench.benchmark.neighbours.blocks import part_memory_mb, vectors_shape
from annobench.core import layout
from annobench.core.fingerprint import code_fingerprint, folder_state, params_hash
from annobench.plan import PlanError, make_plan
from annobench.regions.stage import REGION_TABLES
from annobench.release.browser.source import PER_IMAGE
from annobench.text.stage import CAPTION_WORK, SHARD_TABLES, TEXT_TABLES
from annobench.visual.stage import FEATURES

# With input.warc, making the plan reads the web archives' catalogue and caches it under
# work/warc/: the inventory is the catalogue's images, so it must exist before any rule does.
try:
    PLAN = make_plan(config, log=logger.info)
except PlanError as error:
    raise WorkflowError(str(error))
for note in PLAN.notes:
    logger.info(note)
logger.info(f"annobench: {PLAN.inventory.n_images} images in {PLAN.inventory.n_shards} shard(s) -> {PLAN.out}")
if PLAN.merged:
    logger.info(f"annobench: fewer than {config['sharding']['merge_below_images']} images: each family of "
                f"per-run benchmark jobs runs as one job (sharding.merge_below_images)")

# Rules on the longest path of any build: the features, and every shard's descriptor sample ->
# the codebooks -> the bags of words; then the neighbour searches on every feature, which the
# benchmark waits for. Snakemake starts the ready job of highest priority first; without it
# these waited behind work nothing waits for (regions, text, duplicates).
CRITICAL_PATH = 1

INVENTORY = PLAN.inventory
SHARDS = PLAN.shards
BENCHMARK = config["benchmark"]


wildcard_constraints:
    shard=r"\d{%d}" % layout.SHARD_WIDTH,


def out(relative):
    """A path under the output folder; Snakemake wildcards pass through."""
    return f"{PLAN.out}/{relative}"


def shard_tables(table):
    """A sharded table's file of every shard."""
    return expand(out(layout.table_file(table, "{shard}")), shard=SHARDS)


def script_code(script, *modules):
    """Fingerprint of a script, the annobench modules it (or `modules`) imports, and their libraries."""
    return code_fingerprint(Path(workflow.basedir) / "scripts" / script, *modules)


def one_of(names):
    """A wildcard pattern that matches exactly these names (and nothing when there are none)."""
    return "|".join(re.escape(n) for n in sorted(names)) or "(?!)"


def run_spec(runs):
    """Params function: the `run` wildcard's kind and feature in `runs` (only its own run's
    settings, so another run's change reruns nothing here)."""
    return lambda wildcards: runs[wildcards.run]


# Time limits for cluster schedulers (resource `runtime`, minutes): seconds per
# image, about ten times what one core of the development machine needs
# (docs/performance.md), because a job past its limit is killed and cluster
# cores and raw image sizes differ; plus a floor for start-up and slow disks.
SECONDS_PER_IMAGE = {
    "ingest": 0.5, "colorhist": 0.02, "getlf": 0.02, "gist": 0.2, "bow_sample": 0.2, "bow_encode": 0.6,
    "text": 1.0, "regions": 1.0, "cnn": 4.0,  # cnn: a network of VGG16's shape, 0.34 s
}


def shard_runtime(stage):
    """Resource function: minutes a shard job of `stage` may take, from its shard's image count."""
    def runtime(wildcards):
        images = len(INVENTORY.shards[int(wildcards.shard)])
        return 10 + math.ceil(images * SECONDS_PER_IMAGE[stage] / 60)

    return runtime


def shard_listing(wildcards):
    return INVENTORY.fingerprint(int(wildcards.shard))


# -- merged jobs of a small build (annobench.plan) ------------------------------------------
# A merged rule runs the per-run job function on each part (scripts/parts.py); its params hold
# what the per-run rule would have given each part's job, its input and output the union.


def merged_parts(names, wildcard, inputs_of, outputs_of, params_of=lambda name: {}):
    """Each name's part: its wildcard, params, inputs and outputs as the per-run rule has them."""
    return [{"wildcards": {wildcard: name}, "params": params_of(name), "inputs": inputs_of(name),
             "outputs": outputs_of(name)} for name in sorted(names)]


def part_files(parts, side):
    """Every input or output file of the parts, each once, in order."""
    files = {}
    for part in parts:
        for value in part[side].values():
            files.update(dict.fromkeys([value] if isinstance(value, str) else value))
    return list(files)


# -- visual features --------------------------------------------------------------------------

GETLF_PROJECTION = out("artefacts/getlf_projection.parquet")  # GETLF's random vectors

def feature_inputs(feature):
    """Input function of a feature rule: its shard's images, and the projection if it needs one."""
    def inputs(wildcards):
        files = {
            "images": out(layout.table_file("images", wildcards.shard)),
            "resized": out(layout.resized_dir(wildcards.shard)),
        }
        if FEATURES[feature].needs_projection:
            files["projection"] = GETLF_PROJECTION
        return files

    return inputs


def cnn_mem_mb(spec):
    """A network's job: while it loads, the file's bytes, the ONNX model made of them and OpenCV's
    import of it are held at once: 2,501 MiB for VGG16's 553 MB, 459 MiB for ResNet-50's 102 MB
    (perf/bench_cnn.py, docs/performance.md), 4.5 times the file; plus the job's own start-up."""
    return 1024 + 4 * spec["bytes"] // 10**6


def bow_sample_file(kind, shard):
    """Intermediate: a shard's sampled descriptors of one kind, for codebook training."""
    return out(f"work/bow_sample/{kind}/shard-{shard}.npy")


def codebook_file(kind):
    return out(f"artefacts/codebook_{kind}.parquet")


# -- the benchmark: truth, neighbours, baselines ---------------------------------------------

BENCHMARK_TABLES = {
    "concepts": out("tables/concepts/all.parquet"),
    "ground_truth": out("tables/ground_truth/all.parquet"),
    "splits": out("tables/splits/all.parquet"),
}
NEIGHBOUR_BLOCKS = PLAN.neighbour_blocks
# Minutes a neighbour search may take per (image, image) pair of its blocks at 5,000 dimensions:
# 1.7e-7 s per (test, training) pair measured (837 s for 10,000 x 500,000, docs/performance.md),
# 0.3 of a block's images test and 0.6 training, times four (slower cores, unlucky vectors).
NEIGHBOUR_MINUTES_PER_PAIR = 2e-9


def neighbours_file(feature):
    """A feature's neighbours table: each test image's nearest training images."""
    return out(f"work/neighbours/{feature}.parquet")


OVERLAP_NEIGHBOURS = neighbours_file(BENCHMARK["overlap"]["feature"])


def neighbour_block_file(feature, test_block, training_block):
    """Intermediate: one part of a feature's neighbour search (test block x training block)."""
    return out(f"work/neighbour_blocks/{feature}/test-{test_block:03d}-train-{training_block:03d}.parquet")


def neighbour_block_shards(side, block):
    return [SHARDS[shard] for shard in NEIGHBOUR_BLOCKS[side][int(block)]]


def neighbour_block_images(side, block):
    return sum(len(INVENTORY.shards[shard]) for shard in NEIGHBOUR_BLOCKS[side][int(block)])


def neighbour_queries_file(feature, test_block):
    """Intermediate: the test images' vectors of a test block, gathered once for all its parts."""
    return out(f"work/neighbour_queries/{feature}/test-{test_block}.parquet")


def neighbour_block_tables(feature, side, block):
    return [out(layout.table_file(feature, shard)) for shard in neighbour_block_shards(side, block)]


def neighbour_block_inputs(wildcards):
    """A part's inputs: its test block's gathered test vectors and the feature's shards of its
    training block."""
    return {"queries": neighbour_queries_file(wildcards.feature, wildcards.test_block),
            "reference": neighbour_block_tables(wildcards.feature, "training", wildcards.training_block),
            "splits": BENCHMARK_TABLES["splits"]}


def neighbour_block_memory(wildcards, input):
    """mem_mb of a part: it holds its test vectors and streams the training vectors. Snakemake
    evaluates this again when the part is ready to run, from the gathered test vectors; while
    they do not exist, every image of the test block counts as a test image of 5,000 values."""
    if Path(input.queries).exists():
        return part_memory_mb(*vectors_shape(input.queries))
    return part_memory_mb(neighbour_block_images("test", wildcards.test_block), 5000)


def neighbour_block_runtime(wildcards):
    test = neighbour_block_images("test", wildcards.test_block)
    return 10 + math.ceil(NEIGHBOUR_MINUTES_PER_PAIR * test * neighbour_block_images("training", wildcards.training_block))


def neighbours_inputs_of(feature):
    """Inputs of a feature's neighbours table: its parts in test-block-major order, or the
    feature's shards when one job searches them all."""
    if not PLAN.neighbour_search_split:
        return {"features": shard_tables(feature), "splits": BENCHMARK_TABLES["splits"]}
    parts = [neighbour_block_file(feature, test, training)
             for test in range(len(NEIGHBOUR_BLOCKS["test"])) for training in range(len(NEIGHBOUR_BLOCKS["training"]))]
    return {"parts": parts, "splits": BENCHMARK_TABLES["splits"]}


def baseline_inputs_of(name):
    """Inputs of one baseline run: the benchmark tables, the overlap feature's neighbours (for
    Dutta's subsets), the run's feature's neighbours, text if it is a co-occurrence run."""
    run = PLAN.baselines[name]
    files = {**BENCHMARK_TABLES, "overlap": OVERLAP_NEIGHBOURS}
    if run["feature"]:
        files["neighbours"] = neighbours_file(run["feature"])
    if run["kind"] == "cooccurrence":
        files["text_terms"] = shard_tables("text_terms")
    return files


def baseline_files(run):
    """The four files of a baseline run."""
    return {"run": out(f"runs/{run}.parquet"), "run_text": out(f"runs/{run}.txt"),
            "evaluation": out(f"evaluations/{run}.json"), "per_concept": out(f"tables/concept_results/{run}.parquet")}


# -- boxes and content selection -------------------------------------------------------------

BOX_TRUTH = {"boxes": out("tables/boxes/all.parquet"), "box_rejects": out("tables/box_rejects/all.parquet"),
             "box_notes": out("tables/box_notes/all.parquet")}
BOX_CONSISTENCY = out("reports/box_label_consistency.csv")


def box_baseline_files(run):
    """The three files of a box baseline run."""
    return {"run": out(f"runs/{run}.parquet"), "run_text": out(f"runs/{run}.txt"),
            "evaluation": out(f"evaluations/{run}.json")}


def box_baseline_inputs_of(name):
    """Inputs of one box run: the images' sizes, the benchmark's concepts, splits and boxes, and
    the knn run of its feature (whole_image) or that feature's neighbours (knn_transfer)."""
    run = PLAN.box_runs[name]
    files = {"images": shard_tables("images"), "concepts": BENCHMARK_TABLES["concepts"],
             "splits": BENCHMARK_TABLES["splits"], "boxes": BOX_TRUTH["boxes"]}
    if run["kind"] == "whole_image":
        files["knn_run"] = out(f"runs/knn_{run['feature']}.parquet")
    else:
        files["neighbours"] = neighbours_file(run["feature"])
    return files


def selection_files(name):
    """A selection baseline's evaluation, and its run unless it is the human upper bound."""
    files = {"evaluation": out(f"evaluations/selection_{name}.json")}
    if name != "human":
        files["run"] = out(f"runs/selection_{name}.csv")
    return files


# -- captions ----------------------------------------------------------------------------------

CAPTION_TABLE = out("tables/captions/all.parquet")
CAPTION_RUNS = PLAN.caption_runs
CAPTION_KINDS = sorted({run["kind"] for run in CAPTION_RUNS.values()})
# Meteor by blocks of test images (benchmark.captions.block_images, whole shards): each block's
# segment statistics, then one EVAL a run over every block's, the same figures as one job.
CAPTION_BLOCKS = PLAN.caption_blocks
CAPTION_BLOCK_OUTPUTS = {
    what: expand(out(f"work/caption_meteor/{what}-{{block:03d}}.parquet"), block=range(len(CAPTION_BLOCKS)))
    for what in ("references", "segments")}


def caption_block_tables(block):
    """The images tables of the shards of a Meteor block (rule caption_meteor_block)."""
    return [out(layout.table_file("images", SHARDS[shard])) for shard in CAPTION_BLOCKS[int(block)]]


def caption_baseline_inputs_of(feature):
    return {"captions": CAPTION_TABLE, "splits": BENCHMARK_TABLES["splits"], "neighbours": neighbours_file(feature)}


def caption_baseline_files(feature):
    """The runs of a feature's caption baselines, in Parquet and CSV."""
    return {f"{kind}_{what}": out(f"runs/{caption_run_name(kind, feature)}.{ext}")
            for kind in CAPTION_KINDS for what, ext in (("run", "parquet"), ("run_text", "csv"))}


def caption_evaluation_inputs_of(run):
    return {"captions": CAPTION_TABLE, "splits": BENCHMARK_TABLES["splits"], "run": out(f"runs/{run}.parquet"),
            **CAPTION_BLOCK_OUTPUTS}


def caption_evaluation_files(run):
    return {"evaluation": out(f"evaluations/{run}.json"), "scores": out(f"work/caption_scores/{run}.parquet")}


# -- the round: kit, truth, submissions, results (annobench.benchmark.campaign) -----------------

CAMPAIGN_KIT = {"kit": out("kit"), "truth": out("truth")}
CAMPAIGN_STATISTICS = out("work/campaign/baselines.json")
SUBMISSIONS = PLAN.submissions  # "GROUP/RUN" -> the run's spec, for the runs that get a job


def submission_files(key):
    """A submitted run's result (status, problems, evaluation) and its run as the browser reads it."""
    return {"result": out(f"work/submissions/{key}.json"), "run_table": out(f"work/submissions/{key}.parquet")}


def submission_inputs_of(key):
    """A submitted run's job reads its own files and metadata, the kit and the test truth; an
    annotation run also the overlap feature's neighbours (the leaderboard's overlap subsets)."""
    spec = SUBMISSIONS[key]
    files = {"run": spec["path"], "metadata": spec["metadata_path"], **CAMPAIGN_KIT}
    if spec["metadata"]["subtask"] == "annotation":
        files["overlap"] = OVERLAP_NEIGHBOURS
    return files


SUBMISSION_RESULTS = [submission_files(key)["result"] for key in sorted(SUBMISSIONS)]
SUBMISSION_RUN_TABLES = [submission_files(key)["run_table"] for key in sorted(SUBMISSIONS)]


# -- the browser ---------------------------------------------------------------------------------

def browse_norms_inputs(wildcards):
    """A shard's feature tables."""
    return [out(layout.table_file(name, wildcards.shard)) for name in PLAN.feature_tables]


def browse_shard_inputs(wildcards):
    """A browse_shard job reads its shard's prepared folder and files, and every shard's images (the
    catalogue: each page links its neighbours and grid page)."""
    tables = ["images"]
    if PLAN.text:
        tables += [t for t in TEXT_TABLES if t in PER_IMAGE]
    if PLAN.regions_on:
        tables += [t for t in REGION_TABLES if t in PER_IMAGE]
    files = {
        "prepared": out(f"work/browse/shard-{wildcards.shard}"),
        "plan": out("work/browse/plan.json"),
        "catalogue": shard_tables("images"),
        "tables": [out(layout.table_file(t, wildcards.shard)) for t in tables if t != "images"],
    }
    if PLAN.regions_on:
        files["maps"] = out(f"segmentations/shard-{wildcards.shard}")
    return files
