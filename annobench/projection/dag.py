"""The jobs of a build as Snakemake plans them, from the real Snakefile, without the real data.

Snakemake plans the shards from the image inventory (workflow/rules/common.smk builds it
from input.image_list), and the text jobs from input.page_map. Neither reads an image at
plan time (the paths are only stat'ed for the shards' fingerprints, where a missing file
reads as "missing"), so a synthetic image list of N ids with paths that do not exist, and a
page map putting them on pages, plan the same DAG as N real images would. The DAG is built
by Snakemake's own API in a child process (the API changes the working directory and sets
up logging), which writes each job's rule, wildcards, threads, memory, priority (the rule's
`priority:`) and dependencies.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
import subprocess
import sys
from pathlib import Path

import yaml

from annobench.core.provenance import record_name

REPO = Path(__file__).resolve().parents[2]
SNAKEFILE = REPO / "Snakefile"
FULL_SCALE = 510_123


@dataclass(frozen=True)
class Shape:
    """A real release the projection plans: its images, its inputs and its benchmark's sizes at
    full size (`sizes`: queries a run covers, training images searched, images with ground truth,
    text-illustration queries and candidates), scaled with the images when projected smaller."""
    name: str
    title: str
    images: int
    sizes: dict
    pages: bool = True
    segmentations: bool = False
    subtasks: tuple[str, ...] = ()  # of ImageCLEF 2016: boxes, captions, selection, illustration
    benchmark: dict = field(default_factory=dict)  # benchmark settings its maintainer would set


SHAPES = {shape.name: shape for shape in (
    # Villegas and Paredes 2014 (WEBUPV): 510,123 web images with their pages, no segmentations;
    # ground truth for 1,940 development + 7,291 test images, the baselines against 500,000 training images.
    # Its queries are under 2 % of the images: one test block (9,231 vectors, gathered once) against
    # the training blocks, instead of a test block per 20,000 images that each reads the training
    # vectors again; training blocks of 20,000 images, so that the parts that wait for the last
    # bag of words are short (a bag of words' part about 30 s).
    Shape("webupv2014", "WEBUPV 2014", FULL_SCALE,
          {"queries": 9_231, "references": 500_000, "truth_queries": 9_231},
          benchmark={"neighbours": {"test_block_images": FULL_SCALE, "training_block_images": 20_000}}),
    # Gilbert et al. 2016, section 2.4: the same collection; annotation and localisation runs for every
    # image from the 2,000 development images with ground truth; captions and content selection on the
    # development and test sets (2,000 + 3,070); the teaser's 180,000 page texts ranking the 200,000 test
    # images (the 310,123 others its training set).
    Shape("imageclef2016", "ImageCLEF 2016", FULL_SCALE,
          {"queries": FULL_SCALE, "references": 2_000, "truth_queries": 5_070,
           "illustration_queries": 180_000, "illustration_candidates": 200_000},
          subtasks=("boxes", "captions", "selection", "illustration")),
    # Escalante et al. 2008 (SAIAPR TC-12): 20,000 segmented images, region labels, no pages; the image
    # benchmark from the region labels in the default 60/10/30 split, and the region benchmark.
    Shape("saiapr", "SAIAPR TC-12", 20_000, {"queries": 8_000, "references": 12_000, "truth_queries": 8_000},
          pages=False, segmentations=True),
)}


def shape_config(shape: str) -> dict:
    """The default config with a shape's own benchmark settings."""
    from annobench.core.config import deep_merge, load_config

    return deep_merge(load_config(), {"benchmark": SHAPES[shape].benchmark})


