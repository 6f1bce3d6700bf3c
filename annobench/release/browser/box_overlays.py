"""Boxes drawn over a stored picture (ImageCLEF 2016 subtask 1, Gilbert et al. 2016; PASCAL VOC
devkit conventions, Everingham et al. 2010): the image's truth boxes and each box run's
best-scored boxes, as inline SVG rectangles over the `<img>`, with a legend and a list.

Inline SVG keeps the site small (a rectangle is some 60 bytes, no extra file)
and sharp at any zoom. Boxes are in pixels of the original image and cover
the pixels xmin..xmax inclusive, so a box spans [xmin, xmax + 1) and is
scaled to the stored picture by resized_width / width (rows likewise).
Whether a source counts pixels from 0 or from 1 (VOC) moves a box by at most
one original pixel, under a stored pixel: the drawing does not ask.
"""

from __future__ import annotations

from dataclasses import dataclass

from annobench.benchmark.boxes.model import geometry_text
from annobench.release.browser.markup import esc, html_table, more_note, number
from annobench.release.browser.source import Rows

TRUTH_COLOUR = "#2ecc40"
# Run colours: far from the truth's green and from each other; a ninth run repeats the first.
RUN_COLOURS = ("#ff4136", "#0074d9", "#ff851b", "#b10dc9", "#39cccc", "#f012be", "#ffdc00", "#85144b")
RUN_DASHES = "5 3"           # runs dashed, truth solid: told apart without colour too
STROKE_WIDTH = 2             # pixels of the stored picture
LABEL_SIZE = 10              # truth labels' font size, pixels of the stored picture
BOX_LIST_OPEN = 40           # more listed boxes than this start folded


@dataclass(frozen=True)
class Scale:
    """From the original image's pixels to the stored picture's."""

    x: float
    y: float

    @classmethod
    def of(cls, image: dict) -> Scale | None:
        """The scale of an `images` row; None when a size is missing."""
        sizes = [image.get(key) for key in ("width", "height", "resized_width", "resized_height")]
        if not all(sizes):
            return None
        width, height, resized_width, resized_height = sizes
        return cls(resized_width / width, resized_height / height)

    def rect(self, box: dict) -> tuple[float, float, float, float]:
        """x, y, width, height on the stored picture of the box's pixels (the +1 convention)."""
        left, top = box["xmin"] * self.x, box["ymin"] * self.y
        return left, top, (box["xmax"] + 1) * self.x - left, (box["ymax"] + 1) * self.y - top


