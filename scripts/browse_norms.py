"""Snakemake entry point of rule browse_norms; the work is annobench.release.browser.shards.browse_norms_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.jobs import run_snakemake_job  # noqa: E402
from annobench.release.browser.shards import browse_norms_job  # noqa: E402

run_snakemake_job(snakemake, browse_norms_job)
