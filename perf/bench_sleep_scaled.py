"""The schedule simulator against Snakemake's own scheduler on a full-size planned DAG: the
real Snakemake runs every projected job as a sleep of its costed time / --factor
(annobench/projection/sleep_run.py), beside simulate()'s makespan of the same jobs.

    python3 perf/bench_sleep_scaled.py --records BUILD_DIR [--records ...] [--shape 2014]
        [--images 510123] [--cores 32] [--mem-mb 256000] [--factor F | --minutes 4]
        [--jobs CACHE.json] [--workdir DIR]

Planning 510,123 images takes about a minute: --jobs keeps the costed jobs in a file (written
if missing, read if there). Without --factor, the sleep run is meant to last --minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annobench.projection.costs import calibrate  # noqa: E402
from annobench.projection.dag import SHAPES  # noqa: E402
from annobench.projection.project import project  # noqa: E402
from annobench.projection.schedule import SimJob, simulate  # noqa: E402
from annobench.projection.sleep_run import sleep_run  # noqa: E402


def costed_jobs(args) -> dict[str, SimJob]:
    """The projection's jobs, from the --jobs cache when it exists (the plan takes a minute)."""
    if args.jobs and args.jobs.exists():
        rows = json.loads(args.jobs.read_text())
        return {row["name"]: SimJob(**{**row, "after": tuple(row["after"])}) for row in rows}
    calibration = calibrate([path.resolve() for path in args.records])
    projection = project(args.shape, args.images, args.cores, calibration, args.mem_mb)
    if projection.refused:
        sys.exit(f"no calibration build ran {', '.join(sorted(projection.refused))}: give --records of one that did")
    jobs = projection.jobs
    if args.jobs:
        args.jobs.write_text(json.dumps([asdict(job) for job in jobs.values()]))
    return jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=Path, action="append", default=[], help="a calibration build (repeatable)")
    parser.add_argument("--shape", default="webupv2014", choices=sorted(SHAPES))
    parser.add_argument("--images", type=int, default=None, help="default: the shape's own")
    parser.add_argument("--cores", type=int, default=32)
    parser.add_argument("--mem-mb", type=float, default=256_000)
    parser.add_argument("--factor", type=float, help="each job sleeps its costed seconds / factor")
    parser.add_argument("--minutes", type=float, default=4.0, help="without --factor: the sleep run's aimed length")
    parser.add_argument("--jobs", type=Path, help="cache of the costed jobs (JSON)")
    parser.add_argument("--workdir", type=Path, help="keep the sleep run here (a new folder)")
    args = parser.parse_args()
    if not args.records and not (args.jobs and args.jobs.exists()):
        parser.error("--records is needed to cost the jobs")
    jobs = costed_jobs(args)
    factor = args.factor or simulate(list(jobs.values()), args.cores, args.mem_mb).makespan / (60 * args.minutes)
    with tempfile.TemporaryDirectory(prefix="annobench-sleep-") as scratch:
        run = sleep_run(jobs, args.cores, args.mem_mb, factor, args.workdir or Path(scratch))
    print(f"{args.shape} shape, {args.images or SHAPES[args.shape].images} images, {run.jobs} jobs on {run.cores} "
          f"cores, sleeps / {factor:.1f}")
    print(f"  Snakemake (sleep run x {factor:.1f}): {run.measured:8.0f} s ({run.measured / 3600:.2f} h)")
    print(f"  simulate():                 {run.simulated:8.0f} s ({run.simulated / 3600:.2f} h)")
    print(f"  difference: {100 * (run.ratio - 1):+.1f} % of the simulator's; the sleep run took {run.wall:.0f} s "
          f"(first job's start to last job's end {run.measured / factor:.0f} s)")
    print(f"  simulate() in Snakemake's own start order: {run.replayed:.0f} s; so Snakemake's order "
          f"{100 * (run.replayed / run.simulated - 1):+.1f} %, its time between jobs x {factor:.1f} "
          f"{100 * run.latency / run.simulated:+.1f} %")


if __name__ == "__main__":
    main()
