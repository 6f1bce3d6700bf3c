"""Reading a saved web page safely: bytes -> text -> cleaned DOM -> well-formed XML.

Encoding: a byte-order mark first, then (for a page read from a web archive) the
charset its HTTP response declared, then the page's own declaration
(`<meta charset>` or HTTP-equiv), then detection (bs4's UnicodeDammit), and
as a last resort UTF-8 with replacement characters: a page never fails on
its encoding. Parsing uses libxml2's HTML parser with no network access, no
DTD loading and no entity expansion; its time is linear in the page size,
which is capped before the page is read, and parsing plus cleaning run
under a time limit (checked whenever control is back in Python), so a
hostile page costs bounded time and memory.
"""

from __future__ import annotations

import codecs
import contextlib
import re
import signal
from dataclasses import dataclass
from pathlib import Path

from bs4.dammit import UnicodeDammit
from lxml import etree, html

BYTE_ORDER_MARKS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
# Elements whose content is never page text.
DROPPED = {"script", "style", "noscript", "template", "iframe", "object", "embed"}
# What a dropped <noscript> still shows: lazy-loading pages put their real <img> there.
NOSCRIPT_IMAGES = {"img", "picture"}
# Characters XML 1.0 forbids, and attribute names it cannot hold.
INVALID_XML_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
XML_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9._-]*$")


class PageRejected(Exception):
    """The page cannot be used; the message is the rejects reason."""


@dataclass
class Page:
    page_id: str
    encoding: str
    root: etree._Element  # cleaned DOM: no scripts, styles or comments
    title: str

    def to_xml(self) -> str:
        # Serialised from a fresh copy: libxml2's HTML parser keeps xmlns and xml:*
        # attributes as hidden namespace nodes that would resurface in XML.
        return etree.tostring(_plain_copy(self.root), encoding="unicode", method="xml")


@dataclass(frozen=True)
class PageLimits:
    max_bytes: int = 20_000_000
    timeout_seconds: float = 30.0

    @classmethod
    def from_config(cls, text: dict) -> "PageLimits":
        return cls(max_bytes=text["max_page_bytes"], timeout_seconds=text["parse_timeout_seconds"])


def read_page(page_id: str, path: Path, limits: PageLimits) -> Page:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise PageRejected("page file not found") from None
    except OSError as error:
        raise PageRejected(f"unreadable page: {error.strerror or error}") from None
    if size > limits.max_bytes:
        raise PageRejected(f"page too large: {size} bytes > {limits.max_bytes}")
    return page_from_bytes(page_id, path.read_bytes(), limits)


def page_from_bytes(page_id: str, data: bytes, limits: PageLimits, charset: str = "") -> Page:
    """A page from its bytes (a file's, or an archived HTTP response's with its declared charset)."""
    if not data.strip():
        raise PageRejected("empty page")
    text, encoding = decode_page(data, charset)
    # The limit is checked whenever control is back in Python: between libxml2's
    # (linear-time) parse and the cleaning walk, and during that walk.
    with time_limit(limits.timeout_seconds):
        root = parse_html(text)
        clean(root)
    return Page(page_id=page_id, encoding=encoding, root=root, title=page_title(root))


def decode_page(data: bytes, charset: str = "") -> tuple[str, str]:
    """Text of the page: the HTTP charset when one was declared and decodes the bytes, else as a file."""
    if charset and not data.startswith(BYTE_ORDER_MARKS):  # a BOM outranks HTTP, as in browsers
        try:
            return data.decode(charset), codecs.lookup(charset).name
        except (LookupError, ValueError):  # UnicodeDecodeError, or a name with a NUL in it
            pass  # a wrong or unknown declaration: read it as a saved file
    dammit = UnicodeDammit(data, is_html=True)
    if dammit.unicode_markup is not None:
        return dammit.unicode_markup, (dammit.original_encoding or "utf-8").lower()
    return data.decode("utf-8", errors="replace"), "utf-8 (with replacements)"


