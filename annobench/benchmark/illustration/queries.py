"""Query documents of the text-illustration task (Gilbert et al. 2016, sections 2.4 and 3.5).

The 2016 organisers made each query from the web page of a test image: the
text BeautifulSoup's `get_text()` gives after `script` and `style` elements
are removed with their content. That is reproduced here with the lxml
parser, on the page decoded as `sources.pages` decodes it (same size cap,
same time limit). `get_text()` joins adjacent strings without a separator
(`<b>Hello</b><i>World</i>` gives "HelloWorld"), as it did for the
organisers; comments are not text. Runs of whitespace are collapsed to one
space, which changes no word.

One query per (page, image) pair of a page mapping, with that image as its
one ground-truth image: a page showing n images gives n queries with the
same text. The query id is `PAGE#IMAGE`, both parts percent-escaped
(`urllib.parse.quote`, keeping `/_.-~`), so ids are stable, reversible and
never contain a comma, a quote, a `#` of their own or whitespace.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq
from bs4 import BeautifulSoup

from annobench.core.tables import field, rows_to_table, write_table
from annobench.sources.pages import PageLimits, PageRejected, decode_page, time_limit

QUERIES_TABLE = Path("tables/queries/all.parquet")
SAFE_IN_IDS = "/_.-~"
REMOVED = ("script", "style")  # what the organisers removed before get_text()

QUERIES_SCHEMA = pa.schema([
    field("query_id", pa.string(), "PAGE#IMAGE, each part percent-escaped"),
    field("page_id", pa.string(), "the page the text comes from (path under the pages folder)"),
    field("image_id", pa.string(), "the query's one ground-truth image"),
    field("text", pa.string(), "the page's get_text() without scripts and styles, whitespace collapsed"),
])


QUERY_REJECTS_SCHEMA = pa.schema([
    field("page_id", pa.string(), "the page"),
    field("image_id", pa.string(), "an image it shows"),
    field("reason", pa.string(), "why the pair gave no query"),
])


@dataclass(frozen=True)
class Query:
    query_id: str
    page_id: str
    image_id: str
    text: str


@dataclass
class QuerySet:
    queries: list[Query]  # sorted by query id
    rejects: list[tuple[str, str, str]]  # page_id, image_id, why no query was made

    def table(self) -> pa.Table:
        rows = [{"query_id": q.query_id, "page_id": q.page_id, "image_id": q.image_id, "text": q.text}
                for q in self.queries]
        return rows_to_table(rows, QUERIES_SCHEMA)

    def rejects_table(self) -> pa.Table:
        rows = [{"page_id": p, "image_id": i, "reason": r} for p, i, r in self.rejects]
        return rows_to_table(rows, QUERY_REJECTS_SCHEMA)

    def truth(self) -> dict[str, str]:
        """query_id -> its ground-truth image."""
        return {q.query_id: q.image_id for q in self.queries}

    @classmethod
    def pooled(cls, query_tables: list[str], reject_tables: list[str]) -> "QuerySet":
        """The queries and rejects of several tables (blocks of pages) in make_queries' order:
        queries by id, rejects by (page, image)."""
        queries = [Query(**row) for path in query_tables for row in pq.read_table(path).to_pylist()]
        rejects = [(row["page_id"], row["image_id"], row["reason"])
                   for path in reject_tables for row in pq.read_table(path).to_pylist()]
        return cls(sorted(queries, key=lambda q: q.query_id), sorted(rejects, key=lambda r: r[:2]))


def query_id(page_id: str, image_id: str) -> str:
    return f"{quote(page_id, safe=SAFE_IN_IDS)}#{quote(image_id, safe=SAFE_IN_IDS)}"


def page_text(path: Path, limits: PageLimits = PageLimits()) -> str:
    """The query document of a saved page; PageRejected if it is too large, unreadable or slow."""
    try:
        size = path.stat().st_size
    except OSError as error:
        raise PageRejected(f"unreadable page: {error.strerror or error}") from None
    if size > limits.max_bytes:
        raise PageRejected(f"page too large: {size} bytes > {limits.max_bytes}")
    return text_of_html(path.read_bytes(), limits)


def text_of_html(data: bytes, limits: PageLimits = PageLimits()) -> str:
    if not data.strip():
        raise PageRejected("empty page")
    markup, _ = decode_page(data)
    with time_limit(limits.timeout_seconds):
        soup = BeautifulSoup(markup, "lxml")
        for element in soup(list(REMOVED)):
            element.decompose()
        return " ".join(soup.get_text().split())


def make_queries(mapping: Iterable[tuple[str, str, str]], pages_dir: Path | str,
                 limits: PageLimits = PageLimits()) -> QuerySet:
    """One query per distinct (page, image) pair of the mapping rows (image_id, page_id, img_src).

    Each page is read once; a page that cannot be read, or has no text, gives
    no query and one reject per image on it."""
    images_by_page: dict[str, set[str]] = defaultdict(set)
    for image_id, page_id, _img_src in mapping:
        images_by_page[page_id].add(image_id)
    queries, rejects = [], []
    for page_id in sorted(images_by_page):
        try:
            text = page_text(Path(pages_dir) / page_id, limits)
            reason = "" if text else "the page has no text"
        except PageRejected as error:
            text, reason = "", f"page unusable: {error}"
        for image_id in sorted(images_by_page[page_id]):
            if reason:
                rejects.append((page_id, image_id, reason))
            else:
                queries.append(Query(query_id(page_id, image_id), page_id, image_id, text))
    queries.sort(key=lambda q: q.query_id)
    return QuerySet(queries, rejects)


def write_queries(queries: QuerySet, out_dir: Path | str, params: dict) -> Path:
    path = Path(out_dir) / QUERIES_TABLE
    write_table(queries.table(), path, "queries", params=params)
    return path
