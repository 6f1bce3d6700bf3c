"""The pages that list: the index with the collection's figures, the
leaderboard, and the paged grid of the images. This module gathers what
each page shows; templates/index.html, leaderboard.html and grid.html draw it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from annobench.release.browser.charts import Chart, bar_chart, column_chart, short
from annobench.release.browser.figures import Figures, count_rows
from annobench.release.browser.files import Link, Site, grid_page_path, href, stored_image_href
from annobench.release.browser.source import Catalogue, Log, Source
from annobench.release.browser.templating import DASH, number, render

# Caps on what one page lists, so no HTML file grows with the collection.
MAX_LABEL_ROWS = 1000        # rows of a frequency table on the index
MAX_CHART_BARS = 40          # bars of a frequency chart
MAX_REJECT_GROUPS = 100      # reason groups on the index
MAX_DUPLICATES_SHOWN = 200   # duplicate rows on the index
MAX_JUMPS = 100              # grid pages listed on the index by first id
HISTOGRAM_BINS = 24
REGIONS_HISTOGRAM_TAIL = 40  # segmentations with more regions share the last bar


def page_of(site_path: str, title: str) -> dict:
    """What the page template needs of any page: its title and its way to the style sheet."""
    return {"title": title, "stylesheet": href(site_path, "style.css")}


# ---------------------------------------------------------------- the index

@dataclass(frozen=True)
class Frequency:
    """A frequency table with a chart of its most frequent rows."""

    what: str
    chart: Chart | None
    charted: int
    distinct: int
    headers: list[str]
    rows: list[list[str]]


def frequency(counts: Counter, images: Counter | None, what: str, unit: str) -> Frequency:
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    charted = min(len(ranked), MAX_CHART_BARS)
    rows = [[label, number(value)] + ([number(images[label])] if images is not None else [])
            for label, value in ranked[:MAX_LABEL_ROWS]]
    return Frequency(what, bar_chart(ranked[:MAX_CHART_BARS], f"{what}: the {charted} most frequent"), charted,
                     len(ranked), [what, unit] + (["images"] if images is not None else []), rows)


def regions_histogram(sizes: Counter) -> Chart | None:
    if not sizes:
        return None
    top = min(max(sizes), REGIONS_HISTOGRAM_TAIL)
    bins = [(str(n), sizes.get(n, 0)) for n in range(1, top)]
    bins.append((f"{top}+" if max(sizes) > top else str(top), sum(v for n, v in sizes.items() if n >= top)))
    return column_chart(bins, "regions per segmentation")


def relation_tables(relations: dict[str, Counter]) -> list[tuple[str, list[list[str]]]]:
    """(relation, rows of value and pairs) for each kind of relation the build has."""
    tables = []
    for name in ("topology", "horizontal", "vertical"):
        counts = relations.get(name)
        if counts:
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
            tables.append((name, [[value, number(n)] for value, n in ranked]))
    return tables


def rejects_view(rejects: dict) -> dict:
    ordered = sorted(rejects.items(), key=lambda kv: (kv[0][0], -kv[1][0], kv[0][1]))
    rows = [[where, reason, number(n), ", ".join(ids)] for (where, reason), (n, ids) in ordered[:MAX_REJECT_GROUPS]]
    chart = bar_chart([(f"{where}: {reason}", n) for (where, reason), (n, _) in ordered[:MAX_CHART_BARS]],
                      "rejects by reason")
    return {"chart": chart, "rows": rows, "total": len(ordered)}


def norms_rows(norms: dict[str, dict]) -> list[dict]:
    """Each feature's norms: dimension, counts, min/median/max and a sparkline of their histogram."""
    rows = []
    for feature, info in norms.items():
        values = info["norms"]
        low, mid, high = (number(float(f(values)), 4) for f in (np.min, np.median, np.max)) if len(values) else (
            (DASH,) * 3)
        counts, edges = np.histogram(values, bins=HISTOGRAM_BINS) if len(values) else (np.zeros(0, int), [])
        bins = [(f"{edges[k]:.3f}-{edges[k + 1]:.3f}", int(c)) for k, c in enumerate(counts)]
        cells = [feature, number(info["dim"]), number(info["vectors"]), number(info["non_finite"]),
                 number(info["zero"]), low, mid, high]
        rows.append({"cells": cells, "chart": column_chart(bins, f"{feature} norms", 32, labels=False)})
    return rows


