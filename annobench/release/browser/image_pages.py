"""One page per image: its stored picture and facts, text terms and the
pages they came from, regions drawn over it, spatial relations, ground truth
and split, what each baseline run predicted, and its descriptions (references,
captions found in its pages, each caption run's sentence with its Meteor);
written shard by shard."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from annobench.core.layout import shard_name
from annobench.release.browser.box_overlays import boxes_section_html
from annobench.release.browser.caption_section import CAPTION_TABLES, captions_html
from annobench.release.browser.files import (
    Site,
    grid_page_path,
    href,
    image_page_path,
    overlay_path,
    stored_image_href,
)
from annobench.release.browser.markup import esc, esc_word, html_page, html_table, more_note, number, section
from annobench.release.browser.overlays import Palette, hex_colour, overlay_png, read_label_map
from annobench.release.browser.source import Catalogue, Log, PerImage, Rows, Source, group_by_image

# Caps on what one page lists, so no HTML file grows with the collection.
MAX_PAGES_SHOWN = 50         # pages an image came from
MAX_RELATIONS_SHOWN = 1000   # spatial relation rows of one image
RELATIONS_OPEN = 40          # more relation rows than this start folded
MAX_REGIONS_SHOWN = 500      # legend rows of one segmentation
MAX_DECIDED_SHOWN = 60       # predicted concepts of one run for one image
MAX_TRUTH_SHOWN = 500        # ground truth concepts of one image
MAX_TRUTH_BOXES_SHOWN = 500  # truth boxes of one image (run boxes: the max_run_boxes setting)


@dataclass
class ShardData:
    """One image shard's rows of every per-image table, grouped by image."""

    terms: dict[str, Rows]
    urls: dict[str, Rows]
    text_rejects: dict[str, Rows]
    regions: dict[str, Rows]
    relations: dict[str, Rows]
    segmentation_rejects: dict[str, Rows]
    truth: dict[str, Rows]
    splits: dict[str, Rows]
    duplicates: dict[str, Rows]
    runs: dict[str, dict[str, Rows]]
    pages: dict[str, dict]
    boxes: dict[str, Rows]
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


def facts_html(view: ImageView) -> str:
    row = view.row
    facts = [("image id", esc(row["image_id"])), ("shard", number(view.shard)),
             ("original size", f"{number(row.get('width'))} &times; {number(row.get('height'))}"),
             ("stored size", f"{number(row.get('resized_width'))} &times; {number(row.get('resized_height'))}")]
    for key in ("source_path", "format", "mode", "conversion", "file_size", "sha256"):
        if row.get(key) not in (None, ""):
            facts.append((key.replace("_", " "), f"<code>{esc(row[key])}</code>" if isinstance(row[key], str)
                          else number(row[key])))
    for duplicate in view.rows(view.data.duplicates).rows:
        facts.append(("byte-identical", f"group of {number(duplicate.get('group_size'))}, first id "
                                        f"{esc(duplicate.get('duplicate_of'))}"))
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in facts)
    return f'<table class="facts"><tbody>{rows}</tbody></table>'


def picture_html(here: str, view: ImageView) -> str:
    row = view.row
    return (f'<figure><img src="{stored_image_href(here, row["resized_path"] or "")}" width="{row["resized_width"]}" '
            f'height="{row["resized_height"]}" alt="{esc(row["image_id"])}"><figcaption>stored picture'
            "</figcaption></figure>")


def text_html(view: ImageView) -> str:
    terms = view.rows(view.data.terms)
    urls = view.rows(view.data.urls)
    rejects = view.rows(view.data.text_rejects)
    parts = []
    if terms.total:
        parts.append(html_table(["rank", "term", "score"], [[number(t.get("rank")), esc(t["term"]),
                                                             f'{t["score"]:.6f}'] for t in terms.rows]))
    else:
        parts.append("<p>No text terms.</p>")
    if urls.total:
        rows = []
        for url in urls.rows:
            page = view.data.pages.get(url["page_id"], {})
            rows.append([esc(page.get("title")), f"<code>{esc(url['page_id'])}</code>",
                         f"<code>{esc(url.get('url'))}</code>", f"<code>{esc(url.get('img_src'))}</code>",
                         number(url.get("occurrences")), esc(page.get("status"))])
        parts.append("<h3>Pages</h3>" + html_table(["title", "page id", "url", "img src", "occurrences", "status"],
                                                    rows) + more_note(len(urls.rows), urls.total, "pages"))
    if rejects.total:
        rows = [[f"<code>{esc(r.get('page_id'))}</code>", esc(r.get("reason"))] for r in rejects.rows]
        parts.append("<h3>Text rejects</h3>" + html_table(["page id", "reason"], rows))
    return "\n".join(parts)


