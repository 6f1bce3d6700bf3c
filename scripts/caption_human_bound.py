"""Snakemake entry point of rule caption_human_bound; the work is annobench.benchmark.captions.stage.caption_human_bound_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.captions.stage import caption_human_bound_job  # noqa: E402
from annobench.core.jobs import run_snakemake_job  # noqa: E402

run_snakemake_job(snakemake, caption_human_bound_job)
