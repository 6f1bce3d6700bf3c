# The image-level annotation benchmark around the features: ground truth and splits, each test
# image's nearest training images, the baseline runs and their evaluation (the measures of the
# ImageCLEF 2012 task, Villegas and Paredes 2014, section 2.5, and Dutta et al. 2018), and the
# region-level benchmark (Escalante et al. 2008, section 5). Built when
# benchmark.ground_truth.source is set; the report is in report.smk.

from annobench.benchmark.annotation import stage as annotation_stage


rule benchmark_truth:
    input:
        images=shard_tables("images"),
        regions=shard_tables("regions") if BENCHMARK["ground_truth"]["source"] == "regions" else [],
        # Labels from boxes: the kept boxes (rule benchmark_boxes, which then reads no benchmark table).
        **({"boxes": BOX_TRUTH["boxes"]} if BENCHMARK["ground_truth"]["source"] == "boxes" else {}),
    output:
        **BENCHMARK_TABLES,
        export=directory(out("exports/imageclef2012")),
    log:
        out("logs/benchmark_truth.log"),
    params:
        settings=annotation_stage.truth_job_settings(config) if PLAN.benchmark_on else {},
        code=script_code("benchmark_truth.py"),
    resources:
        mem_mb=1024 + INVENTORY.n_images // 1000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/benchmark_truth.py"


# -- nearest neighbours ---------------------------------------------------------------------
# The search as test blocks x training blocks of whole shards (benchmark.neighbours), each a
# job, merged exactly into the same bytes as one search; one job a feature when the build is
# small, and one job for every feature when it is smaller than sharding.merge_below_images.
NEIGHBOUR_SEARCH = {key: BENCHMARK["neighbours"][key] for key in ("query_block", "reference_block")}


# Gathering a test block's test vectors streams them (a record batch at a time).
NEIGHBOUR_QUERIES_MEM_MB = 1536
# One search: as a part. Merging parts: k names and distances a test image.
NEIGHBOURS_MEM_MB = 1024 + (4 if PLAN.neighbour_search_split else 24) * INVENTORY.n_images // 1000
NEIGHBOURS_MINUTES = (10 if PLAN.neighbour_search_split
                      else 10 + math.ceil(NEIGHBOUR_MINUTES_PER_PAIR * INVENTORY.n_images**2))


rule benchmark_neighbour_queries:
    # A split search only: a test block's test vectors read once, not once a training block.
    wildcard_constraints:
        feature=one_of(PLAN.neighbours),
        test_block=r"\d{3}",
    input:
        queries=lambda wildcards: neighbour_block_tables(wildcards.feature, "test", wildcards.test_block),
        splits=BENCHMARK_TABLES["splits"],
    output:
        out("work/neighbour_queries/{feature}/test-{test_block}.parquet"),
    log:
        out("logs/benchmark_neighbour_queries/{feature}/test-{test_block}.log"),
    params:
        code=script_code("benchmark_neighbour_queries.py", "annobench.benchmark.neighbours.blocks"),
    threads: 1
    resources:
        mem_mb=NEIGHBOUR_QUERIES_MEM_MB,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/benchmark_neighbour_queries.py"


rule benchmark_neighbour_block:
    wildcard_constraints:
        feature=one_of(PLAN.neighbours),
        test_block=r"\d{3}",
        training_block=r"\d{3}",
    input:
        unpack(neighbour_block_inputs),
    output:
        out("work/neighbour_blocks/{feature}/test-{test_block}-train-{training_block}.parquet"),
    log:
        out("logs/benchmark_neighbour_block/{feature}/test-{test_block}-train-{training_block}.log"),
    params:
        k=lambda wildcards: PLAN.neighbours[wildcards.feature],
        settings=NEIGHBOUR_SEARCH,
        code=script_code("benchmark_neighbour_block.py", "annobench.benchmark.neighbours.blocks"),
    threads: 1
    resources:
        mem_mb=neighbour_block_memory,
        runtime=neighbour_block_runtime,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/benchmark_neighbour_block.py"


