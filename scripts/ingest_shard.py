"""Snakemake entry point of rule ingest_shard; the work is in annobench.images.ingest."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

from annobench.core.provenance import record_job  # noqa: E402

from annobench.images.ingest import run_shard_job  # noqa: E402

raw = run_shard_job(
    config=snakemake.config,
    shard=int(snakemake.wildcards.shard),
    expected_fingerprint=snakemake.params.listing,
    params_hash=snakemake.params.params_hash,
    log_path=Path(snakemake.log[0]),
)
record_job(snakemake, raw_inputs=raw)
