"""What the sections of an image page show: its facts, text terms and the pages they came
from, the search queries that found it, regions drawn over it, spatial relations, ground truth and split, and what each run
(baseline or submitted) predicted. Each function gives a section's data (text, numbers, links the site made);
templates/image/*.html draw them."""

from __future__ import annotations

from dataclasses import dataclass

from annobench.core.layout import shard_name
from annobench.release.browser.files import Site, href, overlay_path, stored_image_href
from annobench.release.browser.overlays import Palette, hex_colour, overlay_png, read_label_map
from annobench.release.browser.source import PerImage, Rows, Source, run_kind
from annobench.release.browser.templating import number

# Caps on what one page lists, so no HTML file grows with the collection.
MAX_RELATIONS_SHOWN = 1000   # spatial relation rows of one image
RELATIONS_OPEN = 40          # more relation rows than this start folded
MAX_REGIONS_SHOWN = 500      # legend rows of one segmentation
MAX_DECIDED_SHOWN = 60       # predicted concepts of one run for one image
NO_LABEL = "\u2014"
TIMES = "\u00d7"


@dataclass(frozen=True)
class Fact:
    name: str
    text: str
    code: bool = False  # shown as code (paths, digests)


def facts(view) -> list[Fact]:
    """The image's row of `images` (and its duplicates) as named facts."""
    row = view.row
    found = [Fact("image id", row["image_id"]), Fact("shard", number(view.shard)),
             Fact("original size", f"{number(row.get('width'))} {TIMES} {number(row.get('height'))}"),
             Fact("stored size", f"{number(row.get('resized_width'))} {TIMES} {number(row.get('resized_height'))}")]
    for key in ("source_path", "format", "mode", "conversion", "file_size", "sha256"):
        value = row.get(key)
        if value not in (None, ""):
            found.append(Fact(key.replace("_", " "), value if isinstance(value, str) else number(value),
                              isinstance(value, str)))
    for duplicate in view.rows(view.data.duplicates).rows:
        found.append(Fact("byte-identical", f"group of {number(duplicate.get('group_size'))}, first id "
                                            f"{duplicate.get('duplicate_of') or ''}"))
    return found


def picture(here: str, view) -> dict:
    row = view.row
    return {"src": stored_image_href(here, row["resized_path"] or ""), "width": row["resized_width"],
            "height": row["resized_height"], "alt": row["image_id"]}


# ---------------------------------------------------------------- text

def text_section(view) -> dict:
    """Text terms, the pages the image came from (with their titles and status) and text rejects."""
    urls = view.rows(view.data.urls)
    pages = []
    for url in urls.rows:
        page = view.data.pages.get(url["page_id"], {})
        pages.append({"title": page.get("title") or "", "page_id": url["page_id"], "url": url.get("url") or "",
                      "img_src": url.get("img_src") or "", "occurrences": number(url.get("occurrences")),
                      "status": page.get("status") or ""})
    return {"terms": view.rows(view.data.terms), "pages": pages, "pages_total": urls.total,
            "rejects": view.rows(view.data.text_rejects).rows}


def search_section(view) -> dict:
    """The queries that found the image (search_keywords), best rank first, with engine and rank."""
    searches = view.rows(view.data.searches)
    return {"rows": [{"query": row["query"], "engine": row["engine"], "rank": number(row["rank"])}
                     for row in searches.rows], "total": searches.total}


# ---------------------------------------------------------------- regions

def region_key(row: dict) -> tuple[int, int]:
    return int(row.get("annotator") or 0), int(row["region_id"])


@dataclass
class Segmentations:
    """What the regions section needs besides the image: the palette, the label maps, the site."""

    palette: Palette
    source: Source
    site: Site


def segmentation_figure(here: str, view, annotator: int, colours: dict, parts: Segmentations) -> dict | None:
    """The overlay PNG of one annotator's label map, written to the site; None without a label map."""
    row = view.row
    label_map = read_label_map(parts.source.root / "segmentations" / shard_name(view.shard)
                               / f"annotator-{annotator}" / f"{row['image_id']}.png")
    if label_map is None or not row.get("resized_width") or not row.get("resized_height"):
        return None
    path = overlay_path(view.shard, annotator, row["image_id"])
    parts.site.write(path, overlay_png(label_map, row["resized_width"], row["resized_height"], colours))
    return {"src": stored_image_href(here, row["resized_path"]), "overlay": href(here, path),
            "width": row["resized_width"], "height": row["resized_height"]}