def coordinate(value: float) -> str:
    """Two decimals (a hundredth of a stored pixel), trailing zeros dropped: short and exact enough."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def score_label(score) -> str:
    return "" if score is None else f" {score:.3f}"


def rect_svg(box: dict, scale: Scale, title: str) -> str:
    x, y, width, height = (coordinate(v) for v in scale.rect(box))
    return f'<rect x="{x}" y="{y}" width="{width}" height="{height}"><title>{esc(title)}</title></rect>'


def truth_svg(boxes: list[dict], scale: Scale) -> str:
    """Solid rectangles, each with its concept written inside its top-left corner."""
    rects = "".join(rect_svg(b, scale, f"truth {b['instance']}: {b['concept']}") for b in boxes)
    labels = "".join(f'<text x="{coordinate(b["xmin"] * scale.x + 2)}" y="{coordinate(b["ymin"] * scale.y + 2)}">'
                     f'{esc(b["concept"])}</text>' for b in boxes)
    return (f'<g class="box-truth" stroke="{TRUTH_COLOUR}">{rects}</g>'
            f'<g fill="{TRUTH_COLOUR}" stroke="#000" stroke-width="2" paint-order="stroke" '
            f'font-size="{LABEL_SIZE}" font-family="sans-serif" dominant-baseline="hanging">{labels}</g>')


def run_svg(name: str, boxes: list[dict], scale: Scale, colour: str) -> str:
    rects = "".join(rect_svg(b, scale, f"{name}: {b['concept']}{score_label(b.get('score'))}") for b in boxes)
    return f'<g class="box-run" stroke="{colour}" stroke-dasharray="{RUN_DASHES}">{rects}</g>'


def run_colour(index: int) -> str:
    return RUN_COLOURS[index % len(RUN_COLOURS)]


def picture_svg(image: dict, image_src: str, scale: Scale, truth: list[dict], runs: list[tuple[str, Rows]]) -> str:
    """The stored picture with the boxes over it (the boxes hide while the pointer is on it)."""
    width, height = image["resized_width"], image["resized_height"]
    groups = truth_svg(truth, scale) + "".join(run_svg(name, rows.rows, scale, run_colour(k))
                                               for k, (name, rows) in enumerate(runs))
    size = f'width="{width}" height="{height}"'
    return (f'<div class="stack" style="width:{width}px;height:{height}px">'
            f'<img src="{image_src}" {size} alt="">'
            f'<svg class="overlay boxes" {size} viewBox="0 0 {width} {height}" '
            f'style="position:absolute;left:0;top:0" fill="none" stroke-width="{STROKE_WIDTH}" '
            f'role="img" aria-label="boxes">{groups}</svg></div>')


def swatch(colour: str, dashed: bool) -> str:
    style = "dashed" if dashed else "solid"
    return f'<span class="sw" style="border:2px {style} {colour};background:none"></span>'


def boxes_count(count: int) -> str:
    return f"{count:,} box" if count == 1 else f"{count:,} boxes"


def legend_html(truth: Rows, runs: list[tuple[str, Rows]], max_run_boxes: int) -> str:
    items = [f"<li>{swatch(TRUTH_COLOUR, False)} truth: {boxes_count(truth.total)}"
             + (f" (first {len(truth.rows):,} drawn)" if truth.total > len(truth.rows) else "") + "</li>"]
    for k, (name, rows) in enumerate(runs):
        drawn = (boxes_count(rows.total) if rows.total <= len(rows.rows)
                 else f"{len(rows.rows):,} best-scored of {boxes_count(rows.total)} drawn (cap {max_run_boxes:,})")
        items.append(f"<li>{swatch(run_colour(k), True)} run <strong>{esc(name)}</strong>: "
                     f"{drawn if rows.total else 'no boxes for this image'}</li>")
    return f'<ul class="legend">{"".join(items)}</ul>'


def box_list_html(truth: Rows, runs: list[tuple[str, Rows]]) -> str:
    """Every drawn box in words: who gave it, its concept, score and WxH+X+Y in original pixels."""
    rows = [[swatch(TRUTH_COLOUR, False), "truth", number(b["instance"]), esc(b["concept"]), "&ndash;",
             f"<code>{geometry_text(b['xmin'], b['ymin'], b['xmax'], b['ymax'])}</code>"] for b in truth.rows]
    for k, (name, boxes) in enumerate(runs):
        rows += [[swatch(run_colour(k), True), esc(name), number(rank), esc(b["concept"]), number(b.get("score")),
                  f"<code>{geometry_text(b['xmin'], b['ymin'], b['xmax'], b['ymax'])}</code>"]
                 for rank, b in enumerate(boxes.rows, 1)]
    if not rows:
        return ""
    opened = " open" if len(rows) <= BOX_LIST_OPEN else ""
    return (f"<details{opened}><summary>{boxes_count(len(rows))} drawn</summary>"
            + html_table(["", "from", "#", "concept", "score", "box (original pixels)"], rows) + "</details>")


def boxes_section_html(image: dict, image_src: str, truth: Rows, runs: list[tuple[str, Rows]],
                       max_run_boxes: int) -> str:
    """The Boxes section of an image page: the picture with its boxes, the legend, the list."""
    scale = Scale.of(image)
    if scale is None:
        return '<p class="note">The original size of this image is unknown: its boxes cannot be scaled.</p>'
    figure = (f"<figure>{picture_svg(image, image_src, scale, truth.rows, runs)}"
              "<figcaption>boxes over the stored picture (hover to hide)</figcaption></figure>")
    notes = more_note(len(truth.rows), truth.total, "truth boxes")
    return (f'<div class="figures">{figure}<div>{legend_html(truth, runs, max_run_boxes)}{notes}'
            f"{box_list_html(truth, runs)}</div></div>")
