# Release: every released file with its lineage, as MANIFEST.jsonl and an RO-Crate, a Croissant
# file and a dataset card, in a BagIt bag; and a static browser of the data.

from annobench.core.config import release_identity
from annobench.release.browser.templating import templates_digest

# The browser's image pages run as one job per image shard when there are several.
BROWSE_BY_SHARD = PLAN.browse_by_shard
BROWSE_PARTS = PLAN.browse_parts
BROWSE_TEMPLATES = templates_digest()  # a changed template reruns the jobs that render pages
BROWSE_SETTINGS = {**config["release"]["browse"],
                   **{key: release_identity(config)[key] for key in ("title", "description")}}


BROWSE_INPUTS = [
    rules.ingest_all.input,
    rules.duplicates.output,
    rules.features_all.input,
    rules.bow_all.input,
    rules.text_all.input,
    rules.regions_all.input,
    rules.benchmark_all.input,
]


rule integrity:
    # Every key of every table and run resolves (annobench.release.integrity): a report, or a
    # failing job naming each dangling key, before anything is released.
    input:
        BROWSE_INPUTS,
    output:
        report=out("reports/integrity.md"),
    log:
        out("logs/integrity.log"),
    params:
        code=script_code("integrity.py"),
    resources:
        mem_mb=1024 + INVENTORY.n_images // 100,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/integrity.py"


rule browse_prepare:
    # Several shards only: the non-sharded per-image tables regrouped by image shard, once.
    input:
        BROWSE_INPUTS,
    output:
        shards=[directory(out(f"work/browse/shard-{shard}")) for shard in SHARDS],
        plan=out("work/browse/plan.json"),
    log:
        out("logs/browse_prepare.log"),
    params:
        settings=BROWSE_SETTINGS,
        code=script_code("browse_prepare.py"),
    resources:
        mem_mb=1024 + INVENTORY.n_images // 100,
        runtime=30 + INVENTORY.n_images // 5000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/browse_prepare.py"


rule browse_shard:
    # Several shards only: one image shard's pages and overlays, in place under browse/.
    input:
        unpack(browse_shard_inputs),
    output:
        [directory(out(f"browse/{part}/shard-{{shard}}")) for part in BROWSE_PARTS],
    log:
        out("logs/browse/shard-{shard}.log"),
    params:
        settings=BROWSE_SETTINGS,
        templates=BROWSE_TEMPLATES,
        code=script_code("browse_shard.py"),
    resources:
        mem_mb=1024 + INVENTORY.n_images // 1000,
        runtime=30,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/browse_shard.py"


rule browse_norms:
    # Several shards only: a shard's feature norms for the index's figure, as soon as its features
    # exist, so the index job reads megabytes of norms instead of every vector of the build.
    input:
        features=browse_norms_inputs,
    output:
        norms=out("work/browse/norms/shard-{shard}.parquet"),
    log:
        out("logs/browse_norms/shard-{shard}.log"),
    params:
        code=script_code("browse_norms.py"),
    resources:
        mem_mb=1024 + INVENTORY.n_images // 1000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/browse_norms.py"


rule browse:
    # One shard: the whole site. Several: the pages that need the whole build (index, grid,
    # leaderboard, style), beside the browse_shard jobs.
    input:
        BROWSE_INPUTS,
        norms=expand(out("work/browse/norms/shard-{shard}.parquet"), shard=SHARDS) if BROWSE_BY_SHARD else [],
    output:
        (
            [out("browse/index.html"), out("browse/style.css"), directory(out("browse/grid"))]
            + ([out("browse/leaderboard.html")] if PLAN.benchmark_on else [])
        )
        if BROWSE_BY_SHARD
        else [directory(out("browse"))],
    log:
        out("logs/browse.log"),
    params:
        settings=BROWSE_SETTINGS,
        by_shard=BROWSE_BY_SHARD,
        templates=BROWSE_TEMPLATES,
        code=script_code("browse.py"),
    resources:
        mem_mb=1024 + INVENTORY.n_images // 100,
        runtime=30 + INVENTORY.n_images // 1000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/browse.py"


BROWSE_OUTPUTS = rules.browse.output + (
    expand(out("browse/{part}/shard-{shard}"), part=BROWSE_PARTS, shard=SHARDS) if BROWSE_BY_SHARD else []
)


rule release:
    input:
        rules.ingest_all.input,
        rules.duplicates.output,
        rules.features_all.input,
        rules.bow_all.input,
        rules.text_all.input,
        rules.regions_all.input,
        rules.benchmark_all.input,
        rules.integrity.output,
        BROWSE_OUTPUTS if config["release"]["browse"]["enabled"] else [],
    output:
        # The bag declaration stands for the folder (a BagIt bag; the files under
        # release/data/): a directory() output would get Snakemake's
        # .snakemake_timestamp marker, a file no manifest lists. The job
        # replaces the whole folder at once.
        out("release/bagit.txt"),
    log:
        out("logs/release.log"),
    params:
        n_shards=INVENTORY.n_shards,
        code=script_code("release.py"),
    resources:
        # Job records are held slimmed (raw inputs read back one job at a time):
        # 184 MiB peak at 5,000 images, 344 MiB at 20,000, so about 11 KB an
        # image and some 5.6 GiB at 510,123.
        mem_mb=1024 + (16 * INVENTORY.n_images) // 1000,
        runtime=30 + INVENTORY.n_images // 2000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/release.py"
