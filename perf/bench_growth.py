"""How each rule's cost grows with the build: CPU and peak memory per job against its size, in
builds of several sizes (annobench bench's, e.g. its 200 images, their quarter and 20,000).

    python3 perf/bench_growth.py BUILD_DIR [BUILD_DIR ...]

BUILD_DIR holds config.yaml, out/ and .snakemake/ (`annobench bench --workdir`). Per rule and
build, from the jobs' own records: jobs, the size a job is costed by (its driver: shard images,
build images, queries, ...), CPU seconds and peak memory of the largest job, and CPU per unit of
size. A rule whose CPU or memory per unit rises with the size grows faster than its images:
the rules to split by shard or make streaming.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from common import REPO  # noqa: F401 - puts the checkout on the path


def main() -> None:
    from annobench.projection.costs import BuildSizes, driver_of

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("builds", type=Path, nargs="+")
    args = parser.parse_args()
    rows: dict[str, list[str]] = {}
    sizes = []
    for build_dir in args.builds:
        build = BuildSizes(build_dir.resolve())
        sizes.append(build.n_images)
        for job in build.jobs():
            if job.get("recordless"):
                continue
            entry = rows.setdefault(job["rule"], {}).setdefault(build.n_images, [])
            entry.append(job)
    print(f"{'rule':30s} {'driver':14s} " + " ".join(f"{'[' + str(n) + ' images] jobs, size, CPU-s, MiB, ms/unit':>44s}"
                                                        for n in sizes))
    for rule, by_build in sorted(rows.items()):
        cells = []
        for n in sizes:
            jobs = by_build.get(n)
            if not jobs:
                cells.append(f"{'-':>44s}")
                continue
            big = max(jobs, key=lambda j: (j["units"], j["cpu"]))
            per_unit = 1000 * sum(j["cpu"] - j["startup"] for j in jobs) / max(1e-9, sum(j["units"] for j in jobs))
            cells.append(f"{len(jobs):>5d} {big['units']:>10.0f} {big['cpu']:>8.1f} {big.get('peak') or 0:>7.0f} "
                         f"{per_unit:>10.3g}")
        first = next(iter(by_build.values()))[0]
        print(f"{rule:30s} {driver_of(rule, first['wildcards']):14s} " + " ".join(cells))


if __name__ == "__main__":
    main()
