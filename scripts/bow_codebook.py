"""Snakemake entry point of rules bow_codebook_*; the work is in annobench.visual.bow_stage."""

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

from annobench.core.progress import job_log  # noqa: E402
from annobench.core.provenance import record_job  # noqa: E402

from annobench.visual.bow_stage import train_kind  # noqa: E402

with job_log(snakemake.log[0]) as log:
    train_kind(
        sample_paths=list(snakemake.input),
        kind=snakemake.params.kind,
        params=snakemake.params.settings,
        out_path=snakemake.output[0],
        log=log,
        threads=snakemake.threads,
    )
record_job(snakemake)
