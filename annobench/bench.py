"""`annobench bench`: the whole pipeline on N real images, with per-feature costs and a projection.

The images are the 200 BSDS500 photos of ../shared, repeated under new ids
to reach N. Each image also gets its human segmentation (BSDS500, first
annotator) and one real web page (a kiwix Wikipedia page it appears on, as
a hard-linked copy of its own, two images a copy), so text and regions run
too. The build goes in two steps: first up to the four codebooks, then the
rest, as a maintainer with codebooks already trained would run it.

Beside it go a quarter-size build and, for a small bench, a wide build of
WIDE_IMAGES photos stored small (no segmentations): a job for the whole build
(the release, the browser's catalogue, the round) costs a fraction of a
millisecond an image against half a second of start-up, which a few hundred
images cannot tell apart, and its work does not follow the pixels.

Figures come from the jobs' own provenance records (CPU time and peak
memory measured inside each job), so they do not depend on how Snakemake
packed the jobs on the cores.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from functools import partial
from pathlib import Path

import yaml

from annobench.core.errors import AnnobenchError
from annobench.core.provenance import read_job_records

REPO = Path(__file__).resolve().parents[1]
REAL = REPO.parent / "shared" / "data" / "real"
BSDS = REAL / "images" / "bsds500" / "train"
BSDS_TRUTH = REAL / "segmentations" / "bsds500" / "groundTruth" / "train"
KIWIX = REAL / "pages" / "kiwix_wikipedia"
BSDS_SIZE = (481, 321)  # every BSDS500 photo, either way up
# Per-image work of the visual pipeline (codebook training is per dataset, reported apart).
VISUAL = ("ingest_shard", "feature_colorhist", "feature_getlf", "feature_gist", "feature_cnn_", "feature_bow")
PER_IMAGE_OTHER = ("text_shard", "regions_shard")
FULL_SCALE = 510_123
FULL_CORES = 32
# The quarter-size build runs from this many images (fewer: one build, each rule's work all rate).
MIN_QUARTER = 40
# A bench under this many images adds a wide build of this many, its photos stored at most
# WIDE_SIDE pixels a side (80 x 120 for BSDS500's 321 x 481): the whole-build rules' rates.
WIDE_IMAGES = 2000
WIDE_SIDE = 120
# Machine-speed checks before and after the builds further apart than this: the bench warns.
SPEED_TOLERANCE = 0.10


def default_shard_size(n_images: int) -> int:
    """Shards of the default size (2,000 images) once there are enough images, else four shards:
    the projection costs jobs that only a build of several shards runs (the browser by shard)."""
    return min(2000, max(1, -(-n_images // 4)))


def bench_config(workdir: Path, n_images: int, images_per_shard: int, cnn: dict | None = None,
                 photo_side: int | None = None) -> dict:
    """Every stage and benchmark subtask the projected shapes plan, at a size the bench can build:
    per-run jobs unmerged, and the searches, Meteor and the illustration's pages and ranking each
    split in two blocks, as a full-size build splits them. The text illustration ranks the test
    images (2016: 200,000 test images, their pages' texts the queries). With `photo_side`, the
    photos are copies at most that many pixels a side, without segmentations (the wide build)."""
    half = max(1, -(-n_images // 2))
    scale = photo_side / max(BSDS_SIZE) if photo_side else 1.0
    config = {"input": write_inputs(workdir, n_images, photo_side), "output": "out",
              "sharding": {"images_per_shard": images_per_shard, "merge_below_images": 0},
              "segmentations": {"kind": "bsds", "annotator": 1},
              # The bench repeats a hundred-odd real pages: every caption would be furniture of many pages.
              "text": {"captions": {"max_pages": n_images, "max_images": n_images}},
              "benchmark": {"ground_truth": {"source": "csv", "path": str(write_truth(workdir, n_images, scale))},
                            # Most images train, as in the real rounds; 15 % are queried.
                            "split": {"train": 0.85, "dev": 0.05, "test": 0.10},
                            "neighbours": {"test_block_images": half, "training_block_images": half},
                            "boxes": {"source": "table", "path": str(workdir / "boxes.csv")},
                            "selection": {"truth": str(workdir / "descriptions.csv"),
                                          "instances": str(workdir / "instances.csv")},
                            "captions": {"references": "harvested", "block_images": half},
                            "illustration": {"enabled": True, "images": "test", "block_images": half}}}
    if cnn:
        config["features"] = {"cnn": cnn}
    return config


def write_truth(workdir: Path, n_images: int, scale: float = 1.0) -> Path:
    """Two concepts an image, of 100 and of 37, each with a box, and a description naming the
    first box (the costs do not depend on what they mean; the boxes fit a 321 x 321 corner, inside
    every BSDS500 photo either way up, `scale` times that for photos stored small); returns the
    ground truth CSV."""
    ids = [f"img{k:07d}" for k in range(n_images)]
    labels = [(i, f"c{k % 100}", f"d{k % 37}") for k, i in enumerate(ids)]
    path = workdir / "truth.csv"
    path.write_text("image_id,concept\n" + "".join(f"{i},{c}\n{i},{d}\n" for i, c, d in labels))
    corners = tuple(tuple(int(v * scale) for v in box) for box in ((20, 20, 300, 200), (100, 60, 310, 300)))
    boxes = [(i, concept, box) for i, *concepts in labels for concept, box in zip(concepts, corners)]
    (workdir / "boxes.csv").write_text("image_id,concept,xmin,ymin,xmax,ymax\n" + "".join(
        f"{i},{concept},{','.join(map(str, box))}\n" for i, concept, box in boxes))
    (workdir / "instances.csv").write_text("image_id,instance,xmin,ymin,xmax,ymax\n" + "".join(
        f"{i},{n},{','.join(map(str, box))}\n" for i in ids for n, box in enumerate(corners)))
    (workdir / "descriptions.csv").write_text("image_id,description,instance\n"
                                              + "".join(f"{i},a photo of {c},0\n" for i, c, _ in labels))
    return path


def run_bench(n_images: int, cores: int, workdir: Path, images_per_shard: int | None = None, out=sys.stdout,
              cnn: dict | None = None) -> dict:
    """Build N images (and a quarter of them apart, in workdir/quarter: two sizes split each
    rule's cost into a fixed part and a rate per image; under WIDE_IMAGES, also the wide build of
    small photos, in workdir/wide), print the costs, return them with the builds the projection
    calibrates from. `cnn`: features.cnn of networks the builds compute too (cnn_section; not the
    wide build: networks are per-shard work, which it does not cost)."""
    if not (REPO / "Snakefile").is_file():
        raise AnnobenchError(f"bench builds with the workflow, and {REPO} is not a checkout (no Snakefile): "
                             "run it from a clone of the project")
    images_per_shard = images_per_shard or default_shard_size(n_images)
    speeds = [machine_speed()]
    walls = build(workdir, bench_config, n_images, images_per_shard, cores, cnn,
                  steps=(("ingest, samples, codebooks", _codebook_targets()), ("everything else", ["all"])))
    builds = [workdir]
    quarter = n_images // 4
    if quarter >= MIN_QUARTER:
        walls[f"the {quarter}-image build"] = build(workdir / "quarter", bench_config, quarter,
                                                    default_shard_size(quarter), cores, cnn)["all"]
        builds.append(workdir / "quarter")
    if n_images < WIDE_IMAGES:
        mark_small_photos(workdir / "wide")
        walls[f"the {WIDE_IMAGES}-image build of small photos"] = build(
            workdir / "wide", partial(bench_config, photo_side=WIDE_SIDE), WIDE_IMAGES,
            default_shard_size(WIDE_IMAGES), cores, None)["all"]
        builds.append(workdir / "wide")
    speeds.append(machine_speed())
    summary = summarise(workdir / "out", n_images, cores, walls, out, images_per_shard)
    print("machine speed before / after the builds (one core): float32 product "
          + " / ".join(f"{speed['gemm_gflops']:.0f}" for speed in speeds) + " GFLOP/s, 256x256 FFT forth and back "
          + " / ".join(f"{speed['fft_ms']:.2f}" for speed in speeds) + " ms", file=out)
    for warning in speed_warnings(speeds):
        print(f"warning: {warning}", file=out)
    return {**summary, "machine_speed": speeds, "builds": builds}


def mark_small_photos(workdir: Path) -> None:
    """Tell the projection that this build's per-shard work is not that of real photos."""
    from annobench.projection.costs import SMALL_PHOTOS_MARK

    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / SMALL_PHOTOS_MARK).write_text(yaml.safe_dump({
        "photos_max_side": WIDE_SIDE,
        "costs": "only rules whose work does not follow the pixels (annobench.projection.costs.PIXEL_DRIVERS)"}))


