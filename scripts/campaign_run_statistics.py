"""Snakemake entry point of rule campaign_run_statistics; the work is annobench.benchmark.campaign.statistics.run_statistics_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.campaign.statistics import run_statistics_job  # noqa: E402
from annobench.core.jobs import run_snakemake_job  # noqa: E402

run_snakemake_job(snakemake, run_statistics_job)
