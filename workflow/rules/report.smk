# The benchmark's report, after every subtask's rules: each subtask's leaderboard (concepts,
# boxes, content selection, captions, text illustration; the baselines and the accepted
# submitted runs) and the dataset diagnostics of Dutta et al. 2018 (section 4) in one Markdown
# report and its tables.

rule benchmark_report:
    input:
        **BENCHMARK_TABLES,
        overlap=OVERLAP_NEIGHBOURS,
        evaluations=expand(out("evaluations/{run}.json"), run=sorted(PLAN.baselines)),
        box_evaluations=expand(out("evaluations/{run}.json"), run=sorted(PLAN.box_runs)),
        selection_evaluations=expand(out("evaluations/selection_{run}.json"), run=PLAN.selection_runs),
        caption_evaluations=expand(out("evaluations/{run}.json"), run=[*sorted(CAPTION_RUNS), "caption_human"])
        if CAPTION_RUNS
        else [],
        illustration_evaluations=expand(out("evaluations/illustration_{run}.json"), run=PLAN.illustration_runs)
        if PLAN.benchmark_on
        else [],
        submissions=SUBMISSION_RESULTS,
    output:
        leaderboard=out("reports/leaderboard.md"),
        leaderboard_table=out("tables/leaderboard/all.parquet"),
        **({"box_leaderboard": out("tables/box_leaderboard/all.parquet")} if PLAN.box_runs else {}),
        **({"selection_leaderboard": out("tables/selection_leaderboard/all.parquet")} if PLAN.selection_runs else {}),
        **({"caption_leaderboard": out("tables/caption_leaderboard/all.parquet")} if CAPTION_RUNS else {}),
        **(
            {"illustration_leaderboard": out("tables/illustration_leaderboard/all.parquet")}
            if PLAN.illustration_runs and PLAN.benchmark_on
            else {}
        ),
        figure=out("reports/label_frequencies.png"),
        diagnostics=out("reports/benchmark_diagnostics.json"),
        overlap_table=out("tables/visual_overlap/all.parquet"),
    log:
        out("logs/benchmark_report.log"),
    params:
        settings={key: BENCHMARK[key] for key in ("k", "overlap")},
        code=script_code(
            "benchmark_report.py",
            "annobench.benchmark.boxes.leaderboard",
            "annobench.benchmark.selection.leaderboard",
            "annobench.benchmark.captions.leaderboard",
            "annobench.benchmark.illustration.leaderboard",
        ),
    resources:
        mem_mb=1024 + INVENTORY.n_images // 1000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/benchmark_report.py"


rule benchmark_all:
    input:
        rules.benchmark_report.output if PLAN.benchmark_on else [],
        rules.region_benchmark.output if PLAN.benchmark_on and PLAN.regions_on else [],
        [*BOX_TRUTH.values(), BOX_CONSISTENCY] if PLAN.boxes_on else [],
        out("tables/caption_scores/all.parquet") if CAPTION_RUNS else [],
        expand(out("evaluations/illustration_{run}.json"), run=PLAN.illustration_runs),
        rules.campaign_results.output if PLAN.benchmark_on else [],
        SUBMISSION_RUN_TABLES,
