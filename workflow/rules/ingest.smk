# Ingest: raw images -> images/rejects tables + stored resized images, per shard (at most 240
# pixels a side, as the ImageCLEF web images were resized; Villegas and Paredes 2014, section 2.3).

from annobench.core.config import ingest_params
from annobench.sources.warc_index import slices_marker

INGEST_PARAMS = ingest_params(config)
# With input.warc, each shard's jobs read their part of the archives' catalogue (rule warc_slices).
WARC_SLICES = [slices_marker(PLAN.out, PLAN.warc_key, INVENTORY.n_shards)] if PLAN.warc_key else []


if PLAN.warc_key:

    rule warc_slices:
        output:
            WARC_SLICES,
        log:
            out("logs/warc_slices.log"),
        params:
            # The archives' sizes and modification times and the reading settings: the catalogue's cache key.
            listing=PLAN.warc_key,
            n_shards=INVENTORY.n_shards,
            code=script_code("warc_slices.py"),
        resources:
            mem_mb=1024 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/warc_slices.py"


rule ingest_shard:
    input:
        warc_slices=WARC_SLICES,
    output:
        images=out(layout.table_file("images", "{shard}")),
        rejects=out(layout.table_file("rejects", "{shard}")),
        resized=directory(out(layout.resized_dir("{shard}"))),
    log:
        out(layout.log_file("ingest", "{shard}")),
    params:
        listing=shard_listing,
        settings=INGEST_PARAMS,
        params_hash=params_hash(INGEST_PARAMS),
        code=script_code("ingest_shard.py"),
    threads: 1
    resources:
        # The largest image allowed, decoded and converted, dominates.
        mem_mb=512 + (config["ingest"]["max_pixels"] * 12) // 2**20,
        runtime=shard_runtime("ingest"),
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/ingest_shard.py"


rule ingest_all:
    input:
        shard_tables("images"),
        shard_tables("rejects"),


rule duplicates:
    input:
        images=shard_tables("images"),
    output:
        out("tables/duplicates/all.parquet"),
    log:
        out("logs/duplicates.log"),
    params:
        params_hash=params_hash(INGEST_PARAMS),
        code=script_code("find_duplicates.py"),
    resources:
        # Every image's id and sha256 in memory.
        mem_mb=1024 + INVENTORY.n_images // 1000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/find_duplicates.py"