def region_key(row: dict) -> tuple[int, int]:
    return int(row.get("annotator") or 0), int(row["region_id"])


def segmentation_html(here: str, view: ImageView, annotator: int, regions: list[dict], palette: Palette,
                      source: Source, site: Site) -> str:
    row = view.row
    colours = {int(r["region_id"]): palette.colour(r.get("label"), r["region_id"]) for r in regions}
    label_map = read_label_map(source.root / "segmentations" / shard_name(view.shard) / f"annotator-{annotator}"
                               / f"{row['image_id']}.png")
    if label_map is not None and row.get("resized_width") and row.get("resized_height"):
        path = overlay_path(view.shard, annotator, row["image_id"])
        site.write(path, overlay_png(label_map, row["resized_width"], row["resized_height"], colours))
        size = f'width="{row["resized_width"]}" height="{row["resized_height"]}"'
        figure = (f'<figure><div class="stack" style="width:{row["resized_width"]}px;height:{row["resized_height"]}px">'
                  f'<img src="{stored_image_href(here, row["resized_path"])}" {size} alt="">'
                  f'<img class="overlay" src="{href(here, path)}" {size} alt="regions of annotator {annotator}">'
                  f"</div><figcaption>annotator {annotator}: {len(regions):,} regions (hover to hide)</figcaption>"
                  "</figure>")
    else:
        figure = f'<p class="note">No label map for annotator {annotator}.</p>'
    paths = any(r.get("label_path") for r in regions)
    legend = [[f'<span class="sw" style="background:{hex_colour(colours[int(r["region_id"])])}"></span>',
               number(r["region_id"]), esc(r.get("label") or "\u2014")]
              + ([esc(" / ".join(r.get("label_path") or []))] if paths else [])
              for r in regions[:MAX_REGIONS_SHOWN]]
    headers = ["", "region", "label"] + (["label path"] if paths else [])
    table = html_table(headers, legend) + more_note(len(legend), len(regions), "regions")
    return f'<div class="figures">{figure}<div>{table}</div></div>'


def regions_html(here: str, view: ImageView, palette: Palette, source: Source, site: Site) -> str:
    regions = view.rows(view.data.regions).rows
    by_annotator: dict[int, list[dict]] = {}
    for region in regions:
        by_annotator.setdefault(region_key(region)[0], []).append(region)
    parts = [segmentation_html(here, view, annotator, rows, palette, source, site)
             for annotator, rows in sorted(by_annotator.items())]
    rejects = view.rows(view.data.segmentation_rejects)
    if rejects.total:
        rows = [[number(r.get("annotator")), number(r.get("region_id")), esc(r.get("reason"))] for r in rejects.rows]
        parts.append("<h3>Segmentation rejects</h3>" + html_table(["annotator", "region", "reason"], rows))
    return "\n".join(parts)


def relations_table_html(view: ImageView) -> str:
    labels = {region_key(r): r.get("label") or "\u2014" for r in view.rows(view.data.regions).rows}
    names = {key: esc(f"{key[1]} \u00b7 {label}") for key, label in labels.items()}
    relations = view.rows(view.data.relations)
    multiple = len({int(r.get("annotator") or 0) for r in relations.rows}) > 1
    rows = []
    for r in relations.rows:
        annotator = int(r.get("annotator") or 0)
        cells = [names.get((annotator, int(r[end])), f"{int(r[end])} \u00b7 ?") for end in ("region_i", "region_j")]
        cells += [esc_word(r.get(k)) for k in ("topology", "horizontal", "vertical")]
        rows.append(([number(annotator)] if multiple else []) + cells)
    headers = (["annotator"] if multiple else []) + ["region i", "region j", "topology", "horizontal", "vertical"]
    opened = " open" if relations.total <= RELATIONS_OPEN else ""  # long lists fold away
    return (f"<details{opened}><summary>{relations.total:,} ordered pairs of regions</summary>"
            + html_table(headers, rows) + more_note(len(rows), relations.total, "ordered pairs") + "</details>")


def truth_html(view: ImageView, per_image: PerImage) -> str:
    truth = view.rows(view.data.truth)
    split = view.rows(view.data.splits).rows
    parts = [f"<p>Split: <strong>{esc(split[0]['split']) if split else '&ndash; (in no split)'}</strong></p>"]
    if truth.total:
        tags = [f'<span class="tag">{esc(t["concept"])}'
                + (f' <span class="note">({t["agreement"]:.2f}{", derived" if t.get("derived") else ""})</span>'
                   if t.get("agreement") is not None else "") + "</span>" for t in truth.rows]
        parts.append(f"<p>{' '.join(tags)}</p>" + more_note(len(truth.rows), truth.total, "concepts"))
    elif per_image.has("ground_truth"):
        parts.append("<p>No ground-truth concept.</p>")
    return "\n".join(parts)


