# Release (issue 7): every released file with its lineage, as MANIFEST.jsonl and an RO-Crate.


rule release:
    input:
        rules.ingest_all.input,
        rules.duplicates.output,
        rules.features_all.input,
        rules.bow_all.input,
        rules.text_all.input,
        rules.regions_all.input,
    output:
        directory(out("release")),
    log:
        out("logs/release.log"),
    params:
        n_shards=INVENTORY.n_shards,
        code=script_code("release.py"),
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/release.py"
