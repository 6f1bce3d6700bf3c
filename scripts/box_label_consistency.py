"""Snakemake entry point of rule box_label_consistency; the work is annobench.benchmark.boxes.stage.consistency_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.boxes.stage import consistency_job  # noqa: E402
from annobench.core.jobs import run_snakemake_job  # noqa: E402

run_snakemake_job(snakemake, consistency_job)
