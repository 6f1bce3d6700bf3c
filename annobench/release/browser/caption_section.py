"""The descriptions of an image on its page: its reference descriptions, the captions found in
the pages it appeared in (with the filter's verdict) and each caption run's sentence with its
Meteor against the references."""

from __future__ import annotations

from annobench.release.browser.markup import esc, html_table, more_note
from annobench.release.browser.source import Rows

MAX_CAPTIONS_SHOWN = 100  # rows of one caption table for one image

# table -> (row order, cap): references in their number order, harvested captions by page and
# kind, runs by name.
CAPTION_TABLES = {
    "captions": ([("reference", "ascending")], MAX_CAPTIONS_SHOWN),
    "page_captions": ([("page_id", "ascending"), ("kind", "ascending"), ("text", "ascending")], MAX_CAPTIONS_SHOWN),
    "caption_scores": ([("run", "ascending")], MAX_CAPTIONS_SHOWN),
}


def captions_html(tables: dict[str, dict[str, Rows]], image_id: str) -> str:
    def rows_of(table: str) -> Rows:
        return tables[table].get(image_id) or Rows([], 0)

    references, harvested, scores = rows_of("captions"), rows_of("page_captions"), rows_of("caption_scores")
    parts = []
    if references.total:
        parts.append("<h3>References</h3>" + html_table(
            ["#", "description", "source"],
            [[str(r["reference"]), esc(r["text"]), f"<code>{esc(r['source'])}</code>"] for r in references.rows])
            + more_note(len(references.rows), references.total, "references"))
    if harvested.total:
        parts.append("<h3>Captions in its pages</h3>" + html_table(
            ["page id", "kind", "caption", "kept"],
            [[f"<code>{esc(r['page_id'])}</code>", esc(r["kind"]), esc(r["text"]),
              "yes" if r["keep"] else esc(f"no: {r['reason']}")] for r in harvested.rows])
            + more_note(len(harvested.rows), harvested.total, "captions"))
    if scores.total:
        parts.append("<h3>Caption runs</h3>" + html_table(
            ["run", "caption", "Meteor"],
            [[esc(r["run"]), esc(r["caption"]) if r["caption"] is not None else "<em>none</em>",
              f"{r['meteor']:.4f}"] for r in scores.rows])
            + more_note(len(scores.rows), scores.total, "runs"))
    return "\n".join(parts) or "<p>No description of this image.</p>"
