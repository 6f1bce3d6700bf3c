"""The catalogue of a crawl's archives: its images, its pages, and which page shows which image.

Every archive is read once (an archive per process), every page and image
record checked (warc.read_payload) and every page parsed for the images it
shows. The catalogue is cached under the output folder, keyed by the
archives' sizes and modification times and the settings, so planning a
rerun does not read the archives again. The rule warc_tables releases it
as three tables (warc_records, warc_page_map, warc_rejects).

Ids (docs/configuration.md, input.warc):
- an image's id is its address without the scheme, `host[:port]/path[?query]`,
  with `%`, `/`, `\\` and control characters written as `%XX`
  (ids.encode_id): `unquote(image_id)` gives the address back. An id
  over 200 bytes keeps its first 180 and ends in `~` and 16 hex digits of
  the address's sha256.
- a page's id is its address (the record's target URI).
The first record of an address is used (archives in path order, records
in file order); later ones are rejects. A revisit record's address gets
the payload of the record it refers to (WARC-Refers-To, else the record
with the same payload digest).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import pickle
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Callable


from annobench.core.fingerprint import file_state
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.jobs import Job
from annobench.sources.ids import encode_id
from annobench.sources.pages import PageLimits, PageRejected, page_from_bytes
from annobench.sources.warc import (
    DAMAGE,
    RecordRef,
    RecordRejected,
    archive_iterator,
    declared_charset,
    http_status,
    list_archives,
    payload_sha256,
    read_payload,
    read_record_payload,
    record_content_type,
    record_kind,
)

INDEX_VERSION = 1
CACHE = "work/warc/index.pickle"
MAX_ID_BYTES, KEPT_ID_BYTES = 200, 180


@dataclass(frozen=True)
class IndexSettings:
    images: str = "embedded"  # embedded: images some page of the archives shows; all: every image
    max_image_bytes: int = 50_000_000
    page_limits: PageLimits = PageLimits()
    workers: int = 0  # processes reading archives; 0: one per CPU

    @classmethod
    def from_config(cls, config: dict) -> "IndexSettings":
        warc = config["warc"]
        return cls(images=warc["images"], max_image_bytes=warc["max_image_bytes"],
                   page_limits=PageLimits.from_config(config["text"]), workers=warc["index_workers"])

    def key_fields(self) -> dict:
        """What decides the catalogue (not how many processes build it)."""
        return {"images": self.images, "max_image_bytes": self.max_image_bytes,
                "max_page_bytes": self.page_limits.max_bytes, "timeout": self.page_limits.timeout_seconds}


@dataclass(frozen=True)
class Located:
    """An image or page: its address, and the record holding its bytes."""

    address: str
    ref: RecordRef
    revisit_id: str = ""  # the revisit record that named this address, when the bytes are another's


@dataclass
class Scanned:
    """A usable page or image record of one archive."""

    kind: str | None  # page | image (None: a revisit that does not say)
    ref: RecordRef
    revisit: bool = False
    refers_to: str = ""  # a revisit's WARC-Refers-To record id
    embeds: tuple[tuple[str, str], ...] = ()  # a page's image addresses: (as written, absolute)


@dataclass
class WarcIndex:
    archives: list[str]
    images: dict[str, Located] = field(default_factory=dict)  # image_id ->
    pages: dict[str, Located] = field(default_factory=dict)  # page_id ->
    mapping: list[tuple[str, str, str, str]] = field(default_factory=list)  # image_id, page_id, img_src, page_url
    unresolved: list[tuple[str, str]] = field(default_factory=list)  # page_id, address that is no image record
    rejects: list[dict] = field(default_factory=list)
    key: str = ""


def address_id(address: str) -> str:
    """The image id of an address (module docstring)."""
    encoded = encode_id(address.split("://", 1)[-1])
    if len(encoded.encode("utf-8")) <= MAX_ID_BYTES:
        return encoded
    kept = encoded.encode("utf-8")[:KEPT_ID_BYTES].decode("utf-8", "ignore")
    if "%" in kept[-2:]:  # never cut an %XX escape in two
        kept = kept[: kept.rindex("%")]
    return f"{kept}~{hashlib.sha256(address.encode('utf-8')).hexdigest()[:16]}"


def comparable(address: str, base: str = "") -> str:
    """An address in the form pages and records are matched in (page_images.normalise_url)."""
    from annobench.sources.page_images import normalise_url

    return normalise_url(address, base)


# --- one archive -------------------------------------------------------------------------

def scan_archive(path: str, settings: IndexSettings) -> tuple[list[Scanned], list[dict]]:
    """Every usable page and image record of one archive, and a rejects row for every other problem."""
    found, rejects = [], []
    with open(path, "rb") as handle:
        iterator = archive_iterator(handle)
        records, offset = iter(iterator), 0
        while True:
            try:  # the archive's own framing: past damage there is no next record to find
                record = next(records)
            except StopIteration:
                break
            except DAMAGE as error:
                rejects.append(reject_row(path, offset, None, None,
                                          f"archive damaged or truncated after byte {offset} (read to "
                                          f"{handle.tell()}): {type(error).__name__}: {error}; the records "
                                          "before it are used"))
                break
            offset = iterator.offset  # where this record starts (get_record_offset() would read it through)
            try:
                scanned = scan_record(path, offset, record, settings)
            except RecordRejected as error:
                rejects.append(record_reject(path, offset, record, str(error)))
                continue
            except DAMAGE as error:  # its payload cannot be read: the next record says whether the rest can
                rejects.append(record_reject(path, offset, record, f"record unreadable: {type(error).__name__}: "
                                                                   f"{error}"))
                continue
            if scanned is not None:
                found.append(scanned)
    return found, rejects


def reject_row(warc_file: str, offset: int | None, record_id: str | None, target_uri: str | None,
               reason: str) -> dict:
    """A warc_rejects row."""
    return {"warc_file": warc_file, "offset": offset, "record_id": record_id, "target_uri": target_uri,
            "reason": reason}


def record_reject(path: str, offset: int, record, reason: str) -> dict:
    headers = record.rec_headers
    return reject_row(path, offset, headers.get_header("WARC-Record-ID"), headers.get_header("WARC-Target-URI"),
                      reason)


def scan_record(path: str, offset: int, record, settings: IndexSettings) -> Scanned | None:
    if record.rec_type not in ("response", "resource", "revisit"):
        return None
    address = record.rec_headers.get_header("WARC-Target-URI") or ""
    status = http_status(record)
    if not address or (status is not None and not 200 <= status < 300):
        return None  # redirects and errors: no page or image of their own
    content_type = record_content_type(record)
    kind = record_kind(content_type)
    if kind is None and not (record.rec_type == "revisit" and record.http_headers is None):
        return None  # a revisit without HTTP headers is what the record it refers to is
    headers = record.rec_headers
    ref = RecordRef(warc=path, offset=offset, record_id=headers.get_header("WARC-Record-ID") or "",
                    target_uri=address, payload_digest=headers.get_header("WARC-Payload-Digest") or "")
    if record.rec_type == "revisit":
        return Scanned(kind, ref, revisit=True, refers_to=headers.get_header("WARC-Refers-To") or "")
    limit = settings.max_image_bytes if kind == "image" else settings.page_limits.max_bytes
    data = read_payload(record, content_type, kind, limit)
    ref = replace(ref, sha256=payload_sha256(data), size=len(data))
    if kind == "image":
        return Scanned(kind, ref)
    try:
        return Scanned(kind, ref, embeds=embedded_addresses(address, data, declared_charset(content_type),
                                                                 settings.page_limits))
    except PageRejected as error:
        raise RecordRejected(f"page unusable: {error}") from None


def embedded_addresses(address: str, data: bytes, charset: str, limits: PageLimits) -> tuple[tuple[str, str], ...]:
    """Each image address of a page (every form page_images.candidate_urls reads), with its absolute form."""
    from annobench.sources.page_images import candidate_urls, page_base, page_images

    page = page_from_bytes(address, data, limits, charset)
    base = page_base(page, address)
    seen, found = set(), []
    for element in page_images(page):
        for written in candidate_urls(element):
            if written not in seen and not written.startswith("data:"):
                seen.add(written)
                try:
                    found.append((written, comparable(written, base)))
                except ValueError:  # an address urljoin cannot parse
                    continue
    return tuple(found)


# --- all archives ------------------------------------------------------------------------

def build_index(archives: list[str], settings: IndexSettings, log: Callable[[str], None] = print) -> WarcIndex:
    scanned: list[Scanned] = []
    index = WarcIndex(archives=archives)
    for number, (found, rejects) in enumerate(scan_all(archives, settings), start=1):
        scanned += found
        index.rejects += rejects
        log(f"warc: read {number}/{len(archives)} archive(s): {len(scanned)} page and image records, "
            f"{len(index.rejects)} rejected")
    link_pages(index, resolve_addresses(scanned, index.rejects), settings)
    index.rejects.sort(key=lambda r: (r["warc_file"], r["offset"] if r["offset"] is not None else -1,
                                      r["reason"]))
    return index


def scan_all(archives: list[str], settings: IndexSettings):
    workers = min(len(archives), settings.workers or os.cpu_count() or 1)
    if workers <= 1:
        yield from (scan_archive(path, settings) for path in archives)
        return
    # Fresh interpreters, not forks: the planning process (Snakemake) runs threads.
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        yield from pool.map(scan_archive, archives, [settings] * len(archives))


@dataclass(frozen=True)
class Claim:
    """What an address holds once duplicates and revisits are resolved."""

    kind: str
    located: Located
    embeds: tuple[tuple[str, str], ...] = ()


def resolve_addresses(scanned: list[Scanned], rejects: list[dict]) -> dict[str, Claim]:
    """The record each address is read from: the first of its own, else the one a revisit names."""
    claims: dict[str, Claim] = {}
    originals = [s for s in scanned if not s.revisit]
    by_record = {s.ref.record_id: s for s in originals}
    by_digest: dict[str, Scanned] = {}
    for item in originals:
        if item.ref.payload_digest:
            by_digest.setdefault(item.ref.payload_digest, item)
    for item in originals:  # before any revisit: an address's own bytes win
        _claim(claims, Claim(item.kind, Located(item.ref.target_uri, item.ref), item.embeds), item, rejects)
    for item in (s for s in scanned if s.revisit):
        original = by_record.get(item.refers_to) or by_digest.get(item.ref.payload_digest)
        if original is None or item.kind not in (None, original.kind):
            rejects.append(_reject(item, "revisit of a record that is not a page or image of the archives: refers "
                                         f"to {item.refers_to or item.ref.payload_digest or 'nothing'}"))
            continue
        located = Located(item.ref.target_uri, original.ref, revisit_id=item.ref.record_id)
        _claim(claims, Claim(original.kind, located, original.embeds), item, rejects)
    return claims


def _claim(claims: dict[str, Claim], claim: Claim, item: Scanned, rejects: list[dict]) -> None:
    first = claims.get(claim.located.address)
    if first is not None:
        source = first.located.revisit_id or first.located.ref.record_id
        rejects.append(_reject(item, f"duplicate: {claim.located.address} is already read from record {source}"))
    else:
        claims[claim.located.address] = claim


def _reject(item: Scanned, reason: str) -> dict:
    return reject_row(item.ref.warc, item.ref.offset, item.ref.record_id, item.ref.target_uri, reason)


def _claim_reject(claim: Claim, reason: str) -> dict:
    """A rejects row naming the address, and the record that named it (a revisit, or its own)."""
    located = claim.located
    return reject_row(located.ref.warc, located.ref.offset, located.revisit_id or located.ref.record_id,
                      located.address, reason)


def link_pages(index: WarcIndex, claims: dict[str, Claim], settings: IndexSettings) -> None:
    """Ids for the images, the pages, and a mapping row for every image address a page shows."""
    ids, by_form = image_ids(claims, index.rejects), {}
    for address in ids:
        by_form.setdefault(comparable(address), address)
    mapping, shown = set(), set()
    for address, claim in claims.items():
        if claim.kind != "page":
            continue
        index.pages[address] = claim.located
        for written, absolute in claim.embeds:
            image = by_form.get(absolute)
            if image is None:
                index.unresolved.append((address, written))
                continue
            mapping.add((ids[image], address, written, address))
            shown.add(image)
    for address, image_id in ids.items():
        if settings.images == "all" or address in shown:
            index.images[image_id] = claims[address].located
        else:
            index.rejects.append(_claim_reject(claims[address], "not shown by any page of the archives "
                                         "(warc.images: embedded)"))
    index.mapping = sorted(mapping)
    index.images = dict(sorted(index.images.items()))
    index.pages = dict(sorted(index.pages.items()))
    index.unresolved.sort()


def image_ids(claims: dict[str, Claim], rejects: list[dict]) -> dict[str, str]:
    """address -> image id, in archive order; an id already taken (http and https of one address) is refused."""
    ids, taken = {}, {}
    for address, claim in claims.items():
        if claim.kind != "image":
            continue
        image_id = address_id(address)
        if image_id in taken:
            rejects.append(_claim_reject(claim, f"image id {image_id} is already taken by {taken[image_id]} "
                                                       "(the addresses differ only in their scheme)"))
            continue
        ids[address], taken[image_id] = image_id, address
    return ids


# --- the cache ---------------------------------------------------------------------------

def index_key(archives: list[str], settings: IndexSettings) -> str:
    listing = [(os.path.abspath(a), file_state(a)) for a in archives]
    text = json.dumps({"version": INDEX_VERSION, "settings": settings.key_fields(), "archives": listing})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def index_for(config: dict, log: Callable[[str], None] = print) -> WarcIndex:
    """The catalogue of config's input.warc: from the cache when the archives are unchanged, else read."""
    archives = list_archives(config["input"]["warc"])
    settings = IndexSettings.from_config(config)
    key = index_key(archives, settings)
    out_dir = Path(config["output"])
    index = _LOADED.get(key) or _cached(out_dir / CACHE, key)
    if index is None:
        log(f"warc: indexing {len(archives)} archive(s)")
        index = build_index(archives, settings, log)
        index.key = key
        write_bytes_atomic(out_dir / CACHE, pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL))
    _LOADED.clear()
    _LOADED[key] = index
    return index


