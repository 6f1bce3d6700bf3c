"""Snakemake entry point of rule illustration_queries; the work is annobench.benchmark.illustration.stage.illustration_queries_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.illustration.stage import illustration_queries_job  # noqa: E402
from annobench.core.jobs import run_snakemake_job  # noqa: E402

run_snakemake_job(snakemake, illustration_queries_job)
