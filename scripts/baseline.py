"""Snakemake entry point of rules baseline_feature and baseline_priors; the work is in annobench.benchmark_stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark_stage import build_baseline, run_name  # noqa: E402
from annobench.progress import job_log  # noqa: E402
from annobench.provenance import raw_file, record_job  # noqa: E402

feature = snakemake.wildcards.get("feature")
outputs = dict(snakemake.output.items())
words = snakemake.config["benchmark"]["cooccurrence"]["english_words_file"]
with job_log(snakemake.log[0]) as log:
    for kind in snakemake.params.kinds:
        files = {what: outputs[f"{kind}_{what}"] for what in ("run", "run_text", "evaluation", "per_concept")}
        build_baseline(run_name(kind, feature), kind, snakemake.config, dict(snakemake.input.items()), files, log)
uses_words = words and "cooccurrence" in snakemake.params.kinds
record_job(snakemake, raw_inputs=[raw_file(words, Path(words).name, role="english_words")] if uses_words else None)