if PLAN.neighbours and PLAN.merged and not PLAN.neighbour_search_split:
    NEIGHBOUR_PARTS = merged_parts(PLAN.neighbours, "feature", neighbours_inputs_of,
                                   lambda feature: {"neighbours": neighbours_file(feature)},
                                   lambda feature: {"k": PLAN.neighbours[feature]})

    rule benchmark_neighbours_merged:
        input:
            part_files(NEIGHBOUR_PARTS, "inputs"),
        output:
            part_files(NEIGHBOUR_PARTS, "outputs"),
        log:
            out("logs/benchmark_neighbours_merged.log"),
        params:
            job="annobench.benchmark.neighbours.stage:neighbours_job",
            parts=NEIGHBOUR_PARTS,
            settings=NEIGHBOUR_SEARCH,
            training_blocks=len(NEIGHBOUR_BLOCKS["training"]),
            code=script_code("parts.py", "annobench.benchmark.neighbours.stage"),
        threads: 1
        priority: CRITICAL_PATH
        resources:
            mem_mb=NEIGHBOURS_MEM_MB,
            runtime=NEIGHBOURS_MINUTES * max(1, len(PLAN.neighbours)),
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/parts.py"

else:

    rule benchmark_neighbours:
        wildcard_constraints:
            feature=one_of(PLAN.neighbours),
        input:
            unpack(lambda wildcards: neighbours_inputs_of(wildcards.feature)),
        output:
            neighbours_file("{feature}"),
        log:
            out("logs/benchmark_neighbours/{feature}.log"),
        params:
            k=lambda wildcards: PLAN.neighbours[wildcards.feature],
            settings=NEIGHBOUR_SEARCH,
            training_blocks=len(NEIGHBOUR_BLOCKS["training"]),
            code=script_code("benchmark_neighbours.py", "annobench.benchmark.neighbours.blocks"),
        threads: 1
        priority: CRITICAL_PATH
        resources:
            mem_mb=NEIGHBOURS_MEM_MB,
            runtime=NEIGHBOURS_MINUTES,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/benchmark_neighbours.py"


# -- baseline runs ----------------------------------------------------------------------------
# One job per baseline run: at the 2016 shape (every image a test image) all runs in one job
# took half an hour on the critical path after the blocked neighbour search; a run's own job
# costs a second of start-up and re-reads the benchmark tables (seconds at 510,123 images).
# A small build runs them all in one job.


BASELINE_SETTINGS = annotation_stage.baseline_job_settings(config)
BASELINE_CODE = ("annobench.benchmark.annotation.baselines", "annobench.benchmark.annotation.measure")
BASELINE_MEM_MB = 1024 + (4 * INVENTORY.n_images) // 1000

if PLAN.baselines and PLAN.merged:
    BASELINE_PARTS = merged_parts(PLAN.baselines, "run", baseline_inputs_of, baseline_files,
                                  lambda name: {"run": PLAN.baselines[name]})

    rule baseline_merged:
        input:
            part_files(BASELINE_PARTS, "inputs"),
        output:
            part_files(BASELINE_PARTS, "outputs"),
        log:
            out("logs/baseline_merged.log"),
        params:
            job="annobench.benchmark.annotation.stage:baseline_job",
            parts=BASELINE_PARTS,
            settings=BASELINE_SETTINGS,
            code=script_code("parts.py", "annobench.benchmark.annotation.stage", *BASELINE_CODE),
        threads: 1
        resources:
            mem_mb=BASELINE_MEM_MB,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/parts.py"

elif PLAN.baselines:

    rule baseline:
        wildcard_constraints:
            run=one_of(PLAN.baselines),
        input:
            unpack(lambda wildcards: baseline_inputs_of(wildcards.run)),
        output:
            **baseline_files("{run}"),
        log:
            out("logs/baseline/{run}.log"),
        params:
            run=run_spec(PLAN.baselines),
            settings=BASELINE_SETTINGS,
            code=script_code("baseline.py", *BASELINE_CODE),
        threads: 1
        resources:
            mem_mb=BASELINE_MEM_MB,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/baseline.py"


rule region_benchmark:
    input:
        regions=shard_tables("regions"),
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
