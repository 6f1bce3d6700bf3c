# Captions and text illustration (SPEC 9, subtask 2 of 2016 and its teaser): reference
# descriptions, nearest-neighbour caption runs and their Meteor 1.5 evaluation (by blocks of
# test images, pooled exactly); query documents from the pages, ranking baselines and their
# R@k. All on the leaderboard (rule benchmark_report).
# Built when benchmark.captions.references is set / benchmark.illustration.enabled.

CAPTION_TABLE = out("tables/captions/all.parquet")


if CAPTION_RUNS:

    rule caption_references:
        input:
            splits=BENCHMARK_TABLES["splits"],
            page_captions=expand(out(layout.table_file("page_captions", "{shard}")), shard=SHARDS)
            if BENCHMARK["captions"]["references"] == "harvested"
            else [],
        output:
            captions=CAPTION_TABLE,
        log:
            out("logs/caption_references.log"),
        params:
            settings=caption_stage.references_job_settings(config),
            code=script_code("caption_references.py"),
        resources:
            mem_mb=1024 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/caption_references.py"

    # A job per feature: its nearest and consensus runs share the feature's neighbours and the
    # references' n-gram space; all features in one job took 10 min at the 2016 shape, on the
    # critical path before Meteor.
    CAPTION_KINDS = sorted({r["kind"] for r in CAPTION_RUNS.values()})

    rule caption_baselines:
        wildcard_constraints:
            feature=one_of({r["feature"] for r in CAPTION_RUNS.values()}),
        input:
            captions=CAPTION_TABLE,
            splits=BENCHMARK_TABLES["splits"],
            neighbours=out("work/neighbours/{feature}.parquet"),
        output:
            **{f"{kind}_{what}": out(f"runs/{caption_stage.caption_run_name(kind, '{feature}')}.{ext}")
               for kind in CAPTION_KINDS for what, ext in (("run", "parquet"), ("run_text", "csv"))},
        log:
            out("logs/caption_baselines/{feature}.log"),
        params:
            kinds=CAPTION_KINDS,
            settings={"neighbours": BENCHMARK["captions"]["neighbours"]},
            code=script_code("caption_baselines.py"),
        resources:
            mem_mb=1024 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/caption_baselines.py"

    # Meteor by blocks of test images (benchmark.captions.block_images, whole shards): each block's
    # segment statistics, then one EVAL a run over every block's, the same figures as one job.
    CAPTION_BLOCKS = neighbour_blocks.shard_blocks([len(shard) for shard in INVENTORY.shards],
                                                   BENCHMARK["captions"]["block_images"])
    CAPTION_EVALUATION = {"tokenize": BENCHMARK["captions"]["tokenize"]}

    rule caption_meteor_block:
        wildcard_constraints:
            block=r"\d{3}",
        input:
            captions=CAPTION_TABLE,
            splits=BENCHMARK_TABLES["splits"],
            images=lambda wildcards: caption_block_tables(CAPTION_BLOCKS, wildcards.block),
            **{f"run_{run}": out(f"runs/{run}.parquet") for run in CAPTION_RUNS},
        output:
            references=out("work/caption_meteor/references-{block}.parquet"),
            segments=out("work/caption_meteor/segments-{block}.parquet"),
        log:
            out("logs/caption_meteor_block/{block}.log"),
        params:
            runs=sorted(CAPTION_RUNS),
            settings=CAPTION_EVALUATION,
            code=script_code("caption_meteor_block.py", "annobench.benchmark.captions.blocks"),
        resources:
            # The Meteor JVM runs with -Xmx2G (pycocoevalcap); the block's captions beside it.
            mem_mb=3072 + INVENTORY.n_images // 1000,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/caption_meteor_block.py"

    CAPTION_BLOCK_OUTPUTS = {
        what: expand(out(f"work/caption_meteor/{what}-{{block:03d}}.parquet"), block=range(len(CAPTION_BLOCKS)))
        for what in ("references", "segments")}

    rule caption_run_evaluation:
        wildcard_constraints:
            run=one_of(CAPTION_RUNS),
        input:
            captions=CAPTION_TABLE,
            splits=BENCHMARK_TABLES["splits"],
            run=out("runs/{run}.parquet"),
            **CAPTION_BLOCK_OUTPUTS,
        output:
            evaluation=out("evaluations/{run}.json"),
            scores=out("work/caption_scores/{run}.parquet"),
        log:
            out("logs/caption_run_evaluation/{run}.log"),
        params:
            settings=CAPTION_EVALUATION,
            code=script_code("caption_run_evaluation.py", "annobench.benchmark.captions.blocks"),
        resources:
            # The EVAL JVM (-Xmx2G) and every test image's references and segments (10 kB an image).
            mem_mb=3072 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/caption_run_evaluation.py"

    rule caption_human_bound:
        input:
            captions=CAPTION_TABLE,
            splits=BENCHMARK_TABLES["splits"],
            **CAPTION_BLOCK_OUTPUTS,
        output:
            evaluation=out("evaluations/caption_human.json"),
        log:
            out("logs/caption_human_bound.log"),
        params:
            settings=CAPTION_EVALUATION,
            code=script_code("caption_human_bound.py", "annobench.benchmark.captions.blocks"),
        resources:
            mem_mb=3072 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/caption_human_bound.py"

    rule caption_evaluation:
        input:
            **{f"scores_{run}": out(f"work/caption_scores/{run}.parquet") for run in CAPTION_RUNS},
        output:
            scores=out("tables/caption_scores/all.parquet"),
        log:
            out("logs/caption_evaluation.log"),
        params:
            runs=sorted(CAPTION_RUNS),
            settings=CAPTION_EVALUATION,
            code=script_code("caption_evaluation.py"),
        resources:
            # Every run's rows: some 100 bytes a run and test image.
            mem_mb=1024 + INVENTORY.n_images // 50,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/caption_evaluation.py"


