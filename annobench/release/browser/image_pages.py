"""One page per image: its stored picture and facts, text terms and the
pages they came from, the search queries that found it, regions drawn over it, spatial relations, ground truth
and split, its boxes, what each baseline run predicted, and its descriptions
(references, captions found in its pages, each caption run's sentence with its
Meteor); written shard by shard. This module reads each shard's rows and puts
the page together (image_sections, box_overlays and caption_section give the
sections' data); templates/image.html draws it."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from annobench.core.layout import shard_name
from annobench.release.browser.box_overlays import BoxSources, RunStyle, boxes_section, run_styles
from annobench.release.browser.caption_section import CAPTION_TABLES, captions_section
from annobench.release.browser.files import Link, Site, grid_page_path, href, image_page_path, stored_image_href
from annobench.release.browser.image_sections import (
    MAX_REGIONS_SHOWN,
    MAX_RELATIONS_SHOWN,
    Segmentations,
    facts,
    picture,
    regions_section,
    relations_section,
    runs_section,
    search_section,
    text_section,
    truth_section,
)
from annobench.release.browser.index_pages import page_of
from annobench.release.browser.overlays import Palette
from annobench.release.browser.source import Catalogue, Log, PerImage, Rows, Source, group_by_image
from annobench.release.browser.templating import render

# Caps on what one page lists, so no HTML file grows with the collection.
MAX_PAGES_SHOWN = 50         # pages an image came from
MAX_TRUTH_SHOWN = 500        # ground truth concepts of one image
MAX_TRUTH_BOXES_SHOWN = 500  # truth boxes (and rejected truth boxes) of one image; runs': max_run_boxes
MAX_SEARCHES_SHOWN = 200     # search keyword rows (query, engine, rank) of one image


@dataclass
class ShardData:
    """One image shard's rows of every per-image table, grouped by image."""

    terms: dict[str, Rows]
    urls: dict[str, Rows]
    text_rejects: dict[str, Rows]
    searches: dict[str, Rows]
    regions: dict[str, Rows]
    relations: dict[str, Rows]
    segmentation_rejects: dict[str, Rows]
    truth: dict[str, Rows]
    splits: dict[str, Rows]
    duplicates: dict[str, Rows]
    runs: dict[str, dict[str, Rows]]
    pages: dict[str, dict]
    boxes: dict[str, Rows]
    box_rejects: dict[str, Rows]
    box_runs: dict[str, dict[str, Rows]]
    captions: dict[str, dict[str, Rows]]  # table -> image -> rows (CAPTION_TABLES)


# Box order: truth by instance; runs best score first, ties by concept then position (deterministic).
BOX_ORDER = [("concept", "ascending"), ("ymin", "ascending"), ("xmin", "ascending"), ("ymax", "ascending"),
             ("xmax", "ascending")]


def load_shard(per_image: PerImage, pages: pa.Table | None, shard: int, max_run_boxes: int) -> ShardData:
    def grouped(key, order, cap=None):
        return group_by_image(per_image.read(key, shard), order, cap)

    urls = per_image.read("image_urls", shard)
    return ShardData(
        terms=grouped("text_terms", [("rank", "ascending"), ("term", "ascending")]),
        urls=group_by_image(urls, [("page_id", "ascending"), ("img_src", "ascending")], MAX_PAGES_SHOWN),
        text_rejects=grouped("text_rejects", [("page_id", "ascending"), ("reason", "ascending")], MAX_PAGES_SHOWN),
        searches=grouped("search_keywords", [("rank", "ascending"), ("engine", "ascending"), ("query", "ascending")],
                         MAX_SEARCHES_SHOWN),
        regions=grouped("regions", [("annotator", "ascending"), ("region_id", "ascending")]),
        relations=grouped("spatial_relations", [("annotator", "ascending"), ("region_i", "ascending"),
                                                ("region_j", "ascending")], MAX_RELATIONS_SHOWN),
        segmentation_rejects=grouped("segmentation_rejects", [("annotator", "ascending"),
                                                              ("region_id", "ascending")], MAX_REGIONS_SHOWN),
        truth=grouped("ground_truth", [("concept", "ascending")], MAX_TRUTH_SHOWN),
        splits=grouped("splits", [("split", "ascending")]),
        duplicates=grouped("duplicates", [("duplicate_of", "ascending")]),
        runs={name: grouped(f"run:{name}", [("score", "descending"), ("concept", "ascending")])
              for name in per_image.runs},
        pages=pages_of(pages, urls),
        boxes=grouped("boxes", [("instance", "ascending")], MAX_TRUTH_BOXES_SHOWN),
        box_rejects=grouped("box_rejects", [("instance", "ascending"), ("reason", "ascending")],
                            MAX_TRUTH_BOXES_SHOWN),
        box_runs={name: grouped(f"box_run:{name}", [("score", "descending"), *BOX_ORDER], max_run_boxes)
                  for name in per_image.box_runs},
        captions={table: grouped(table, order, cap) for table, (order, cap) in CAPTION_TABLES.items()},
    )


