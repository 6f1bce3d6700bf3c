"""Snakemake entry point of rules feature_cnn_NAME: annobench.visual.cnn.cnn_feature_job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

import cv2  # noqa: E402

cv2.setNumThreads(1)  # one core per job, see config.yaml (the job function sets it again)

from annobench.core.jobs import run_snakemake_job  # noqa: E402
from annobench.visual.cnn import cnn_feature_job  # noqa: E402

run_snakemake_job(snakemake, cnn_feature_job)
