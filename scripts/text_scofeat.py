"""Snakemake entry point of rule text_scofeat; the work is in annobench.text_stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.provenance import record_job  # noqa: E402

from annobench.text_stage import write_scofeat  # noqa: E402

with open(snakemake.log[0], "w", encoding="utf-8") as log:
    count = write_scofeat(list(snakemake.input), snakemake.output.scofeat, snakemake.output.iids)
    log.write(f"{count} images written to {snakemake.output.scofeat}\n")
record_job(snakemake)
