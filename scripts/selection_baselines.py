"""Snakemake entry point of rule selection_baselines; the work is annobench.benchmark.selection.stage.selection_baselines_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.selection.stage import selection_baselines_job  # noqa: E402
from annobench.core.jobs import run_snakemake_job  # noqa: E402

run_snakemake_job(snakemake, selection_baselines_job)
