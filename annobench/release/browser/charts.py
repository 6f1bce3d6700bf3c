"""The browser's SVG charts: horizontal bars for frequencies, vertical bars
for histograms and sparklines. This module lays them out (sizes and
positions); templates/charts.html draws them."""

from __future__ import annotations

from dataclasses import dataclass


def short(text: str, length: int = 26) -> str:
    return text if len(text) <= length else text[: length - 1] + "\u2026"


@dataclass(frozen=True)
class Bar:
    """One bar: its label (whole, for the tooltip, and as shown), value and place."""

    label: str
    shown: str
    value: int
    x: int
    y: int
    width: int
    height: int


@dataclass(frozen=True)
class Chart:
    caption: str
    width: int
    height: int
    bars: list[Bar]
    axis_y: int | None = None  # the histogram's axis line
    label_x: int = 0           # the bar chart's labels end here


BAR_LABEL_WIDTH, BAR_WIDTH, BAR_ROW = 180, 380, 16


def bar_chart(items: list[tuple[str, int]], caption: str) -> Chart | None:
    """Horizontal bars, one per (label, count), longest first as given."""
    if not items:
        return None
    top = max(value for _, value in items) or 1
    bars = [Bar(label, short(label), value, BAR_LABEL_WIDTH, 2 + k * BAR_ROW,
                round(BAR_WIDTH * value / top) if value else 0, BAR_ROW - 4)
            for k, (label, value) in enumerate(items)]
    return Chart(caption, BAR_LABEL_WIDTH + BAR_WIDTH + 70, BAR_ROW * len(items) + 4, bars,
                 label_x=BAR_LABEL_WIDTH - 6)


def column_chart(bins: list[tuple[str, int]], caption: str, plot_height: int = 110, labels: bool = True
                 ) -> Chart | None:
    """Vertical bars (a histogram), labelled under the first, the last and a few between
    (or not at all: a sparkline, whose bars still name their bin on hover)."""
    if not bins:
        return None
    column = max(6, min(28, 640 // len(bins))) if labels else 6
    top = max(value for _, value in bins) or 1
    every = max(1, len(bins) // 8)
    bars = []
    for k, (label, value) in enumerate(bins):
        height = round(plot_height * value / top) if value else 0
        labelled = labels and (k % every == 0 or k == len(bins) - 1)
        bars.append(Bar(label, short(label, 10) if labelled else "", value, 4 + k * column,
                        plot_height + 4 - height, column - 1, height))
    return Chart(caption, column * len(bins) + 8, plot_height + (30 if labels else 8), bars,
                 axis_y=plot_height + 4)
