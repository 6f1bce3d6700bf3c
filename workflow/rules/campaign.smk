# The round around the benchmark (an ImageCLEF round: Villegas and Paredes 2014, Gilbert et al.
# 2016): the participant's kit and the organisers' test truth, each submitted run checked and
# evaluated (a job a run, so a run added later reruns only its own job and the jobs that gather
# every run), and the results tables of every run. Built with the benchmark.

from annobench.benchmark.campaign.results import FIGURES, figure_name
from annobench.benchmark.campaign.statistics import ORDER_MEASURES
from annobench.benchmark.selection.stage import selection_job_settings
from annobench.core.fingerprint import file_state

CAMPAIGN = BENCHMARK["campaign"]
# The subsets by their files' state, never their paths (the results depend on the images they list).
CAMPAIGN_SUBSETS = {name: file_state(path) for name, path in sorted(CAMPAIGN["subsets"].items())}


if PLAN.benchmark_on:

    rule campaign_kit:
        input:
            **BENCHMARK_TABLES,
            images=shard_tables("images"),
            **({"boxes": BOX_TRUTH["boxes"]} if PLAN.boxes_on else {}),
            **({"captions": CAPTION_TABLE} if CAPTION_RUNS else {}),
            **({"queries": out("tables/queries/all.parquet")} if PLAN.illustration_runs else {}),
        output:
            **{name: directory(path) for name, path in CAMPAIGN_KIT.items()},
        log:
            out("logs/campaign_kit.log"),
        params:
            settings={
                **{key: BENCHMARK[key] for key in ("k", "seed", "exports")},
                "campaign": {key: CAMPAIGN[key] for key in ("seed", "max_runs")},
                "illustration_seed": BENCHMARK["illustration"]["seed"],
                "selection": selection_job_settings(config) if BENCHMARK["selection"]["truth"] else {},
            },
            code=script_code("campaign_kit.py"),
        resources:
            mem_mb=1024 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/campaign_kit.py"

    if not PLAN.merged:

        rule campaign_run_statistics:
            # A build of several per-run jobs: each baseline run's statistics as soon as the run
            # exists (at 510,123 test images a run's take minutes; gathered by campaign_baselines).
            wildcard_constraints:
                run=one_of(PLAN.baselines),
            input:
                concepts=BENCHMARK_TABLES["concepts"],
                splits=BENCHMARK_TABLES["splits"],
                truth=CAMPAIGN_KIT["truth"],
                runs=out("runs/{run}.parquet"),
            output:
                statistics=out("work/campaign/baselines/{run}.json"),
            log:
                out("logs/campaign_run_statistics/{run}.log"),
            params:
                subsets=CAMPAIGN_SUBSETS,
                evaluation=BENCHMARK["evaluation"],
                code=script_code("campaign_run_statistics.py"),
            resources:
                mem_mb=1024 + (4 * INVENTORY.n_images) // 1000,
            conda:
                "../../envs/annobench.yaml"
            script:
                "../../scripts/campaign_run_statistics.py"

    rule campaign_baselines:
        input:
            concepts=BENCHMARK_TABLES["concepts"],
            splits=BENCHMARK_TABLES["splits"],
            truth=CAMPAIGN_KIT["truth"],
            # A small build computes every run's statistics here; a larger one gathers them.
            **({"runs": expand(out("runs/{run}.parquet"), run=sorted(PLAN.baselines))} if PLAN.merged else
               {"run_statistics": expand(out("work/campaign/baselines/{run}.json"), run=sorted(PLAN.baselines))}),
        output:
            statistics=CAMPAIGN_STATISTICS,
        log:
            out("logs/campaign_baselines.log"),
        params:
            subsets=CAMPAIGN_SUBSETS,
            evaluation=BENCHMARK["evaluation"],
            code=script_code("campaign_baselines.py"),
        resources:
            mem_mb=1024 + (4 * INVENTORY.n_images) // 1000,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/campaign_baselines.py"

    rule campaign_results:
        input:
            **CAMPAIGN_KIT,
            submissions=SUBMISSION_RESULTS,
            statistics=CAMPAIGN_STATISTICS,
            boxes_evaluations=expand(out("evaluations/{run}.json"), run=sorted(PLAN.box_runs)),
            selection_evaluations=expand(out("evaluations/selection_{run}.json"), run=PLAN.selection_runs),
            captions_evaluations=expand(out("evaluations/{run}.json"), run=[*sorted(CAPTION_RUNS), "caption_human"])
            if CAPTION_RUNS
            else [],
            illustration_evaluations=expand(out("evaluations/illustration_{run}.json"), run=PLAN.illustration_runs),
        output:
            results=out("tables/results/all.parquet"),
            order=out("tables/results_order/all.parquet"),
            concepts=out("tables/results_concepts/all.parquet"),
            submissions=out("tables/submissions/all.parquet"),
            submission_problems=out("tables/submission_problems/all.parquet"),
            report=out("reports/results.md"),
            **{f"figure_{FIGURES[measure]}": out(figure_name(measure)) for measure in ORDER_MEASURES},
        log:
            out("logs/campaign_results.log"),
        params:
            rejected=PLAN.submission_rejects,
            subsets=sorted(CAMPAIGN_SUBSETS),
            code=script_code("campaign_results.py"),
        resources:
            mem_mb=1024 + INVENTORY.n_images // 100,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/campaign_results.py"


# -- each submitted run: checked against the kit, evaluated against the test truth ----------
# A job a run; a small build runs them all in one job, as it does the baselines.
SUBMISSION_MEM_MB = 3072 + (4 * INVENTORY.n_images) // 1000  # a caption run starts Meteor's JVM (-Xmx2G)

if SUBMISSIONS and PLAN.merged:
    SUBMISSION_PARTS = [
        {"wildcards": {"group": spec["group"], "run": spec["run"]}, "params": {"submission": {
            key: spec[key] for key in ("group", "run", "metadata")}},
         "inputs": submission_inputs_of(key), "outputs": submission_files(key)}
        for key, spec in sorted(SUBMISSIONS.items())]

    rule submission_merged:
        input:
            part_files(SUBMISSION_PARTS, "inputs"),
        output:
            part_files(SUBMISSION_PARTS, "outputs"),
        log:
            out("logs/submission_merged.log"),
        params:
            job="annobench.benchmark.campaign.runs:submission_job",
            parts=SUBMISSION_PARTS,
            subsets=CAMPAIGN_SUBSETS,
            code=script_code("parts.py", "annobench.benchmark.campaign.runs"),
        resources:
            mem_mb=SUBMISSION_MEM_MB,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/parts.py"

elif SUBMISSIONS:

    rule submission:
        wildcard_constraints:
            group=one_of({spec["group"] for spec in SUBMISSIONS.values()}),
            run=one_of({spec["run"] for spec in SUBMISSIONS.values()}),
        input:
            unpack(lambda wildcards: submission_inputs_of(f"{wildcards.group}/{wildcards.run}")),
        output:
            **submission_files("{group}/{run}"),
        log:
            out("logs/submission/{group}/{run}.log"),
        params:
            submission=lambda wildcards: {key: SUBMISSIONS[f"{wildcards.group}/{wildcards.run}"][key]
                                          for key in ("group", "run", "metadata")},
            subsets=CAMPAIGN_SUBSETS,
            code=script_code("submission.py"),
        resources:
            mem_mb=SUBMISSION_MEM_MB,
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/submission.py"
