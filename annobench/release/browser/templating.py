"""The browser's markup: Jinja2 templates (the package data in `templates/`) rendered with
automatic escaping, so every value that comes from the build is text on the page, never markup.

Every `{{ value }}` of every template is escaped (autoescape is on for all of them, whatever
their name), a name a template uses but is not given is an error (StrictUndefined), and no
template marks data safe. The Python modules hand the templates data (strings, numbers, rows,
links the site made), never HTML; the only markup the templates insert unescaped is what
other templates rendered (macros and includes). Links are made by `files.href`, which
percent-encodes them, so a value never becomes a link with a scheme (`javascript:`).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import jinja2
import numpy as np

TEMPLATES = Path(__file__).with_name("templates")
DASH = "\u2013"  # what a missing number shows


def number(value, digits: int = 4) -> str:
    """A cell's number: thousands separated, floats with `digits` decimals, a dash when missing."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return DASH
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    return f"{float(value):.{digits}f}"


def count(value: int) -> str:
    return f"{int(value):,}"


def fixed(value: float, digits: int) -> str:
    return f"{float(value):.{digits}f}"


def plural(value: int, one: str, many: str | None = None) -> str:
    """`1 box`, `3 boxes`: the count and the word that goes with it."""
    return f"{count(value)} {one if value == 1 else (many or one + 's')}"


class RowsEnvironment(jinja2.Environment):
    """Templates read the build's rows, dicts, by their columns (`row.concept`): looked up as keys
    first, without the failed attribute lookup Jinja tries before."""

    def getattr(self, obj, attribute):
        if type(obj) is dict and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    environment = RowsEnvironment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    environment.filters.update(number=number, count=count, fixed=fixed, plural=plural)
    return environment


def render(template: str, **context) -> str:
    """A template of templates/ filled with `context` (escaped)."""
    return environment().get_template(template).render(**context)


def templates_digest() -> str:
    """A hash of every template file: a param of the rules that render them, so a changed
    template reruns them (a rule's code fingerprint covers Python modules, not package data)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in TEMPLATES.rglob("*") if p.is_file()):
        digest.update(path.relative_to(TEMPLATES).as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def template_names() -> list[str]:
    """Every template the browser has (tests render or check each)."""
    return sorted(environment().list_templates())
