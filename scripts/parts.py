"""Snakemake entry point of the merged rules of a small build (annobench.plan): the per-run job
function named by params.job ("module:function"), once for each part."""

import importlib
import os
import sys
from pathlib import Path

# One BLAS thread, as every per-run job has: the codebooks thread k-means over fixed blocks
# instead, so that their bytes do not depend on the thread count.
assert "numpy" not in sys.modules, "BLAS threads must be set before NumPy loads"
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "GOTO_NUM_THREADS"):
    os.environ[variable] = "1"

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.jobs import run_parts, run_snakemake_job  # noqa: E402

module, name = snakemake.params["job"].split(":")
job_function = getattr(importlib.import_module(module), name)
run_snakemake_job(snakemake, lambda job: run_parts(job, job_function))
