# Bag-of-words features (SPEC 3, last item): dense colour SIFT, sampled across
# shards, one codebook per kind, then per-shard encoding with a spatial pyramid.

BOW = config["features"]["bow"]
DSIFT = config["features"]["dsift"]
BOW_KINDS = BOW["kinds"]
# Every feature table a shard gets: the global features and the bags of words.
FEATURE_TABLES = [*GLOBAL_FEATURES, *(f"bow_{kind}" for kind in BOW_KINDS)]
SAMPLING = {
    "seed": BOW["seed"],
    **sampling_plan(BOW["sample_descriptors"], BOW["sample_images"], INVENTORY.n_images),
}
CODEBOOK = {
    k: BOW[k]
    for k in ("words", "iterations", "warm_start_share", "warm_start_iterations", "seed", "sample_descriptors")
}


rule bow_sample:
    input:
        images=out(layout.table_file("images", "{shard}")),
        resized=out(layout.resized_dir("{shard}")),
    output:
        **{kind: bow_sample_file(kind, "{shard}") for kind in BOW_KINDS},
    log:
        out(layout.log_file("bow_sample", "{shard}")),
    params:
        dsift=DSIFT,
        sampling=SAMPLING,
        code=script_code("bow_sample.py"),
    resources:
        mem_mb=1024,
        runtime=shard_runtime("bow_sample"),
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/bow_sample.py"


for kind in BOW_KINDS:

    rule:
        name:
            f"bow_codebook_{kind}"
        input:
            expand(bow_sample_file(kind, "{shard}"), shard=SHARDS),
        output:
            out(f"artefacts/codebook_{kind}.parquet"),
        log:
            out(f"logs/bow_codebook_{kind}.log"),
        params:
            kind=kind,
            settings={**CODEBOOK, "dsift": DSIFT},
            code=script_code("bow_codebook.py"),
        # Threads split k-means into fixed blocks, BLAS stays on one thread: the
        # codebook is the same bytes whatever the thread count or --cores.
        threads: BOW["codebook_threads"]
        resources:
            # The sample (float32, up to 384 values a descriptor) held once, plus 10 %;
            # 1 GB for Python, NumPy and Arrow; 128 MB of blocks per thread.
            mem_mb=1024 + 128 * BOW["codebook_threads"] + math.ceil(1.1 * BOW["sample_descriptors"] * 384 * 4 / 10**6),
            # k-means: about 1e-10 s per sample x word x dimension x iteration on one
            # core here; four times that, and half an hour for loading and slack.
            runtime=30 + math.ceil(4e-10 * BOW["sample_descriptors"] * BOW["words"] * 384 * BOW["iterations"] / 60),
        conda:
            "../../envs/annobench.yaml"
        script:
            "../../scripts/bow_codebook.py"


# All kinds of a shard in one job: the image is read once and the planes the
# kinds share (the intensity, SIFT's plane and O3) are described once.
rule feature_bow:
    input:
        images=out(layout.table_file("images", "{shard}")),
        resized=out(layout.resized_dir("{shard}")),
        codebooks=[out(f"artefacts/codebook_{kind}.parquet") for kind in BOW_KINDS],
    output:
        **{kind: out(layout.table_file(f"bow_{kind}", "{shard}")) for kind in BOW_KINDS},
    log:
        out(layout.log_file("bow", "{shard}")),
    params:
        settings={"kinds": BOW_KINDS, "dsift": DSIFT, "pyramid": BOW["pyramid"], "words": BOW["words"]},
        code=script_code("bow_encode.py"),
    resources:
        # As one kind's job before: the vectors of one kind at a time, the others kept as words.
        mem_mb=1024,
        runtime=shard_runtime("bow_encode"),
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/bow_encode.py"


rule bow_all:
    input:
        expand(out(layout.table_file("bow_{kind}", "{shard}")), kind=BOW_KINDS, shard=SHARDS),
