"""The simulator against reality: a real build's own DAG, costed by the calibration, simulated
on the build's cores and compared with the wall time Snakemake measured.

`annobench bench` builds in two steps (up to the codebooks, then the rest): when the
metadata shows every codebook job and its ancestors ended before any other job began, the two
steps are simulated one after the other, as they ran.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from annobench.core.provenance import RECORDS
from annobench.projection.costs import RECORDLESS, BuildSizes, Calibration
from annobench.projection.dag import planned_jobs
from annobench.projection.schedule import SimJob, simulate

# A stretch with no job running longer than this is a build stopped and resumed, not Snakemake's work.
IDLE_SECONDS = 60.0


@dataclass
class Replay:
    workdir: Path
    cores: int
    measured: float  # first job's start to last job's end (idle stretches aside), summed over steps
    simulated_quiet: float  # the model on a machine to itself
    simulated_loaded: float  # the same, slowed as the machine ran during the build
    factor: float
    jobs: int

    @property
    def error(self) -> float:
        return self.simulated_loaded / self.measured - 1


def replay(workdir: Path, cores: int, calibration: Calibration) -> Replay:
    build = BuildSizes(workdir)
    with tempfile.TemporaryDirectory(prefix="annobench-replay-") as scratch:
        planned = planned_jobs(workdir / "config.yaml", Path(scratch), cores)
    spans = job_spans(workdir, build.config["output"], planned)
    steps = bench_steps(planned, spans)
    factor = calibration.slowdown.get(str(workdir)).factor if str(workdir) in calibration.slowdown else 1.0
    quiet = loaded = measured = 0.0
    for step in steps:
        jobs = step_jobs(planned, step, build, calibration)
        quiet += simulate(jobs, cores).makespan
        loaded += simulate([replace(j, seconds=j.seconds * factor) for j in jobs], cores).makespan
        measured += busy_span([spans[name] for name in step if name in spans])
    return Replay(workdir, cores, measured, quiet, loaded, factor, len(planned))


def busy_span(timed: list[tuple[float, float]], idle: float = IDLE_SECONDS) -> float:
    """First start to last end, less every stretch longer than `idle` when no job ran (a build
    stopped and resumed later: Snakemake was not running)."""
    total, segment = 0.0, None
    for start, end in sorted(timed):
        if segment and start - segment[1] > idle:
            total += segment[1] - segment[0]
            segment = None
        segment = [start, end] if segment is None else [segment[0], max(segment[1], end)]
    return total + (segment[1] - segment[0] if segment else 0.0)


def job_spans(workdir: Path, output: str, planned: list[dict]) -> dict[str, tuple[float, float]]:
    """Job name -> (start, end) from Snakemake's metadata on the job's first output."""
    from annobench.projection.costs import metadata_meta

    spans = {}
    for job in planned:
        for path in job["outputs"]:
            meta = metadata_meta(workdir, path)
            if meta:
                spans[job["name"]] = (meta["starttime"], meta["endtime"])
                break
    return spans


def bench_steps(planned: list[dict], spans: dict) -> list[set[str]]:
    by_name = {job["name"]: job for job in planned}
    first = set()
    todo = [name for name in by_name if by_name[name]["rule"].startswith("bow_codebook_")]
    while todo:
        name = todo.pop()
        if name not in first:
            first.add(name)
            todo.extend(by_name[name]["after"])
    rest = set(by_name) - first
    first_end = max((spans[n][1] for n in first if n in spans), default=None)
    rest_start = min((spans[n][0] for n in rest if n in spans), default=None)
    if first and first_end is not None and rest_start is not None and first_end <= rest_start:
        return [first, rest]
    return [set(by_name)]


def step_jobs(planned: list[dict], step: set[str], build: BuildSizes, calibration: Calibration) -> list[SimJob]:
    """The step's jobs costed by the model at the build's own sizes (dependencies outside the step are done)."""
    jobs = []
    for job in planned:
        if job["name"] not in step:
            continue
        record_path = build.out / RECORDS / f"{job['name']}.json"
        seconds = 0.0
        if record_path.exists():
            rule, units, read = build.costed(json.loads(record_path.read_text()))
            cost = calibration.cost_of(rule)
            if cost is None:  # --out-of-sample from builds that never ran it
                raise ValueError(f"no calibration build ran rule {rule}, which {build.workdir} ran: "
                                 "give --records of one that did")
            seconds = cost.seconds(units, read, job["threads"])
        elif job["rule"] in RECORDLESS and job["rule"] in calibration.rules:
            seconds = calibration.rules[job["rule"]].seconds(build.n_images, build.n_images, job["threads"])
        jobs.append(SimJob(job["name"], job["rule"], seconds, job["threads"], job["mem_mb"],
                           tuple(n for n in job["after"] if n in step), job.get("priority", 0)))
    return jobs
