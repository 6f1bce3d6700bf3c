"""Snakemake entry point of rule campaign_baselines; the work is annobench.benchmark.campaign.statistics.baselines_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.campaign.statistics import baselines_job  # noqa: E402
from annobench.core.jobs import run_snakemake_job  # noqa: E402

run_snakemake_job(snakemake, baselines_job)
