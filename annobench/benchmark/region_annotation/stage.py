"""The region-level benchmark of the workflow (Escalante et al. 2008, section 5): the SAIAPR
protocol on the regions' labels, rule region_benchmark.

A job function, callable without Snakemake; regions are taken in key order,
so the outputs are the same bytes whatever the shards or cores.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from annobench.benchmark.json_form import json_bytes
from annobench.benchmark.region_annotation.measure import region_measures
from annobench.benchmark.region_annotation.splits import region_subsets
from annobench.benchmark.settings import BenchmarkSettings
from annobench.benchmark.splits import unit_hash
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.jobs import Job
from annobench.core.tables import write_table


def rooted(parents: dict[str, str]) -> dict[str, str]:
    """The ontology with one root, for e_ontology's depths (the root's children have depth 1,
    Escalante et al. 2008, section 5): a single top label is the root itself; several top labels
    become children of a virtual root."""
    tops = sorted(set(parents.values()) - set(parents))
    if len(tops) <= 1:
        return dict(parents)
    return {**parents, **{top: "(root)" for top in tops}}


def build_region_benchmark(settings: BenchmarkSettings, regions_tables: list[str], outputs: dict, log) -> None:
    """SAIAPR protocol: class subsets, 70/30 region split, the uniform-random baseline scored with
    e_hard and e_ontology (Escalante et al. 2008, section 5)."""
    split = settings.region_split
    regions = pd.concat([pd.read_parquet(p) for p in regions_tables], ignore_index=True)
    table = region_subsets(regions, split["subset_sizes"], split["train_fraction"], split["seed"])
    write_table(table, outputs["region_splits"], "region_splits", params=split)
    frame = table.to_pandas()
    parents = rooted(settings.parents())
    results, predictions = [], []
    for subset, part in frame.groupby("subset", sort=True):
        classes = sorted(part["label"].unique())
        test = part[part["split"] == "test"]
        # Uniform random label from the subset's classes, drawn per region from its key and the seed.
        keys = [f"{subset}/{i}/{a}/{r}" for i, a, r in zip(test["image_id"], test["annotator"], test["region_id"])]
        predicted = [classes[int(unit_hash(settings.seed, key) * len(classes))] for key in keys]
        measures = region_measures(list(test["label"]), predicted, parents or None)
        results.append({"subset": int(subset), "classes": len(classes), "train_regions": int((part["split"] == "train").sum()),
                        **measures})
        predictions.append(test.assign(predicted=predicted))
    runs = pd.concat(predictions, ignore_index=True) if predictions else frame.assign(predicted=[])
    write_table(pa.Table.from_pandas(runs, preserve_index=False), outputs["run"], "region_run",
                params={"baseline": "uniform_random", "seed": settings.seed})
    write_bytes_atomic(outputs["evaluation"], json_bytes({"run": "regions_random", "subsets": results}))
    log(f"region benchmark: {len(results)} subsets, {len(runs)} test regions")


def region_benchmark_job(job: Job) -> None:
    """Rule region_benchmark: the SAIAPR region protocol over every shard's regions."""
    build_region_benchmark(BenchmarkSettings.from_config(job.config), job.input_list("regions"), job.outputs,
                           job.log)
