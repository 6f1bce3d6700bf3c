"""The descriptions of an image on its page: its reference descriptions, the captions found in
the pages it appeared in (with the filter's verdict) and each caption run's sentence with its
Meteor against the references. templates/image/captions.html draws them."""

from __future__ import annotations

from annobench.release.browser.source import Rows

MAX_CAPTIONS_SHOWN = 100  # rows of one caption table for one image

# table -> (row order, cap): references in their number order, harvested captions by page and
# kind, runs by name.
CAPTION_TABLES = {
    "captions": ([("reference", "ascending")], MAX_CAPTIONS_SHOWN),
    "page_captions": ([("page_id", "ascending"), ("kind", "ascending"), ("text", "ascending")], MAX_CAPTIONS_SHOWN),
    "caption_scores": ([("run", "ascending")], MAX_CAPTIONS_SHOWN),
}


def captions_section(tables: dict[str, dict[str, Rows]], image_id: str) -> dict[str, Rows]:
    """The image's rows of each caption table (none: no rows)."""
    return {table: tables[table].get(image_id) or Rows([], 0) for table in CAPTION_TABLES}
