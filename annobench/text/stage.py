"""Text features for the workflow: the page mapping, one image shard's pages, the tables.

The mapping (image_id, page_id, img_src[, page_url]) says where each image
appeared; page_id is the page file's path under the pages folder, or for
pages read from web archives (input.warc) the page's address. Work is
split by image shard (the shard of the image_id, as for every other table),
so a page is parsed by each shard that has an image on it; its cleaned copy
and its `pages` row are written once, by its owner: the shard of the
smallest image_id on it, which also writes the page's caption texts. The
`page_captions` table needs counts over every page (text.captions), so the
shards write candidate rows under work/ and one job (page_captions_job)
writes the table of every shard.
"""

from __future__ import annotations

import csv
import hashlib
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from annobench.core import layout
from annobench.core.fingerprint import file_state
from annobench.core.jobs import Job
from annobench.core.progress import Progress
from annobench.core.tables import field as column
from annobench.core.tables import rows_to_table, write_table
from annobench.sources.ids import shard_of
from annobench.sources.inventory import InventoryError
from annobench.sources.page_images import page_base
from annobench.sources.pages import Page, PageLimits, PageRejected, read_page
from annobench.sources.page_images import candidate_urls
from annobench.text.captions import (
    KINDS,
    CaptionFilter,
    caption_row,
    filter_row,
    image_file,
    links_to_section,
    occurrence_captions,
    page_text_counts,
    page_texts,
    shown_form,
)
from annobench.text.features import (
    ImageAddresses,
    TextParams,
    not_found_reason,
    occurrence_scores,
    page_words,
    top_terms,
)

# What a text shard writes under tables/ and under work/; page_captions is written from every shard's work files.
SHARD_TABLES = ("text_terms", "image_urls", "pages", "pages_xml", "text_rejects")
CAPTION_WORK = ("caption_candidates", "caption_texts")
TEXT_TABLES = (*SHARD_TABLES, "page_captions")

# The measures of a caption that one page and the images table give.
CANDIDATE_COLUMNS = [
    column("image_id", pa.string(), "key of the image"),
    column("page_id", pa.string(), "the page that gives the caption"),
    column("kind", pa.string(), "alt | title | caption (figcaption, table caption, caption class) | filename"),
    column("text", pa.string(), "the caption, whitespace collapsed"),
    column("words", pa.int32(), "tokens that are words (letters only, edge punctuation stripped)"),
    column("word_share", pa.float32(), "words / tokens"),
    column("boilerplate", pa.bool_(), "only placeholder words, or a furniture word or a file name among them"),
    column("same_on_page", pa.int32(), "<img> elements of the page with this same text of this kind"),
    column("width", pa.int32(), "the image's width in pixels (images table)", nullable=True),
    column("height", pa.int32(), "the image's height in pixels (images table)", nullable=True),
    column("drawing", pa.bool_(), "the file is a vector drawing (SVG), maybe served rendered (x.svg.png)"),
    column("furniture_file", pa.bool_(), "a word of the file name says page furniture (logo, icon, btn, nav, ...)"),
    column("generated_file", pa.bool_(), "the file name is a content-management system's (rendition words, size marks, codes)"),
    column("headline", pa.bool_(), "alt or title text that the page also shows as a link or heading"),
    column("teaser", pa.bool_(), "caption element that holds a heading (a story's teaser block)"),
    column("section_link", pa.bool_(), "the image links to a site's home or a top-level section"),
]

