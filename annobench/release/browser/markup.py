"""The browser's HTML: escaping, the page template, tables, sections,
number formats and the site's stylesheet."""

from __future__ import annotations

import functools
import html

import numpy as np

from annobench.release.browser.files import href


def esc(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


@functools.lru_cache(maxsize=4096)
def esc_word(value) -> str:
    """esc for the few values a categorical column repeats (relation names, splits)."""
    return esc(value)


def html_page(site_path: str, title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{esc(title)}</title>\n"
        f"<link rel=\"stylesheet\" href=\"{href(site_path, 'style.css')}\">\n"
        f"</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def html_table(headers: list[str], rows: list[list[str]], classes: str = "") -> str:
    """A table whose cells are already HTML (escape data before)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    css = f' class="{classes}"' if classes else ""
    return f"<table{css}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def section(title: str, body: str, anchor: str = "") -> str:
    ident = f' id="{anchor}"' if anchor else ""
    return f"<section{ident}>\n<h2>{esc(title)}</h2>\n{body}\n</section>"


def more_note(shown: int, total: int, what: str) -> str:
    return f'<p class="note">Showing {shown:,} of {total:,} {esc(what)}.</p>' if total > shown else ""


def number(value, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "&ndash;"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    return f"{float(value):.{digits}f}"


STYLE = """\
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;padding:0 16px 40px;max-width:1200px;color:#1d1d1f}
h1{font-size:22px;margin:16px 0 8px}h2{font-size:17px;margin:24px 0 8px;border-bottom:1px solid #ddd}
nav{margin:8px 0;display:flex;flex-wrap:wrap;gap:4px 12px}
table{border-collapse:collapse;margin:4px 0 8px}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}table.numbers td:not(:first-child){text-align:right}
.note{color:#666;font-size:12px}code{font-size:12px;word-break:break-all}
.grid{display:flex;flex-wrap:wrap;gap:8px}
.thumb{display:flex;flex-direction:column;align-items:center;width:168px;text-decoration:none;color:#1d1d1f;
font-size:11px}
.thumb img{border:1px solid #ccc;background:#eee}
.thumb span{max-width:164px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.figures{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
figure{margin:0}figcaption{font-size:12px;color:#444}
.stack{position:relative}.stack img{position:absolute;left:0;top:0}
.stack:hover .overlay{opacity:0}
.sw{display:inline-block;width:12px;height:12px;border:1px solid #555;vertical-align:middle}
.hit{color:#0a6b0a;font-weight:600}.miss{color:#a11}.tag{display:inline-block;margin:1px 6px 1px 0}
svg.chart text{font:11px system-ui,sans-serif;fill:#222}svg.chart rect{fill:#4a78b0}
svg.chart rect.axis{fill:#999}
dl.counts{display:grid;grid-template-columns:max-content max-content;gap:2px 16px}
dl.counts dd{margin:0;text-align:right}
"""
