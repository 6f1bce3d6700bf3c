"""Boxes drawn over a stored picture (ImageCLEF 2016 subtask 1, Gilbert et al. 2016; PASCAL VOC
devkit conventions, Everingham et al. 2010): the image's truth boxes and each box run's
best-scored boxes, as inline SVG rectangles over the picture, with a legend and a list.
This module lays the boxes out and words the legend; templates/image/boxes.html draws them.

Inline SVG keeps the site small (a rectangle is some 60 bytes, no extra file)
and sharp at any zoom. Boxes are in pixels of the original image and cover
the pixels xmin..xmax inclusive, so a box spans [xmin, xmax + 1) and is
scaled to the stored picture by resized_width / width (rows likewise).
Whether a source counts pixels from 0 or from 1 (VOC) moves a box by at most
one original pixel, under a stored pixel: the drawing does not ask.

Each run of the build has its own colour, the same on every page: the runs in
name order take the colours of RUN_COLOURS in turn, and the runs past its end
are listed, not drawn. Of each run at most `drawn_run_boxes` boxes are drawn
(its best-scored), so a small picture under many runs stays readable.
"""

from __future__ import annotations

from dataclasses import dataclass

from annobench.benchmark.boxes.model import geometry_text
from annobench.release.browser.source import Rows, run_kind
from annobench.release.browser.templating import DASH, number, plural

TRUTH_COLOUR = "#2ecc40"
# Kelly's twenty-two colours of maximum contrast (Kelly 1965) without white and black, in his
# order: each next colour is the most distinct from those before it, and the first seven are
# told apart with defective colour vision too. A run past the twentieth is not drawn.
RUN_COLOURS = ("#ffb300", "#803e75", "#ff6800", "#a6bdd7", "#c10020", "#cea262", "#817066",
               "#007d34", "#f6768e", "#00538a", "#ff7a5c", "#53377a", "#ff8e00", "#b32851",
               "#f4c800", "#7f180d", "#93aa00", "#593315", "#f13a13", "#232c16")
CVD_SAFE_COLOURS = 7
# Runs are dashed, the truth solid; the runs past the first seven colours have dotted and
# dash-dotted lines, so runs are told apart without colour too.
RUN_DASHES = ("5 3", "2 2", "7 2 2 2")
STROKE_WIDTH = 2             # pixels of the stored picture
LABEL_SIZE = 10              # truth labels' font size, pixels of the stored picture
BOX_LIST_OPEN = 40           # more listed boxes than this start folded
MAX_REASONS_SHOWN = 2        # distinct reasons of rejected truth boxes in the legend


@dataclass(frozen=True)
class Line:
    """How a source's boxes are stroked: a colour, and dashes (empty: solid)."""

    colour: str
    dashes: str = ""


TRUTH_LINE = Line(TRUTH_COLOUR)


@dataclass(frozen=True)
class RunStyle:
    """How a run is shown on every page: its place among the build's box runs, its kind
    ("baseline" or "submitted", source.run_kind) and its line (None: past the palette, listed
    but not drawn)."""

    name: str
    kind: str
    index: int
    line: Line | None


