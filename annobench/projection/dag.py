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
import subprocess
import sys
from pathlib import Path

import yaml

from annobench.core.provenance import record_name

REPO = Path(__file__).resolve().parents[2]
SNAKEFILE = REPO / "Snakefile"
FULL_SCALE = 510_123
# ImageCLEF 2014 (the shape the issue calls 2014): ground truth for 1,940 dev + 7,291 test
# images, the k-NN and co-occurrence baselines against 500,000 training images.
TRUTH_2014 = 1_940 + 7_291
TRAIN_2014 = 500_000


def shape_sizes(shape: str, n_images: int) -> dict[str, int]:
    """Queries (images that get a run) and references (training images) of a shape, scaled to
    n_images: 2014 -- the 9,231 images with ground truth against 500,000; 2016 -- every image."""
    train = max(1, round(TRAIN_2014 * n_images / FULL_SCALE))
    if shape == "2014":
        return {"queries": max(1, round(TRUTH_2014 * n_images / FULL_SCALE)), "references": train}
    if shape == "2016":
        return {"queries": n_images, "references": train}
    raise ValueError(f"unknown shape {shape!r} (2014 or 2016)")


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
    """A config planning N images with pages, segmentations and the benchmark of `shape`
    (2016 adds its subtasks: boxes from the segmentations, harvested captions, illustration);
    with `cnn` (features.cnn, absolute paths), those networks too, and the baselines on them."""
    folder.mkdir(parents=True, exist_ok=True)
    ids = synthetic_ids(n_images)
    (folder / "images.csv").write_text("image_id,path\n" + "".join(f"{i},missing/{i}.jpg\n" for i in ids))
    (folder / "page_map.csv").write_text(
        "image_id,page_id,img_src\n" + "".join(f"{i},p{k // 2:07d}.html,{i}.jpg\n" for k, i in enumerate(ids)))
    (folder / "truth.csv").write_text("image_id,concept\n" + "".join(f"{i},c{k % 100}\n" for k, i in enumerate(ids)))
    for empty in ("pages", "segmentations"):
        (folder / empty).mkdir(exist_ok=True)
    benchmark = {"ground_truth": {"source": "csv", "path": str(folder / "truth.csv")}}
    if cnn:
        from annobench.core.config import load_config
        from annobench.visual.cnn import table_name

        benchmark["features"] = [*load_config()["benchmark"]["features"], *map(table_name, sorted(cnn))]
    if shape == "2016":
        benchmark.update(boxes={"source": "segmentations"}, captions={"references": "harvested"},
                         illustration={"enabled": True, "images": "all"})
    config = {
        "output": "out",
        "input": {"image_list": str(folder / "images.csv"), "pages": str(folder / "pages"),
                  "page_map": str(folder / "page_map.csv"), "segmentations": str(folder / "segmentations")},
        "sharding": {"images_per_shard": images_per_shard, "merge_below_images": 0},
        "segmentations": {"kind": "bsds", "annotator": 1},
        "benchmark": benchmark,
    }
    if cnn:
        config["features"] = {"cnn": cnn}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


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
