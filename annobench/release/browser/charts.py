"""The browser's SVG charts: horizontal bars for frequencies, vertical bars
for histograms and sparklines."""

from __future__ import annotations

from annobench.release.browser.markup import esc


def short(text: str, length: int = 26) -> str:
    return text if len(text) <= length else text[: length - 1] + "\u2026"


def bar_chart(items: list[tuple[str, int]], caption: str) -> str:
    """Horizontal bars, one per (label, count), longest first as given."""
    if not items:
        return ""
    label_width, bar_width, row = 180, 380, 16
    width, height = label_width + bar_width + 70, row * len(items) + 4
    top = max(value for _, value in items) or 1
    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(caption)}">']
    for k, (label, value) in enumerate(items):
        y = 2 + k * row
        length = round(bar_width * value / top) if value else 0
        parts.append(f'<text x="{label_width - 6}" y="{y + 12}" text-anchor="end">{esc(short(label))}</text>'
                     f'<rect x="{label_width}" y="{y + 2}" width="{length}" height="{row - 4}">'
                     f'<title>{esc(label)}: {value:,}</title></rect>'
                     f'<text x="{label_width + length + 4}" y="{y + 12}">{value:,}</text>')
    parts.append("</svg>")
    return "".join(parts)


def column_chart(bins: list[tuple[str, int]], caption: str, plot_height: int = 110, labels: bool = True) -> str:
    """Vertical bars (a histogram), labelled under the first, the last and a few between
    (or not at all: a sparkline, whose bars still name their bin on hover)."""
    if not bins:
        return ""
    column = max(6, min(28, 640 // len(bins))) if labels else 6
    width, height = column * len(bins) + 8, plot_height + (30 if labels else 8)
    top = max(value for _, value in bins) or 1
    every = max(1, len(bins) // 8)
    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(caption)}">',
             f'<rect class="axis" x="0" y="{plot_height + 4}" width="{width}" height="1"></rect>']
    for k, (label, value) in enumerate(bins):
        x, bar = 4 + k * column, round(plot_height * value / top) if value else 0
        parts.append(f'<rect x="{x}" y="{plot_height + 4 - bar}" width="{column - 1}" height="{bar}">'
                     f'<title>{esc(label)}: {value:,}</title></rect>')
        if labels and (k % every == 0 or k == len(bins) - 1):
            parts.append(f'<text x="{x}" y="{plot_height + 18}">{esc(short(label, 10))}</text>')
    parts.append("</svg>")
    return "".join(parts)
