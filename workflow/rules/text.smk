# Near-image text features: per image shard, from the pages its images appeared in (Villegas and
# Paredes 2014, section 2.3, equation 1; the DOM factors after La Cascia et al. 1998).

# The text shards' settings: the caption filter (text.captions) is page_captions' alone, so
# changing it reruns one small job, not the parsing of every page.
TEXT_SHARD_SETTINGS = {key: value for key, value in config["text"].items() if key != "captions"}
# The search log's size, which bounds what rule search_keywords holds.
SEARCH_LOG_BYTES = os.path.getsize(PLAN.search_log) if PLAN.search_log else 0



rule text_shard:
    input:
        # Only the images the ingest kept get rows: the others' reasons are in tables/rejects.
        images=out(layout.table_file("images", "{shard}")),
        mapping=PLAN.page_map,
        warc_slices=WARC_SLICES,
    output:
        **{name: out(layout.table_file(name, "{shard}")) for name in SHARD_TABLES},
        # The caption candidates and the texts of the pages the shard owns: page_captions' inputs.
        **{name: out(layout.work_file(name, "{shard}")) for name in CAPTION_WORK},
    log:
        out(layout.log_file("text", "{shard}")),
    params:
        listing=lambda wildcards: PLAN.text.fingerprint(int(wildcards.shard)),
        n_shards=INVENTORY.n_shards,
        settings=TEXT_SHARD_SETTINGS,
        params_hash=params_hash(TEXT_SHARD_SETTINGS),
        code=script_code("text_shard.py"),
    resources:
        # A page may be up to max_page_bytes; its DOM takes some ten times that.
        mem_mb=1024 + (12 * config["text"]["max_page_bytes"]) // 2**20,
        runtime=shard_runtime("text"),
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/text_shard.py"


rule page_captions:
    """Every shard's page_captions: the candidates with their counts over the whole collection
    (pages and image files with the same text, pages with the same file) and the default filter."""
    input:
        candidates=expand(out(layout.work_file("caption_candidates", "{shard}")), shard=SHARDS),
        texts=expand(out(layout.work_file("caption_texts", "{shard}")), shard=SHARDS),
    output:
        tables=shard_tables("page_captions"),
    log:
        out("logs/page_captions.log"),
    params:
        settings=config["text"]["captions"],
        params_hash=params_hash(config["text"]["captions"]),
        code=script_code("page_captions.py"),
    resources:
        # Every page's distinct caption texts are counted at once: some 30 an image, 200 bytes each.
        mem_mb=1024 + (6 * INVENTORY.n_images) // 1000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/page_captions.py"


rule text_scofeat:
    input:
        shard_tables("text_terms"),
    output:
        scofeat=out("exports/text.scofeat"),
        iids=out("exports/text_iids.txt"),
    log:
        out("logs/text_scofeat.log"),
    params:
        code=script_code("text_scofeat.py"),
    resources:
        # Every image's .scofeat line is held to sort them: a few KB an image.
        mem_mb=1024 + (4 * INVENTORY.n_images) // 1000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/text_scofeat.py"


rule search_keywords:
    """The search log joined to the images: which query found each image in which engine, at
    which rank (Gilbert et al. 2016, section 2.4), every other line a rejects row with why."""
    input:
        search_log=PLAN.search_log or [],
        images=shard_tables("images"),
        rejects=shard_tables("rejects"),
        # The images' addresses a line's url is matched against: those the pages show, and with
        # input.warc those of the image records.
        image_urls=shard_tables("image_urls") if PLAN.text else [],
        warc_records=out("tables/warc_records/all.parquet") if PLAN.warc_key else [],
    output:
        table=out("tables/search_keywords/all.parquet"),
        rejects=out("tables/search_keyword_rejects/all.parquet"),
        export=out("exports/search_keywords.csv"),
    log:
        out("logs/search_keywords.log"),
    params:
        code=script_code("search_keywords.py"),
    resources:
        # The rows as Arrow columns, sorted: 4.5 times the log's bytes measured (a million lines
        # of 37 bytes, 210 MiB over the start); the images' addresses as a dict.
        mem_mb=1024 + (5 * SEARCH_LOG_BYTES) // 2**20 + INVENTORY.n_images // 1000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/search_keywords.py"


rule warc_tables:
    """Which archive record each image and page was read from, and every record not used, with why."""
    output:
        records=out("tables/warc_records/all.parquet"),
        page_map=out("tables/warc_page_map/all.parquet"),
        rejects=out("tables/warc_rejects/all.parquet"),
    log:
        out("logs/warc_tables.log"),
    params:
        # The archives' sizes and modification times and the reading settings: the catalogue's cache key.
        listing=PLAN.warc_key,
        code=script_code("warc_tables.py"),
    resources:
        mem_mb=1024 + INVENTORY.n_images // 500,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/warc_tables.py"


rule text_all:
    input:
        rules.warc_tables.output if PLAN.warc_key else [],
        expand(out(layout.table_file("{table}", "{shard}")), table=TEXT_TABLES, shard=SHARDS) if PLAN.text else [],
        rules.text_scofeat.output if PLAN.text else [],
        rules.search_keywords.output if PLAN.search_log else [],

