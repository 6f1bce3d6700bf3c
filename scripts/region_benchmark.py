"""Snakemake entry point of rule region_benchmark; the work is annobench.benchmark.region_annotation.stage.region_benchmark_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.region_annotation.stage import region_benchmark_job  # noqa: E402
from annobench.core.jobs import run_snakemake_job  # noqa: E402

run_snakemake_job(snakemake, region_benchmark_job)