def run_line(index: int) -> Line | None:
    if index >= len(RUN_COLOURS):
        return None
    return Line(RUN_COLOURS[index], RUN_DASHES[min(index // CVD_SAFE_COLOURS, len(RUN_DASHES) - 1)])


def run_styles(names: list[str]) -> list[RunStyle]:
    """The build's box runs, in the order given (name order), each with its own colour."""
    return [RunStyle(name, run_kind(name), k, run_line(k)) for k, name in enumerate(names)]


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


@dataclass(frozen=True)
class Rect:
    """A box on the stored picture, with its tooltip."""

    x: str
    y: str
    width: str
    height: str
    title: str

    @classmethod
    def of(cls, box: dict, scale: Scale, title: str) -> Rect:
        return cls(*(coordinate(v) for v in scale.rect(box)), title)


def truth_labels(boxes: list[dict], scale: Scale) -> list[dict]:
    """Each truth box's concept, written inside its top-left corner."""
    return [{"x": coordinate(b["xmin"] * scale.x + 2), "y": coordinate(b["ymin"] * scale.y + 2),
             "text": b["concept"]} for b in boxes]


def reasons_text(rejects: list[dict]) -> str:
    """The distinct reasons of an image's rejected truth boxes, the first few."""
    reasons = list(dict.fromkeys(r.get("reason") or "no reason given" for r in rejects))
    return "; ".join(reasons[:MAX_REASONS_SHOWN]) + ("; \u2026" if len(reasons) > MAX_REASONS_SHOWN else "")


def truth_legend(truth: Rows, rejects: Rows) -> str:
    """`truth: 2 boxes, 1 rejected (outside the image (384x303))`, and how many are drawn."""
    text = f"truth: {plural(truth.total, 'box', 'boxes')}"
    if rejects.total:
        text += f", {rejects.total:,} rejected ({reasons_text(rejects.rows)})"
    if truth.total > len(truth.rows):
        text += f" (first {len(truth.rows):,} drawn)"
    return text


def run_legend(style: RunStyle, rows: Rows, drawn: int) -> str:
    """How many boxes a run has for the image and how many of them are drawn."""
    if not rows.total:
        return "no boxes for this image"
    if style.line is None:
        return f"{plural(rows.total, 'box', 'boxes')}, listed, not drawn (only the first {len(RUN_COLOURS)} runs " \
               "are drawn)"
    if rows.total <= drawn:
        return plural(rows.total, "box", "boxes")
    return f"{drawn:,} best-scored of {plural(rows.total, 'box', 'boxes')} drawn, {rows.total - drawn:,} more not drawn"


def run_view(style: RunStyle, rows: Rows, scale: Scale, drawn_cap: int) -> dict:
    drawn = rows.rows[:drawn_cap] if style.line else []
    return {"style": style, "legend": run_legend(style, rows, len(drawn)),
            "rects": [Rect.of(b, scale, f"{style.name}: {b['concept']}{score_label(b.get('score'))}") for b in drawn]}


def listed(line: Line | None, source: str, rank: int, box: dict) -> dict:
    """A row of the box list: who gave the box (with its line when drawn), its number, concept,
    score and WxH+X+Y in original pixels."""
    return {"line": line, "source": source, "number": number(rank), "concept": box["concept"],
            "score": number(box.get("score")),
            "geometry": geometry_text(box["xmin"], box["ymin"], box["xmax"], box["ymax"])}


def box_list(truth: Rows, runs: list[tuple[RunStyle, Rows]], drawn_cap: int) -> list[dict]:
    rows = [listed(TRUTH_LINE, "truth", b["instance"], b) for b in truth.rows]
    for style, boxes in runs:
        rows += [listed(style.line if rank <= drawn_cap else None, style.name, rank, b)
                 for rank, b in enumerate(boxes.rows, 1)]
    return rows


def as_read(value) -> str:
    return DASH if value is None else f"{value:g}"


def rejected_rows(rejects: Rows) -> list[list[str]]:
    """The image's rejected truth boxes as read: number, concept, corners and reason."""
    return [[number(r.get("instance")), r.get("concept") or "",
             ", ".join(as_read(r.get(k)) for k in ("xmin", "ymin", "xmax", "ymax")), r.get("reason") or ""]
            for r in rejects.rows]


@dataclass(frozen=True)
class BoxSources:
    """An image's boxes: its truth boxes, its rejected truth boxes and each box run's best boxes."""

    truth: Rows
    rejects: Rows
    runs: list[tuple[RunStyle, Rows]]


def boxes_section(image: dict, image_src: str, boxes: BoxSources, drawn_cap: int) -> dict:
    """The Boxes section of an image page: the picture with its boxes, the legend, the lists."""
    scale = Scale.of(image)
    if scale is None:
        return {"scale": None}
    items = box_list(boxes.truth, boxes.runs, drawn_cap)
    return {"scale": scale, "src": image_src, "width": image["resized_width"], "height": image["resized_height"],
            "truth_line": TRUTH_LINE, "stroke_width": STROKE_WIDTH, "label_size": LABEL_SIZE,
            "truth": [Rect.of(b, scale, f"truth {b['instance']}: {b['concept']}") for b in boxes.truth.rows],
            "labels": truth_labels(boxes.truth.rows, scale), "truth_legend": truth_legend(boxes.truth, boxes.rejects),
            "runs": [run_view(style, rows, scale, drawn_cap) for style, rows in boxes.runs],
            "list": items, "drawn": sum(1 for item in items if item["line"]),
            "list_open": len(items) <= BOX_LIST_OPEN, "rejected": rejected_rows(boxes.rejects),
            "rejected_total": boxes.rejects.total}
