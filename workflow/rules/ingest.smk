# Ingest (SPEC 1-2): raw images -> images/rejects tables + stored resized images, per shard.

INGEST_PARAMS = ingest_params(config)


rule ingest_shard:
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
        expand(out(layout.table_file("images", "{shard}")), shard=SHARDS),
        expand(out(layout.table_file("rejects", "{shard}")), shard=SHARDS),


rule duplicates:
    input:
        images=expand(out(layout.table_file("images", "{shard}")), shard=SHARDS),
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
