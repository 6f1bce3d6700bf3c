"""The release browser: time, files and bytes per 1,000 images, the largest page, and the
projection for 500,000 images.

    python3 perf/bench_browse.py [BUILD]                      # the browser of an existing build
    python3 perf/bench_browse.py --images 5000 [--template T]  # of a synthetic build
    python3 perf/bench_browse.py --images 5000 --by-shard     # also the per-shard jobs' code path

Without BUILD, a synthetic build of N images is made in a scratch folder
from a real one (`--template`, default the demo build `results/demo`; the
MSRC-v2 + kiwix build of the tests is another): every per-image table row,
stored image and label map of template image k % M is repeated under the id
`imgNNNNNNN`, sharded as the workflow shards (2,000 images a shard), with
symbolic links for the pictures. The browser is then built in a fresh
process, so its peak memory is its own.

--by-shard builds it a second time as the workflow's jobs do in a build of several shards
(browse_prepare, then browse and one browse_shard per shard), times each part, checks that both
trees hold the same bytes, and projects the wall time at 500,000 images on 32 cores.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from annobench.core.layout import resized_dir, shard_name, table_file
from common import REPO, peak_rss_mb

TEMPLATE = REPO / "results" / "demo"
IMAGES_PER_SHARD = 2000
PROJECTED_IMAGES = 500_000
# Per-image tables written one file per shard, and those written as one file.
SHARDED = ("images", "text_terms", "image_urls", "text_rejects", "regions", "spatial_relations",
           "segmentation_rejects")
SINGLE = ("ground_truth", "splits", "duplicates")
COPIED = ("pages", "concepts", "leaderboard", "rejects")


def shard_count(n_images: int) -> int:
    """The smallest power of two keeping the mean shard at or below 2,000 images."""
    shards = 1
    while n_images / shards > IMAGES_PER_SHARD:
        shards *= 2
    return shards


class Replicator:
    """New ids, each standing for a template image, with the shard the workflow would give it."""

    def __init__(self, template: Path, n_images: int):
        from annobench.sources.ids import shard_of

        self.template = template
        self.template_ids = sorted(pq.read_table(template / "tables" / "images", columns=["image_id"])
                                   .column("image_id").to_pylist())
        self.ids = [f"img{k:07d}" for k in range(n_images)]
        self.n_shards = shard_count(n_images)
        self.shards = np.array([shard_of(i, self.n_shards) for i in self.ids])
        self.stands_for = [self.template_ids[k % len(self.template_ids)] for k in range(n_images)]

    def rows(self, table: pa.Table, members: np.ndarray) -> pa.Table:
        """The template rows of the given new images, under their new ids."""
        by_image: dict[str, list[int]] = {}
        for row, image_id in enumerate(table.column("image_id").to_pylist()):
            by_image.setdefault(image_id, []).append(row)
        take, new_ids = [], []
        for k in members:
            rows = by_image.get(self.stands_for[k], [])
            take += rows
            new_ids += [self.ids[k]] * len(rows)
        out = table.take(pa.array(take, pa.int64()))
        return out.set_column(out.schema.get_field_index("image_id"), "image_id", pa.array(new_ids, pa.string()))

    def members(self, shard: int) -> np.ndarray:
        return np.flatnonzero(self.shards == shard)


def link_files(rep: Replicator, out: Path, kind: str, pattern: str) -> None:
    """Stored pictures or label maps of the new ids: links to the template's files."""
    for k, image_id in enumerate(rep.ids):
        shard = shard_name(rep.shards[k])
        for original in sorted((rep.template / kind).glob(pattern.format(id=rep.stands_for[k]))):
            parts = original.relative_to(rep.template / kind).parts  # shard, [annotator], file
            target = out / kind / shard / Path(*parts[1:-1]) / (image_id + original.suffix)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(original)


def write_sharded(rep: Replicator, out: Path, name: str) -> None:
    folder = rep.template / "tables" / name
    table = pa.concat_tables([pq.read_table(f) for f in sorted(folder.glob("*.parquet"))])
    for shard in range(rep.n_shards):
        part = rep.rows(table, rep.members(shard))
        if name == "images":
            paths = [f"{resized_dir(shard)}/{i}.jpg" for i in part.column("image_id").to_pylist()]
            part = part.set_column(part.schema.get_field_index("resized_path"), "resized_path", pa.array(paths))
            part = part.set_column(part.schema.get_field_index("shard"), "shard",
                                   pa.array([shard] * part.num_rows, pa.int32()))
        path = out / table_file(name, shard)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(part, path)


