# Shared set-up: the image inventory (which images, which shard), output
# paths and the fingerprints that make a rule rerun when its code changes.

import sys
from pathlib import Path

sys.path.insert(0, workflow.basedir)  # annobench from this checkout

from annobench import layout
from annobench.bow import sampling_plan
from annobench.config import ingest_params
from annobench.features import FEATURES
from annobench.fingerprint import code_fingerprint, folder_state, params_hash
from annobench.inventory import InventoryError, build_inventory
from annobench.text_stage import TEXT_TABLES, build_text_plan
from annobench.region_stage import REGION_TABLES

OUT = config["output"]

try:
    INVENTORY = build_inventory(config)
except InventoryError as error:
    raise WorkflowError(f"cannot list the input images: {error}")

SHARDS = layout.shard_ids(INVENTORY.n_shards)

try:
    TEXT_PLAN = (
        build_text_plan(config["input"]["page_map"], config["input"]["pages"], INVENTORY.n_shards)
        if config["input"]["page_map"]
        else None
    )
except InventoryError as error:
    raise WorkflowError(f"cannot read the page mapping: {error}")

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
