# Global visual features: one table per feature, per shard, from the stored resized images
# (Colorhist, GETLF and GIST as in Villegas and Paredes 2014, section 2.3; GIST after Douze et al. 2009;
# each configured network's CNN embeddings, Gilbert et al. 2016, section 2.4).

from annobench.plan import GLOBAL_FEATURES


rule getlf_projection:
    output:
        GETLF_PROJECTION,
    log:
        out("logs/getlf_projection.log"),
    params:
        settings=config["features"]["getlf"],
        code=script_code("getlf_projection.py"),
    priority: CRITICAL_PATH
    resources:
        mem_mb=512,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/getlf_projection.py"


for feature in GLOBAL_FEATURES:

    rule:
        name:
            f"feature_{feature}"
        input:
            unpack(feature_inputs(feature)),
        output:
            out(layout.table_file(feature, "{shard}")),
        log:
            out(layout.log_file(feature, "{shard}")),
        params:
            feature=feature,
            settings=config["features"][feature],
            code=script_code("feature_shard.py", FEATURES[feature].module),
        threads: 1
        priority: CRITICAL_PATH
        resources:
            mem_mb=1024,
            runtime=shard_runtime(feature),
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/feature_shard.py"


# One rule per network of features.cnn that passed the plan's check (PLAN.cnn_models): its files
# are named by their state in params (a new file reruns it), and read by the job.
for model, spec in PLAN.cnn_models.items():

    rule:
        name:
            f"feature_cnn_{model}"
        input:
            images=out(layout.table_file("images", "{shard}")),
            resized=out(layout.resized_dir("{shard}")),
        output:
            out(layout.table_file(spec["table"], "{shard}")),
        log:
            out(layout.log_file(spec["table"], "{shard}")),
        params:
            model=model,
            settings=spec["settings"],
            state=spec["state"],
            code=script_code("feature_cnn.py"),
        threads: 1
        priority: CRITICAL_PATH
        resources:
            mem_mb=cnn_mem_mb(spec),
            runtime=shard_runtime("cnn"),
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/feature_cnn.py"


rule features_all:
    input:
        expand(out(layout.table_file("{feature}", "{shard}")), feature=PLAN.global_tables, shard=SHARDS),
