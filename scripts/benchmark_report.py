"""Snakemake entry point of rule benchmark_report; the work is annobench.benchmark.report.report_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.report import report_job  # noqa: E402
from annobench.core.jobs import run_snakemake_job  # noqa: E402

run_snakemake_job(snakemake, report_job)
