"""Snakemake entry point of rule getlf_projection; the work is in annobench.visual.colour."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

from annobench.core.progress import job_log  # noqa: E402
from annobench.core.provenance import record_job  # noqa: E402

from annobench.visual.colour import write_projection  # noqa: E402

with job_log(snakemake.log[0]) as log:
    projection = write_projection(snakemake.params.settings, snakemake.output[0])
    log(f"{projection.shape[0]} projection vectors over {projection.shape[1]} bins")
record_job(snakemake)
