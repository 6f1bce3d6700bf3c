"""The browser in parts, for builds of several image shards, so its image pages run as parallel jobs:

- rule browse_prepare (one job): the per-image tables that are not split by shard (ground truth,
  splits, duplicates, runs, caption scores) regrouped by image shard, a folder per shard holding
  also that shard's rows of `pages`, and a plan: which tables were regrouped, the runs, and the
  region labels by frequency (the palette every overlay is coloured with);
- rule browse_shard (one job per image shard): that shard's image pages and overlays, reading its
  own shard files and its prepared folder only;
- rule browse_norms (one job per image shard, once its features exist): the L2 norms of the
  shard's feature vectors, for the index's figure;
- rule browse (one job, beside them): the style, index, leaderboard and grid, which need figures
  of the whole build (the norms from browse_norms' tables, not from the vectors).

Together they write the same files, byte for byte, as writer.build_browser in one process.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.feather as feather

from annobench.core.fsutil import write_bytes_atomic
from annobench.core.jobs import Job
from annobench.core.layout import shard_name
from annobench.core.tables import write_table
from annobench.release.browser.figures import Figures, collect_figures, collect_regions, read_shard_norms, shard_norms
from annobench.release.browser.files import Site
from annobench.release.browser.image_pages import Context, shown_pages, write_image_pages
from annobench.release.browser.overlays import Palette
from annobench.release.browser.source import PAGE_COLUMNS, Catalogue, Log, PerImage, Source
from annobench.release.browser.writer import full_settings, whole_site_job, write_index_site

PAGES_FILE = "pages.arrow"


def catalogue_of(source: Source, settings: dict) -> Catalogue:
    return Catalogue.load(source, max(1, int(settings["images_per_page"])))


# ---------------------------------------------------------------- browse_prepare

def prepare_browser(source_dir: Path, prepared: dict[int, Path], plan_path: Path, settings: dict,
                    log: Log = lambda line: None) -> None:
    """Regroup the non-sharded per-image tables into one folder per image shard (`prepared`:
    shard -> folder, each made even when empty) and write the plan the shard jobs follow."""
    settings, source = full_settings(settings), Source(Path(source_dir))
    catalogue = catalogue_of(source, settings)
    parent = Path(plan_path).parent
    parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".browse-prepare-", dir=parent) as scratch:
        per_image = PerImage(source, catalogue, Path(scratch), int(settings["top_terms"]), log)
        pages = source.table("pages", PAGE_COLUMNS)
        for shard, folder in prepared.items():
            Path(folder).mkdir(parents=True, exist_ok=True)
            write_shard_pages(pages, per_image.read("image_urls", shard), Path(folder))
            move_shard_buckets(per_image, shard, Path(folder))
    figures = Figures()
    collect_regions(source, figures)
    plan = {"bucketed": sorted(per_image.bucketed), "runs": per_image.runs, "box_runs": per_image.box_runs,
            "labels": figures.labels_by_frequency()}
    write_bytes_atomic(plan_path, json.dumps(plan, indent=1, sort_keys=True).encode("utf-8"))
    log(f"browse_prepare: {len(per_image.bucketed)} tables regrouped into {len(prepared)} shard folders")


def move_shard_buckets(per_image: PerImage, shard: int, folder: Path) -> None:
    """A shard's part of every regrouped table, moved under the folder a shard job reads it from
    (the same relative layout PerImage reads its scratch folder with)."""
    for key in sorted(per_image.bucketed):
        part = per_image.folder(key) / str(shard)
        if part.is_dir():
            target = folder / per_image.folder(key).name / str(shard)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(part, target)


def write_shard_pages(pages: pa.Table | None, urls: pa.Table | None, folder: Path) -> None:
    """A shard's rows of `pages` (those its images came from), so no shard job reads them all;
    image_pages.pages_of picks the same rows from these as from the whole table."""
    rows = shown_pages(pages, urls)
    if rows is not None:
        feather.write_feather(rows, folder / PAGES_FILE, compression="uncompressed")


# ---------------------------------------------------------------- browse_shard

def build_shard_pages(source_dir: Path, prepared_dir: Path, plan_path: Path, shard: int, site_dir: Path,
                      settings: dict, log: Log = lambda line: None) -> int:
    """The image pages and overlays of one image shard, written under `site_dir` (a browse/ folder or
    a partial one); returns the number of files."""
    settings, source = full_settings(settings), Source(Path(source_dir))
    plan = json.loads(Path(plan_path).read_text(encoding="utf-8"))
    catalogue = catalogue_of(source, settings)
    per_image = PerImage(source, catalogue, Path(prepared_dir), int(settings["top_terms"]), log, regroup=False)
    per_image.adopt(plan["bucketed"], plan["runs"], plan["box_runs"])
    pages_file = Path(prepared_dir) / PAGES_FILE
    pages = feather.read_table(pages_file) if pages_file.is_file() else None
    site = Site(Path(site_dir))
    context = Context(settings, source, catalogue, per_image, Palette(plan["labels"]), site, pages)
    write_image_pages(context, log, only=shard)
    return site.files


# ---------------------------------------------------------------- browse (index, grid, style)

def build_index_site(source_dir: Path, site_dir: Path, settings: dict, log: Log = lambda line: None,
                     norm_files: list[Path] = ()) -> int:
    """The style, index, leaderboard and grid pages, written under `site_dir`; returns the file count.
    norm_files: browse_norms' tables, whose shards' norms are not recomputed from the vectors."""
    settings, source = full_settings(settings), Source(Path(source_dir))
    catalogue = catalogue_of(source, settings)
    figures = collect_figures(source, catalogue, sorted(source.runs()), log, read_shard_norms(norm_files))
    site = Site(Path(site_dir))
    write_index_site(site, settings, source, catalogue, figures, log)
    return site.files


def build_browser_by_shard(source_dir: Path, browse_dir: Path, settings: dict, work_dir: Path,
                           log: Log = lambda line: None) -> int:
    """What the three rules do, in sequence in one process (tests compare it with build_browser)."""
    source = Source(Path(source_dir))
    shards = catalogue_of(source, full_settings(settings)).shard_numbers()
    prepared = {shard: Path(work_dir) / shard_name(shard) for shard in shards}
    plan = Path(work_dir) / "plan.json"
    prepare_browser(source_dir, prepared, plan, settings, log)
    norm_files = []
    feature_shards = [files for files in map(source.shard_files, source.features()) if files]
    for shard in shards:
        norm_files.append(Path(work_dir) / "norms" / f"{shard_name(shard)}.parquet")
        write_table(shard_norms([files[shard] for files in feature_shards if shard in files]), norm_files[-1],
                    "browse_norms", params={})
    Path(browse_dir).mkdir(parents=True, exist_ok=False)
    files = build_index_site(source_dir, browse_dir, settings, log, norm_files)
    for shard in shards:
        files += build_shard_pages(source_dir, prepared[shard], plan, shard, browse_dir, settings, log)
    return files


# ---------------------------------------------------------------- the jobs

def move_into_place(partial: Path, browse_dir: Path, outputs: list[str]) -> None:
    """Each declared output from the partial site to its place in browse/ (made empty when the
    part has no file: a shard without label maps has no overlays)."""
    for output in map(Path, outputs):
        built = partial / output.relative_to(browse_dir)
        if output.is_dir():
            shutil.rmtree(output)
        elif output.exists():
            output.unlink()
        output.parent.mkdir(parents=True, exist_ok=True)
        if built.exists():
            os.replace(built, output)
        else:
            output.mkdir()


def browse_prepare_job(job: Job) -> None:
    """Rule browse_prepare: the regrouped tables, a folder per image shard, and the plan."""
    folders = job.output("shards")
    folders = [folders] if isinstance(folders, str) else folders
    prepared = {int(Path(folder).name.split("-")[-1]): Path(folder) for folder in folders}
    prepare_browser(job.out_dir, prepared, Path(job.output("plan")), job.params["settings"], job.log)


def browse_shard_job(job: Job) -> None:
    """Rule browse_shard: one image shard's pages and overlays, built aside and moved into browse/."""
    with tempfile.TemporaryDirectory(prefix=".browse-shard-", dir=Path(job.input("plan")).parent) as partial:
        count = build_shard_pages(job.out_dir, Path(job.input("prepared")), Path(job.input("plan")), job.shard,
                                  Path(partial), job.params["settings"], job.log)
        move_into_place(Path(partial), job.out_dir / "browse", job.output_files)
    job.log(f"{count} files of shard {job.shard} in the release browser")


def browse_norms_job(job: Job) -> None:
    """Rule browse_norms: one shard's feature norms, for the index job."""
    write_table(shard_norms(job.input_list("features")), job.output("norms"), "browse_norms", params={})


def browse_job(job: Job) -> None:
    """Rule browse: the whole site in a build of one shard; in one of several, the pages that need
    the whole build (the image pages are the browse_shard jobs')."""
    if job.params.get("by_shard"):
        browse_index_job(job)
    else:
        whole_site_job(job)


def browse_index_job(job: Job) -> None:
    """The style, index, leaderboard and grid, built aside and moved into browse/."""
    (Path(job.out_dir) / "work").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".browse-index-", dir=Path(job.out_dir) / "work") as partial:
        count = build_index_site(job.out_dir, Path(partial), job.params["settings"], job.log,
                                 job.input_list("norms"))
        move_into_place(Path(partial), job.out_dir / "browse", job.output_files)
    job.log(f"{count} index, grid and style files in the release browser")
