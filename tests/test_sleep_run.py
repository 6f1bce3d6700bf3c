"""The sleep run: a hand-made DAG run by the real Snakemake, each job sleeping its time, beside
the simulator's schedule of the same jobs."""

from __future__ import annotations

import pytest

from annobench.projection.schedule import SimJob, remaining_paths, simulate
from annobench.projection.sleep_run import sleep_run

CORES, MEM_MB = 4, 4000
FACTOR = 100  # the jobs' seconds below sleep 0.05-0.6 s


def small_build() -> dict[str, SimJob]:
    """Four shards: ingest -> a feature (priority 1) and a two-thread text job; a search per pair
    of shards' features (1,500 MB: two at a time fit, not four); a four-thread codebook on every
    ingest (the longest path, at priority 0); a statistics job on the texts (3,500 MB: one small
    job fits beside it); a merge and a report at the end. 30 jobs."""
    shards = range(4)
    jobs = [SimJob(f"ingest-{s}", "ingest", 10.0, mem_mb=500) for s in shards]
    jobs += [SimJob(f"feature-{s}", "feature", 20.0 + 5 * s, mem_mb=500, after=(f"ingest-{s}",), priority=1)
             for s in shards]
    jobs += [SimJob(f"text-{s}", "text", 5.0, threads=2, mem_mb=500, after=(f"ingest-{s}",)) for s in shards]
    pairs = [(a, b) for a in shards for b in shards if a <= b]
    jobs += [SimJob(f"search-{a}-{b}", "search", 15.0, mem_mb=1500, after=(f"feature-{a}", f"feature-{b}"))
             for a, b in pairs]
    jobs += [SimJob("codebook", "codebook", 60.0, threads=4, mem_mb=1000, after=tuple(f"ingest-{s}" for s in shards)),
             SimJob("stats", "stats", 20.0, mem_mb=3500, after=tuple(f"text-{s}" for s in shards)),
             SimJob("merge", "merge", 5.0, mem_mb=500, after=("codebook", *(f"search-{a}-{b}" for a, b in pairs))),
             SimJob("report", "report", 10.0, mem_mb=500, after=("merge", "stats"))]
    return {job.name: job for job in jobs}


def in_use(jobs: dict[str, SimJob], spans: dict, what) -> float:
    """The most of `what` (a job -> amount) the running jobs held at any job's start."""
    return max(sum(what(jobs[other]) for other, (start, end) in spans.items() if start <= when < end)
               for when, _ in spans.values())


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return sleep_run(small_build(), CORES, MEM_MB, FACTOR, tmp_path_factory.mktemp("sleep_run"))


def test_every_job_runs_after_the_jobs_it_needs(run):
    jobs = small_build()
    assert set(run.spans) == set(jobs)
    for name, job in jobs.items():
        for need in job.after:
            assert run.spans[name][0] >= run.spans[need][1], f"{name} began before {need} ended"


def test_snakemake_keeps_to_the_cores_and_memory_and_sleeps_the_scaled_time(run):
    jobs = small_build()
    assert in_use(jobs, run.spans, lambda job: job.threads) <= CORES
    assert in_use(jobs, run.spans, lambda job: job.mem_mb) <= MEM_MB
    # stats (3,500 MB) ran with at most one other job beside it: 500 MB each.
    start, end = run.spans["stats"]
    assert sum(s < end and start < e for s, e in run.spans.values()) <= 2
    slept = {name: end - start for name, (start, end) in run.spans.items()}
    assert slept["codebook"] == pytest.approx(jobs["codebook"].seconds / FACTOR, abs=0.1)


def test_the_measured_makespan_is_near_the_simulated_one(run):
    simulated = simulate(list(small_build().values()), CORES, MEM_MB).makespan
    assert run.simulated == pytest.approx(simulated)
    # Snakemake starts a job some 10-100 ms after a job ends, x FACTOR here: a few jobs in a row.
    assert simulated * 0.9 <= run.measured <= simulated * 1.4
    # Snakemake's own start order, replayed without its latency, is the simulated schedule's
    # (200 s) but for ties it breaks otherwise (205 s in seven runs).
    assert run.replayed == pytest.approx(simulated, rel=0.1)


def test_snakemake_and_the_simulator_start_the_jobs_of_higher_priority_first(run):
    jobs = small_build()
    features = [name for name in jobs if name.startswith("feature-")]
    simulated = simulate(list(jobs.values()), CORES, MEM_MB)
    measured = {name: start for name, (start, _) in run.spans.items()}
    for start in (measured, simulated.start):
        assert max(start[name] for name in features) < start["codebook"]
    # By the longest path alone, the codebook (60 + 5 + 10 s) would have gone first.
    assert simulate(list(jobs.values()), CORES, MEM_MB, order=remaining_paths).start["codebook"] == 10.0