def jumps(catalogue: Catalogue) -> list[Link]:
    """Grid pages by their first image id, like a dictionary's thumb index."""
    pages = catalogue.pages()
    shown = min(pages, MAX_JUMPS)
    picks = sorted({(k * (pages - 1)) // max(1, shown - 1) for k in range(shown)})
    return [Link(f"{p + 1:,}: {short(catalogue.ids[p * catalogue.per_page], 30)}",
                 href("index.html", grid_page_path(p))) for p in picks]


def image_link(from_page: str, catalogue: Catalogue, image_id: str | None) -> Link:
    """A link to an image's page (href empty when the id is not an image of the catalogue)."""
    positions = catalogue.positions([image_id]) if image_id is not None else [-1]
    if positions[0] < 0:
        return Link(image_id or "", "")
    return Link(image_id, href(from_page, catalogue.page_path(int(positions[0]))))


def duplicates_view(source: Source, catalogue: Catalogue) -> dict | None:
    if not source.files("duplicates"):
        return None
    table = source.table("duplicates", ["image_id", "duplicate_of", "group_size"])
    if table is None or table.num_rows == 0:
        return {"rows": [], "total": 0}
    table = table.sort_by([("duplicate_of", "ascending"), ("image_id", "ascending")]).slice(0, MAX_DUPLICATES_SHOWN)
    rows = [(image_link("index.html", catalogue, row["image_id"]),
             image_link("index.html", catalogue, row["duplicate_of"]), number(row.get("group_size")))
            for row in table.to_pylist()]
    return {"rows": rows, "total": count_rows(source.files("duplicates"))}


def index_links(has_leaderboard: bool) -> list[Link]:
    links = [Link("image grid", href("index.html", grid_page_path(0)))]
    if has_leaderboard:
        links.append(Link("leaderboard", href("index.html", "leaderboard.html")))
    return links


def index_html(settings: dict, source: Source, catalogue: Catalogue, figures: Figures, has_leaderboard: bool) -> str:
    return render(
        "index.html", **page_of("index.html", settings["title"]), description=settings.get("description") or "",
        links=index_links(has_leaderboard), counts=figures.counts, images=len(catalogue),
        grid_pages=catalogue.pages(), per_page=catalogue.per_page, jumps=jumps(catalogue) if len(catalogue) else [],
        splits=[[k, number(v)] for k, v in sorted(figures.splits.items())],
        labels=frequency(figures.region_labels, figures.region_label_images, "label", "regions")
        if figures.region_labels else None,
        concepts=frequency(figures.concepts, None, "concept", "images") if figures.concepts else None,
        segmentations=sum(figures.regions_per_segmentation.values()),
        regions_chart=regions_histogram(figures.regions_per_segmentation),
        relations=relation_tables(figures.relations), rejects=rejects_view(figures.rejects),
        duplicates=duplicates_view(source, catalogue), norms=norms_rows(figures.norms))


def leaderboard_cell(value) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else number(value)


def leaderboard_html(settings: dict, table: pa.Table) -> str:
    rows = [[leaderboard_cell(v) for v in row.values()] for row in table.to_pylist()]
    return render("leaderboard.html", **page_of("leaderboard.html", f"{settings['title']}: leaderboard"),
                  index=href("leaderboard.html", "index.html"), headers=table.column_names, rows=rows)


# ---------------------------------------------------------------- the grid

THUMB = 160


def thumb_size(width: int, height: int) -> tuple[int, int]:
    scale = min(1.0, THUMB / max(width, height, 1))
    return max(1, round(width * scale)), max(1, round(height * scale))


def pager(page: int, pages: int) -> list[Link]:
    here = grid_page_path(page)
    steps = [("first", 0), ("\u2212100", page - 100), ("\u221210", page - 10), ("previous", page - 1),
             ("next", page + 1), ("+10", page + 10), ("+100", page + 100), ("last", pages - 1)]
    return [Link(label, href(here, grid_page_path(target))) for label, target in steps
            if 0 <= target < pages and target != page]


def tiles(catalogue: Catalogue, page: int) -> list[dict]:
    """The grid page's images: each one's page, stored picture and thumbnail size."""
    here, start = grid_page_path(page), page * catalogue.per_page
    found = []
    for offset, row in enumerate(catalogue.table.slice(start, catalogue.per_page).to_pylist()):
        width, height = thumb_size(row["resized_width"] or THUMB, row["resized_height"] or THUMB)
        found.append({"image_id": row["image_id"], "href": href(here, catalogue.page_path(start + offset)),
                      "src": stored_image_href(here, row["resized_path"] or ""), "width": width, "height": height})
    return found


def grid_html(settings: dict, catalogue: Catalogue, page: int) -> str:
    here = grid_page_path(page)
    shown = tiles(catalogue, page)
    first = page * catalogue.per_page + 1
    return render("grid.html", **page_of(here, f"{settings['title']}: grid page {page + 1}"),
                  heading=settings["title"], first=first, last=first + len(shown) - 1, tiles=shown,
                  index=href(here, "index.html"), page=page + 1, pages=catalogue.pages(),
                  steps=pager(page, catalogue.pages()))


def write_grid(site: Site, settings: dict, catalogue: Catalogue, log: Log) -> None:
    for page in range(catalogue.pages()):
        site.write(grid_page_path(page), grid_html(settings, catalogue, page))
    log(f"browse: {catalogue.pages():,} grid pages")
