# annobench: regenerate an image-annotation benchmark dataset.
# Run `snakemake --cores all`; the default profile (profiles/default) sets the
# scheduler and crash recovery. See README.md.

import os

from snakemake.utils import min_version, validate

min_version("9.0")


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
include: "workflow/rules/report.smk"
include: "workflow/rules/release.smk"


rule all:
    default_target: True
    input:
        rules.release.output,
