"""Snakemake entry point of rules bow_codebook_*; the work is annobench.visual.bow_stage.bow_codebook_job."""

import os
import sys
from pathlib import Path

# Snakemake gives BLAS the job's thread count; k-means threads over fixed blocks
# instead, each on one BLAS thread, so the codebook bits do not depend on it.
assert "numpy" not in sys.modules, "BLAS threads must be set before NumPy loads"
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "GOTO_NUM_THREADS"):
    os.environ[variable] = "1"

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

from annobench.core.jobs import run_snakemake_job  # noqa: E402
from annobench.visual.bow_stage import bow_codebook_job  # noqa: E402

run_snakemake_job(snakemake, bow_codebook_job)