SCHEMAS = {
    "text_terms": pa.schema([
        column("image_id", pa.string(), "key of the image"),
        column("term", pa.string(), "a term near the image"),
        column("score", pa.float32(), "normalised weight: an image's scores sum to 1 over all its terms"),
        column("rank", pa.int16(), "1 = the term with the highest score"),
    ]),
    "image_urls": pa.schema([
        column("image_id", pa.string(), "key of the image"),
        column("page_id", pa.string(), "page the image appeared in (path under the pages folder)"),
        column("img_src", pa.string(), "the src exactly as written in the page"),
        column("url", pa.string(), "img_src resolved against the page's address", nullable=True),
        column("occurrences", pa.int32(), "<img> elements of the page showing it"),
    ]),
    "pages": pa.schema([
        column("page_id", pa.string(), "path of the page under the pages folder"),
        column("encoding", pa.string(), "character encoding the page was read with", nullable=True),
        column("title", pa.string(), "text of the page's <title>", nullable=True),
        column("status", pa.string(), "ok, or why the page could not be used"),
    ]),
    "pages_xml": pa.schema([
        column("page_id", pa.string(), "path of the page under the pages folder"),
        column("xml", pa.string(), "the page as well-formed XML, without scripts, styles and comments"),
    ]),
    "text_rejects": pa.schema([
        column("image_id", pa.string(), "key of the image"),
        column("page_id", pa.string(), "the page concerned"),
        column("reason", pa.string(), "why the image has no text from this page"),
    ]),
    "page_captions": pa.schema([
        *CANDIDATE_COLUMNS,
        column("text_pages", pa.int32(), "pages of the collection with an <img> carrying this text as this kind"),
        column("text_images", pa.int32(), "image files of the collection carrying this text as this kind"),
        column("file_pages", pa.int32(), "pages of the collection showing the image's file (1 when its address names none)"),
        column("keep", pa.bool_(), "passes the default filter of text.captions"),
        column("reason", pa.string(), "the first filter it fails, null if kept", nullable=True),
    ]),
    "caption_candidates": pa.schema([
        *CANDIDATE_COLUMNS,
        column("file", pa.string(), "the image's file name, lowercased, size marks removed ('' if none)"),
    ]),
    "caption_texts": pa.schema([
        column("page_id", pa.string(), "a page the shard owns"),
        column("kind", pa.string(), "alt | title | caption | filename"),
        column("text", pa.string(), "a text of that kind of an <img> of the page"),
        column("file", pa.string(), "that <img>'s file name, lowercased, size marks removed ('' if none)"),
    ]),
}


class MappingRow(NamedTuple):
    """One image on one page. A tuple, so a million of them sort and dedupe fast at plan time."""

    image_id: str
    page_id: str
    img_src: str
    page_url: str = ""


class FolderPages:
    """Pages saved as files under a folder; page_id is the path under it."""

    def __init__(self, root: Path | str):
        self.root = Path(root)

    def state(self, page_id: str) -> str:
        return file_state(os.path.join(self.root, page_id))

    def read(self, page_id: str, limits: PageLimits) -> Page:
        return read_page(page_id, self.root / page_id, limits)

    def raw_input(self, page_id: str) -> dict:
        from annobench.core.provenance import raw_file

        return raw_file(self.root / page_id, page_id, role="page")


@dataclass
class TextPlan:
    n_shards: int
    shards: list[list[MappingRow]]
    owners: dict[str, int]  # page_id -> shard that writes its copy
    pages: FolderPages  # or warc_index.WarcPages: state, read and raw_input of a page_id
    _fingerprints: dict[int, str] = field(default_factory=dict, repr=False)
    _page_states: dict[str, str] = field(default_factory=dict, repr=False)

    def fingerprint(self, shard: int) -> str:
        """Mapping rows of the shard and size/mtime of their pages: what decides its outputs."""
        if shard not in self._fingerprints:
            digest = hashlib.sha256(f"shards={self.n_shards}\n".encode())
            digest.update("".join(
                f"{row.image_id}\t{row.page_id}\t{row.img_src}\t{row.page_url}\t{self._page_state(row.page_id)}\n"
                for row in self.shards[shard]).encode())
            self._fingerprints[shard] = digest.hexdigest()
        return self._fingerprints[shard]

    def _page_state(self, page_id: str) -> str:
        """Each page is stat'ed once, however many images and shards it serves."""
        state = self._page_states.get(page_id)
        if state is None:
            state = self._page_states[page_id] = self.pages.state(page_id)
        return state


def read_mapping(path: Path | str) -> list[MappingRow]:
    path = Path(path)
    if not path.is_file():
        raise InventoryError(f"page mapping {path} does not exist")
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = next(reader, [])
        missing = {"image_id", "page_id", "img_src"} - set(header)
        if missing:
            raise InventoryError(f"page mapping {path} needs columns image_id,page_id,img_src; missing {sorted(missing)}")
        columns = [header.index(name) for name in ("image_id", "page_id", "img_src")]
        url = header.index("page_url") if "page_url" in header else None
        rows = [_mapping_row(record, columns, url) for record in reader if record]
    bad = next((r for r in rows if not r.image_id or not _inside_folder(r.page_id)), None)
    if bad:
        raise InventoryError(f"page mapping {path}: unusable row {bad} (empty id or a page outside the folder)")
    return rows


