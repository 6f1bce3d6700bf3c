"""Snakemake entry point of rule release; the work is in annobench.release.assemble."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.progress import job_log  # noqa: E402
from annobench.release.assemble import assemble_release  # noqa: E402

with job_log(snakemake.log[0]) as log:
    count = assemble_release(
        out_dir=Path(snakemake.config["output"]),
        release_dir=Path(snakemake.output[0]).parent,
        config=snakemake.config,
        workflow_dir=Path(snakemake.scriptdir).parent,
        n_shards=snakemake.params.n_shards,
    )
    log(f"{count} files released with their lineage in {Path(snakemake.output[0]).parent}")
