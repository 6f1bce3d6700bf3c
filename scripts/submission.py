"""Snakemake entry point of rule submission; the work is annobench.benchmark.campaign.runs.submission_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.campaign.runs import submission_job  # noqa: E402
from annobench.core.jobs import run_snakemake_job  # noqa: E402

run_snakemake_job(snakemake, submission_job)
