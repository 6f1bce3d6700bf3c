"""The spread of the image-annotation measures, for the results tables' intervals and order
(Villegas and Paredes 2014, section 3.3, Table 2 and Figures 2-3): rule campaign_baselines for
the baseline runs, and each submitted annotation run's own job.

Per run and subset of the test images ("all", then each of `benchmark.campaign.subsets`), the
mean, population standard deviation and number of the individual values behind MAP-samples and
MF1-samples (one per image) and MF1-concepts (one per concept); on the whole test set also
MF1-concepts over the unseen concepts (those of the test truth absent from the development
truth, the overview's "unseen" column). The means are the evaluation's measures; the intervals
follow from the three numbers (intervals.wilson_interval).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from annobench.benchmark.annotation.ground_truth import read_ground_truth_table, truth_matrix
from annobench.benchmark.annotation.measure import imageclef_2013_samples
from annobench.benchmark.campaign.intervals import sample_statistics
from annobench.benchmark.image_list import read_image_list
from annobench.core.errors import AnnobenchError
from annobench.core.jobs import Job
from annobench.core.fsutil import write_bytes_atomic

MEASURES = ("MAP-samples", "MF1-samples", "MF1-concepts")
UNSEEN = "MF1-concepts (unseen)"
ORDER_MEASURES = (*MEASURES, UNSEEN)  # the four measures of the average rank
ALL = "all"


class SubsetError(AnnobenchError):
    """A subset of benchmark.campaign.subsets that cannot be used."""


def read_subsets(subsets: dict[str, str], test_ids: list[str]) -> dict[str, list[str]]:
    """Each named subset's test images (in test order); an image outside the test split is left out,
    a subset with no test image is an error."""
    tested = set(test_ids)
    found = {}
    for name, path in sorted(subsets.items()):
        if name == ALL:
            raise SubsetError("benchmark.campaign.subsets: 'all' names the whole test set; give the subset "
                              "another name")
        ids = set(read_image_list(path).ids)
        kept = [i for i in test_ids if i in ids]
        if not kept:
            raise SubsetError(f"benchmark.campaign.subsets.{name}: none of the {len(ids)} images of {path} is a "
                              "test image")
        found[name] = kept
    return found


def unseen_concepts(path: str | Path) -> list[str]:
    return [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line]


def annotation_statistics(run, truth: np.ndarray, unseen: list[str], subsets: dict[str, list[str]],
                          seed: int) -> dict:
    """{subset: {measure: {"value", "std", "samples"}}} of a run (runs.model.Run) on its images."""
    position = {image_id: row for row, image_id in enumerate(run.image_ids)}
    parts = {ALL: np.arange(len(run.image_ids))}
    parts.update({name: np.array([position[i] for i in ids if i in position], dtype=np.int64)
                  for name, ids in subsets.items()})
    found = {}
    for name, rows in parts.items():
        listed = run.listed[rows] if run.listed is not None else None
        values = imageclef_2013_samples(truth[rows], run.scores[rows], run.decisions[rows], listed, seed=seed)
        found[name] = {measure: sample_statistics(values[measure]) for measure in MEASURES}
    columns = [run.concepts.index(c) for c in unseen if c in run.concepts]
    values = []
    if columns:
        listed = run.listed[:, columns] if run.listed is not None else None
        values = imageclef_2013_samples(truth[:, columns], run.scores[:, columns], run.decisions[:, columns],
                                        listed, seed=seed)["MF1-concepts"]
    found[ALL][UNSEEN] = sample_statistics(values)
    return found


def test_truth(truth_table: str, image_ids: list[str], concepts: list[str]) -> np.ndarray:
    return truth_matrix(read_ground_truth_table(truth_table).label_sets(), image_ids, concepts)


def subset_paths(config: dict) -> dict[str, str]:
    return dict(config["benchmark"]["campaign"]["subsets"])


def baselines_job(job: Job) -> list[dict]:
    """Rule campaign_baselines: the statistics of every annotation baseline run, one JSON; computed
    here, or gathered from the runs' own jobs (rule campaign_run_statistics), the same bytes."""
    import json

    from annobench.benchmark.json_form import json_bytes

    context = _statistics_context(job)
    if job.input_list("run_statistics"):
        found = {Path(path).stem: json.loads(Path(path).read_text(encoding="utf-8"))
                 for path in sorted(job.input_list("run_statistics"))}
    else:
        found = {Path(path).stem: _run_statistics(path, context) for path in sorted(job.input_list("runs"))}
    write_bytes_atomic(job.output("statistics"), json_bytes({
        "runs": found, "unseen_concepts": context["unseen"],
        "subsets": {k: len(v) for k, v in context["subsets"].items()}}))
    job.log(f"statistics of {len(found)} baseline runs on {len(context['test_ids'])} test images, "
            f"{len(context['subsets'])} subset(s), {len(context['unseen'])} unseen concept(s)")
    return _subset_files(job)


def run_statistics_job(job: Job) -> list[dict]:
    """Rule campaign_run_statistics: one baseline run's statistics, for campaign_baselines."""
    from annobench.benchmark.json_form import json_bytes

    path = job.input("runs")
    write_bytes_atomic(job.output("statistics"), json_bytes(_run_statistics(path, _statistics_context(job))))
    job.log(f"statistics of {Path(path).stem}")
    return _subset_files(job)


def _statistics_context(job: Job) -> dict:
    """What every run's statistics read: concepts, test images, subsets, unseen concepts, truth, seed."""
    from annobench.benchmark.splits import split_ids

    test_ids = split_ids(job.input("splits"), "test")
    return {"concepts": pq.read_table(job.input("concepts"), columns=["concept"]).column(0).to_pylist(),
            "test_ids": test_ids, "subsets": read_subsets(subset_paths(job.config), test_ids),
            "unseen": unseen_concepts(Path(job.input("truth")) / "annotation" / "unseen_concepts.txt"),
            "truth": str(Path(job.input("truth")) / "annotation" / "ground_truth.parquet"),
            "seed": job.config["benchmark"]["evaluation"]["seed"]}


def _run_statistics(path: str, context: dict) -> dict:
    from annobench.benchmark.runs.files import read_run

    run = read_run(path, context["concepts"])
    return annotation_statistics(run, test_truth(context["truth"], run.image_ids, context["concepts"]),
                                 context["unseen"], context["subsets"], context["seed"])


def _subset_files(job: Job) -> list[dict]:
    from annobench.core.provenance import raw_file

    return [raw_file(path, f"subsets/{name}/{Path(path).name}", role="campaign_subset")
            for name, path in sorted(subset_paths(job.config).items())]