def _mapping_row(record: list[str], columns: list[int], url: int | None) -> MappingRow:
    padded = record + [""] * (len(columns) + 1)  # short rows read as empty fields, as DictReader did
    page_url = padded[url].strip() if url is not None else ""
    return MappingRow(padded[columns[0]], padded[columns[1]], padded[columns[2]], page_url)


def _inside_folder(page_id: str) -> bool:
    return bool(page_id) and not page_id.startswith("/") and ".." not in page_id.split("/")


def build_text_plan(mapping, pages, n_shards: int) -> TextPlan:
    """mapping: a mapping CSV or its rows; pages: a folder of saved pages, or a page store
    (FolderPages, warc_index.WarcPages)."""
    pages = FolderPages(pages) if isinstance(pages, (str, Path)) else pages
    rows = sorted(set(read_mapping(mapping) if isinstance(mapping, (str, Path)) else mapping))  # image, page, src, url
    shards: list[list[MappingRow]] = [[] for _ in range(n_shards)]
    owners: dict[str, int] = {}
    image_id, shard = None, 0
    for row in rows:  # sorted by image_id: the first image seen on a page is its smallest
        if row.image_id != image_id:
            image_id, shard = row.image_id, shard_of(row.image_id, n_shards)
        shards[shard].append(row)
        owners.setdefault(row.page_id, shard)
    return TextPlan(n_shards=n_shards, shards=shards, owners=owners, pages=pages)


def page_sources(config: dict) -> tuple[Path | str | list[MappingRow], object]:
    """The page mapping and the pages of a config: input.page_map and input.pages, or what
    input.warc's archives hold (their mapping derived by warc_index)."""
    inputs = config["input"]
    if inputs["warc"]:
        from annobench.sources.warc_index import WarcPages, index_for

        index = index_for(config)
        return [MappingRow(*row) for row in index.mapping], WarcPages(index.pages)
    return inputs["page_map"], FolderPages(inputs["pages"])


def archived_shard_plan(config: dict, shard: int) -> TextPlan:
    """The text plan of one shard of a build from web archives, from the shard's part of the
    catalogue (warc_index.shard_slice): its rows, pages and their owners, nothing of other shards."""
    from annobench.sources.warc_index import WarcPages, shard_slice

    part = shard_slice(config, shard)
    shards: list[list[MappingRow]] = [[] for _ in range(part.n_shards)]
    shards[shard] = sorted(set(MappingRow(*row) for row in part.mapping))
    return TextPlan(n_shards=part.n_shards, shards=shards, owners=part.owners, pages=WarcPages(part.pages))


def read_mapping_table(path: Path | str) -> list[MappingRow]:
    """The rows of a mapping table (tables/warc_page_map/all.parquet)."""
    import pyarrow.parquet as pq

    columns = pq.read_table(path, columns=["image_id", "page_id", "img_src", "page_url"]).to_pydict()
    return [MappingRow(*row) for row in zip(*columns.values())]


def text_plan_for(config: dict, n_shards: int) -> TextPlan | None:
    """The text plan of a build, or None when it has no pages."""
    if not (config["input"]["page_map"] or config["input"]["warc"]):
        return None
    mapping, pages = page_sources(config)
    return build_text_plan(mapping, pages, n_shards)


@dataclass
class TextResult:
    tables: dict[str, list[dict]]  # SHARD_TABLES and CAPTION_WORK
    terms_by_image: dict[str, list[tuple[str, float]]]

    def page_captions(self, rules: CaptionFilter = CaptionFilter()) -> list[dict]:
        """The page_captions rows when these pages are the whole collection (one process, no shards)."""
        texts = rows_to_table(self.tables["caption_texts"], SCHEMAS["caption_texts"])
        candidates = rows_to_table(self.tables["caption_candidates"], SCHEMAS["caption_candidates"])
        return filter_captions(candidates, *collection_counts(texts), rules)