_LOADED: dict[str, WarcIndex] = {}  # the catalogue this process last used, by key


def _cached(path: Path, key: str) -> WarcIndex | None:
    try:
        with open(path, "rb") as handle:
            index = pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, TypeError):
        return None
    return index if isinstance(index, WarcIndex) and index.key == key else None


def mapping_csv(rows: list[tuple[str, str, str, str]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["image_id", "page_id", "img_src", "page_url"])
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")


# --- a shard's part, for its jobs -----------------------------------------------------------
# A job needs its shard's images and pages only: at 500,000 images the whole catalogue is
# hundreds of MB that every ingest and text job would load. Rule warc_slices writes each shard's
# part once (per catalogue and shard count), and a job reads its own.

SLICES = "work/warc/shards"
COMPLETE = "COMPLETE"


@dataclass
class ShardSlice:
    n_shards: int
    images: dict[str, Located]  # the shard's images
    mapping: list[tuple[str, str, str, str]]  # the mapping rows of its images
    pages: dict[str, Located]  # the pages of those rows
    owners: dict[str, int]  # page_id -> the shard that writes its copy (of its smallest image_id)


def _slice_folder(out_dir: Path, key: str, n_shards: int) -> Path:
    return out_dir / SLICES / f"{key[:16]}-{n_shards}"


def slices_marker(out_dir: Path | str, key: str, n_shards: int) -> str:
    """The file whose presence says every shard's part of this catalogue is written (rule warc_slices)."""
    return str(_slice_folder(Path(out_dir), key, n_shards) / COMPLETE)


def warc_slices_job(job: Job) -> None:
    """Rule warc_slices: each shard's part of the catalogue, once, before the shards' jobs."""
    index = index_for(job.config, job.log)
    if index.key != job.params["listing"]:
        from annobench.sources.listing import ListingChanged

        raise ListingChanged("the web archives changed after the workflow was planned; run snakemake again")
    write_shard_slices(index, job.out_dir, job.params["n_shards"])
    job.log(f"{len(index.images)} images and {len(index.pages)} pages in {job.params['n_shards']} shard parts")


def write_shard_slices(index: WarcIndex, out_dir: Path | str, n_shards: int) -> None:
    """Each shard's part of the catalogue, unless this catalogue's parts for n_shards are there."""
    import shutil

    from annobench.core import layout
    from annobench.sources.ids import shard_of

    folder = _slice_folder(Path(out_dir), index.key, n_shards)
    if (folder / COMPLETE).is_file():
        return
    for other in folder.parent.glob("*") if folder.parent.is_dir() else []:
        if other != folder:  # parts of an older catalogue or shard count
            shutil.rmtree(other, ignore_errors=True)
    parts = [ShardSlice(n_shards, {}, [], {}, {}) for _ in range(n_shards)]
    for image_id, located in index.images.items():
        parts[shard_of(image_id, n_shards)].images[image_id] = located
    owners: dict[str, int] = {}
    for row in index.mapping:  # sorted by image_id: a page's first row has its smallest image
        shard = shard_of(row[0], n_shards)
        owners.setdefault(row[1], shard)
        parts[shard].mapping.append(row)
    for part in parts:
        part.pages = {row[1]: index.pages[row[1]] for row in part.mapping}
        part.owners = {page: owners[page] for page in part.pages}
    for shard, part in enumerate(parts):
        write_bytes_atomic(folder / f"{layout.shard_name(shard)}.pickle", pickle.dumps(part, pickle.HIGHEST_PROTOCOL))
    write_bytes_atomic(folder / COMPLETE, b"")


def shard_slice(config: dict, shard: int) -> ShardSlice:
    """A job's part of the catalogue, as the planning wrote it (the whole catalogue if it did not)."""
    from annobench.core import layout
    from annobench.sources.ids import shard_count

    out_dir = Path(config["output"])
    key = index_key(list_archives(config["input"]["warc"]), IndexSettings.from_config(config))
    folders = sorted(p for p in (out_dir / SLICES).glob(f"{key[:16]}-*") if (p / COMPLETE).is_file())
    if not folders:  # not planned by Snakemake (a job run by hand): make the parts now
        index = index_for(config)
        sharding = config["sharding"]
        n_shards = shard_count(len(index.images), sharding["images_per_shard"], sharding["num_shards"])
        write_shard_slices(index, out_dir, n_shards)
        return shard_slice(config, shard)
    with open(folders[-1] / f"{layout.shard_name(shard)}.pickle", "rb") as handle:
        return pickle.load(handle)


# --- pages for the text stage ------------------------------------------------------------

class WarcPages:
    """The text stage's pages (text_stage.FolderPages' counterpart), read from their records."""

    def __init__(self, pages: dict[str, Located]):
        self.pages = pages
        self._archive_states: dict[str, str] = {}  # a stat per archive, not per page

    def state(self, page_id: str) -> str:
        located = self.pages.get(page_id)
        if located is None:
            return "missing"
        archive = located.ref.warc
        if archive not in self._archive_states:
            self._archive_states[archive] = file_state(archive)
        return f"{self._archive_states[archive]}@{located.ref.offset}:{located.ref.record_id}"

    def read(self, page_id: str, limits: PageLimits):
        located = self.pages.get(page_id)
        if located is None:
            raise PageRejected("page not in the archives")
        try:
            data, charset = read_record_payload(located.ref, "page", limits.max_bytes)
        except RecordRejected as error:
            raise PageRejected(str(error)) from None
        return page_from_bytes(page_id, data, limits, charset)

    def raw_input(self, page_id: str) -> dict:
        from annobench.core.provenance import archived_file

        return archived_file(self.pages[page_id].ref, page_id, "page", page_id)

    @classmethod
    def from_raw_inputs(cls, raw_inputs: list[dict]) -> "WarcPages":
        """The pages a job's provenance record names (to recompute the job from a release)."""
        return cls({raw["path"]: Located(raw["path"], ref_of_raw(raw)) for raw in raw_inputs
                    if raw["role"] == "page" and raw.get("warc")})


def ref_of_raw(raw: dict) -> RecordRef:
    """The record a provenance entry (provenance.archived_file) names."""
    warc = raw["warc"]
    return RecordRef(warc=raw["absolute_path"], offset=warc["offset"], record_id=warc["record_id"], target_uri=raw["path"],
                     payload_digest=warc["payload_digest"], sha256=raw["sha256"] or "", size=raw["size"] or 0)


# --- tables ------------------------------------------------------------------------------

def warc_schemas():
    import pyarrow as pa

    from annobench.core.tables import field as column

    return {
        "warc_records": pa.schema([
            column("key", pa.string(), "image_id of an image, page_id (its address) of a page"),
            column("kind", pa.string(), "image or page"),
            column("address", pa.string(), "where it was fetched from (the record's target URI)"),
            column("warc_file", pa.string(), "the archive holding its bytes, as input.warc names it"),
            column("offset", pa.int64(), "byte offset of the record in the archive file"),
            column("record_id", pa.string(), "WARC-Record-ID of the record holding its bytes"),
            column("payload_digest", pa.string(), "the archive's WARC-Payload-Digest of it", nullable=True),
            column("revisit_record_id", pa.string(), "the revisit record that named this address, when the "
                                                     "bytes are another record's", nullable=True),
            column("sha256", pa.string(), "sha256 of the payload as used (after HTTP content decoding)"),
            column("size", pa.int64(), "bytes of that payload"),
        ]),
        "warc_page_map": pa.schema([
            column("image_id", pa.string(), "an image some page shows"),
            column("page_id", pa.string(), "the page's address"),
            column("img_src", pa.string(), "the image's address as the page writes it"),
            column("page_url", pa.string(), "the page's address, which img_src is resolved against"),
        ]),
        "warc_rejects": pa.schema([
            column("warc_file", pa.string(), "the archive, as input.warc names it"),
            column("offset", pa.int64(), "byte offset of the record (or of the damage)", nullable=True),
            column("record_id", pa.string(), "WARC-Record-ID of the record", nullable=True),
            column("target_uri", pa.string(), "the record's target URI", nullable=True),
            column("reason", pa.string(), "why it is not used"),
        ]),
    }


def warc_table_rows(index: WarcIndex) -> dict[str, list[dict]]:
    records = []
    for kind, entries in (("image", index.images), ("page", index.pages)):
        for key, located in entries.items():
            ref = located.ref
            records.append({"key": key, "kind": kind, "address": located.address, "warc_file": ref.warc,
                            "offset": ref.offset, "record_id": ref.record_id,
                            "payload_digest": ref.payload_digest or None,
                            "revisit_record_id": located.revisit_id or None, "sha256": ref.sha256, "size": ref.size})
    mapping = [dict(zip(("image_id", "page_id", "img_src", "page_url"), row)) for row in index.mapping]
    return {"warc_records": records, "warc_page_map": mapping, "warc_rejects": index.rejects}


def write_warc_tables(index: WarcIndex, out_dir: Path | str, params_hash: str) -> dict[str, Path]:
    """tables/warc_records/, warc_page_map/ and warc_rejects/, each all.parquet."""
    from annobench.core.tables import rows_to_table, write_table

    written = {}
    for name, rows in warc_table_rows(index).items():
        path = Path(out_dir) / "tables" / name / "all.parquet"
        write_table(rows_to_table(rows, warc_schemas()[name]), path, name, params_hash)
        written[name] = path
    return written


def write_unresolved(index: WarcIndex, path: Path) -> None:
    """The image addresses of pages that lead to no image record (cf. page_map.write_mapping)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["page_id", "img_src", "reason"])
    writer.writerows((page, address, "no image record at this address") for page, address in index.unresolved)
    write_bytes_atomic(path, buffer.getvalue().encode("utf-8"))


def warc_tables_job(job: Job) -> list[dict]:
    """Rule warc_tables: the catalogue's tables, if the archives are those planned with.
    Returns the archives, hashed, for provenance."""
    from annobench.core.provenance import raw_file
    from annobench.sources.listing import ListingChanged

    index = index_for(job.config, job.log)
    if index.key != job.params["listing"]:
        raise ListingChanged("the web archives changed after the workflow was planned; run snakemake again")
    write_warc_tables(index, job.out_dir, job.params["listing"])
    job.log(f"{len(index.images)} images, {len(index.pages)} pages, {len(index.rejects)} rejected records")
    return [raw_file(path, path, role="archive") for path in index.archives]