CORRECT, WRONG = "\u2713", "\u2717"


def prediction_tag(prediction: dict, correct: bool) -> str:
    mark, css = (CORRECT, "hit") if correct else (WRONG, "miss")
    return f'<span class="tag {css}">{mark} {esc(prediction["concept"])} {prediction["score"]:.3f}</span>'


def runs_html(view: ImageView, per_image: PerImage) -> str:
    truth = {t["concept"] for t in view.rows(view.data.truth).rows}
    rows = []
    for name in per_image.runs:
        predicted = view.data.runs[name].get(view.image_id)
        if predicted is None:
            continue
        hits = sum(p["concept"] in truth for p in predicted.rows)
        tags = [prediction_tag(p, p["concept"] in truth) for p in predicted.rows[:MAX_DECIDED_SHOWN]]
        missed = sorted(truth - {p["concept"] for p in predicted.rows})
        rows.append([esc(name), f"{hits:,} / {predicted.total:,}", " ".join(tags)
                     + more_note(min(len(predicted.rows), MAX_DECIDED_SHOWN), predicted.total, "predictions"),
                     esc(", ".join(missed[:MAX_DECIDED_SHOWN]))])
    if not rows:
        return "<p>No run predicts concepts for this image (runs cover the test images).</p>"
    return ('<p class="note">Concepts each run decided, best score first: '
            '<span class="hit">\u2713 correct</span>, <span class="miss">\u2717 wrong</span>.</p>'
            + html_table(["run", "correct / decided", "decided concepts", "missed ground truth"], rows))


def boxes_html(here: str, view: ImageView, per_image: PerImage, max_run_boxes: int) -> str:
    runs = [(name, view.rows(view.data.box_runs[name])) for name in per_image.box_runs]
    return boxes_section_html(view.row, stored_image_href(here, view.row["resized_path"] or ""),
                              view.rows(view.data.boxes), runs, max_run_boxes)


def image_nav(here: str, view: ImageView, catalogue: Catalogue) -> str:
    links = [f'<a href="{href(here, "index.html")}">index</a>',
             f'<a href="{href(here, grid_page_path(catalogue.page_of(view.position)))}">grid page '
             f"{catalogue.page_of(view.position) + 1:,}</a>"]
    if view.position > 0:
        links.append(f'<a href="{href(here, catalogue.page_path(view.position - 1))}">previous image</a>')
    if view.position + 1 < len(catalogue):
        links.append(f'<a href="{href(here, catalogue.page_path(view.position + 1))}">next image</a>')
    return f"<nav>{' '.join(links)}</nav>"


def image_html(view: ImageView, context: "Context") -> str:
    here = image_page_path(view.shard, view.image_id)
    per_image = context.per_image
    parts = [f"<h1>{esc(view.image_id)}</h1>", image_nav(here, view, context.catalogue),
             f'<div class="figures">{picture_html(here, view)}{facts_html(view)}</div>']
    if per_image.has("text_terms") or per_image.has("image_urls"):
        parts.append(section("Text", text_html(view), "text"))
    if per_image.has("regions"):
        if view.rows(view.data.regions).total:
            parts.append(section("Regions", regions_html(here, view, context.palette, context.source, context.site),
                                 "regions"))
            if per_image.has("spatial_relations"):
                parts.append(section("Spatial relations", relations_table_html(view), "relations"))
        else:
            parts.append(section("Regions", "<p>No regions.</p>", "regions"))
    if per_image.has("ground_truth") or per_image.has("splits"):
        parts.append(section("Ground truth", truth_html(view, per_image), "truth"))
    if per_image.has("boxes") or per_image.box_runs:
        parts.append(section("Boxes", boxes_html(here, view, per_image, max_run_boxes(context.settings)), "boxes"))
    if per_image.runs:
        parts.append(section("Baseline runs", runs_html(view, per_image), "runs"))
    if any(per_image.has(table) for table in CAPTION_TABLES):
        parts.append(section("Descriptions", captions_html(view.data.captions, view.image_id), "captions"))
    return html_page(here, f"{view.image_id}: {context.settings['title']}", "\n".join(parts))


def max_run_boxes(settings: dict) -> int:
    return max(0, int(settings["max_run_boxes"]))


@dataclass
class Context:
    settings: dict
    source: Source
    catalogue: Catalogue
    per_image: PerImage
    palette: Palette
    site: Site
    pages: pa.Table | None


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
