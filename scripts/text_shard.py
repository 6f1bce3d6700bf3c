"""Snakemake entry point of rule text_shard; the work is in annobench.text.stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

from annobench.core.provenance import record_job  # noqa: E402

from annobench.text.stage import run_text_shard  # noqa: E402

raw = run_text_shard(
    config=snakemake.config,
    shard=int(snakemake.wildcards.shard),
    n_shards=snakemake.params.n_shards,
    expected_fingerprint=snakemake.params.listing,
    params_hash=snakemake.params.params_hash,
    log_path=Path(snakemake.log[0]),
)
record_job(snakemake, raw_inputs=raw)
