# The benchmark around the features (SPEC 8): ground truth, splits, baseline runs, their evaluation,
# a leaderboard and diagnostics. Built when benchmark.ground_truth.source is set.

from annobench.benchmark.annotation import stage as annotation_stage
from annobench.benchmark.boxes import stage as box_stage
from annobench.benchmark.captions import stage as caption_stage
from annobench.benchmark.illustration import stage as illustration_stage
from annobench.benchmark.neighbours import blocks as neighbour_blocks
from annobench.benchmark.selection import stage as selection_stage

BENCHMARK = config["benchmark"]
BENCHMARK_ON = annotation_stage.enabled(config)
REGIONS_ON = bool(config["input"]["segmentations"])
BASELINES = annotation_stage.baseline_runs(config, has_text=bool(TEXT_PLAN)) if BENCHMARK_ON else {}
NEIGHBOURS = annotation_stage.neighbours_needed(config, BASELINES) if BENCHMARK_ON else {}

if BENCHMARK_ON:
    _missing = sorted(set(NEIGHBOURS) - set(FEATURE_TABLES))
    if _missing:
        raise WorkflowError(f"benchmark.features / benchmark.overlap.feature name features this build does not "
                            f"make: {', '.join(_missing)} (see features.bow.kinds)")
    if BENCHMARK["ground_truth"]["source"] == "regions" and not REGIONS_ON:
        raise WorkflowError("benchmark.ground_truth.source is regions but input.segmentations is empty")
    if "cooccurrence" in BENCHMARK["baselines"] and not TEXT_PLAN:
        logger.info("annobench: no text features (input.page_map is empty): co-occurrence baselines skipped")

try:
    box_stage.check_config(config)
    selection_stage.check_config(config)
except (box_stage.BoxConfigError, selection_stage.SelectionConfigError, ValueError) as error:
    raise WorkflowError(str(error))
# The subtasks of SPEC 9 (rules in boxes.smk): box runs and selection baselines, on the leaderboard.
BOX_RUNS = box_stage.box_baseline_runs(config)
SELECTION_RUNS = selection_stage.selection_runs(config)
BOX_TRUTH = {"boxes": out("tables/boxes/all.parquet"), "box_rejects": out("tables/box_rejects/all.parquet")}
# Captions and text illustration (rules in captions.smk), on the leaderboard too.
try:
    illustration_stage.check_config(config)
except illustration_stage.IllustrationConfigError as error:
    raise WorkflowError(str(error))
CAPTION_RUNS = caption_stage.caption_runs(config)
ILLUSTRATION_RUNS = illustration_stage.illustration_runs(config)



BENCHMARK_TABLES = {
    "concepts": out("tables/concepts/all.parquet"),
    "ground_truth": out("tables/ground_truth/all.parquet"),
    "splits": out("tables/splits/all.parquet"),
}


rule benchmark_truth:
    input:
        images=expand(out(layout.table_file("images", "{shard}")), shard=SHARDS),
        regions=expand(out(layout.table_file("regions", "{shard}")), shard=SHARDS)
        if BENCHMARK["ground_truth"]["source"] == "regions"
        else [],
    output:
        **BENCHMARK_TABLES,
        export=directory(out("exports/imageclef2012")),
    log:
        out("logs/benchmark_truth.log"),
    params:
        settings=annotation_stage.truth_job_settings(config) if BENCHMARK_ON else {},
        code=script_code("benchmark_truth.py"),
    resources:
        mem_mb=1024 + INVENTORY.n_images // 1000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/benchmark_truth.py"


# The search as test blocks x training blocks of whole shards (benchmark.neighbours), each a
# job, merged exactly into the same bytes as one search; one job when the build is small.
NEIGHBOUR_BLOCKS = neighbour_blocks.block_plan(BENCHMARK["neighbours"], [len(shard) for shard in INVENTORY.shards])
NEIGHBOUR_SEARCH = {key: BENCHMARK["neighbours"][key] for key in ("query_block", "reference_block")}


rule benchmark_neighbour_block:
    wildcard_constraints:
        feature=one_of(NEIGHBOURS),
        test_block=r"\d{3}",
        training_block=r"\d{3}",
    input:
        unpack(neighbour_block_inputs),
    output:
        out("work/neighbour_blocks/{feature}/test-{test_block}-train-{training_block}.parquet"),
    log:
        out("logs/benchmark_neighbour_block/{feature}/test-{test_block}-train-{training_block}.log"),
    params:
        k=lambda wildcards: NEIGHBOURS[wildcards.feature],
        settings=NEIGHBOUR_SEARCH,
        code=script_code("benchmark_neighbour_block.py", "annobench.benchmark.neighbours.blocks"),
    threads: 1
    resources:
        mem_mb=lambda wildcards: neighbour_block_resources(wildcards, "mem_mb"),
        runtime=lambda wildcards: neighbour_block_resources(wildcards, "runtime"),
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/benchmark_neighbour_block.py"


