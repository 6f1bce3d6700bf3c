"""Snakemake entry point of rule baseline; the work is in annobench.benchmark_stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark_stage import build_baseline  # noqa: E402
from annobench.progress import job_log  # noqa: E402
from annobench.provenance import raw_file, record_job  # noqa: E402

words = snakemake.config["benchmark"]["cooccurrence"]["english_words_file"]
with job_log(snakemake.log[0]) as log:
    build_baseline(snakemake.wildcards.run, snakemake.params.kind, snakemake.config, dict(snakemake.input.items()),
                   dict(snakemake.output.items()), log)
uses_words = words and snakemake.params.kind == "cooccurrence"
record_job(snakemake, raw_inputs=[raw_file(words, Path(words).name, role="english_words")] if uses_words else None)
