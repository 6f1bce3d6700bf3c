# The 2015/2016 subtasks on the benchmark's images (SPEC 9): box ground truth, box baselines built
# from the k-NN runs, content-selection baselines; their evaluations go on the leaderboard
# (rule benchmark_report). Built when benchmark.boxes.source / benchmark.selection.truth are set.

BOXES_ON = box_stage.boxes_enabled(config)


if BOXES_ON:

    rule benchmark_boxes:
        input:
            images=expand(out(layout.table_file("images", "{shard}")), shard=SHARDS),
            concepts=BENCHMARK_TABLES["concepts"],
            splits=BENCHMARK_TABLES["splits"],
        output:
            **BOX_TRUTH,
        log:
            out("logs/benchmark_boxes.log"),
        params:
            settings=box_stage.boxes_job_settings(config),
            segmentations=SEGMENTATION_STATE if BENCHMARK["boxes"]["source"] == "segmentations" else "",
            code=script_code("benchmark_boxes.py"),
        resources:
            mem_mb=1024 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/benchmark_boxes.py"


if BOX_RUNS:

    # One job per box run, as the image-level baselines: all of them in one job took hours at
    # the 2016 shape.
    rule box_baseline:
        wildcard_constraints:
            run=one_of(BOX_RUNS),
        input:
            unpack(box_baseline_inputs),
        output:
            **box_baseline_files("{run}"),
        log:
            out("logs/box_baseline/{run}.log"),
        params:
            run=run_spec(BOX_RUNS),
            settings={"knn": BENCHMARK["knn"]},
            code=script_code("box_baseline.py"),
        resources:
            mem_mb=1024 + (4 * INVENTORY.n_images) // 1000,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/box_baseline.py"


if SELECTION_RUNS:

    rule selection_baselines:
        input:
            splits=BENCHMARK_TABLES["splits"],
            **({"boxes": BOX_TRUTH["boxes"]} if BOXES_ON else {}),
        output:
            **{f"{name}_{what}": path for name in SELECTION_RUNS for what, path in selection_files(name).items()},
        log:
            out("logs/selection_baselines.log"),
        params:
            settings=selection_stage.selection_job_settings(config),
            code=script_code("selection_baselines.py"),
        resources:
            mem_mb=1024 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/selection_baselines.py"