rule benchmark_neighbours:
    wildcard_constraints:
        feature=one_of(NEIGHBOURS),
    input:
        unpack(neighbours_inputs),
    output:
        out("work/neighbours/{feature}.parquet"),
    log:
        out("logs/benchmark_neighbours/{feature}.log"),
    params:
        k=lambda wildcards: NEIGHBOURS[wildcards.feature],
        settings=NEIGHBOUR_SEARCH,
        training_blocks=len(NEIGHBOUR_BLOCKS["training"]),
        code=script_code("benchmark_neighbours.py", "annobench.benchmark.neighbours.blocks"),
    threads: 1
    resources:
        # One search: as a part (above). Merging parts: k names and distances a test image.
        mem_mb=1024 + (4 if neighbour_searches_split() else 24) * INVENTORY.n_images // 1000,
        runtime=10 if neighbour_searches_split() else 10 + math.ceil(NEIGHBOUR_MINUTES_PER_PAIR * INVENTORY.n_images**2),
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/benchmark_neighbours.py"


# One job per baseline run: at the 2016 shape (every image a test image) all runs in one job
# took half an hour on the critical path after the blocked neighbour search; a run's own job
# costs a second of start-up and re-reads the benchmark tables (seconds at 510,123 images).
if BASELINES:

    rule baseline:
        wildcard_constraints:
            run=one_of(BASELINES),
        input:
            unpack(baseline_inputs),
        output:
            **baseline_files("{run}"),
        log:
            out("logs/baseline/{run}.log"),
        params:
            run=run_spec(BASELINES),
            settings=annotation_stage.baseline_job_settings(config),
            code=script_code(
                "baseline.py", "annobench.benchmark.annotation.baselines", "annobench.benchmark.annotation.measure"
            ),
        threads: 1
        resources:
            mem_mb=1024 + (4 * INVENTORY.n_images) // 1000,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/baseline.py"


rule benchmark_report:
    input:
        **BENCHMARK_TABLES,
        overlap=out(f"work/neighbours/{BENCHMARK['overlap']['feature']}.parquet"),
        evaluations=expand(out("evaluations/{run}.json"), run=sorted(BASELINES)),
        box_evaluations=expand(out("evaluations/{run}.json"), run=sorted(BOX_RUNS)),
        selection_evaluations=expand(out("evaluations/selection_{run}.json"), run=SELECTION_RUNS),
        caption_evaluations=expand(out("evaluations/{run}.json"), run=[*sorted(CAPTION_RUNS), "caption_human"])
        if CAPTION_RUNS
        else [],
        illustration_evaluations=expand(out("evaluations/illustration_{run}.json"), run=ILLUSTRATION_RUNS)
        if BENCHMARK_ON
        else [],
    output:
        leaderboard=out("reports/leaderboard.md"),
        leaderboard_table=out("tables/leaderboard/all.parquet"),
        **({"box_leaderboard": out("tables/box_leaderboard/all.parquet")} if BOX_RUNS else {}),
        **({"selection_leaderboard": out("tables/selection_leaderboard/all.parquet")} if SELECTION_RUNS else {}),
        **({"caption_leaderboard": out("tables/caption_leaderboard/all.parquet")} if CAPTION_RUNS else {}),
        **(
            {"illustration_leaderboard": out("tables/illustration_leaderboard/all.parquet")}
            if ILLUSTRATION_RUNS and BENCHMARK_ON
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


rule region_benchmark:
    input:
        regions=expand(out(layout.table_file("regions", "{shard}")), shard=SHARDS),
    output:
        region_splits=out("tables/region_splits/all.parquet"),
        run=out("runs/regions_random.parquet"),
        evaluation=out("evaluations/regions_random.json"),
    log:
        out("logs/region_benchmark.log"),
    params:
        settings=BENCHMARK["region_split"],
        seed=BENCHMARK["seed"],
        ontology=folder_state(config["segmentations"]["ontology"]) if config["segmentations"]["ontology"] else "",
        code=script_code("region_benchmark.py"),
    resources:
        mem_mb=1024 + (2 * INVENTORY.n_images) // 1000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/region_benchmark.py"


rule benchmark_all:
    input:
        rules.benchmark_report.output if BENCHMARK_ON else [],
        rules.region_benchmark.output if BENCHMARK_ON and REGIONS_ON else [],
        list(BOX_TRUTH.values()) if box_stage.boxes_enabled(config) else [],
        out("tables/caption_scores/all.parquet") if CAPTION_RUNS else [],
        expand(out("evaluations/illustration_{run}.json"), run=ILLUSTRATION_RUNS),