def extract_text(
    rows: list[MappingRow], pages, params: TextParams, limits: PageLimits,
    owned: Callable[[str], bool] = lambda page_id: True, log: Callable[[str], None] = print,
    every_seconds: float = 10.0, images: dict[str, tuple[int, int]] | None = None,
) -> TextResult:
    """Text features of the images in `rows`, from their pages (a folder or a page store), with every
    problem reported. With `images` (the ingested images and their width and height), the rows of
    other images give no row of any table: an image the ingest rejected has its reason in
    `rejects`, and the dataset holds nothing else of it. Their pages are still read and written,
    with their caption texts, by the shard that owns them."""
    pages = FolderPages(pages) if isinstance(pages, (str, Path)) else pages
    by_page: dict[str, list[MappingRow]] = defaultdict(list)
    for row in rows:
        by_page[row.page_id].append(row)
    kept = [row for row in rows if images is None or row.image_id in images]
    tables: dict[str, list[dict]] = {name: [] for name in (*SHARD_TABLES, *CAPTION_WORK)}
    scores: dict[str, dict[str, float]] = {}
    progress = Progress("text pages", len(by_page), log, every_seconds)
    for page_id in sorted(by_page):
        page_rows = [row for row in by_page[page_id] if images is None or row.image_id in images]
        try:
            page = pages.read(page_id, limits)
        except PageRejected as error:
            tables["text_rejects"].extend(
                {"image_id": r.image_id, "page_id": page_id, "reason": f"page unusable: {error}"} for r in page_rows
            )
            if owned(page_id):
                tables["pages"].append({"page_id": page_id, "encoding": None, "title": None, "status": str(error)})
            progress.step(rejected=True)
            continue
        words = page_words(page, params)
        if owned(page_id):
            tables["pages"].append({"page_id": page_id, "encoding": page.encoding, "title": page.title, "status": "ok"})
            tables["pages_xml"].append({"page_id": page_id, "xml": page.to_xml()})
            tables["caption_texts"].extend(page_texts(page_id, words.images, _first_src))
        shared = page_text_counts(words.images)
        addresses: dict[str, ImageAddresses] = {}  # by the page's URL (the same for every row, as a rule)
        shown: dict[str, tuple[MappingRow, str, dict[int, object]]] = {}  # image -> first row, base, elements
        for row in page_rows:
            if row.page_url not in addresses:
                addresses[row.page_url] = ImageAddresses(words.images, page_base(page, row.page_url))
            base = addresses[row.page_url].base
            found = addresses[row.page_url].occurrences(row.img_src)
            # An image the mapping names twice on a page (two spellings of its address) is scored and
            # captioned once per <img>: its occurrences are gathered first.
            shown.setdefault(row.image_id, (row, base, {}))[2].update((id(element), element) for element in found)
            tables["image_urls"].append({
                "image_id": row.image_id, "page_id": page_id, "img_src": row.img_src,
                "url": _resolved(row.img_src, base), "occurrences": len(found),
            })
            if not found:
                tables["text_rejects"].append(
                    {"image_id": row.image_id, "page_id": page_id, "reason": not_found_reason(row.img_src, base)}
                )
        for image_id, (row, base, found) in shown.items():
            if found:
                image_scores = scores.setdefault(image_id, {})
                for element in found.values():
                    for term, value in occurrence_scores(words, element, params).items():
                        image_scores[term] = image_scores.get(term, 0.0) + value
            size = images.get(image_id) if images is not None else None
            tables["caption_candidates"].extend(
                image_captions(row, list(found.values()), shared, size, words.link_texts, base))
        progress.step()
    terms_by_image = {}
    for image_id in sorted({r.image_id for r in kept}):
        ranked = top_terms(scores.get(image_id, {}), params)
        if image_id in scores and not ranked:
            tables["text_rejects"].append({"image_id": image_id, "page_id": "", "reason": "no terms near the image"})
        terms_by_image[image_id] = ranked
        tables["text_terms"].extend(
            {"image_id": image_id, "term": term, "score": score, "rank": rank}
            for rank, (term, score) in enumerate(ranked, start=1)
        )
    progress.finish()
    for name in ("text_rejects", "image_urls"):
        tables[name].sort(key=lambda r: (r["image_id"], r["page_id"], r.get("img_src", ""), r.get("reason", "")))
    tables["caption_candidates"].sort(key=caption_order)
    return TextResult(tables=tables, terms_by_image=terms_by_image)