if ILLUSTRATION_RUNS:

    # The pages are read by blocks (benchmark.illustration.block_images), each page by one job.
    ILLUSTRATION_BLOCKS = illustration_stage.query_blocks(config, INVENTORY.n_images)

    rule illustration_queries:
        wildcard_constraints:
            block=r"\d{3}",
        input:
            mapping=PAGE_MAP,
            images=expand(out(layout.table_file("images", "{shard}")), shard=SHARDS),
            splits=BENCHMARK_TABLES["splits"] if BENCHMARK["illustration"]["images"] == "test" else [],
        output:
            queries=out("work/illustration/queries-{block}.parquet"),
            query_rejects=out("work/illustration/rejects-{block}.parquet"),
        log:
            out("logs/illustration_queries/{block}.log"),
        params:
            blocks=ILLUSTRATION_BLOCKS,
            settings=BENCHMARK["illustration"],
            pages=folder_state(config["input"]["pages"]),
            code=script_code("illustration_queries.py"),
        resources:
            # Each page is parsed once; its DOM takes some ten times its size.
            mem_mb=1024 + INVENTORY.n_images // 1000 + (12 * config["text"]["max_page_bytes"]) // 2**20,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/illustration_queries.py"

    rule illustration:
        input:
            block_queries=expand(out("work/illustration/queries-{block:03d}.parquet"), block=range(ILLUSTRATION_BLOCKS)),
            block_rejects=expand(out("work/illustration/rejects-{block:03d}.parquet"), block=range(ILLUSTRATION_BLOCKS)),
            text_terms=expand(out(layout.table_file("text_terms", "{shard}")), shard=SHARDS),
        output:
            queries=out("tables/queries/all.parquet"),
            query_rejects=out("tables/query_rejects/all.parquet"),
            truth=out("exports/illustration_truth.csv"),
            **{f"{name}_{what}": out(f"{folder}/illustration_{name}.{ext}") for name in ILLUSTRATION_RUNS
               for what, folder, ext in (("run", "runs", "csv"), ("evaluation", "evaluations", "json"))},
        log:
            out("logs/illustration.log"),
        params:
            settings=BENCHMARK["illustration"],
            code=script_code("illustration.py"),
        resources:
            # Every query's text, and the candidates' term matrix.
            mem_mb=1024 + INVENTORY.n_images // 50,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/illustration.py"
