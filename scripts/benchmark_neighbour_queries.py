"""Snakemake entry point of rule benchmark_neighbour_queries: annobench.benchmark.neighbours.stage.neighbour_queries_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

from annobench.benchmark.neighbours.stage import neighbour_queries_job  # noqa: E402
from annobench.core.jobs import run_snakemake_job  # noqa: E402

run_snakemake_job(snakemake, neighbour_queries_job)
