"""Snakemake entry point of rule baseline; the work is annobench.benchmark.annotation.stage.baseline_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.annotation.stage import baseline_job  # noqa: E402
from annobench.core.jobs import run_snakemake_job  # noqa: E402

run_snakemake_job(snakemake, baseline_job)
