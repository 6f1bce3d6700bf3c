"""Snakemake entry point of rule baselines; the work is in annobench.benchmark.stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.benchmark.stage import build_baseline  # noqa: E402
from annobench.core.progress import job_log  # noqa: E402
from annobench.core.provenance import raw_file, record_job  # noqa: E402

inputs, outputs = dict(snakemake.input.items()), dict(snakemake.output.items())
runs = snakemake.params.runs
words = snakemake.config["benchmark"]["cooccurrence"]["english_words_file"]
with job_log(snakemake.log[0]) as log:
    for name, run in runs.items():
        files = {what: outputs[f"{name}_{what}"] for what in ("run", "run_text", "evaluation", "per_concept")}
        run_inputs = {**inputs, "neighbours": inputs.get(f"neighbours_{run['feature']}")}
        build_baseline(name, run["kind"], snakemake.config, run_inputs, files, log)
uses_words = words and any(run["kind"] == "cooccurrence" for run in runs.values())
record_job(snakemake, raw_inputs=[raw_file(words, Path(words).name, role="english_words")] if uses_words else None)
