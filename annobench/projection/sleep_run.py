"""The simulator against Snakemake's own scheduler: a projected DAG run by the real Snakemake,
every job only sleeping its costed time divided by a factor.

The synthetic Snakefile has one rule per real rule (wildcard `{job}`, output
jobs/RULE/{job}.done, input the .done files of the jobs it needs), each job's threads, memory
and priority as planned, and a shell command that sleeps and writes when it began and ended: a
shell job needs no Python process, so many sleeping jobs cost a 2-core machine nothing. The
makespan is read from the jobs' own clocks (first start to last end), so Snakemake's start-up
and DAG building do not count; its latency between a job's end and the next start does, times
the factor. To tell that from the order Snakemake chose, the simulator also replays the run:
the same jobs started in the order Snakemake started them, with no latency.

Every .done file has the same size, so where Snakemake's greedy scheduler ranks the ready jobs
of one priority by the bytes of their inputs, the sleep run ranks them by their number of
inputs; a real build's bytes may order them otherwise.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from annobench.projection.schedule import SimJob, simulate

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "profiles" / "default" / "config.yaml"
TARGET_RULE = "sleep_run_all"  # the real workflow has a rule `all` of its own
HEADER = '''import json
from pathlib import Path

JOBS = json.loads((Path(workflow.basedir) / "jobs.json").read_text())


def done(name):
    return f"jobs/{JOBS[name]['rule']}/{name}.done"


def needs(wildcards):
    return [done(name) for name in JOBS[wildcards.job]["after"]]


def job_value(key):
    return lambda wildcards: JOBS[wildcards.job][key]


rule %s:
    input: [done(name) for name in JOBS]
''' % TARGET_RULE
# Fixed-width clocks (%s.%N), so every .done file has the same size; `sleep` takes fractions.
RULE = '''
rule {rule}:
    output: "jobs/{rule}/{{job}}.done"
    input: needs
    threads: job_value("threads")
    resources: mem_mb=job_value("mem_mb")
    priority: job_value("priority")
    params: seconds=job_value("sleep")
    shell: "start=$(date +%s.%N); sleep {{params.seconds}}; echo $start $(date +%s.%N) > {{output}}"
'''


@dataclass
class SleepRun:
    jobs: int
    cores: int
    factor: float
    measured: float  # Snakemake's makespan from the jobs' clocks, times the factor
    simulated: float  # simulate()'s makespan of the same jobs at full length
    replayed: float  # simulate() following the order Snakemake started the jobs in
    wall: float  # seconds the snakemake command took, start-up included
    spans: dict[str, tuple[float, float]]  # job -> (start, end), seconds after the first start, unscaled

    @property
    def ratio(self) -> float:
        """Snakemake's makespan over the simulator's."""
        return self.measured / self.simulated if self.simulated else float("nan")

    @property
    def latency(self) -> float:
        """What Snakemake's time between jobs added, times the factor: measured - replayed."""
        return self.measured - self.replayed


def write_workflow(jobs: dict[str, SimJob], folder: Path, factor: float) -> Path:
    """The synthetic Snakefile (and its jobs.json) of `jobs` in `folder`; each job sleeps seconds / factor."""
    folder.mkdir(parents=True, exist_ok=True)
    table = {name: {"rule": job.rule, "after": list(job.after), "threads": job.threads,
                    "mem_mb": round(job.mem_mb), "priority": job.priority, "sleep": f"{job.seconds / factor:.3f}"}
             for name, job in jobs.items()}
    (folder / "jobs.json").write_text(json.dumps(table))
    snakefile = folder / "Snakefile"
    snakefile.write_text(HEADER + "".join(RULE.format(rule=rule) for rule in sorted({j.rule for j in jobs.values()})))
    return snakefile


def profile_scheduler(profile: Path = PROFILE) -> str:
    """The scheduler the project's default profile sets (Snakemake's default, ilp, if none)."""
    settings = yaml.safe_load(profile.read_text()) if profile.exists() else {}
    return settings.get("scheduler", "ilp")


def run_workflow(snakefile: Path, workdir: Path, cores: int, mem_mb: float) -> float:
    """Run the synthetic workflow with the real Snakemake and the profile's scheduler; its wall time."""
    command = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "-d", str(workdir), "--cores", str(cores),
               "--resources", f"mem_mb={int(mem_mb)}", "--scheduler", profile_scheduler(),
               "--workflow-profile", "none", "--drop-metadata", "--quiet"]
    began = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode:
        raise RuntimeError(f"the sleep run failed ({done.returncode}):\n{done.stdout[-4000:]}")
    return time.monotonic() - began


def job_spans(workdir: Path, jobs: dict[str, SimJob]) -> dict[str, tuple[float, float]]:
    """Each job's (start, end) from its .done file, in seconds after the first job's start."""
    clocks = {}
    for name, job in jobs.items():
        start, end = (workdir / "jobs" / job.rule / f"{name}.done").read_text().split()
        clocks[name] = (float(start), float(end))
    first = min(start for start, _ in clocks.values())
    return {name: (start - first, end - first) for name, (start, end) in clocks.items()}


def started_order(spans: dict[str, tuple[float, float]]):
    """An `order` for simulate(): the jobs ranked as Snakemake started them, the earliest first."""
    return lambda jobs: {name: -spans[name][0] for name in jobs}


def sleep_run(jobs: dict[str, SimJob], cores: int, mem_mb: float, factor: float, workdir: Path) -> SleepRun:
    """Run `jobs` sleeping 1/factor of their time under Snakemake in `workdir` (a new folder), and
    simulate them at full length on the same cores and memory."""
    snakefile = write_workflow(jobs, workdir / "workflow", factor)
    wall = run_workflow(snakefile, workdir / "run", cores, mem_mb)
    spans = job_spans(workdir / "run", jobs)
    measured = max(end for _, end in spans.values()) * factor
    simulated = simulate(list(jobs.values()), cores, mem_mb).makespan
    replayed = simulate(list(jobs.values()), cores, mem_mb, order=started_order(spans)).makespan
    return SleepRun(len(jobs), cores, factor, measured, simulated, replayed, wall, spans)
