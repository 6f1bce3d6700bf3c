"""`annobench bench`: the whole pipeline on N real images, with per-feature costs and a projection.

The images are the 200 BSDS500 photos of ../shared, repeated under new ids
to reach N. Figures come from the jobs' own provenance records (CPU time
and peak memory measured inside each job), so they do not depend on how
Snakemake packed the jobs on the cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

from annobench.provenance import RECORDS

REPO = Path(__file__).resolve().parents[1]
BSDS = REPO.parent / "shared" / "data" / "real" / "images" / "bsds500" / "train"
# Per-image work of the visual pipeline (codebook training is per dataset, reported apart).
VISUAL = ("ingest_shard", "feature_colorhist", "feature_getlf", "feature_gist", "feature_bow_")
FULL_SCALE = 510_123


def run_bench(n_images: int, cores: int, workdir: Path, images_per_shard: int, out=sys.stdout) -> dict:
    photos = sorted(BSDS.glob("*.jpg"))
    if not photos:
        raise FileNotFoundError(f"needs the BSDS500 photos at {BSDS}")
    workdir.mkdir(parents=True, exist_ok=True)
    image_list = workdir / "images.csv"
    image_list.write_text("image_id,path\n" + "".join(
        f"img{k:07d},{photos[k % len(photos)]}\n" for k in range(n_images)))
    config = {"input": {"image_list": str(image_list), "page_map": "", "segmentations": ""}, "output": "out",
              "sharding": {"images_per_shard": images_per_shard}}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir),
               "--cores", str(cores), "--configfile", str(workdir / "config.yaml"), "--quiet", "all"]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    return summarise(workdir / "out", n_images, cores, wall, out)


def summarise(out_dir: Path, n_images: int, cores: int, wall: float, out=sys.stdout) -> dict:
    by_rule: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "cpu": 0.0, "peak": 0.0, "declared": None})
    over_budget = []
    for path in sorted((out_dir / RECORDS).glob("*.json")):
        record = json.loads(path.read_text())
        usage = record.get("usage") or {}
        rule = by_rule[record["rule"]]
        rule["jobs"] += 1
        rule["cpu"] += usage.get("cpu_seconds", 0.0)
        rule["peak"] = max(rule["peak"], usage.get("peak_rss_mib", 0.0))
        rule["declared"] = usage.get("declared_mem_mb")
        if usage.get("declared_mem_mb") and usage["peak_rss_mib"] > usage["declared_mem_mb"]:
            over_budget.append(path.stem)
    visual = {name: r for name, r in by_rule.items() if name.startswith(VISUAL)}
    visual_cpu = sum(r["cpu"] for r in visual.values())
    per_image = visual_cpu / n_images
    print(f"{n_images} images, --cores {cores}: whole build {wall:.1f} s wall", file=out)
    print(f"resize + all visual features: {visual_cpu:.1f} CPU-s = {1000 * per_image:.1f} ms/image = "
          f"{1 / per_image:.1f} images/s/core (codebooks trained apart)", file=out)
    print(f"{'rule':28s} {'jobs':>5s} {'CPU-s':>8s} {'share':>6s} {'peak MiB':>9s} {'declared MB':>12s}", file=out)
    for name, r in sorted(by_rule.items(), key=lambda item: -item[1]["cpu"]):
        share = f"{100 * r['cpu'] / visual_cpu:5.1f}%" if name in visual else "     -"
        print(f"{name:28s} {r['jobs']:5d} {r['cpu']:8.1f} {share:>6s} {r['peak']:9.0f} {str(r['declared']):>12s}",
              file=out)
    codebook_cpu = sum(r["cpu"] for name, r in by_rule.items() if name.startswith("bow_codebook_"))
    projection = per_image * FULL_SCALE / 32
    print(f"projection for {FULL_SCALE} images on 32 cores: {projection / 3600:.2f} h of per-image work "
          f"(+ codebook training: {codebook_cpu:.0f} CPU-s here, bounded by the sample size)", file=out)
    print(f"jobs over their declared memory: {over_budget or 'none'}", file=out)
    return {"images_per_second_per_core": 1 / per_image, "projection_hours": projection / 3600,
            "over_budget": over_budget, "rules": dict(by_rule)}
