# Global visual features: one table per feature, per shard, from the stored resized images
# (Colorhist, GETLF and GIST as in Villegas and Paredes 2014, section 2.3; GIST after Douze et al. 2009).

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


rule features_all:
    input:
        expand(out(layout.table_file("{feature}", "{shard}")), feature=GLOBAL_FEATURES, shard=SHARDS),
