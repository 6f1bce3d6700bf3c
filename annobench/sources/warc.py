"""Reading web crawls stored as WARC files (ISO 28500): which records are pages and images, and their bytes.

Records are read with warcio, Webrecorder's WARC library (what pywb and
most archive tools build on): it reads plain and per-record gzip archives,
strips the angle brackets wget writes around URIs, decodes chunked and
compressed HTTP bodies and checks the declared digests as it reads.

A record is classified by its declared type alone: an HTML response
(`text/html`, `application/xhtml+xml`) is a page, a raster image response
(`image/*` but SVG) an image; everything else (scripts, styles, redirects,
errors) is passed over unread. Before a page or image is used its payload
is read whole, within the size limit of its kind, and must match the
archive's payload digest and look like what it claims to be. Anything
that fails becomes a rejects row naming the archive, the record and why.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

ARCHIVE_ENDINGS = (".warc", ".warc.gz")
PAGE_TYPES = frozenset({"text/html", "application/xhtml+xml"})
VECTOR_TYPES = frozenset({"image/svg+xml"})  # an image type, but nothing to decode into pixels
READ_BLOCK = 1 << 16
HEADER_ALLOWANCE = 1 << 16  # a record holds its HTTP headers besides the payload
# The longest WARC or HTTP header line read: warcio reads a line whole however long, by concatenation, and
# a gzip member of a megabyte inflates to a gigabyte-long "line".
MAX_HEADER_LINE = 1 << 20
# Failures of a damaged archive: warcio's own, gzip's, and the attribute errors it raises
# when the headers of a record are cut off.
DAMAGE = (ArchiveLoadFailed, EOFError, zlib.error, OSError, ValueError, AttributeError, IndexError)

IMAGE_SIGNATURES = (
    (b"\xff\xd8\xff", "JPEG"), (b"\x89PNG\r\n\x1a\n", "PNG"), (b"GIF87a", "GIF"), (b"GIF89a", "GIF"),
    (b"BM", "BMP"), (b"II*\x00", "TIFF"), (b"MM\x00*", "TIFF"), (b"8BPS", "PSD"),
    (b"\x00\x00\x00\x0cjP  ", "JPEG 2000"), (b"\xffO\xffQ", "JPEG 2000"),
)


class RecordRejected(Exception):
    """The record cannot be used; the message is the rejects reason."""


@dataclass(frozen=True)
class RecordRef:
    """Where a page or image lives in an archive, and what the archive says of it."""

    warc: str  # absolute path of the archive
    offset: int  # byte offset of the record in the archive file
    record_id: str
    target_uri: str
    payload_digest: str  # as declared by the archive ("" when it declares none)
    sha256: str = ""  # of the payload as used (after any Content-Encoding)
    size: int = 0


def list_archives(given: str | list[str]) -> list[str]:
    """The archive files named: files as given, folders searched for *.warc and *.warc.gz; sorted."""
    names = [given] if isinstance(given, str) else list(given)
    found = []
    for name in (n for n in names if n):
        path = Path(name)
        if path.is_dir():
            inside = sorted(str(p.resolve()) for p in path.rglob("*") if p.is_file() and is_archive_name(p.name))
            if not inside:
                raise FileNotFoundError(f"no .warc or .warc.gz file in the folder {name}")
            found += inside
        elif path.is_file():
            found.append(str(path.resolve()))
        else:
            raise FileNotFoundError(f"WARC file {name} does not exist")
    return sorted(set(found))


def is_archive_name(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_ENDINGS)


def record_kind(content_type: str) -> str | None:
    """'page', 'image' or None (not read), from a declared Content-Type."""
    mime = content_type.split(";", 1)[0].strip().lower()
    if mime in PAGE_TYPES:
        return "page"
    if mime.startswith("image/") and mime not in VECTOR_TYPES:
        return "image"
    return None


def declared_charset(content_type: str) -> str:
    for parameter in content_type.split(";")[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip("\"'").lower()
    return ""


def sniffed_image_format(head: bytes) -> str | None:
    for signature, name in IMAGE_SIGNATURES:
        if head.startswith(signature):
            return name
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "WebP"
    return None


def looks_like_markup(head: bytes) -> bool:
    return head.lstrip(b"\xef\xbb\xbf \t\r\n\f").startswith(b"<")


def check_payload_type(kind: str, content_type: str, head: bytes) -> None:
    """Refuse a payload that is plainly not what its record declares."""
    declared = content_type.split(";", 1)[0].strip().lower()
    if kind == "image" and looks_like_markup(head):
        raise RecordRejected(f"declared {declared}, but the payload is markup (HTML or XML), not an image")
    found = sniffed_image_format(head)
    if kind == "page" and found:
        raise RecordRejected(f"declared {declared}, but the payload is a {found} image")


def record_content_type(record) -> str:
    if record.http_headers is not None:
        return record.http_headers.get_header("Content-Type") or ""
    return record.rec_headers.get_header("Content-Type") or ""


def http_status(record) -> int | None:
    """The HTTP status of a response; None for records without HTTP headers (resource records)."""
    if record.http_headers is None:
        return None
    try:
        return int(record.http_headers.get_statuscode())
    except (TypeError, ValueError):
        return 0


def read_payload(record, content_type: str, kind: str, max_bytes: int) -> bytes:
    """The record's payload (after any Content-Encoding), checked for size, digest, truncation and type."""
    declared_length = record.http_headers.get_header("Content-Length") if record.http_headers else None
    if declared_length and declared_length.strip().isdigit() and int(declared_length) > max_bytes:
        raise RecordRejected(f"record over the size limit: {int(declared_length)} bytes > {max_bytes}")
    if record.length is not None and record.length > max_bytes + HEADER_ALLOWANCE:
        raise RecordRejected(f"record over the size limit: {record.length} bytes > {max_bytes}")
    stream, chunks, total = record.content_stream(), [], 0
    while block := stream.read(READ_BLOCK):
        total += len(block)
        if total > max_bytes:
            encoding = record.http_headers.get_header("Content-Encoding") if record.http_headers else None
            after = f" once its Content-Encoding {encoding} is decoded" if encoding else ""
            raise RecordRejected(f"record over the size limit{after}: more than {max_bytes} bytes")
        chunks.append(block)
    if getattr(record.raw_stream, "limit", 0):
        raise RecordRejected("record truncated: the archive ends inside it")
    if record.digest_checker.passed is False:
        declared = record.rec_headers.get_header("WARC-Payload-Digest") or record.rec_headers.get_header(
            "WARC-Block-Digest")
        raise RecordRejected(f"payload digest does not match the archive's {declared}")
    data = b"".join(chunks)
    if not data:
        raise RecordRejected("empty payload")
    check_payload_type(kind, content_type, data[:64])
    return data


