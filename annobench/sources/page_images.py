"""Where a page shows images: its <img> elements and every address each one names.

The archive catalogue (warc_index) and mapping derivation use these to find a
page's images; the text stage uses them to find an image's occurrences.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import unquote, urljoin

from lxml import etree

from annobench.sources.pages import Page

# Attributes that carry an image's address, lazy loaders included.
SRC_ATTRIBUTES = ("src", "data-src", "data-lazy-src", "data-original", "data-url", "data-lazy", "data-echo")
SRCSET_ATTRIBUTES = ("srcset", "data-srcset", "data-lazy-srcset")


@dataclass
class ImageElement:
    position: int  # words before it
    attributes: dict[str, str]
    # Attributes of the <source>s of the <picture> it is in: alternatives of this same image.
    picture_sources: list[dict[str, str]] = field(default_factory=list)
    caption: str = ""  # the caption element around it (text.captions), where the text stage looked
    caption_heading: bool = False  # that caption element holds a heading (a story's teaser block)
    link: str = ""  # the href of the link it is in, as written


def page_images(page: Page) -> list[ImageElement]:
    """The page's <img> elements alone (no word positions): what mapping derivation needs."""
    return [ImageElement(0, dict(element.attrib), picture_sources(element)) for element in page.root.iter("img")]


def picture_sources(img: etree._Element) -> list[dict[str, str]]:
    """Attributes of the <source>s of the <picture> an <img> is in (libxml2 may nest the img
    inside a source, so they are looked for anywhere in the picture)."""
    picture = next(img.iterancestors("picture"), None)
    return [] if picture is None else [dict(source.attrib) for source in picture.iter("source")]


def candidate_urls(element: ImageElement) -> list[str]:
    """Every address an <img> names: its src, lazy-load attributes and srcset entries first,
    then those of its <picture>'s sources."""
    return [url for attributes in [element.attributes, *element.picture_sources] for url in addresses(attributes)]


def addresses(attributes: dict[str, str]) -> list[str]:
    """The addresses in an element's src, lazy-load and srcset attributes."""
    urls = [attributes[a].strip() for a in SRC_ATTRIBUTES if attributes.get(a, "").strip()]
    for attribute in SRCSET_ATTRIBUTES:
        for candidate in attributes.get(attribute, "").split(","):
            parts = candidate.split()
            if parts:
                urls.append(parts[0])
    return urls


def normalise_url(url: str, base: str) -> str:
    """Absolute form for comparison: resolved against the page, percent-decoded, no fragment."""
    absolute = urljoin(base, url.strip())
    return unquote(absolute.split("#", 1)[0])


def page_base(page: Page, page_url: str) -> str:
    """The page's own <base href> if it has one, else where the page was (URL or file)."""
    base = page_url or PurePosixPath("/", page.page_id).as_uri()
    for element in page.root.iter("base"):
        href = element.get("href", "").strip()
        if href:
            return urljoin(base, href)
    return base
