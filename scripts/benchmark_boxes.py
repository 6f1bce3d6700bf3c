"""Snakemake entry point of rule benchmark_boxes; the work is annobench.benchmark.boxes.stage.boxes_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.boxes.stage import boxes_job  # noqa: E402
from annobench.core.jobs import run_snakemake_job  # noqa: E402

run_snakemake_job(snakemake, boxes_job)
