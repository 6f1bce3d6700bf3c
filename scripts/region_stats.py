"""Snakemake entry point of rule region_stats; the work is in annobench.region_stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

from annobench.progress import job_log  # noqa: E402
from annobench.provenance import record_job  # noqa: E402

from annobench.region_stage import STATS_TABLES, region_statistics, saiapr_exports  # noqa: E402

out = snakemake.output
with job_log(snakemake.log[0]) as log:
    summary = region_statistics(
        list(snakemake.input.regions), list(snakemake.input.features), list(snakemake.input.relations),
        {name: out[name] for name in STATS_TABLES},
        out.figure, snakemake.params.params_hash,
    )
    log(f"{summary}")
    rows = saiapr_exports(list(snakemake.input.regions), list(snakemake.input.features),
                          list(snakemake.input.relations), out.saiapr_features, out.saiapr_labels,
                          out.saiapr_relations)
    log(f"{rows} regions exported in SAIAPR form")
record_job(snakemake)
