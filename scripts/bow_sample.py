"""Snakemake entry point of rule bow_sample; the work is in annobench.visual.bow_stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

from annobench.core.progress import job_log  # noqa: E402
from annobench.core.provenance import record_job  # noqa: E402

from annobench.visual.bow_stage import sample_shard  # noqa: E402

with job_log(snakemake.log[0]) as log:
    counts = sample_shard(
        images_table=snakemake.input.images,
        out_dir=snakemake.config["output"],
        out_paths=dict(snakemake.output.items()),
        dsift_config=snakemake.params.dsift,
        fraction=snakemake.params.sampling["fraction"],
        per_image=snakemake.params.sampling["per_image"],
        seed=snakemake.params.sampling["seed"],
        log=log,
        every_seconds=snakemake.config["progress"]["log_every_seconds"],
    )
    log(f"sampled descriptors: {counts}")
record_job(snakemake)
