"""The pages that list: the index with the collection's figures, the
leaderboard, and the paged grid of the images."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

from annobench.release.browser.charts import bar_chart, column_chart, short
from annobench.release.browser.figures import Figures, count_rows
from annobench.release.browser.files import Site, grid_page_path, href, stored_image_href
from annobench.release.browser.markup import esc, html_page, html_table, more_note, number, section
from annobench.release.browser.source import Catalogue, Log, Source

# Caps on what one page lists, so no HTML file grows with the collection.
MAX_LABEL_ROWS = 1000        # rows of a frequency table on the index
MAX_CHART_BARS = 40          # bars of a frequency chart
MAX_REJECT_GROUPS = 100      # reason groups on the index
MAX_DUPLICATES_SHOWN = 200   # duplicate rows on the index
MAX_JUMPS = 100              # grid pages listed on the index by first id
HISTOGRAM_BINS = 24
REGIONS_HISTOGRAM_TAIL = 40  # segmentations with more regions share the last bar


# ---------------------------------------------------------------- the index

def counts_html(counts: dict[str, int]) -> str:
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{v:,}</dd>" for k, v in counts.items())
    return f'<dl class="counts">{rows}</dl>'


def frequency_html(counts: Counter, images: Counter | None, what: str, unit: str) -> str:
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    chart = bar_chart(ranked[:MAX_CHART_BARS], f"{what}: the {min(len(ranked), MAX_CHART_BARS)} most frequent")
    headers = [what, unit] + (["images"] if images is not None else [])
    rows = [[esc(label), number(count)] + ([number(images[label])] if images is not None else [])
            for label, count in ranked[:MAX_LABEL_ROWS]]
    table = html_table(headers, rows)
    return (f"<p>{len(ranked):,} distinct; the {min(len(ranked), MAX_CHART_BARS)} most frequent:</p>{chart}"
            f"<details><summary>All {esc(what)}s</summary>{table}{more_note(len(rows), len(ranked), what + 's')}"
            "</details>")


def regions_histogram_html(sizes: Counter) -> str:
    if not sizes:
        return ""
    top = min(max(sizes), REGIONS_HISTOGRAM_TAIL)
    bins = [(str(n), sizes.get(n, 0)) for n in range(1, top)]
    bins.append((f"{top}+" if max(sizes) > top else str(top), sum(v for n, v in sizes.items() if n >= top)))
    return (f"<p>{sum(sizes.values()):,} segmentations (image and annotator); regions in each:</p>"
            + column_chart(bins, "regions per segmentation"))


def relations_html(relations: dict[str, Counter]) -> str:
    blocks = []
    for name in ("topology", "horizontal", "vertical"):
        counts = relations.get(name)
        if counts:
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
            rows = [[esc(value), number(count)] for value, count in ranked]
            blocks.append(html_table([name, "pairs"], rows))
    return f'<div class="figures">{"".join(blocks)}</div>'


def rejects_html(rejects: dict) -> str:
    if not rejects:
        return "<p>No rejects.</p>"
    ordered = sorted(rejects.items(), key=lambda kv: (kv[0][0], -kv[1][0], kv[0][1]))
    rows = [[esc(where), esc(reason), number(count), esc(", ".join(ids))]
            for (where, reason), (count, ids) in ordered[:MAX_REJECT_GROUPS]]
    chart = bar_chart([(f"{where}: {reason}", count) for (where, reason), (count, _) in ordered[:MAX_CHART_BARS]],
                      "rejects by reason")
    return chart + html_table(["stage", "reason", "rows", "examples"], rows) + more_note(
        len(rows), len(ordered), "reasons")


def norms_html(norms: dict[str, dict]) -> str:
    rows = []
    for feature, info in norms.items():
        values = info["norms"]
        low, mid, high = (number(float(f(values)), 4) for f in (np.min, np.median, np.max)) if len(values) else (
            "&ndash;",) * 3
        counts, edges = np.histogram(values, bins=HISTOGRAM_BINS) if len(values) else (np.zeros(0, int), [])
        bins = [(f"{edges[k]:.3f}-{edges[k + 1]:.3f}", int(c)) for k, c in enumerate(counts)]
        rows.append([esc(feature), number(info["dim"]), number(info["vectors"]), number(info["non_finite"]),
                     number(info["zero"]), low, mid, high, column_chart(bins, f"{feature} norms", 32, labels=False)])
    return html_table(["feature", "dim", "vectors", "non-finite", "zero", "min", "median", "max",
                       "histogram of L2 norms"], rows)


def jump_html(catalogue: Catalogue) -> str:
    """Grid pages by their first image id, like a dictionary's thumb index."""
    if not len(catalogue):
        return "<p>No images.</p>"
    pages = catalogue.pages()
    shown = min(pages, MAX_JUMPS)
    picks = sorted({(k * (pages - 1)) // max(1, shown - 1) for k in range(shown)})
    links = [f'<a href="{href("index.html", grid_page_path(p))}">{p + 1:,}: '
             f'{esc(short(catalogue.ids[p * catalogue.per_page], 30))}</a>' for p in picks]
    return (f"<p>{pages:,} grid pages of {catalogue.per_page:,} images, in id order; "
            f"pages by their first image:</p><nav>{' '.join(links)}</nav>")


def duplicates_html(source: Source, catalogue: Catalogue) -> str:
    table = source.table("duplicates", ["image_id", "duplicate_of", "group_size"])
    if table is None or table.num_rows == 0:
        return "<p>No duplicates.</p>"
    table = table.sort_by([("duplicate_of", "ascending"), ("image_id", "ascending")]).slice(0, MAX_DUPLICATES_SHOWN)
    rows = [[image_link("index.html", catalogue, row["image_id"]),
             image_link("index.html", catalogue, row["duplicate_of"]), number(row.get("group_size"))]
            for row in table.to_pylist()]
    total = count_rows(source.files("duplicates"))
    return html_table(["image", "same bytes as", "group size"], rows) + more_note(len(rows), total, "rows")


def image_link(from_page: str, catalogue: Catalogue, image_id: str | None) -> str:
    positions = catalogue.positions([image_id]) if image_id is not None else [-1]
    if positions[0] < 0:
        return esc(image_id)
    return f'<a href="{href(from_page, catalogue.page_path(int(positions[0])))}">{esc(image_id)}</a>'


def index_html(settings: dict, source: Source, catalogue: Catalogue, figures: Figures, has_leaderboard: bool) -> str:
    links = [f'<a href="{href("index.html", grid_page_path(0))}">image grid</a>']
    if has_leaderboard:
        links.append(f'<a href="{href("index.html", "leaderboard.html")}">leaderboard</a>')
    parts = [f"<h1>{esc(settings['title'])}</h1>", f"<nav>{' '.join(links)}</nav>",
             section("Counts", counts_html(figures.counts), "counts"),
             section("Browse the images", jump_html(catalogue), "browse")]
    if figures.splits:
        parts.append(section("Splits", html_table(["split", "images"], [[esc(k), number(v)] for k, v in sorted(
            figures.splits.items())]), "splits"))
    if figures.region_labels:
        parts.append(section("Region labels", frequency_html(figures.region_labels, figures.region_label_images,
                                                             "label", "regions"), "labels"))
    if figures.concepts:
        parts.append(section("Ground-truth concepts", frequency_html(figures.concepts, None, "concept", "images"),
                             "concepts"))
    if figures.regions_per_segmentation:
        parts.append(section("Regions per image", regions_histogram_html(figures.regions_per_segmentation),
                             "regions"))
    if figures.relations:
        parts.append(section("Spatial relations", relations_html(figures.relations), "relations"))
    parts.append(section("Rejects by reason", rejects_html(figures.rejects), "rejects"))
    if source.files("duplicates"):
        parts.append(section("Duplicates", duplicates_html(source, catalogue), "duplicates"))
    if figures.norms:
        parts.append(section("Feature norms", norms_html(figures.norms), "features"))
    return html_page("index.html", settings["title"], "\n".join(parts))


def leaderboard_html(settings: dict, table: pa.Table) -> str:
    headers = table.column_names
    rows = [[esc(v) if isinstance(v, str) or v is None else number(v) for v in row.values()]
            for row in table.to_pylist()]
    body = ('<h1>Leaderboard</h1><nav><a href="index.html">index</a></nav>'
            '<p class="note">Runs as the build ranked them (best MAP-samples first).</p>'
            + html_table(headers, rows, "numbers"))
    return html_page("leaderboard.html", f"{settings['title']}: leaderboard", body)


# ---------------------------------------------------------------- the grid

THUMB = 160


def thumb_size(width: int, height: int) -> tuple[int, int]:
    scale = min(1.0, THUMB / max(width, height, 1))
    return max(1, round(width * scale)), max(1, round(height * scale))


def pager(page: int, pages: int) -> str:
    here = grid_page_path(page)
    steps = [("first", 0), ("\u2212100", page - 100), ("\u221210", page - 10), ("previous", page - 1),
             ("next", page + 1), ("+10", page + 10), ("+100", page + 100), ("last", pages - 1)]
    links = [f'<a href="{href(here, grid_page_path(target))}">{label}</a>'
             for label, target in steps if 0 <= target < pages and target != page]
    return (f'<nav><a href="{href(here, "index.html")}">index</a> <span>page {page + 1:,} of {pages:,}</span> '
            + " ".join(links) + "</nav>")


def grid_html(settings: dict, catalogue: Catalogue, page: int) -> str:
    here = grid_page_path(page)
    start = page * catalogue.per_page
    rows = catalogue.table.slice(start, catalogue.per_page).to_pylist()
    tiles = []
    for offset, row in enumerate(rows):
        width, height = thumb_size(row["resized_width"] or THUMB, row["resized_height"] or THUMB)
        tiles.append(f'<a class="thumb" href="{href(here, catalogue.page_path(start + offset))}">'
                     f'<img src="{stored_image_href(here, row["resized_path"] or "")}" width="{width}" '
                     f'height="{height}" loading="lazy" alt="{esc(row["image_id"])}">'
                     f'<span title="{esc(row["image_id"])}">{esc(row["image_id"])}</span></a>')
    body = (f"<h1>{esc(settings['title'])}: images {start + 1:,}&ndash;{start + len(rows):,}</h1>"
            + pager(page, catalogue.pages()) + '<div class="grid">\n' + "\n".join(tiles) + "\n</div>"
            + pager(page, catalogue.pages()))
    return html_page(here, f"{settings['title']}: grid page {page + 1}", body)


def write_grid(site: Site, settings: dict, catalogue: Catalogue, log: Log) -> None:
    for page in range(catalogue.pages()):
        site.write(grid_page_path(page), grid_html(settings, catalogue, page))
    log(f"browse: {catalogue.pages():,} grid pages")