def segmentation(here: str, view, annotator: int, regions: list[dict], parts: Segmentations) -> dict:
    colours = {int(r["region_id"]): parts.palette.colour(r.get("label"), r["region_id"]) for r in regions}
    legend = [{"colour": hex_colour(colours[int(r["region_id"])]), "region": number(r["region_id"]),
               "label": r.get("label") or NO_LABEL, "path": " / ".join(r.get("label_path") or [])}
              for r in regions[:MAX_REGIONS_SHOWN]]
    return {"annotator": annotator, "regions": len(regions), "legend": legend,
            "paths": any(r.get("label_path") for r in regions),
            "figure": segmentation_figure(here, view, annotator, colours, parts)}


def regions_section(here: str, view, parts: Segmentations) -> dict:
    """One figure and legend per annotator's segmentation, and the segmentation rejects."""
    by_annotator: dict[int, list[dict]] = {}
    for region in view.rows(view.data.regions).rows:
        by_annotator.setdefault(region_key(region)[0], []).append(region)
    rejects = [[number(r.get("annotator")), number(r.get("region_id")), r.get("reason") or ""]
               for r in view.rows(view.data.segmentation_rejects).rows]
    return {"segmentations": [segmentation(here, view, annotator, rows, parts)
                              for annotator, rows in sorted(by_annotator.items())], "rejects": rejects}


def relations_section(view) -> dict:
    """The ordered pairs of regions with their relations, each region named by number and label."""
    names = {region_key(r): f"{region_key(r)[1]} \u00b7 {r.get('label') or NO_LABEL}"
             for r in view.rows(view.data.regions).rows}
    relations = view.rows(view.data.relations)
    multiple = len({int(r.get("annotator") or 0) for r in relations.rows}) > 1
    rows = []
    for r in relations.rows:
        annotator = int(r.get("annotator") or 0)
        cells = [names.get((annotator, int(r[end])), f"{int(r[end])} \u00b7 ?") for end in ("region_i", "region_j")]
        cells += [r.get(k) or "" for k in ("topology", "horizontal", "vertical")]
        rows.append(([number(annotator)] if multiple else []) + cells)
    headers = (["annotator"] if multiple else []) + ["region i", "region j", "topology", "horizontal", "vertical"]
    return {"headers": headers, "rows": rows, "total": relations.total, "open": relations.total <= RELATIONS_OPEN}


# ---------------------------------------------------------------- ground truth and runs

def truth_section(view, per_image: PerImage) -> dict:
    truth = view.rows(view.data.truth)
    split = view.rows(view.data.splits).rows
    concepts = [{"concept": t["concept"], "agreement": t.get("agreement"), "derived": bool(t.get("derived"))}
                for t in truth.rows]
    return {"split": split[0]["split"] if split else None, "concepts": concepts, "total": truth.total,
            "none": not truth.total and per_image.has("ground_truth")}


def run_row(name: str, predicted: Rows, truth: set[str]) -> dict:
    """One run's decisions for the image: each marked correct or not, and the truth it missed."""
    shown = predicted.rows[:MAX_DECIDED_SHOWN]
    missed = sorted(truth - {p["concept"] for p in predicted.rows})
    return {"name": name, "kind": run_kind(name), "hits": sum(p["concept"] in truth for p in predicted.rows), "total": predicted.total,
            "predictions": [{"concept": p["concept"], "score": p["score"], "correct": p["concept"] in truth}
                            for p in shown],
            "missed": ", ".join(missed[:MAX_DECIDED_SHOWN])}


def runs_section(view, per_image: PerImage) -> list[dict]:
    """The runs that decided concepts for the image, in the build's run order."""
    truth = {t["concept"] for t in view.rows(view.data.truth).rows}
    rows = []
    for name in per_image.runs:
        predicted = view.data.runs[name].get(view.image_id)
        if predicted is not None:
            rows.append(run_row(name, predicted, truth))
    return rows
