# Bag-of-words features: dense colour SIFT (van de Sande et al. 2010) sampled across shards,
# one codebook per kind, then per-shard encoding with a spatial pyramid (Lazebnik et al. 2006),
# as the ImageCLEF web images' SIFT features (Villegas and Paredes 2014, section 2.3).

from annobench.visual.bow import sampling_plan

BOW = config["features"]["bow"]
DSIFT = config["features"]["dsift"]
BOW_KINDS = PLAN.bow_kinds
SAMPLING = {
    "seed": BOW["seed"],
    **sampling_plan(BOW["sample_descriptors"], BOW["sample_images"], INVENTORY.n_images),
}
CODEBOOK = {
    k: BOW[k]
    for k in ("words", "iterations", "warm_start_share", "warm_start_iterations", "seed", "sample_descriptors")
}
CODEBOOK_SETTINGS = {**CODEBOOK, "dsift": DSIFT}


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
    priority: CRITICAL_PATH
    resources:
        mem_mb=1024,
        runtime=shard_runtime("bow_sample"),
    conda:
        "../../envs/annobench.yaml"
    script:
        "../../scripts/bow_sample.py"


# Threads split k-means into fixed blocks, BLAS stays on one thread: the codebook is the same
# bytes whatever the thread count or --cores.
CODEBOOK_THREADS = BOW["codebook_threads"]
# The sample (float32, up to 384 values a descriptor) held once, plus 10 %; 1 GB for Python,
# NumPy and Arrow; 128 MB of blocks per thread.
CODEBOOK_MEM_MB = 1024 + 128 * CODEBOOK_THREADS + math.ceil(1.1 * BOW["sample_descriptors"] * 384 * 4 / 10**6)
# k-means: about 1e-10 s per sample x word x dimension x iteration on one core here; four
# times that, and half an hour for loading and slack.
CODEBOOK_MINUTES = 30 + math.ceil(4e-10 * BOW["sample_descriptors"] * BOW["words"] * 384 * BOW["iterations"] / 60)

for kind in BOW_KINDS:

    rule:
        name:
            f"bow_codebook_{kind}"
        input:
            expand(bow_sample_file(kind, "{shard}"), shard=SHARDS),
        output:
            codebook_file(kind),
        log:
            out(f"logs/bow_codebook_{kind}.log"),
        params:
            kind=kind,
            settings=CODEBOOK_SETTINGS,
            code=script_code("bow_codebook.py"),
        # A small build's codebooks are small: a thread each, so that they start side by side as
        # soon as cores are free rather than wait for several cores at once.
        threads: 1 if PLAN.merged else CODEBOOK_THREADS
        priority: CRITICAL_PATH
        resources:
            mem_mb=CODEBOOK_MEM_MB,
            runtime=CODEBOOK_MINUTES,
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
        codebooks=[codebook_file(kind) for kind in BOW_KINDS],
    output:
        **{kind: out(layout.table_file(f"bow_{kind}", "{shard}")) for kind in BOW_KINDS},
    log:
        out(layout.log_file("bow", "{shard}")),
    params:
        settings={"kinds": BOW_KINDS, "dsift": DSIFT, "pyramid": BOW["pyramid"], "words": BOW["words"]},
        code=script_code("bow_encode.py"),
    priority: CRITICAL_PATH
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
