"""Dense SIFT and bag of words: speed per channel and per image, codebook memory.

    python3 perf/bench_bow.py

1. Descriptor extraction in ms per 240x160 channel on the 200 BSDS500 photos
   (stored resized images), next to OpenCV's per-keypoint compute() on the
   same grid (VLFeat's dsift, fast mode: about 4 ms on these machines).
2. The whole 4-kind encoding per image: descriptors + nearest of 1,000 words
   + spatial pyramid.
3. Codebook training peak memory for 200 and for 2,000 images (the 200
   photos repeated under new ids), with the same sample-size cap: memory
   follows the sample, not the collection.
"""

from __future__ import annotations

import os

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import argparse  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import yaml  # noqa: E402

from common import REPO, bsds_photos, peak_rss_mb, write_repeated_list  # noqa: E402

CAP = 200_000  # training sample cap for part 3
WORDS = 1000


def ingest(work: Path, n_images: int) -> Path:
    image_list = write_repeated_list(work / "images.csv", n_images, bsds_photos())
    (work / "config.yaml").write_text(yaml.safe_dump({"input": {"image_list": str(image_list), "page_map": "", "segmentations": ""},
                                                          "output": "out"}))
    subprocess.run([sys.executable, "-m", "snakemake", "ingest_all", "-s", str(REPO / "Snakefile"), "-d", str(work),
                    "--cores", "2", "--configfile", str(work / "config.yaml"), "--quiet", "all"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return work / "out"


def stored_images(out: Path):
    import pyarrow.parquet as pq

    from annobench.images.resize import read_stored

    rows = pq.read_table(out / "tables" / "images").to_pydict()
    return [read_stored(out / p) for p in rows["resized_path"]]


def speed(out: Path) -> None:
    import cv2
    import numpy as np

    from annobench.visual import bow
    from annobench.visual.bow_stage import encode_image
    from annobench.visual.dsift import KINDS, DsiftParams, describe, describe_plane

    cv2.setNumThreads(1)
    params = DsiftParams()
    images = [rgb for rgb in stored_images(out) if rgb.shape[:2] == (160, 240)]
    planes = [rgb.mean(axis=2, dtype=np.float32) for rgb in images]
    describe_plane(planes[0], params)
    started = time.perf_counter()
    for plane in planes:
        describe_plane(plane, params)
    ours = (time.perf_counter() - started) / len(planes) * 1000
    sift = cv2.SIFT_create(0, 3, 0.04, 10, 1.6, cv2.CV_32F)
    greys = [cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY) for rgb in images[:40]]
    points, _ = describe(images[0], "sift", params)
    keypoints = [cv2.KeyPoint(float(x), float(y), params.bin_size / 1.5, 0) for x, y in points]
    started = time.perf_counter()
    for grey in greys:
        sift.compute(grey, keypoints)
    theirs = (time.perf_counter() - started) / len(greys) * 1000
    print(f"descriptor extraction, 240x160 channel, {len(points)} descriptors: ours {ours:.2f} ms, "
          f"OpenCV per-keypoint compute {theirs:.1f} ms ({len(planes)} BSDS500 photos)")

    rng = np.random.default_rng(0)
    codebooks = {}
    for kind in KINDS:
        sample = np.concatenate([describe(rgb, kind, params)[1] for rgb in images[:10]])
        codebooks[kind] = bow.kmeans_plus_plus(sample, WORDS, rng)
    started = time.perf_counter()
    per_kind = dict.fromkeys(KINDS, 0.0)
    for rgb in images:
        for kind in KINDS:
            t0 = time.perf_counter()
            encode_image(rgb, kind, params, codebooks[kind], [1, 2])
            per_kind[kind] += time.perf_counter() - t0
    total = (time.perf_counter() - started) / len(images) * 1000
    shares = ", ".join(f"{k} {1000 * v / len(images):.1f}" for k, v in per_kind.items())
    print(f"4-kind BoW encoding ({WORDS} words, pyramid 1x1+2x2): {total:.1f} ms/image ({shares} ms)")


def sample_child(out: str, kind: str) -> None:
    """Fresh process: the sampling stage of every shard, as the bow_sample jobs do."""
    import pyarrow.parquet as pq

    from annobench.core.config import load_config
    from annobench.visual.bow import sampling_plan
    from annobench.visual.bow_stage import sample_shard

    out_dir = Path(out)
    config = load_config()
    tables = sorted((out_dir / "tables" / "images").glob("*.parquet"))
    n_images = sum(pq.read_metadata(t).num_rows for t in tables)
    plan = sampling_plan(CAP, config["features"]["bow"]["sample_images"], n_images)
    for k, table in enumerate(tables):
        sample_shard(table, out_dir, {kind: str(out_dir / "work" / f"{kind}-{k}.npy")},
                     config["features"]["dsift"], plan["fraction"], plan["per_image"], 1, log=lambda line: None)
    print(f"sampling {kind}, {n_images} images in {len(tables)} shard(s): peak memory {peak_rss_mb():.0f} MiB")


def train_child(out: str, kind: str) -> None:
    """Fresh process: train one codebook from the samples, report this process's peak memory."""
    from annobench.visual.bow_stage import train_kind

    out_dir = Path(out)
    samples = [str(p) for p in sorted((out_dir / "work").glob(f"{kind}-*.npy"))]
    params = {"words": WORDS, "iterations": 5, "warm_start_share": 0.1, "warm_start_iterations": 10, "seed": 1,
              "sample_descriptors": CAP}
    started = time.perf_counter()
    lines = []
    train_kind(samples, kind, params, out_dir / "codebook.parquet", log=lines.append)
    print(f"codebook {kind}: {lines[0].split(': ', 1)[1]}; 5 k-means iterations in "
          f"{time.perf_counter() - started:.0f} s; peak memory {peak_rss_mb():.0f} MiB")


def memory(n_images: int) -> None:
    with tempfile.TemporaryDirectory() as work:
        out = ingest(Path(work), n_images)
        for stage in ("sample", "train"):
            subprocess.run([sys.executable, __file__, "--child", stage, str(out), "rgbsift"], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        stage, out, kind = args.child
        (sample_child if stage == "sample" else train_child)(out, kind)
        return
    with tempfile.TemporaryDirectory() as work:
        speed(ingest(Path(work), 200))
    print(f"codebook memory, training sample capped at {CAP} descriptors, {WORDS} words:")
    memory(200)
    memory(2000)


if __name__ == "__main__":
    main()
