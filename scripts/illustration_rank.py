"""Snakemake entry point of rule illustration_rank; the work is annobench.benchmark.illustration.stage.illustration_rank_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.illustration.stage import illustration_rank_job  # noqa: E402
from annobench.core.jobs import run_snakemake_job  # noqa: E402

run_snakemake_job(snakemake, illustration_rank_job)
