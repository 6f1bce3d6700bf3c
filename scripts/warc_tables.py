"""Snakemake entry point of rule warc_tables; the work is in annobench.sources.warc_index."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

from annobench.core.provenance import record_job  # noqa: E402

from annobench.sources.warc_index import run_warc_tables  # noqa: E402

raw = run_warc_tables(snakemake.config, snakemake.params.listing, Path(snakemake.log[0]))
record_job(snakemake, raw_inputs=raw)
