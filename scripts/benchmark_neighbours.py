"""Snakemake entry point of rule benchmark_neighbours; the work is in annobench.benchmark.neighbours_stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

from annobench.benchmark.neighbours_stage import build_neighbours  # noqa: E402
from annobench.core.progress import job_log  # noqa: E402
from annobench.core.provenance import record_job  # noqa: E402

with job_log(snakemake.log[0]) as log:
    build_neighbours(list(snakemake.input.features), snakemake.input.splits, snakemake.params.k,
                     snakemake.params.settings, snakemake.output[0], log)
record_job(snakemake)
