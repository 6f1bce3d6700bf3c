"""Snakemake entry point of rule text_scofeat; the work is in annobench.text.stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

from annobench.core.progress import job_log  # noqa: E402
from annobench.core.provenance import record_job  # noqa: E402

from annobench.text.stage import write_scofeat  # noqa: E402

with job_log(snakemake.log[0]) as log:
    count = write_scofeat(list(snakemake.input), snakemake.output.scofeat, snakemake.output.iids)
    log(f"{count} images written to {snakemake.output.scofeat}")
record_job(snakemake)
