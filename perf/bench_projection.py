"""The projection's simulator against reality: a finished build's own DAG, costed by the job
records (per-rule rates), simulated on the cores it ran on, beside its measured wall time.

    python3 perf/bench_projection.py BUILD_DIR [--cores 2] [--records OTHER_BUILD ...] [--out-of-sample]

BUILD_DIR holds the build's config.yaml, out/ and .snakemake/ (a test build, or
`annobench bench --workdir`). The costs come from BUILD_DIR's records and any --records builds;
with --out-of-sample from the --records builds alone, so BUILD_DIR is predicted, not fitted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annobench.projection.costs import calibrate  # noqa: E402
from annobench.projection.project import print_calibration  # noqa: E402
from annobench.projection.replay import replay  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build", type=Path)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--records", type=Path, action="append", default=[])
    parser.add_argument("--out-of-sample", action="store_true", help="cost from the --records builds alone")
    args = parser.parse_args()
    build = args.build.resolve()
    if args.out_of_sample and not args.records:
        parser.error("--out-of-sample needs --records")
    others = [p.resolve() for p in args.records]
    calibration = calibrate(others if args.out_of_sample else [build, *others])
    print_calibration(calibration)
    result = replay(build, args.cores, calibration)
    print(f"{build}: {result.jobs} jobs on {args.cores} cores: measured {result.measured:.1f} s (first job's start "
          f"to last job's end); simulated {result.simulated_loaded:.1f} s at the build's slowdown "
          f"({result.factor:.2f}x its CPU), {100 * result.error:+.1f} %; on a quiet machine {result.simulated_quiet:.1f} s")


if __name__ == "__main__":
    main()
