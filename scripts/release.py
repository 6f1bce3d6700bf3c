"""Snakemake entry point of rule release; the work is annobench.release.assemble.release_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.jobs import run_snakemake_job  # noqa: E402
from annobench.release.assemble import release_job  # noqa: E402

run_snakemake_job(snakemake, release_job, record=False)
