"""Snakemake entry point of rule duplicates; the work is in annobench.images.duplicates."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

from annobench.core.progress import job_log  # noqa: E402
from annobench.core.provenance import record_job  # noqa: E402

from annobench.images.duplicates import write_duplicates  # noqa: E402

with job_log(snakemake.log[0]) as log:
    found = write_duplicates(snakemake.input.images, snakemake.output[0], snakemake.params.params_hash)
    log(f"{found} images share their bytes with another image")
record_job(snakemake)
