"""The release browser as a whole: a static website over a build's tables and stored images.

A benchmark maintainer opens `browse/index.html` from disk (file://, no
server, no network) to check a release by eye: the collection's figures
(counts, label frequencies, regions per image, rejects, feature norms), a
paged grid of the stored images, and one page per image with its text
terms and the pages they came from, its regions drawn over the picture,
its spatial relations, its ground truth and split, its truth boxes and the
best-scored boxes of each box run drawn over the picture, and what each
baseline run predicted for it.

The site links the stored images where they are (`browse/` sits next to
`resized/`, in the build folder and in the release), so it adds HTML and
one small overlay PNG per segmentation (boxes are inline SVG), nothing more. Every page is bounded
(caps on the rows a section shows), so no file grows with the collection.

Memory stays bounded too: tables split by shard are read one shard at a
time; per-image tables that are not (ground truth, splits, duplicates, runs)
are first regrouped by image shard into a scratch folder. Output is
deterministic: everything is sorted, numbers have fixed formats, and no
time or absolute path is written.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from annobench.core.config import release_identity
from annobench.core.fsutil import atomic_path
from annobench.core.jobs import Job
from annobench.release.browser.box_overlays import RUN_COLOURS
from annobench.release.browser.figures import Figures, collect_figures
from annobench.release.browser.files import Site
from annobench.release.browser.image_pages import Context, write_image_pages
from annobench.release.browser.index_pages import index_html, leaderboard_html, write_grid
from annobench.release.browser.overlays import Palette
from annobench.release.browser.source import PAGE_COLUMNS, Catalogue, Log, PerImage, Source
from annobench.release.browser.templating import render

DEFAULTS = {"enabled": True, "images_per_page": 100, "top_terms": 20, "max_run_boxes": 20, "drawn_run_boxes": 5}


def browser_settings(config: dict) -> dict:
    """The browser's settings from a build config (`release.browse`, with the release's title and
    description), defaults filled in."""
    identity = release_identity(config)
    settings = {**DEFAULTS, **((config.get("release") or {}).get("browse") or {})}
    settings.setdefault("title", identity["title"])
    settings.setdefault("description", identity["description"])
    return settings


def full_settings(settings: dict) -> dict:
    return {**DEFAULTS, "title": "annobench release", "description": "", **settings}


def build_browser(source_dir: Path, browse_dir: Path, settings: dict, log: Log = lambda line: None) -> int:
    """Write the static browser of the build in `source_dir` into the new folder `browse_dir`
    (which must sit next to the stored images' `resized/`); return the number of files written.
    The whole site in one process: the reference the per-shard jobs (browser.shards) must match."""
    settings = full_settings(settings)
    source = Source(Path(source_dir))
    browse_dir = Path(browse_dir)
    browse_dir.mkdir(parents=True, exist_ok=False)
    site = Site(browse_dir)
    catalogue = Catalogue.load(source, max(1, int(settings["images_per_page"])))
    log(f"browse: {len(catalogue):,} images")
    with tempfile.TemporaryDirectory(prefix="annobench-browse-") as scratch:
        per_image = PerImage(source, catalogue, Path(scratch), int(settings["top_terms"]), log)
        figures = collect_figures(source, catalogue, per_image.runs, log)
        write_index_site(site, settings, source, catalogue, figures, log)
        context = Context(settings, source, catalogue, per_image, Palette(figures.labels_by_frequency()), site,
                          source.table("pages", PAGE_COLUMNS))
        write_image_pages(context, log)
    log(f"browse: {site.files:,} files written")
    return site.files


def write_index_site(site: Site, settings: dict, source: Source, catalogue: Catalogue, figures: Figures,
                     log: Log) -> None:
    """The pages that need the whole build: style, index, leaderboard and the grid."""
    leaderboard = source.table("leaderboard")
    site.write("style.css", render("style.css", runs=len(RUN_COLOURS)))
    site.write("index.html", index_html(settings, source, catalogue, figures, leaderboard is not None))
    if leaderboard is not None:
        site.write("leaderboard.html", leaderboard_html(settings, leaderboard))
    write_grid(site, settings, catalogue, log)


def whole_site_job(job: Job) -> None:
    """Rule browse in a build of one shard: the site, built beside resized/ under a hidden name and
    renamed when complete (its links are relative)."""
    with atomic_path(job.output_files[0]) as partial:
        count = build_browser(job.out_dir, partial, job.params["settings"], job.log)
    job.log(f"{count} files in the release browser")
