"""Snakemake entry point of rule benchmark_report; the work is in annobench.benchmark.stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.stage import build_report  # noqa: E402
from annobench.core.progress import job_log  # noqa: E402
from annobench.core.provenance import record_job  # noqa: E402

with job_log(snakemake.log[0]) as log:
    build_report(snakemake.config, list(snakemake.input.evaluations), dict(snakemake.input.items()),
                 dict(snakemake.output.items()), log)
record_job(snakemake)
