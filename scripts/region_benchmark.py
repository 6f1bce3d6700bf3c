"""Snakemake entry point of rule region_benchmark; the work is in annobench.benchmark.stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.stage import build_region_benchmark  # noqa: E402
from annobench.core.progress import job_log  # noqa: E402
from annobench.core.provenance import record_job  # noqa: E402

with job_log(snakemake.log[0]) as log:
    build_region_benchmark(snakemake.config, list(snakemake.input.regions), dict(snakemake.output.items()), log)
record_job(snakemake)
