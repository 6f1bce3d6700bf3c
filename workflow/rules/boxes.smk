# The 2015/2016 subtasks on boxes (Gilbert et al. 2016): box ground truth, box baselines built
# from the k-NN runs (localisation, subtask 1) and content-selection baselines (subtask 3);
# their evaluations go on the leaderboard (report.smk). Built when benchmark.boxes.source /
# benchmark.selection.truth are set.

from annobench.benchmark.boxes import stage as box_stage
from annobench.benchmark.selection import stage as selection_stage


if PLAN.boxes_on:

    rule benchmark_boxes:
        input:
            images=shard_tables("images"),
            # Labels from boxes: the boxes come first, against every ingested image (box_stage).
            **({} if box_stage.labels_from_boxes(config) else {"concepts": BENCHMARK_TABLES["concepts"],
                                                                "splits": BENCHMARK_TABLES["splits"]}),
        output:
            **BOX_TRUTH,
        log:
            out("logs/benchmark_boxes.log"),
        params:
            settings=box_stage.boxes_job_settings(config),
            segmentations=PLAN.segmentation_state if BENCHMARK["boxes"]["source"] == "segmentations" else "",
            code=script_code("benchmark_boxes.py"),
        resources:
            mem_mb=1024 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/benchmark_boxes.py"


    # Image labels and kept boxes side by side, whatever the labels' source: where they disagree.
    rule box_label_consistency:
        input:
            ground_truth=BENCHMARK_TABLES["ground_truth"],
            boxes=BOX_TRUTH["boxes"],
            box_rejects=BOX_TRUTH["box_rejects"],
        output:
            report=BOX_CONSISTENCY,
        log:
            out("logs/box_label_consistency.log"),
        params:
            code=script_code("box_label_consistency.py"),
        resources:
            mem_mb=1024 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/box_label_consistency.py"


# One job per box run, as the image-level baselines: all of them in one job took hours at the
# 2016 shape. A small build runs them all in one job.
BOX_RUN_SETTINGS = {"knn": BENCHMARK["knn"]}
BOX_RUN_MEM_MB = 1024 + (4 * INVENTORY.n_images) // 1000

if PLAN.box_runs and PLAN.merged:
    BOX_RUN_PARTS = merged_parts(PLAN.box_runs, "run", box_baseline_inputs_of, box_baseline_files,
                                 lambda name: {"run": PLAN.box_runs[name]})

    rule box_baseline_merged:
        input:
            part_files(BOX_RUN_PARTS, "inputs"),
        output:
            part_files(BOX_RUN_PARTS, "outputs"),
        log:
            out("logs/box_baseline_merged.log"),
        params:
            job="annobench.benchmark.boxes.stage:box_baseline_job",
            parts=BOX_RUN_PARTS,
            settings=BOX_RUN_SETTINGS,
            code=script_code("parts.py", "annobench.benchmark.boxes.stage"),
        resources:
            mem_mb=BOX_RUN_MEM_MB,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/parts.py"

elif PLAN.box_runs:

    rule box_baseline:
        wildcard_constraints:
            run=one_of(PLAN.box_runs),
        input:
            unpack(lambda wildcards: box_baseline_inputs_of(wildcards.run)),
        output:
            **box_baseline_files("{run}"),
        log:
            out("logs/box_baseline/{run}.log"),
        params:
            run=run_spec(PLAN.box_runs),
            settings=BOX_RUN_SETTINGS,
            code=script_code("box_baseline.py"),
        resources:
            mem_mb=BOX_RUN_MEM_MB,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/box_baseline.py"


if PLAN.selection_runs:

    rule selection_baselines:
        input:
            splits=BENCHMARK_TABLES["splits"],
            **({"boxes": BOX_TRUTH["boxes"]} if PLAN.boxes_on else {}),
        output:
            **{f"{name}_{what}": path for name in PLAN.selection_runs for what, path in selection_files(name).items()},
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