def write_single(rep: Replicator, source: Path, target: Path) -> None:
    table = pq.read_table(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rep.rows(table, np.arange(len(rep.ids))), target)


def parquet_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.parquet")) if folder.is_dir() else []


def features(template: Path) -> list[str]:
    """Tables whose columns are exactly (image_id, vector)."""
    folders = sorted(p for p in (template / "tables").iterdir() if parquet_files(p))
    return [p.name for p in folders if pq.read_schema(parquet_files(p)[0]).names == ["image_id", "vector"]]


def synthetic_build(template: Path, n_images: int, out: Path) -> None:
    rep = Replicator(template, n_images)
    link_files(rep, out, "resized", "shard-*/{id}.jpg")
    link_files(rep, out, "segmentations", "shard-*/annotator-*/{id}.png")
    for name in (*SHARDED, *features(template)):
        if (template / "tables" / name).is_dir():
            write_sharded(rep, out, name)
    for name in SINGLE:
        if (template / "tables" / name / "all.parquet").is_file():
            write_single(rep, template / "tables" / name / "all.parquet", out / "tables" / name / "all.parquet")
    for run in parquet_files(template / "runs"):
        if "decision" in pq.read_schema(run).names:
            write_single(rep, run, out / "runs" / run.name)
    for name in COPIED:
        for path in parquet_files(template / "tables" / name):
            target = out / "tables" / name / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())


def child(build: Path, browse: Path, per_page: int, top_terms: int) -> None:
    """Runs in a fresh process: build the browser, print seconds and peak memory."""
    from annobench.release.browser.writer import build_browser

    started = time.perf_counter()
    files = build_browser(build, browse, {"images_per_page": per_page, "top_terms": top_terms})
    print(f"{time.perf_counter() - started:.3f} {files} {peak_rss_mb():.0f}")


def child_by_shard(build: Path, browse: Path, per_page: int, top_terms: int) -> None:
    """Runs in a fresh process: the three rules' code in turn, each part timed; prints JSON."""
    from annobench.core.layout import shard_name
    from annobench.release.browser.shards import build_index_site, build_shard_pages, prepare_browser
    from annobench.release.browser.source import Catalogue, Source

    settings = {"images_per_page": per_page, "top_terms": top_terms}
    catalogue = Catalogue.load(Source(build), per_page)
    shards = catalogue.shard_numbers()
    work = browse.parent / "work"
    prepared = {shard: work / shard_name(shard) for shard in shards}
    started = time.perf_counter()
    prepare_browser(build, prepared, work / "plan.json", settings)
    timings = {"prepare": time.perf_counter() - started}
    browse.mkdir()
    started = time.perf_counter()
    build_index_site(build, browse, settings)
    timings["index"] = time.perf_counter() - started
    timings["shards"], timings["shard_images"] = [], []
    for shard in shards:
        started = time.perf_counter()
        build_shard_pages(build, prepared[shard], work / "plan.json", shard, browse, settings)
        timings["shards"].append(time.perf_counter() - started)
        timings["shard_images"].append(int((catalogue.shards == shard).sum()))
    timings["peak_mib"] = peak_rss_mb()
    print(json.dumps(timings))


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def report_by_shard(timings: dict, n_images: int, single_seconds: float, same: bool, cores: int = 32) -> None:
    shards = timings["shards"]
    per_image = sum(shards) / max(1, sum(timings["shard_images"]))
    print(f"by shard: prepare {timings['prepare']:.2f} s, index/grid/style {timings['index']:.2f} s, "
          f"{len(shards)} shard jobs {min(shards):.2f}-{max(shards):.2f} s "
          f"({1000 * per_image:.2f} ms/image, shards of {min(timings['shard_images']):,}-"
          f"{max(timings['shard_images']):,} images); peak {timings['peak_mib']:.0f} MiB; "
          f"same bytes as one job: {'yes' if same else 'NO'}")
    scale = PROJECTED_IMAGES / n_images
    n_shards = shard_count(PROJECTED_IMAGES)
    shard_seconds = per_image * PROJECTED_IMAGES / n_shards
    waves = math.ceil(n_shards / cores)
    prepare, index = timings["prepare"] * scale, timings["index"] * scale
    wall = prepare + max(index, waves * shard_seconds)
    print(f"  projected for {PROJECTED_IMAGES:,} images, {n_shards} shards, {cores} cores: prepare "
          f"{prepare / 60:.1f} min, then {n_shards} shard jobs of {shard_seconds:.1f} s in {waves} waves "
          f"({waves * shard_seconds / 60:.1f} min) beside the index job ({index / 60:.1f} min): "
          f"{wall / 60:.1f} min wall, against {single_seconds * scale / 60:.1f} min as one job")


