"""Snakemake entry point of rule regions_shard; the work is in annobench.regions.stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

from annobench.core.provenance import record_job  # noqa: E402

from annobench.regions.stage import REGION_TABLES, run_regions_shard  # noqa: E402

raw = run_regions_shard(
    config=snakemake.config,
    shard=int(snakemake.wildcards.shard),
    images_table=snakemake.input.images,
    table_paths={name: snakemake.output[name] for name in REGION_TABLES},
    maps_dir=snakemake.output.maps,
    params_hash=snakemake.params.params_hash,
    log_path=Path(snakemake.log[0]),
)
record_job(snakemake, raw_inputs=raw)