def pages_of(pages: pa.Table | None, urls: pa.Table | None) -> dict[str, dict]:
    """The `pages` rows (title, status) of the pages a shard's images came from."""
    rows = shown_pages(pages, urls)
    return {row["page_id"]: row for row in rows.to_pylist()} if rows is not None else {}


def shown_pages(pages: pa.Table | None, urls: pa.Table | None) -> pa.Table | None:
    """The rows of `pages` whose page some row of `urls` names (None when there are none to show)."""
    if pages is None or urls is None or urls.num_rows == 0:
        return None
    wanted = pc.unique(urls.column("page_id").combine_chunks())
    return pages.filter(pc.is_in(pages.column("page_id"), value_set=wanted.cast(pages.schema.field("page_id").type)))


@dataclass
class ImageView:
    """What one image page needs."""

    row: dict
    position: int
    data: ShardData
    shard: int

    @property
    def image_id(self) -> str:
        return self.row["image_id"]

    def rows(self, table: dict[str, Rows]) -> Rows:
        return table.get(self.image_id) or Rows([], 0)


def image_nav(here: str, view: ImageView, catalogue: Catalogue) -> list[Link]:
    page = catalogue.page_of(view.position)
    links = [Link("index", href(here, "index.html")),
             Link(f"grid page {page + 1:,}", href(here, grid_page_path(page)))]
    if view.position > 0:
        links.append(Link("previous image", href(here, catalogue.page_path(view.position - 1))))
    if view.position + 1 < len(catalogue):
        links.append(Link("next image", href(here, catalogue.page_path(view.position + 1))))
    return links


def boxes_of(here: str, view: ImageView, context: "Context") -> dict:
    sources = BoxSources(view.rows(view.data.boxes), view.rows(view.data.box_rejects),
                         [(style, view.rows(view.data.box_runs[style.name])) for style in context.box_runs])
    return boxes_section(view.row, stored_image_href(here, view.row["resized_path"] or ""), sources,
                         drawn_run_boxes(context.settings))


def sections(here: str, view: ImageView, context: "Context") -> dict:
    """The data of each section the page has (None: the build has no such table)."""
    per_image, found = context.per_image, {}
    if per_image.has("text_terms") or per_image.has("image_urls"):
        found["text"] = text_section(view)
    if per_image.has("search_keywords"):
        found["search"] = search_section(view)
    if per_image.has("regions"):
        parts = Segmentations(context.palette, context.source, context.site)
        found["regions"] = regions_section(here, view, parts) if view.rows(view.data.regions).total else None
        if found["regions"] and per_image.has("spatial_relations"):
            found["relations"] = relations_section(view)
    if per_image.has("ground_truth") or per_image.has("splits"):
        found["truth"] = truth_section(view, per_image)
    if per_image.has("boxes") or per_image.has("box_rejects") or per_image.box_runs:
        found["boxes"] = boxes_of(here, view, context)
    if per_image.runs:
        found["runs"] = runs_section(view, per_image)
    if any(per_image.has(table) for table in CAPTION_TABLES):
        found["captions"] = captions_section(view.data.captions, view.image_id)
    return found


def image_html(view: ImageView, context: "Context") -> str:
    here = image_page_path(view.shard, view.image_id)
    return render("image.html", **page_of(here, f"{view.image_id}: {context.settings['title']}"),
                  image_id=view.image_id, links=image_nav(here, view, context.catalogue),
                  picture=picture(here, view), facts=facts(view), sections=sections(here, view, context))


def max_run_boxes(settings: dict) -> int:
    """Boxes of each box run an image page reads and lists."""
    return max(0, int(settings["max_run_boxes"]))


def drawn_run_boxes(settings: dict) -> int:
    """Boxes of each box run drawn over an image's picture (at most those listed)."""
    return min(max(0, int(settings["drawn_run_boxes"])), max_run_boxes(settings))


@dataclass
class Context:
    settings: dict
    source: Source
    catalogue: Catalogue
    per_image: PerImage
    palette: Palette
    site: Site
    pages: pa.Table | None
    box_runs: list[RunStyle] = field(init=False)

    def __post_init__(self):
        self.box_runs = run_styles(self.per_image.box_runs)


def write_image_pages(context: Context, log: Log, only: int | None = None) -> None:
    """The page of every image, shard by shard (`only`: of that shard alone)."""
    shards = [s for s in context.catalogue.shard_numbers() if only is None or s == only]
    for number_done, shard in enumerate(shards, 1):
        data = load_shard(context.per_image, context.pages, shard, max_run_boxes(context.settings))
        images = context.per_image.read("images", shard)
        rows = images.sort_by([("image_id", "ascending")]).to_pylist() if images is not None else []
        positions = context.catalogue.positions([r["image_id"] for r in rows])
        for row, position in zip(rows, positions):
            if position >= 0:
                view = ImageView(row, int(position), data, shard)
                context.site.write(image_page_path(shard, row["image_id"]), image_html(view, context))
        log(f"browse: shard {number_done}/{len(shards)} ({shard_name(shard)}): {len(rows):,} image pages")
