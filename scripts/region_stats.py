"""Snakemake entry point of rule region_stats; the work is in annobench.regions.stage."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # annobench from this checkout

from annobench.core.imports import keep_out  # noqa: E402

keep_out("pandas")  # unused here; pyarrow would load it on its first conversion (0.3-0.5 CPU-s)

from annobench.core.progress import job_log  # noqa: E402
from annobench.core.provenance import record_job  # noqa: E402

from annobench.regions.stage import STATS_TABLES, region_statistics, saiapr_exports  # noqa: E402

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
