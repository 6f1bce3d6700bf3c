# Release (issue 7): every released file with its lineage, as MANIFEST.jsonl and an RO-Crate.


rule release:
    input:
        rules.ingest_all.input,
        rules.duplicates.output,
        rules.features_all.input,
        rules.bow_all.input,
        rules.text_all.input,
        rules.regions_all.input,
        rules.benchmark_all.input,
    output:
        directory(out("release")),
    log:
        out("logs/release.log"),
    params:
        n_shards=INVENTORY.n_shards,
        code=script_code("release.py"),
    resources:
        # All job records are read into memory: about 21 KB an image measured
        # on 4,000 images (185 MiB peak), so some 11 GB at 510,123.
        mem_mb=1024 + (24 * INVENTORY.n_images) // 1000,
        runtime=30 + INVENTORY.n_images // 2000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/release.py"