def open_record(ref: RecordRef):
    """The record at ref.offset (an iterator kept open: the record reads lazily from it)."""
    handle = open(ref.warc, "rb")
    handle.seek(ref.offset)
    return handle, archive_iterator(handle)


def archive_iterator(handle) -> ArchiveIterator:
    """warcio's iterator over the archive's records, checking digests, with its header lines bounded: a line
    past MAX_HEADER_LINE comes back cut, which no WARC or HTTP header parses as, so the archive is damaged
    there (ArchiveLoadFailed) instead of a gigabyte being read into one line."""
    iterator = ArchiveIterator(handle, check_digests=True)
    reader = iterator.reader
    unbounded = reader.readline

    def readline(length=None):
        return unbounded(MAX_HEADER_LINE if length is None else min(length, MAX_HEADER_LINE))

    reader.readline = readline
    return iterator


def read_record_payload(ref: RecordRef, kind: str, max_bytes: int) -> tuple[bytes, str]:
    """Read one page or image back from its archive, re-checking that it is the record indexed.
    Returns the payload and the charset its HTTP response declared."""
    try:
        handle, iterator = open_record(ref)
    except OSError as error:
        raise RecordRejected(f"cannot open {ref.warc}: {error.strerror or error}") from None
    with handle:
        try:
            record = next(iter(iterator), None)
            if record is None:
                raise RecordRejected(f"no record at byte {ref.offset} of {ref.warc}")
            found = record.rec_headers.get_header("WARC-Record-ID") or ""
            if found != ref.record_id:
                raise RecordRejected(f"the record at byte {ref.offset} of {ref.warc} is {found or 'unnamed'}, "
                                     f"not {ref.record_id}: the archive changed")
            content_type = record_content_type(record)
            return read_payload(record, content_type, kind, max_bytes), declared_charset(content_type)
        except DAMAGE as error:
            raise RecordRejected(f"cannot read the record at byte {ref.offset} of {ref.warc}: {error}") from None


def payload_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

