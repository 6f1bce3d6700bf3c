"""Snakemake entry point of rule benchmark_truth; the work is in annobench.benchmark.stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.stage import build_truth  # noqa: E402
from annobench.core.progress import job_log  # noqa: E402
from annobench.core.provenance import record_job  # noqa: E402

with job_log(snakemake.log[0]) as log:
    raw = build_truth(snakemake.config, list(snakemake.input.images), list(snakemake.input.regions),
                      dict(snakemake.output.items()), log)
record_job(snakemake, raw_inputs=raw)
