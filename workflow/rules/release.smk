# Release (issue 7): every released file with its lineage, as MANIFEST.jsonl and an RO-Crate,
# a Croissant file and a dataset card (issue 13), and a static browser of the data.


rule browse:
    input:
        rules.ingest_all.input,
        rules.duplicates.output,
        rules.features_all.input,
        rules.bow_all.input,
        rules.text_all.input,
        rules.regions_all.input,
        rules.benchmark_all.input,
    output:
        directory(out("browse")),
    log:
        out("logs/browse.log"),
    params:
        settings=browse_settings(),
        code=script_code("browse.py"),
    resources:
        mem_mb=1024 + INVENTORY.n_images // 100,
        runtime=30 + INVENTORY.n_images // 1000,
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/browse.py"


rule release:
    input:
        rules.ingest_all.input,
        rules.duplicates.output,
        rules.features_all.input,
        rules.bow_all.input,
        rules.text_all.input,
        rules.regions_all.input,
        rules.benchmark_all.input,
        rules.browse.output if config["release"]["browse"]["enabled"] else [],
    output:
        # The manifest stands for the folder: a directory() output would get
        # Snakemake's .snakemake_timestamp marker, a file no manifest lists.
        # The job replaces the whole folder at once.
        out("release/MANIFEST.jsonl"),
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
