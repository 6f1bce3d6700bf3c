"""Snakemake entry point of rules feature_bow_*; the work is in annobench.bow_stages."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.progress import job_log  # noqa: E402
from annobench.provenance import record_job  # noqa: E402

import cv2  # noqa: E402

from annobench.bow_stages import encode_shard  # noqa: E402

cv2.setNumThreads(1)  # one core per job, see config.yaml
with job_log(snakemake.log[0]) as log:
    encode_shard(
        kind=snakemake.params.kind,
        images_table=snakemake.input.images,
        out_dir=snakemake.config["output"],
        codebook_path=snakemake.input.codebook,
        params=snakemake.params.settings,
        out_path=snakemake.output[0],
        log=log,
        every_seconds=snakemake.config["progress"]["log_every_seconds"],
    )
record_job(snakemake)
