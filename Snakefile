# annobench: regenerate an image-annotation benchmark dataset.
# Run `snakemake --cores all`; the default profile (profiles/default) sets the
# scheduler and crash recovery. See README.md.

import os

from snakemake.utils import min_version, validate

min_version("9.27")  # the floor in pyproject.toml: the Snakemake the tests ran on


configfile: os.path.join(workflow.basedir, "config", "config.yaml")


validate(config, "config/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/bow.smk"
include: "workflow/rules/text.smk"
include: "workflow/rules/regions.smk"
include: "workflow/rules/benchmark.smk"
include: "workflow/rules/boxes.smk"
include: "workflow/rules/captions.smk"
include: "workflow/rules/campaign.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/release.smk"


rule all:
    default_target: True
    input:
        rules.release.output,


# The build's rejects on one screen, read from every rejects (and notes) table: nothing is rejected
# without the user seeing it (annobench.core.rejects; boxes: labels against kept boxes too).
onsuccess:
    from annobench.benchmark.boxes.stage import consistency_summary
    from annobench.core.rejects import rejects_summary

    try:
        summary = rejects_summary(PLAN.out) + [f"  {line}" for line in consistency_summary(PLAN.out)]
    except Exception as error:  # the summary never turns a finished build into a failed one
        summary = [f"annobench: no rejects summary ({type(error).__name__}: {error})"]
    print("\n".join(summary), flush=True)
