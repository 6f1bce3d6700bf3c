"""The results' figures: one SVG per measure, each run's value with its 95 % interval, runs in the
table's order, as Figure 2 of the 2014 overview (Villegas and Paredes 2014, section 3.3).

Written with xml.etree.ElementTree, which escapes every text and attribute (run names are the
participants'), never by pasting data into markup; numbers are written with fixed decimals, so the
same results give the same bytes.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

SVG = "http://www.w3.org/2000/svg"
ROW = 18  # pixels a run
LABEL = 220  # the run names' column
PLOT = 420  # the axis' length: 0 to 100 %
TOP, BOTTOM, RIGHT = 40, 36, 20
COLOURS = {"baseline": "#666666", "submission": "#1f5fa8", "bound": "#a0522d"}


def _number(value: float) -> str:
    return f"{value:.2f}"


def interval_figure(title: str, rows: list[dict]) -> bytes:
    """rows: {"run", "origin", "value", "ci_low", "ci_high"} in the order drawn (top to bottom); a
    value or interval that is None is left out of the drawing (its row says "n/a")."""
    height = TOP + ROW * max(1, len(rows)) + BOTTOM
    width = LABEL + PLOT + RIGHT
    svg = ET.Element("svg", {"xmlns": SVG, "width": str(width), "height": str(height),
                             "viewBox": f"0 0 {width} {height}", "font-family": "sans-serif", "font-size": "11"})
    ET.SubElement(svg, "title").text = title
    ET.SubElement(svg, "text", {"x": str(LABEL), "y": "16", "font-size": "13"}).text = title

    def x(fraction: float) -> str:
        return _number(LABEL + PLOT * min(1.0, max(0.0, fraction)))

    axis_y = TOP + ROW * max(1, len(rows))
    for tick in range(0, 101, 20):
        ET.SubElement(svg, "line", {"x1": x(tick / 100), "x2": x(tick / 100), "y1": str(TOP - 6), "y2": str(axis_y),
                                    "stroke": "#dddddd"})
        ET.SubElement(svg, "text", {"x": x(tick / 100), "y": str(axis_y + 14), "text-anchor": "middle"}).text = \
            f"{tick} %"
    for k, row in enumerate(rows):
        y = TOP + ROW * k + ROW / 2
        colour = COLOURS.get(row.get("origin"), "#000000")
        group = ET.SubElement(svg, "g", {"fill": colour, "stroke": colour})
        label = row["run"] if _finite(row.get("value")) else f"{row['run']} (n/a)"
        ET.SubElement(group, "text", {"x": str(LABEL - 8), "y": _number(y + 4), "text-anchor": "end",
                                      "stroke": "none"}).text = label
        value, low, high = row.get("value"), row.get("ci_low"), row.get("ci_high")
        if _finite(low) and _finite(high):
            ET.SubElement(group, "line", {"x1": x(low), "x2": x(high), "y1": _number(y), "y2": _number(y)})
            for end in (low, high):
                ET.SubElement(group, "line", {"x1": x(end), "x2": x(end), "y1": _number(y - 4), "y2": _number(y + 4)})
        if _finite(value):
            circle = ET.SubElement(group, "circle", {"cx": x(value), "cy": _number(y), "r": "3"})
            interval = f" [{100 * low:.2f}, {100 * high:.2f}]" if _finite(low) and _finite(high) else ""
            ET.SubElement(circle, "title").text = f"{row['run']}: {100 * value:.2f} %{interval}"
    ET.SubElement(svg, "text", {"x": str(LABEL), "y": str(height - 6), "fill": "#555555"}).text = \
        "dots: values; bars: 95 % intervals (Wilson, with the individual values' spread)"
    ET.indent(svg, space=" ")
    return ET.tostring(svg, encoding="utf-8", xml_declaration=True) + b"\n"


def _finite(value) -> bool:
    return value is not None and isinstance(value, (int, float)) and math.isfinite(value)
