"""Snakemake entry point of rule getlf_projection; the work is in annobench.colour_features."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.provenance import record_job  # noqa: E402

from annobench.colour_features import write_projection  # noqa: E402

with open(snakemake.log[0], "w", encoding="utf-8") as log:
    projection = write_projection(snakemake.params.settings, snakemake.output[0])
    log.write(f"{projection.shape[0]} projection vectors over {projection.shape[1]} bins\n")
record_job(snakemake)
