"""Snakemake entry point of rules bow_codebook_*; the work is in annobench.bow_stages."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.provenance import record_job  # noqa: E402

from annobench.bow_stages import train_kind  # noqa: E402

with open(snakemake.log[0], "w", encoding="utf-8") as log:
    train_kind(
        sample_paths=list(snakemake.input),
        kind=snakemake.params.kind,
        params=snakemake.params.settings,
        out_path=snakemake.output[0],
        log=lambda line: (log.write(line + "\n"), log.flush()),
    )
record_job(snakemake)