def parse_html(text: str) -> etree._Element:
    parser = html.HTMLParser(
        recover=True, no_network=True, remove_comments=True, remove_pis=True, huge_tree=False, default_doctype=False
    )
    # libxml2 wants no encoding declaration in an already-decoded string.
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)
    try:
        root = html.document_fromstring(text, parser=parser)
    except (etree.ParserError, ValueError) as error:
        raise PageRejected(f"cannot parse: {error}") from None
    if root is None:
        raise PageRejected("cannot parse: no document")
    return root


def clean(root: etree._Element) -> None:
    """Drop non-text elements and everything XML cannot hold, in place.

    A <noscript>'s images stay, where it stood; its text does not.
    """
    for element in list(root.iter()):
        if not isinstance(element.tag, str):  # comments, entities, processing instructions
            _remove_keep_tail(element)
        elif element.tag.lower() in DROPPED:
            if element.tag.lower() == "noscript":
                _keep_noscript_images(element)
            _remove_keep_tail(element)
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        if not XML_NAME.match(element.tag):
            element.tag = "span"
        # Rebuilt, not popped: lxml refuses to look up some malformed names.
        attributes = _xml_attributes(element)
        element.attrib.clear()
        for name, value in attributes.items():
            element.set(name, value)
        if element.text:
            element.text = INVALID_XML_CHARS.sub("", element.text)
        if element.tail:
            element.tail = INVALID_XML_CHARS.sub("", element.tail)


def _keep_noscript_images(noscript: etree._Element) -> None:
    """Put bare copies of the noscript's images just before it (it is removed next)."""
    for image in _noscript_images(noscript):
        noscript.addprevious(image)


def _noscript_images(noscript: etree._Element) -> list[etree._Element]:
    """Its images in order: from its child elements (libxml2 parses noscript content as
    markup) and from markup kept as text (escaped markup in pages saved from a live DOM)."""
    pieces = [noscript.text, *(piece for child in noscript for piece in (child, child.tail))]
    images = []
    for piece in pieces:
        if isinstance(piece, str):
            piece = _parse_fragment(piece) if "<" in piece else None
        images += _image_copies(piece)
    return images


def _parse_fragment(markup: str) -> etree._Element:
    # Wrapped so that markup without elements is still a document, not an "empty" rejection;
    # PageRejected is not caught here, as it may be the page's time limit expiring.
    return parse_html(f"<body>{markup}</body>")


def _image_copies(element: etree._Element | None) -> list[etree._Element]:
    """Text-free copies of the <img> and <picture> elements in and under `element`."""
    if element is None or not isinstance(element.tag, str):
        return []
    if element.tag.lower() in NOSCRIPT_IMAGES:
        return [_bare_image(element)]
    return [copy for child in element for copy in _image_copies(child)]


def _bare_image(image: etree._Element) -> etree._Element:
    """The element with its attributes; a picture keeps its sources and img, side by side
    (libxml2 nests an <img> inside the non-void <source> before it)."""
    copy = etree.Element(image.tag, _xml_attributes(image))
    for part in image.iterdescendants("source", "img"):
        copy.append(etree.Element(part.tag, _xml_attributes(part)))
    return copy


def _xml_attributes(element: etree._Element) -> dict[str, str]:
    """The attributes XML can hold: valid names (xmlns would be a namespace declaration
    in XML, not an attribute), values without the characters XML forbids."""
    return {
        name: INVALID_XML_CHARS.sub("", value)
        for name, value in element.items()
        if XML_NAME.match(name) and name != "xmlns"
    }


def _plain_copy(element: etree._Element) -> etree._Element:
    copy = etree.Element(element.tag, dict(element.items()))
    copy.text = element.text
    for child in element:
        if isinstance(child.tag, str):
            child_copy = _plain_copy(child)
            child_copy.tail = child.tail
            copy.append(child_copy)
    return copy


def _remove_keep_tail(element: etree._Element) -> None:
    parent = element.getparent()
    if parent is None:
        return
    tail = element.tail
    previous = element.getprevious()
    parent.remove(element)
    if tail:
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail


def page_title(root: etree._Element) -> str:
    titles = root.xpath("//title")
    return " ".join(" ".join(titles[0].itertext()).split()) if titles else ""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise PageRejected if the block runs longer than `seconds` (main thread, Unix)."""
    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum, frame):
        raise PageRejected(f"parse took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
