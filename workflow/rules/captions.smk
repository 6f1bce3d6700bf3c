# Captions and text illustration (Gilbert et al. 2016: subtask 2 and the teaser): reference
# descriptions, nearest-neighbour caption runs and their Meteor 1.5 evaluation (by blocks of
# test images, pooled exactly); query documents from the pages, ranking baselines and their
# R@k. All on the leaderboard (report.smk).
# Built when benchmark.captions.references is set / benchmark.illustration.enabled.

from annobench.benchmark.captions import stage as caption_stage

# A job per feature: its nearest and consensus runs share the feature's neighbours and the
# references' n-gram space; all features in one job took 10 min at the 2016 shape, on the
# critical path before Meteor. A small build runs them all in one job, as it does the runs'
# evaluations.
CAPTION_FEATURES = sorted({run["feature"] for run in CAPTION_RUNS.values()})
CAPTION_BASELINE_SETTINGS = {"neighbours": BENCHMARK["captions"]["neighbours"]}
CAPTION_EVALUATION = {"tokenize": BENCHMARK["captions"]["tokenize"]}
# The EVAL JVM (-Xmx2G) and every test image's references and segments (10 kB an image).
CAPTION_EVALUATION_MEM_MB = 3072 + INVENTORY.n_images // 100


if CAPTION_RUNS:

    rule caption_references:
        input:
            splits=BENCHMARK_TABLES["splits"],
            page_captions=shard_tables("page_captions") if BENCHMARK["captions"]["references"] == "harvested" else [],
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

    rule caption_meteor_block:
        wildcard_constraints:
            block=r"\d{3}",
        input:
            captions=CAPTION_TABLE,
            splits=BENCHMARK_TABLES["splits"],
            images=lambda wildcards: caption_block_tables(wildcards.block),
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


if CAPTION_RUNS and PLAN.merged:
    CAPTION_BASELINE_PARTS = merged_parts(CAPTION_FEATURES, "feature", caption_baseline_inputs_of,
                                          caption_baseline_files)
    CAPTION_EVALUATION_PARTS = merged_parts(CAPTION_RUNS, "run", caption_evaluation_inputs_of,
                                            caption_evaluation_files)

    rule caption_baselines_merged:
        input:
            part_files(CAPTION_BASELINE_PARTS, "inputs"),
        output:
            part_files(CAPTION_BASELINE_PARTS, "outputs"),
        log:
            out("logs/caption_baselines_merged.log"),
        params:
            job="annobench.benchmark.captions.stage:caption_baselines_job",
            parts=CAPTION_BASELINE_PARTS,
            kinds=CAPTION_KINDS,
            settings=CAPTION_BASELINE_SETTINGS,
            code=script_code("parts.py", "annobench.benchmark.captions.stage"),
        resources:
            mem_mb=1024 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/parts.py"

    rule caption_run_evaluation_merged:
        input:
            part_files(CAPTION_EVALUATION_PARTS, "inputs"),
        output:
            part_files(CAPTION_EVALUATION_PARTS, "outputs"),
        log:
            out("logs/caption_run_evaluation_merged.log"),
        params:
            job="annobench.benchmark.captions.stage:caption_run_evaluation_job",
            parts=CAPTION_EVALUATION_PARTS,
            settings=CAPTION_EVALUATION,
            code=script_code("parts.py", "annobench.benchmark.captions.stage", "annobench.benchmark.captions.blocks"),
        resources:
            mem_mb=CAPTION_EVALUATION_MEM_MB,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/parts.py"

elif CAPTION_RUNS:

    rule caption_baselines:
        wildcard_constraints:
            feature=one_of(CAPTION_FEATURES),
        input:
            **caption_baseline_inputs_of("{feature}"),
        output:
            **caption_baseline_files("{feature}"),
        log:
            out("logs/caption_baselines/{feature}.log"),
        params:
            kinds=CAPTION_KINDS,
            settings=CAPTION_BASELINE_SETTINGS,
            code=script_code("caption_baselines.py"),
        resources:
            mem_mb=1024 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/caption_baselines.py"

    rule caption_run_evaluation:
        wildcard_constraints:
            run=one_of(CAPTION_RUNS),
        input:
            **caption_evaluation_inputs_of("{run}"),
        output:
            **caption_evaluation_files("{run}"),
        log:
            out("logs/caption_run_evaluation/{run}.log"),
        params:
            settings=CAPTION_EVALUATION,
            code=script_code("caption_run_evaluation.py", "annobench.benchmark.captions.blocks"),
        resources:
            mem_mb=CAPTION_EVALUATION_MEM_MB,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/caption_run_evaluation.py"


if PLAN.illustration_runs:

    # The pages are read by blocks (benchmark.illustration.block_images), each page by one job;
    # the text baselines rank each block's queries against every candidate in a job of its own
    # (the teaser's 180,000 texts x 200,000 images in one job set the release's makespan).
    ILLUSTRATION_BLOCKS = PLAN.illustration_blocks
    ILLUSTRATION_TEXT_RUNS = PLAN.illustration_text_runs
    ILLUSTRATION_QUERY_BLOCKS = expand(out("work/illustration/queries-{block:03d}.parquet"),
                                       block=range(ILLUSTRATION_BLOCKS))

    rule illustration_queries:
        wildcard_constraints:
            block=r"\d{3}",
        input:
            mapping=PLAN.page_map,
            images=shard_tables("images"),
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

    if ILLUSTRATION_TEXT_RUNS:

        rule illustration_rank:
            wildcard_constraints:
                block=r"\d{3}",
            input:
                queries=out("work/illustration/queries-{block}.parquet"),
                block_queries=ILLUSTRATION_QUERY_BLOCKS,  # the candidates: the images of every block's queries
                text_terms=shard_tables("text_terms"),
            output:
                **{name: out(f"work/illustration/{name}-{{block}}.parquet") for name in ILLUSTRATION_TEXT_RUNS},
            log:
                out("logs/illustration_rank/{block}.log"),
            params:
                settings={"baselines": ILLUSTRATION_TEXT_RUNS, "images": BENCHMARK["illustration"]["images"]},
                code=script_code("illustration_rank.py"),
            resources:
                # Every image's text terms are read for the candidates' term matrix; a block of scores
                # (baselines.SCORES_PER_BLOCK) beside it.
                mem_mb=1024 + INVENTORY.n_images // 50,
            conda:
                "../../envs/annobench.yaml"
            script:
                "../../scripts/illustration_rank.py"

    rule illustration:
        input:
            block_queries=ILLUSTRATION_QUERY_BLOCKS,
            block_rejects=expand(out("work/illustration/rejects-{block:03d}.parquet"), block=range(ILLUSTRATION_BLOCKS)),
            **{f"{name}_blocks": expand(out(f"work/illustration/{name}-{{block:03d}}.parquet"),
                                        block=range(ILLUSTRATION_BLOCKS)) for name in ILLUSTRATION_TEXT_RUNS},
        output:
            queries=out("tables/queries/all.parquet"),
            query_rejects=out("tables/query_rejects/all.parquet"),
            truth=out("exports/illustration_truth.csv"),
            **{f"{name}_{what}": out(f"{folder}/illustration_{name}.{ext}") for name in PLAN.illustration_runs
               for what, folder, ext in (("run", "runs", "csv"), ("evaluation", "evaluations", "json"))},
        log:
            out("logs/illustration.log"),
        params:
            settings=BENCHMARK["illustration"],
            code=script_code("illustration.py"),
        resources:
            # Every query's text, and every run's rows (100 a query).
            mem_mb=1024 + INVENTORY.n_images // 50,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/illustration.py"
