"""Snakemake entry point of rule browse; the work is in annobench.release.browser.writer."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.release.browser.writer import build_browser  # noqa: E402
from annobench.core.fsutil import atomic_path  # noqa: E402
from annobench.core.progress import job_log  # noqa: E402
from annobench.core.provenance import record_job  # noqa: E402

with job_log(snakemake.log[0]) as log, atomic_path(snakemake.output[0]) as partial:
    # Built beside resized/ under a hidden name, renamed when complete: its links are relative.
    count = build_browser(Path(snakemake.config["output"]), partial, snakemake.params.settings, log)
    log(f"{count} files in the release browser")
record_job(snakemake)