def report(build: Path, browse: Path, seconds: float, peak: str) -> None:
    n_images = sum(pq.read_metadata(f).num_rows for f in (build / "tables" / "images").glob("*.parquet"))
    files = [p for p in browse.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    pages = [p for p in files if p.suffix == ".html"]
    largest = max(pages, key=lambda p: (p.stat().st_size, p.as_posix()))
    per_k = 1000 / n_images
    scale = PROJECTED_IMAGES / n_images
    print(f"{n_images:,} images: {seconds:.1f} s ({1000 * seconds / n_images:.2f} ms/image), "
          f"{len(files):,} files, {total / 2**20:.1f} MiB, peak {peak} MiB")
    print(f"  per 1,000 images: {seconds * per_k:.2f} s, {len(files) * per_k:,.0f} files, "
          f"{total * per_k / 2**20:.2f} MiB "
          f"(HTML {sum(p.stat().st_size for p in pages) * per_k / 2**20:.2f} MiB, "
          f"overlays {sum(p.stat().st_size for p in files if p.suffix == '.png') * per_k / 2**20:.2f} MiB)")
    print(f"  largest page: {largest.relative_to(browse)} {largest.stat().st_size / 1024:.1f} KiB; "
          f"index.html {(browse / 'index.html').stat().st_size / 1024:.1f} KiB")
    print(f"  projected for {PROJECTED_IMAGES:,} images (linear): {seconds * scale / 60:.1f} min on one core, "
          f"{len(files) * scale:,.0f} files, {total * scale / 2**30:.2f} GiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build", nargs="?", type=Path, help="an existing build folder (default: a synthetic one)")
    parser.add_argument("--images", type=int, default=5000, help="images of the synthetic build")
    parser.add_argument("--template", type=Path, default=TEMPLATE, help="the build the synthetic one repeats")
    parser.add_argument("--images-per-page", type=int, default=100)
    parser.add_argument("--top-terms", type=int, default=20)
    parser.add_argument("--by-shard", action="store_true", help="also the per-shard jobs' code path")
    parser.add_argument("--child", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-by-shard", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.images_per_page, args.top_terms)
        return
    if args.child_by_shard:
        child_by_shard(*args.child_by_shard, args.images_per_page, args.top_terms)
        return
    with tempfile.TemporaryDirectory(prefix="bench-browse-") as scratch:
        work = Path(scratch)
        build = args.build
        if build is None:
            if not (args.template / "tables" / "images").is_dir():
                sys.exit(f"needs a build to repeat at {args.template} (run `snakemake --cores all` first)")
            started = time.perf_counter()
            build = work / "build"
            synthetic_build(args.template, args.images, build)
            print(f"synthetic build of {args.images:,} images from {args.template.name}: "
                  f"{time.perf_counter() - started:.1f} s")
        site = work / "site"
        site.mkdir()
        (site / "resized").symlink_to((build / "resized").resolve(), target_is_directory=True)
        result = subprocess.run([sys.executable, __file__, "--child", str(build), str(site / "browse"),
                                 "--images-per-page", str(args.images_per_page), "--top-terms", str(args.top_terms)],
                                check=True, stdout=subprocess.PIPE, text=True)
        seconds, _, peak = result.stdout.split()[-3:]
        report(build, site / "browse", float(seconds), peak)
        if args.by_shard:
            sharded = work / "sharded"
            sharded.mkdir()
            (sharded / "resized").symlink_to((build / "resized").resolve(), target_is_directory=True)
            result = subprocess.run([sys.executable, __file__, "--child-by-shard", str(build),
                                     str(sharded / "browse"), "--images-per-page", str(args.images_per_page),
                                     "--top-terms", str(args.top_terms)], check=True, stdout=subprocess.PIPE,
                                    text=True)
            n_images = sum(pq.read_metadata(f).num_rows for f in (build / "tables" / "images").glob("*.parquet"))
            same = tree(site / "browse") == tree(sharded / "browse")
            report_by_shard(json.loads(result.stdout.splitlines()[-1]), n_images, float(seconds), same)


if __name__ == "__main__":
    main()