def build(workdir: Path, make_config, n_images: int, images_per_shard: int, cores: int, cnn: dict | None,
          steps=(("all", ["all"]),)) -> dict[str, float]:
    """One bench build in `workdir`, target by target (`steps`: name, targets); each step's wall time."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = make_config(workdir, n_images, images_per_shard, cnn)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    options = ["-s", str(REPO / "Snakefile"), "-d", str(workdir), "--cores", str(cores),
               "--configfile", str(workdir / "config.yaml"), "--quiet", "all"]
    walls = {}
    for step, targets in steps:
        started = time.perf_counter()
        command = [sys.executable, "-m", "snakemake", *targets, *options]  # targets first: --quiet takes words
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if result.returncode:
            raise RuntimeError(f"snakemake failed in step '{step}' of {workdir}:\n{result.stdout[-4000:]}")
        walls[step] = time.perf_counter() - started
    return walls


def speed_warnings(speeds: list[dict], tolerance: float = SPEED_TOLERANCE) -> list[str]:
    """What moved between the machine-speed checks before and after the builds by more than `tolerance`."""
    before, after = speeds[0], speeds[-1]
    moved = []
    for name, speed in (("the float32 product", lambda s: s["gemm_gflops"]), ("the FFT", lambda s: 1 / s["fft_ms"])):
        change = speed(after) / speed(before) - 1
        if abs(change) > tolerance:
            pace = "faster" if change > 0 else "slower"
            moved.append(f"{name} ran {100 * abs(change):.0f} % {pace} after the builds "
                         "than before: the machine's speed changed while they ran (other work, frequency); their "
                         "figures mix two speeds")
    return moved


def print_projections(build_dirs: list[Path], n_images: int | None = None, cores: int = FULL_CORES,
                      mem_gb: float = 256, plot: Path | None = None, out=sys.stdout, cnn: dict | None = None,
                      peaks: bool = False) -> list:
    """The real releases (annobench.projection.dag.SHAPES) projected from Snakemake's DAG at their
    own sizes (or `n_images` each), costed from the job records of the builds in `build_dirs`; with
    `cnn` (cnn_section), each again with those networks and the baselines on them, printed beside."""
    from annobench.projection.costs import calibrate
    from annobench.projection.project import (SHAPES, print_calibration, print_peak_table, print_projection, project,
                                              utilisation_png)

    calibration = calibrate(build_dirs)
    print_calibration(calibration, out)
    projections = []
    for shape in SHAPES:
        for networks in (None, cnn) if cnn else (None,):
            projection = project(shape, n_images, cores, calibration, mem_gb * 1000, cnn=networks)
            print_projection(projection, out)
            projections.append(projection)
    if peaks:
        print_peak_table(projections, out)
    if plot:
        plot.write_bytes(utilisation_png([p for p in projections if not p.refused and not p.networks]))
        print(f"cores' utilisation over time: {plot}", file=out)
    return projections


def cnn_section(config_path: Path | str) -> dict:
    """features.cnn of a config file, validated, its files named by absolute paths (relative ones are
    relative to the current folder, where snakemake would run): the networks to measure and plan."""
    from annobench.core.config import load_config

    cnn = load_config(config_path)["features"]["cnn"]
    for settings in cnn.values():
        for key in ("model", "prototxt"):
            if settings[key]:
                settings[key] = str(Path(settings[key]).resolve())
    if not cnn:
        raise AnnobenchError(f"{config_path}: features.cnn configures no network")
    return cnn


def machine_speed(repeats: int = 7) -> dict:
    """How fast this core runs now, so that figures from different hours compare: the best
    of `repeats` float32 products the size of one image's word assignment (2,048 x 384 by
    384 x 1,000), and of 256x256 real FFTs forth and back (GIST's work)."""
    import numpy as np

    rng = np.random.default_rng(0)
    descriptors = rng.random((2048, 384), dtype=np.float32)
    codebook = rng.random((384, 1000), dtype=np.float32)
    image = rng.random((256, 256))
    gemm = min(_seconds(lambda: descriptors @ codebook) for _ in range(repeats))
    fft = min(_seconds(lambda: np.fft.irfft2(np.fft.rfft2(image), image.shape)) for _ in range(repeats))
    return {"gemm_gflops": 2 * descriptors.size * codebook.shape[1] / gemm / 1e9, "fft_ms": 1000 * fft}


def _seconds(work) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _codebook_targets() -> list[str]:
    from annobench.core.config import load_config

    kinds = load_config()["features"]["bow"]["kinds"]
    return [f"out/artefacts/codebook_{kind}.parquet" for kind in kinds]


def write_inputs(workdir: Path, n_images: int, photo_side: int | None = None) -> dict:
    """Image list, segmentations and pages for n_images ids; returns the config's `input` section.
    With `photo_side`: copies of the photos at most that many pixels a side, no segmentations."""
    photos = sorted(BSDS.glob("*.jpg"))
    if not photos or not BSDS_TRUTH.is_dir() or not KIWIX.is_dir():
        raise FileNotFoundError(f"needs the BSDS500 photos, their segmentations and the kiwix pages under {REAL}")
    if photo_side:
        photos = _small_copies(photos, workdir / "photos", photo_side)
    ids = [f"img{k:07d}" for k in range(n_images)]
    image_list = workdir / "images.csv"
    image_list.write_text("image_id,path\n" + "".join(f"{i},{photos[k % len(photos)]}\n" for k, i in enumerate(ids)))
    if photo_side:
        return {"image_list": str(image_list), **_write_pages(workdir, ids)}
    segmentations = _fresh_dir(workdir / "segmentations")
    for k, image_id in enumerate(ids):
        os.symlink(BSDS_TRUTH / f"{photos[k % len(photos)].stem}.mat", segmentations / f"{image_id}.mat")
    return {"image_list": str(image_list), "segmentations": str(segmentations), **_write_pages(workdir, ids)}


def _small_copies(photos: list[Path], folder: Path, side: int) -> list[Path]:
    """Each photo resized (area) to at most `side` pixels a side, as a JPEG in `folder`."""
    import cv2

    from annobench.images.resize import resize_area

    folder = _fresh_dir(folder)
    copies = []
    for photo in photos:
        copy = folder / photo.name
        cv2.imwrite(str(copy), resize_area(cv2.imread(str(photo)), side), [cv2.IMWRITE_JPEG_QUALITY, 90])
        copies.append(copy)
    return copies


def _write_pages(workdir: Path, ids: list[str]) -> dict:
    """Image k takes the k-th real (page, img src) pair of the kiwix crawl, on a copy of that page of its own."""
    from annobench.text.page_map import derive_mapping

    real_rows = derive_mapping(KIWIX).mapping
    pages = _fresh_dir(workdir / "pages")
    lines = ["image_id,page_id,img_src\n"]
    for k, image_id in enumerate(ids):
        _, page, src = real_rows[k % len(real_rows)]
        copy = f"c{k // 2:07d}/{page}"
        if not (pages / copy).exists():
            (pages / copy).parent.mkdir(parents=True, exist_ok=True)
            _link_or_copy(KIWIX / page, pages / copy)
        lines.append(f'{image_id},{copy},"{src}"\n')
    (workdir / "page_map.csv").write_text("".join(lines))
    return {"pages": str(pages), "page_map": str(workdir / "page_map.csv")}


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copyfile(source, target)


def _fresh_dir(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def codebook_fits(out_dir: Path) -> dict[str, dict]:
    """Each codebook's fit to its sample, as training recorded it in the codebook's metadata."""
    from annobench.visual.bow_stage import read_codebook_fit

    fits = {}
    for path in sorted((out_dir / "artefacts").glob("codebook_*.parquet")):
        fit = read_codebook_fit(path)
        if fit:
            fits[path.stem.removeprefix("codebook_")] = fit
    return fits


def _codebook_scale(out_dir: Path, record: dict) -> float:
    """k-means time grows with the sample: how much bigger the configured sample is than this job's."""
    from annobench.visual.bow_stage import npy_shape

    full = record["params"]["settings"]["sample_descriptors"]
    rows = sum(npy_shape(out_dir / source["path"])[0] for source in record["inputs"])
    return full / min(rows, full) if rows else 1.0


def full_scale_shard_size(images_per_shard: int) -> int:
    """A full-size build's shards: the default size, or the bench's own when it was larger."""
    return max(images_per_shard, default_shard_size(FULL_SCALE))


def _full_scale_hours(by_rule: dict, prefixes: tuple, n_images: int, images_per_shard: int) -> float:
    """Hours on FULL_CORES cores for FULL_SCALE images: each rule's work per image (its CPU less its
    jobs' start-up) times the images, plus one start-up per job of a full-size build."""
    full_shards = -(-FULL_SCALE // full_scale_shard_size(images_per_shard))
    cpu = 0.0
    for name, r in by_rule.items():
        if name.startswith(prefixes):
            cpu += (r["cpu"] - r["startup"]) / n_images * FULL_SCALE + r["startup"] / r["jobs"] * full_shards
    return cpu / FULL_CORES / 3600


def summarise(out_dir: Path, n_images: int, cores: int, walls: dict[str, float], out=sys.stdout,
              images_per_shard: int = 2500) -> dict:
    by_rule: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "cpu": 0.0, "startup": 0.0, "peak": 0.0,
                                                    "declared": None})
    over_budget = []
    for name, record in read_job_records(out_dir):
        usage = record.get("usage") or {}
        rule = by_rule[record["rule"]]
        rule["jobs"] += 1
        rule["cpu"] += usage.get("cpu_seconds", 0.0)
        rule["startup"] += usage.get("startup_cpu_seconds") or 0.0
        if record["rule"].startswith("bow_codebook_"):
            rule["full_sample_cpu"] = usage.get("cpu_seconds", 0.0) * _codebook_scale(out_dir, record)
        rule["peak"] = max(rule["peak"], usage.get("peak_rss_mib", 0.0))
        declared = usage.get("declared_mem_mib")
        rule["declared"] = declared
        if declared and usage["peak_rss_mib"] > declared:
            over_budget.append(f"{name} ({usage['peak_rss_mib']:.0f} MiB > {declared} MiB declared)")
    cpu_of = lambda prefixes: sum(r["cpu"] for name, r in by_rule.items() if name.startswith(prefixes))  # noqa: E731
    visual_cpu, other_cpu = cpu_of(VISUAL), cpu_of(PER_IMAGE_OTHER)
    per_image_cpu = visual_cpu + other_cpu
    codebooks = [r["full_sample_cpu"] for r in by_rule.values() if "full_sample_cpu" in r]
    visual_rate = n_images / visual_cpu

    print(f"{n_images} images, --cores {cores}: " + ", ".join(f"{step} {wall:.1f} s" for step, wall in walls.items())
          + " wall", file=out)
    print(f"resize + all visual features: {visual_cpu:.1f} CPU-s = {1000 / visual_rate:.1f} ms/image = "
          f"{visual_rate:.2f} images/s/core (codebooks trained apart)", file=out)
    print(f"text + regions: {1000 * other_cpu / n_images:.1f} ms/image more", file=out)
    print(f"{'rule':28s} {'jobs':>5s} {'CPU-s':>8s} {'ms/image':>9s} {'share':>6s} {'peak MiB':>9s} {'declared MiB':>12s}",
          file=out)
    for name, r in sorted(by_rule.items(), key=lambda item: -item[1]["cpu"]):
        per_image = name.startswith(VISUAL + PER_IMAGE_OTHER)
        share = f"{100 * r['cpu'] / per_image_cpu:5.1f}%" if per_image else "     -"
        ms = f"{1000 * r['cpu'] / n_images:9.2f}" if per_image else "        -"
        print(f"{name:28s} {r['jobs']:5d} {r['cpu']:8.1f} {ms} {share:>6s} {r['peak']:9.0f} {str(r['declared']):>12s}",
              file=out)
    visual_hours = _full_scale_hours(by_rule, VISUAL, n_images, images_per_shard)
    text_hours = _full_scale_hours(by_rule, ("text_shard",), n_images, images_per_shard)
    codebook_hours = max(codebooks, default=0.0) / 3600
    startup = sum(r["startup"] for name, r in by_rule.items() if name.startswith(VISUAL))
    print(f"of which job start-up (interpreter, imports): {startup:.1f} CPU-s; without it "
          f"{n_images / (visual_cpu - startup):.2f} images/s/core", file=out)
    print(f"projection for {FULL_SCALE} images on {FULL_CORES} cores in shards of "
          f"{full_scale_shard_size(images_per_shard)}: visual "
          f"{visual_hours:.2f} h + text {text_hours:.2f} h of per-image work (each job's start-up counted once a "
          f"shard), + {codebook_hours:.2f} h for the longest codebook (scaled to the full sample; counted as if "
          f"nothing ran beside it) = {visual_hours + text_hours + codebook_hours:.2f} h", file=out)
    fits = codebook_fits(out_dir)
    for kind, fit in fits.items():
        print(f"codebook {kind}: fit {fit['mean_squared_distance']:.6f} (mean squared distance of its "
              f"{fit['sample_rows']} training rows to their nearest word)", file=out)
    print(f"jobs over their declared memory: {over_budget or 'none'}", file=out)
    return {"codebook_fits": fits, "images_per_second_per_core": visual_rate, "projection_hours": visual_hours + text_hours + codebook_hours,
            "over_budget": over_budget, "rules": dict(by_rule), "walls": walls}
