# Region-level data: per image shard, from input.segmentations and the raw images (regions,
# the 27 region features and the spatial relations of Escalante et al. 2008, sections 4.4-4.5).

from annobench.regions.stage import region_params


rule regions_shard:
    input:
        images=out(layout.table_file("images", "{shard}")),
    output:
        **{name: out(layout.table_file(name, "{shard}")) for name in REGION_TABLES},
        maps=directory(out("segmentations/shard-{shard}")),
    log:
        out(layout.log_file("regions", "{shard}")),
    params:
        listing=shard_listing,
        n_shards=INVENTORY.n_shards,
        source=PLAN.segmentation_state,
        settings=config["segmentations"],
        params_hash=params_hash(region_params(config["segmentations"])),
        code=script_code("regions_shard.py"),
    resources:
        mem_mb=512 + (config["ingest"]["max_pixels"] * 64) // 2**20,
        runtime=shard_runtime("regions"),
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/regions_shard.py"


rule region_stats:
    input:
        regions=shard_tables("regions"),
        features=shard_tables("region_features"),
        relations=shard_tables("spatial_relations"),
    output:
        # One table folder each: a folder of Parquet files reads as one dataset.
        region_label_frequencies=out("tables/region_label_frequencies/all.parquet"),
        regions_per_image=out("tables/regions_per_image/all.parquet"),
        relation_frequencies=out("tables/relation_frequencies/all.parquet"),
        figure=out("reports/top_labels.png"),
        saiapr_features=out("exports/saiapr/features.txt"),
        saiapr_labels=out("exports/saiapr/labels.txt"),
        saiapr_relations=out("exports/saiapr/relations.txt"),
    log:
        out("logs/region_stats.log"),
    params:
        params_hash=params_hash(region_params(config["segmentations"])),
        code=script_code("region_stats.py"),
    resources:
        # All regions and relations are read at once: 1,139 MiB peak for 4,000
        # BSDS500 images (18 regions and 306 relations an image), so 300 KB an image.
        mem_mb=1024 + (300 * INVENTORY.n_images) // 1000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/region_stats.py"


rule regions_all:
    input:
        rules.region_stats.output if PLAN.regions_on else [],
