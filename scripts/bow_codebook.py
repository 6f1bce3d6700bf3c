"""Snakemake entry point of rules bow_codebook_*; the work is in annobench.bow_stages."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.progress import job_log  # noqa: E402
from annobench.provenance import record_job  # noqa: E402

from annobench.bow_stages import train_kind  # noqa: E402

with job_log(snakemake.log[0]) as log:
    train_kind(
        sample_paths=list(snakemake.input),
        kind=snakemake.params.kind,
        params=snakemake.params.settings,
        out_path=snakemake.output[0],
        log=log,
    )
record_job(snakemake)