def caption_order(row: dict) -> tuple:
    return row["image_id"], row["page_id"], KINDS.index(row["kind"]), row["text"]


def _first_src(element) -> str:
    """The address an <img> shows first (its src, else a lazy-load or srcset one): its file."""
    urls = candidate_urls(element)
    return urls[0] if urls else ""


def image_captions(row: MappingRow, found: list, shared: Counter, size: tuple[int, int] | None,
                   link_texts: frozenset[str], base: str) -> list[dict]:
    """The caption candidates of one mapped image on its page: each kind's distinct texts over its
    occurrences. `link_texts`: what the page's links and headings say; `base`: the page's address."""
    texts: dict[tuple[str, str], dict[str, bool]] = {}
    for element in found:
        section_link = links_to_section(element.link, base)
        for kind, text in occurrence_captions(element.attributes, element.caption, row.img_src).items():
            where = texts.setdefault((kind, text), {"teaser": False, "section_link": True})
            where["teaser"] |= kind == "caption" and element.caption_heading
            where["section_link"] &= section_link  # navigation wherever the page shows it
    file = image_file(row.img_src)
    return [caption_row(row.image_id, row.page_id, kind, text, shared.get((kind, text), 1), size, file,
                        headline=kind in ("alt", "title") and shown_form(text) in link_texts, **where)
            for (kind, text), where in texts.items()]


def _resolved(img_src: str, base: str) -> str | None:
    from annobench.sources.page_images import normalise_url

    try:
        return normalise_url(img_src, base)
    except ValueError:
        return None


def write_text_tables(result: TextResult, out_dir: Path | str, shard: int | str, params_hash: str) -> None:
    """A shard's tables, and its caption candidates and page texts for page_captions_job."""
    for name in SHARD_TABLES:
        path = Path(out_dir) / layout.table_file(name, shard)
        write_table(rows_to_table(result.tables[name], SCHEMAS[name]), path, name, params_hash)
    for name in CAPTION_WORK:
        path = Path(out_dir) / layout.work_file(name, shard)
        write_table(rows_to_table(result.tables[name], SCHEMAS[name]), path, name, params_hash)