def shape_sizes(shape: str, n_images: int) -> dict[str, int]:
    """A shape's benchmark sizes (Shape.sizes) scaled to n_images."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r} ({', '.join(SHAPES)})")
    full = SHAPES[shape]
    return {what: max(1, round(size * n_images / full.images)) for what, size in full.sizes.items()}


def synthetic_ids(n_images: int) -> list[str]:
    return [f"img{k:07d}" for k in range(n_images)]


def synthetic_shard_sizes(n_images: int, images_per_shard: int) -> list[int]:
    """The images of each shard of the synthetic list, as the inventory deals them (by id hash)."""
    from annobench.sources.ids import shard_count, shard_of

    shards = shard_count(n_images, images_per_shard)
    sizes = [0] * shards
    for image_id in synthetic_ids(n_images):
        sizes[shard_of(image_id, shards)] += 1
    return sizes


def synthetic_config(folder: Path, n_images: int, shape: str, images_per_shard: int = 2000,
                     cnn: dict | None = None) -> Path:
    """A config planning N images with the inputs and benchmark of `shape` (Shape); with `cnn`
    (features.cnn, absolute paths), those networks too, and the baselines on them."""
    spec = SHAPES[shape]
    folder.mkdir(parents=True, exist_ok=True)
    ids = synthetic_ids(n_images)
    (folder / "images.csv").write_text("image_id,path\n" + "".join(f"{i},missing/{i}.jpg\n" for i in ids))
    (folder / "truth.csv").write_text("image_id,concept\n" + "".join(f"{i},c{k % 100}\n" for k, i in enumerate(ids)))
    inputs = {"image_list": str(folder / "images.csv"), "pages": "", "page_map": "", "segmentations": ""}
    if spec.pages:
        (folder / "pages").mkdir(exist_ok=True)
        (folder / "page_map.csv").write_text(
            "image_id,page_id,img_src\n" + "".join(f"{i},p{k // 2:07d}.html,{i}.jpg\n" for k, i in enumerate(ids)))
        inputs.update(pages=str(folder / "pages"), page_map=str(folder / "page_map.csv"))
    if spec.segmentations:
        (folder / "segmentations").mkdir(exist_ok=True)
        inputs["segmentations"] = str(folder / "segmentations")
    benchmark = {"ground_truth": {"source": "csv", "path": str(folder / "truth.csv")}, **subtask_settings(spec, folder),
                 **spec.benchmark}
    if cnn:
        from annobench.core.config import load_config
        from annobench.visual.cnn import table_name

        benchmark["features"] = [*load_config()["benchmark"]["features"], *map(table_name, sorted(cnn))]
    config = {"output": "out", "input": inputs,
              "sharding": {"images_per_shard": images_per_shard, "merge_below_images": 0},
              "segmentations": {"kind": "bsds", "annotator": 1}, "benchmark": benchmark}
    if cnn:
        config["features"] = {"cnn": cnn}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def subtask_settings(spec: Shape, folder: Path) -> dict:
    """benchmark sections of the 2016 subtasks a shape has (files named, never read at planning)."""
    settings = {}
    if "boxes" in spec.subtasks:
        settings["boxes"] = {"source": "table", "path": str(folder / "boxes.csv")}
    if "selection" in spec.subtasks:
        settings["selection"] = {"truth": str(folder / "descriptions.csv"), "instances": str(folder / "instances.csv")}
    if "captions" in spec.subtasks:
        settings["captions"] = {"references": "harvested"}
    if "illustration" in spec.subtasks:
        settings["illustration"] = {"enabled": True, "images": "test"}
    return settings


def planned_jobs(config: Path, workdir: Path, cores: int = 32) -> list[dict]:
    """Every job Snakemake would run for `config` from an empty output folder (see module docstring)."""
    workdir.mkdir(parents=True, exist_ok=True)
    listing = workdir / "planned_jobs.json"
    command = [sys.executable, "-m", "annobench.projection.dag", str(config), str(workdir), str(cores), str(listing)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if done.returncode:
        raise RuntimeError(f"snakemake could not plan {config}:\n{done.stdout[-4000:]}")
    return json.loads(listing.read_text())


def _plan_in_this_process(config: Path, workdir: Path, cores: int) -> list[dict]:
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (ConfigSettings, DAGSettings, DeploymentSettings, OutputSettings,
                                          ResourceSettings, StorageSettings, WorkflowSettings)

    with SnakemakeApi(OutputSettings()) as api:
        workflow_api = api.workflow(
            snakefile=SNAKEFILE, workdir=workdir, config_settings=ConfigSettings(configfiles=[config]),
            resource_settings=ResourceSettings(cores=cores), storage_settings=StorageSettings(),
            workflow_settings=WorkflowSettings(), deployment_settings=DeploymentSettings())
        workflow_api.dag(DAGSettings(forceall=True))
        # What `snakemake --dag` does (Workflow.printdag), keeping the DAG instead of printing it.
        workflow = workflow_api._workflow
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True, nolock=True)
        workflow._build_dag()
        dag = workflow.dag
        return [_job_entry(job, dag.dependencies[job]) for job in dag.needrun_jobs()]


def job_name(rule: str, wildcards: dict) -> str:
    """A job's name: its provenance record's file name, so planned jobs meet their records."""
    return record_name(rule, wildcards)


def _job_entry(job, dependencies) -> dict:
    wildcards = dict(job.wildcards.items())
    return {"name": job_name(job.rule.name, wildcards), "rule": job.rule.name, "wildcards": wildcards,
            "threads": job.threads, "mem_mb": job.resources.get("mem_mb", 0),
            "priority": job.rule.expand_priority(job.wildcards_dict, job.input, job.attempt),
            "after": sorted({job_name(d.rule.name, dict(d.wildcards.items())) for d in dependencies}),
            "outputs": [str(path) for path in job.output]}


if __name__ == "__main__":
    config_path, work, n_cores, out = sys.argv[1:5]
    jobs = _plan_in_this_process(Path(config_path).resolve(), Path(work).resolve(), int(n_cores))
    Path(out).write_text(json.dumps(jobs))
