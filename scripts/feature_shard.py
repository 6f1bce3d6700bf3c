"""Snakemake entry point of the rules feature_*; the work is in annobench.visual.stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

from annobench.core.progress import job_log  # noqa: E402
from annobench.core.provenance import record_job  # noqa: E402

import cv2  # noqa: E402

from annobench.visual.stage import feature_shard  # noqa: E402

cv2.setNumThreads(1)  # one core per job, see config.yaml
with job_log(snakemake.log[0]) as log:
    feature_shard(
        name=snakemake.params.feature,
        params=snakemake.params.settings,
        images_table=snakemake.input.images,
        out_dir=snakemake.config["output"],
        out_path=snakemake.output[0],
        projection_path=snakemake.input.get("projection"),
        log=log,
        every_seconds=snakemake.config["progress"]["log_every_seconds"],
    )
record_job(snakemake)
