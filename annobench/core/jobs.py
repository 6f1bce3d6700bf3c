"""One job of a rule, as its stage's job function sees it.

Every rule has one job function in its stage package, `def job(job: Job) ->
list[dict] | None`, returning the raw inputs it read (for the provenance
record). Snakemake calls it through the rule's script (`run_snakemake_job`);
`annobench audit --recompute` calls the same function with a Job rebuilt
from the release's job record (`Job.from_record`), so a rule's wiring is
written once.

A job that reads raw inputs lists them from the config when Snakemake runs
it, and takes them from `recorded_raw` when a recorded job is replayed: the
files the build read, where it read them.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from annobench.core.errors import AnnobenchError
from annobench.core.progress import job_log
from annobench.core.provenance import job_usage, named_files, record_job

# The last line of the log of a job that keeps no record (the release): its usage as JSON.
USAGE_LINE = "usage "

Paths = str | list[str]  # a named input or output: one path, or those of an expand()


@dataclass(frozen=True)
class Job:
    rule: str
    config: dict
    params: dict
    inputs: dict[str, Paths]
    outputs: dict[str, Paths]
    input_files: list[str]  # every input in order, named or not
    output_files: list[str]
    wildcards: dict[str, str] = field(default_factory=dict)
    threads: int = 1
    log: Callable[[str], None] = print
    recorded_raw: list[dict] | None = None  # replaying a record: the raw inputs it read

    @property
    def shard(self) -> int:
        return int(self.wildcards["shard"])

    @property
    def out_dir(self) -> Path:
        return Path(self.config["output"])

    @property
    def every_seconds(self) -> float:
        return self.config["progress"]["log_every_seconds"]

    def input(self, name: str) -> Paths:
        return self.inputs[name]

    def output(self, name: str) -> Paths:
        return self.outputs[name]

    def input_list(self, name: str) -> list[str]:
        value = self.inputs.get(name, [])
        return [value] if isinstance(value, str) else list(value)

    def output_list(self, name: str) -> list[str]:
        value = self.outputs[name]
        return [value] if isinstance(value, str) else list(value)

    def raw(self, role: str) -> list[dict]:
        """The recorded raw inputs of a role (replaying only)."""
        return [r for r in self.recorded_raw or [] if r["role"] == role]

    def raw_root(self, role: str) -> Path:
        """The folder the recorded raw files of a role were read from: their absolute path less the path given."""
        raw = self.raw(role)[0]
        absolute = raw["absolute_path"]
        return Path(absolute[: len(absolute) - len(raw["path"])])

    @classmethod
    def from_snakemake(cls, snakemake, log: Callable[[str], None]) -> "Job":
        return cls(
            rule=snakemake.rule, config=snakemake.config, params=dict(snakemake.params.items()),
            inputs=named_files(snakemake.input), outputs=named_files(snakemake.output),
            input_files=[str(p) for p in snakemake.input], output_files=[str(p) for p in snakemake.output],
            wildcards=dict(snakemake.wildcards.items()), threads=snakemake.threads, log=log,
        )

    @classmethod
    def from_record(cls, entry: dict, config: dict, scratch: Path) -> "Job":
        """A recorded job, to be rerun into `scratch` (its files of the build under their recorded names)."""
        files = entry["files"]

        def place(path: str) -> str:
            return path if os.path.isabs(path) else str(scratch / path)

        def placed(named: dict) -> dict:
            return {k: place(v) if isinstance(v, str) else [place(p) for p in v] for k, v in named.items()}

        return cls(
            rule=entry["rule"], config={**config, "output": str(scratch)}, params=entry["params"],
            inputs=placed(files["input"]), outputs=placed(files["output"]),
            input_files=[place(p) for p in files["input_files"]],
            output_files=[place(p) for p in files["output_files"]],
            wildcards=entry["wildcards"] or {}, log=lambda line: None, recorded_raw=entry["raw_inputs"],
        )


def part_jobs(job: Job) -> list[Job]:
    """The jobs a merged job stands for. A small build runs a family of per-run jobs (a
    baseline run each, a feature's neighbour search each, ...) as one job (annobench.plan);
    its params hold, per part, the wildcards, params, inputs and outputs the per-run rule
    would have given that part's job, beside the params the parts share."""
    shared = {key: value for key, value in job.params.items() if key != "parts"}
    return [replace(job, params={**shared, **part["params"]}, wildcards=part["wildcards"],
                    inputs=part["inputs"], outputs=part["outputs"],
                    input_files=_flat(part["inputs"]), output_files=_flat(part["outputs"]))
            for part in job.params["parts"]]


def run_parts(job: Job, job_function: Callable[[Job], list[dict] | None]) -> list[dict]:
    """A merged job: the per-run job function on each part in turn; the raw inputs they read."""
    raw: list[dict] = []
    for part in part_jobs(job):
        raw += [entry for entry in job_function(part) or [] if entry not in raw]
    return raw


def _flat(named: dict[str, Paths]) -> list[str]:
    return [path for value in named.values() for path in ([value] if isinstance(value, str) else value)]


def run_snakemake_job(snakemake, job_function: Callable[[Job], list[dict] | None], record: bool = True) -> None:
    """A rule's script: run its job function with the job's log, then record what it read and wrote
    (the release job records nothing: it writes the lineage of the others)."""
    with job_log(snakemake.log[0]) as log:
        try:
            raw = job_function(Job.from_snakemake(snakemake, log))
        except AnnobenchError as error:  # bad input, named: its line in the log and on stderr, not a traceback
            for line in error.report_lines():
                log(line)
                print(line, file=sys.stderr, flush=True)
            raise SystemExit(1) from None
        if not record:  # its CPU and peak memory, kept where the projection reads them (USAGE_LINE)
            log(USAGE_LINE + json.dumps(job_usage(dict(snakemake.resources.items())), sort_keys=True))
    if record:
        record_job(snakemake, raw_inputs=raw)