def collection_counts(texts: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Over every page's caption texts: the pages and image files that carry each (kind, text), and
    the pages that show each file. Arrow counts them: a collection's texts need not fit in dicts."""
    by_text = texts.group_by(["kind", "text"]).aggregate([("page_id", "count_distinct"), ("file", "count_distinct")])
    by_text = by_text.rename_columns({"page_id_count_distinct": "text_pages", "file_count_distinct": "text_images"})
    named = texts.filter(pc.not_equal(texts["file"], ""))
    by_file = named.group_by("file").aggregate([("page_id", "count_distinct")])
    return by_text, by_file.rename_columns({"page_id_count_distinct": "file_pages"})


def filter_captions(candidates: pa.Table, by_text: pa.Table, by_file: pa.Table, rules: CaptionFilter) -> list[dict]:
    """The page_captions rows of a shard's candidates, with the collection's counts and the default filter."""
    joined = candidates.join(by_text, keys=["kind", "text"], join_type="left outer")
    joined = joined.join(by_file, keys="file", join_type="left outer")
    rows = [filter_row(row, row["text_pages"] or 1, row["text_images"] or 1, row["file_pages"] or 1, rules)
            for row in joined.to_pylist()]
    return sorted(rows, key=caption_order)


def text_shard_job(job: Job) -> list[dict]:
    """Rule text_shard: the shard's mapping rows and pages, as planned (refused if they changed since),
    or, replaying a record, the pages it read. Returns the pages read, with their hashes."""
    shard, n_shards = job.shard, job.params["n_shards"]
    if job.recorded_raw is None:
        plan = planned_shard_plan(job.config, shard, n_shards, job.params["listing"])
    else:
        plan = recorded_plan(job.input("mapping"), job, n_shards)
    text = job.config["text"]
    rows = plan.shards[shard]
    ingested = image_sizes(job.input_list("images"))
    _log_rows_without_image(rows, set(ingested), job.log)
    result = extract_text(
        rows, plan.pages, TextParams.from_config(text), PageLimits.from_config(text),
        owned=lambda page_id: plan.owners[page_id] == shard, log=job.log, every_seconds=job.every_seconds,
        images=ingested,
    )
    write_text_tables(result, job.out_dir, shard, job.params["params_hash"])
    return [plan.pages.raw_input(page_id) for page_id in sorted({row.page_id for row in plan.shards[shard]})]


def image_sizes(images_tables: list[str]) -> dict[str, tuple[int, int]]:
    """image_id -> (width, height) of the ingested images."""
    sizes = {}
    for path in images_tables:
        columns = pq.read_table(path, columns=["image_id", "width", "height"]).to_pydict()
        sizes.update(zip(columns["image_id"], zip(columns["width"], columns["height"])))
    return sizes


def page_captions_job(job: Job) -> None:
    """Rule page_captions: every shard's page_captions, from every shard's candidates and page texts."""
    rules = CaptionFilter.from_config(job.config["text"])
    texts = pa.concat_tables([pq.read_table(path) for path in job.input_list("texts")])
    by_text, by_file = collection_counts(texts)
    kept = dropped = 0
    for candidates, out_path in zip(job.input_list("candidates"), job.output_list("tables"), strict=True):
        rows = filter_captions(pq.read_table(candidates), by_text, by_file, rules)
        write_table(rows_to_table(rows, SCHEMAS["page_captions"]), out_path, "page_captions", job.params["params_hash"])
        kept += sum(row["keep"] for row in rows)
        dropped += sum(not row["keep"] for row in rows)
    job.log(f"{texts.num_rows} page texts counted; {kept} captions kept, {dropped} dropped")


def _log_rows_without_image(rows: list[MappingRow], ingested: set[str], log: Callable[[str], None]) -> None:
    """Mapping rows whose image is not in the dataset give no rows: say how many, and of which images."""
    missing = sorted({row.image_id for row in rows} - ingested)
    if missing:
        log(f"{len(missing)} mapped image(s) not in the dataset (rejected at ingest, reasons in tables/rejects, or "
            f"not among the inputs): no text rows for them; first: {', '.join(missing[:5])}")


def planned_shard_plan(config: dict, shard: int, n_shards: int, expected_fingerprint: str) -> TextPlan:
    """The shard's plan, if its rows and pages are still those the workflow was planned with."""
    from annobench.sources.listing import ListingChanged

    plan = text_plan_for(config, n_shards) if not config["input"]["warc"] else archived_shard_plan(config, shard)
    if plan.fingerprint(shard) != expected_fingerprint:
        raise ListingChanged(f"the pages or mapping rows of shard {shard} changed after the workflow was planned")
    return plan


def recorded_plan(mapping: str, job: Job, n_shards: int) -> TextPlan:
    """The plan of a recorded job: its mapping file, and its pages where the record says they were read."""
    if any(r.get("warc") for r in job.recorded_raw):  # pages read from web archives
        from annobench.sources.warc_index import WarcPages

        return build_text_plan(read_mapping_table(mapping), WarcPages.from_raw_inputs(job.recorded_raw), n_shards)
    return build_text_plan(mapping, FolderPages(job.raw_root("page") if job.raw("page") else "."), n_shards)


def write_scofeat(text_terms_tables: list[str], out_path: Path | str, iids_path: Path | str) -> int:
    """The legacy WEBUPV `.scofeat` of all images (sorted by id) and the matching `*_iids.txt`."""
    import pyarrow.parquet as pq

    from annobench.core.fsutil import write_bytes_atomic
    from annobench.text.features import scofeat_line

    lines: dict[str, str] = {}
    for path in text_terms_tables:
        table = pq.read_table(path).to_pydict()
        by_image: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for image_id, term, score in zip(table["image_id"], table["term"], table["score"]):
            by_image[image_id].append((term, score))  # rows are in rank order
        for image_id, terms in by_image.items():
            lines[image_id] = scofeat_line(image_id, terms)
    order = sorted(lines)
    write_bytes_atomic(out_path, "".join(lines[i] + "\n" for i in order).encode("utf-8"))
    write_bytes_atomic(iids_path, "".join(i + "\n" for i in order).encode("utf-8"))
    return len(order)


def text_scofeat_job(job: Job) -> None:
    """Rule text_scofeat: the WEBUPV export of every shard's terms."""
    count = write_scofeat(job.input_files, job.output("scofeat"), job.output("iids"))
    job.log(f"{count} images written to {job.output('scofeat')}")
