# Captions and text illustration (SPEC 9, subtask 2 of 2016 and its teaser): reference
# descriptions, nearest-neighbour caption runs and their Meteor 1.5 evaluation; query documents
# from the pages, ranking baselines and their R@k. All on the leaderboard (rule benchmark_report).
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

    rule caption_baselines:
        input:
            captions=CAPTION_TABLE,
            splits=BENCHMARK_TABLES["splits"],
            **{f"neighbours_{f}": out(f"work/neighbours/{f}.parquet")
               for f in sorted({r["feature"] for r in CAPTION_RUNS.values()})},
        output:
            **{f"{run}_{what}": out(f"runs/{run}.{ext}") for run in CAPTION_RUNS
               for what, ext in (("run", "parquet"), ("run_text", "csv"))},
        log:
            out("logs/caption_baselines.log"),
        params:
            runs=CAPTION_RUNS,
            settings={"neighbours": BENCHMARK["captions"]["neighbours"]},
            code=script_code("caption_baselines.py"),
        resources:
            mem_mb=1024 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/caption_baselines.py"

    # One job for every run: the Meteor and tokenizer JVMs start once a run, not once a job.
    rule caption_evaluation:
        input:
            captions=CAPTION_TABLE,
            splits=BENCHMARK_TABLES["splits"],
            **{f"run_{run}": out(f"runs/{run}.parquet") for run in CAPTION_RUNS},
        output:
            **{f"evaluation_{run}": out(f"evaluations/{run}.json") for run in CAPTION_RUNS},
            evaluation_human=out("evaluations/caption_human.json"),
            scores=out("tables/caption_scores/all.parquet"),
        log:
            out("logs/caption_evaluation.log"),
        params:
            runs=sorted(CAPTION_RUNS),
            settings={"tokenize": BENCHMARK["captions"]["tokenize"]},
            code=script_code("caption_evaluation.py"),
        resources:
            # The Meteor JVM runs with -Xmx2G (pycocoevalcap).
            mem_mb=3072 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/caption_evaluation.py"


if ILLUSTRATION_RUNS:

    rule illustration:
        input:
            mapping=PAGE_MAP,
            images=expand(out(layout.table_file("images", "{shard}")), shard=SHARDS),
            text_terms=expand(out(layout.table_file("text_terms", "{shard}")), shard=SHARDS),
            splits=BENCHMARK_TABLES["splits"] if BENCHMARK["illustration"]["images"] == "test" else [],
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
            pages=folder_state(config["input"]["pages"]),
            code=script_code("illustration.py"),
        resources:
            # Each page is parsed once; its DOM takes some ten times its size.
            mem_mb=1024 + INVENTORY.n_images // 100 + (12 * config["text"]["max_page_bytes"]) // 2**20,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/illustration.py"
