"""Snakemake entry point of rule benchmark_neighbours; the work is in annobench.benchmark_stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark_stage import build_neighbours  # noqa: E402
from annobench.progress import job_log  # noqa: E402
from annobench.provenance import record_job  # noqa: E402

with job_log(snakemake.log[0]) as log:
    build_neighbours(list(snakemake.input.features), snakemake.input.splits, snakemake.params.k,
                     snakemake.params.settings, snakemake.output[0], log)
record_job(snakemake)
