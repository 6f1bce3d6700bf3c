"""Captions a page gives its images: the noisy descriptions web-scale caption sets are built from.

For each occurrence of a mapped image in a page, up to four texts, each a
`page_captions` row with its kind: the `alt` and `title` attributes of the
<img>, the `caption` around it (the <figcaption> of its <figure>, the
<caption> of its table, or an element whose class names a caption beside
the image's branch within three ancestors, as MediaWiki's `thumbcaption`),
and the words of its `filename`. They come
from the parse the text features already made (page_words keeps each <img>'s
caption), never from a second one.

Every row records what a caption-set builder filters on. From the words:
its length, the share of its tokens that are words, whether it is
boilerplate (only placeholder words: "image", "photo", "click here", ...; a
word of page furniture anywhere: "logo", "icon", "banner", ...; or a file
name), how many <img> of the page carry the same text. From what the build
knows beyond the words: the image's size (an icon or a banner is no photo to
describe), what its file name says (a rendered vector drawing, a file named
as furniture, a name a content-management system generated), where the page
puts it (an alt or title the page also shows as a link or heading is a
story's headline; a caption element that holds a heading is a story's
teaser; a picture that links to a site's home or a top-level section is
navigation), and how many pages and image files of the whole collection
carry the same text, and how many pages show the same file (interface
furniture repeats across pages; a description names one image). The text
shards write the candidate rows and each page's texts (`caption_candidates`,
`caption_texts`); one job counts over every shard (`collection_counts`) and
applies the default filter of `text.captions` (`keep`, and `reason`: the
first test a dropped caption failed).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urljoin, urlsplit

from lxml import etree

# Tokens that are words: letters only once edge punctuation is stripped ("Tower," is a word, "2011" is not).
EDGE_PUNCTUATION = "\"'.,;:!?()[]{}<>«»“”‘’-–—/|"
LETTERS = re.compile(r"^[^\W\d_]+(?:['’-][^\W\d_]+)*$")
# Extensions an image's file name may end with, possibly several (MediaWiki renders `x.svg` as `x.svg.png`).
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".gif", ".bmp", ".webp", ".svg", ".svgz",
                            ".tif", ".tiff", ".ico", ".avif", ".jp2"})
VECTOR_SUFFIXES = frozenset({".svg", ".svgz"})
# The words of a file name: runs of letters and digits, an inner apostrophe kept (`You_Don't_Know_Me`).
NAME_WORDS = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
# Size marks of wiki and CMS thumbnails, not words of the name: MediaWiki prefixes the width
# (`220px-Eiffel_Tower.jpg`), WordPress suffixes width x height (`eiffel-tower-300x200.jpg`).
SIZE_PREFIX = re.compile(r"^\d+px-", re.IGNORECASE)
SIZE_SUFFIX = re.compile(r"-\d+x\d+$", re.IGNORECASE)
# Wiki file names run words together in CamelCase (`EleanorRigbyStatue`, `HallelujahILoveHerSo`),
# years too (`RayCharlesGreatestHits_1962ABC`, `Live_1987AtlanticRecords`).
CAMEL_CASE = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=(?<![A-Za-z0-9])\d{4})(?=[A-Z])")
# What sites write when they have nothing to say about an image ...
BOILERPLATE_WORDS = frozenset({
    "image", "images", "img", "photo", "photos", "picture", "pic", "thumbnail", "thumb", "untitled",
    "loading", "arrow", "graphic", "jpg", "jpeg", "png", "gif", "click", "here", "enlarge", "a", "an", "the",
    "of", "this", "to", "see", "view", "larger",
})
# ... and words that say the image is page furniture, not content, wherever they stand; file names
# also use the short forms of web templates.
FURNITURE_WORDS = frozenset({"logo", "icon", "banner", "button", "spacer", "placeholder", "avatar", "sprite",
                             "loader"})
FURNITURE_FILE_WORDS = FURNITURE_WORDS | {"btn", "nav", "navbar", "mainnav", "menu", "bullet"}
# Names a content-management system generates say which rendition a file is, not what it shows:
# rendition words (`..._thumb_m.jpg`, `uci-stock-default.jpg`), one-letter size marks (`desk-jobs-w.jpg`)
# and codes (`upe2`, `130515`, `06`); a name a person gave (`Eleanor_Rigby_Statue.jpg`) has none.
RENDITION_WORDS = frozenset({"thumb", "thumbs", "thumbnail", "tn", "default", "profile", "grid", "crop", "cropped",
                             "hero", "promo", "teaser", "pic", "pics", "img", "image", "photo", "copy", "sm", "lg",
                             "xl", "hires", "lowres"})
ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th|s)$")  # `1st`, `1960s`: words with digits, not codes
# A furniture word names the image in a label ("ACME logo"); a description may mention one ("The
# banner reads ..."): it counts in texts of fewer tokens than this.
LABEL_TOKENS = 8
CAPTION_CLASS = re.compile(r"caption", re.IGNORECASE)
CAPTION_SEARCH_DEPTH = 3  # ancestors of an <img> searched for a caption element
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
SHOWN_WORDS = re.compile(r"[^\W_]+")
# A link's last segment that names a folder's home page, not a page of its own.
INDEX_PAGE = re.compile(r"^(?:index|default|home)(?:\.\w+)?$", re.IGNORECASE)
SECTION_NAME = re.compile(r"^[^\W\d_]+$")  # `floor`, `engage`; a story's slug has hyphens, digits or a suffix
KINDS = ("alt", "title", "caption", "filename")


@dataclass(frozen=True)
class CaptionFilter:
    """The default filter of `text.captions` (config.schema.yaml documents each key)."""

    min_words: int = 2
    min_filename_words: int = 3
    max_words: int = 120
    min_word_share: float = 0.5
    max_same_on_page: int = 3
    min_image_side: int = 60
    max_image_aspect: float = 3.0
    max_pages: int = 4
    max_images: int = 4
    min_headline_words: int = 4

    @classmethod
    def from_config(cls, text: dict) -> "CaptionFilter":
        captions = text["captions"]
        return cls(**{name: captions[name] for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class ImageFile:
    """What an image's address says of its file."""

    key: str  # the file's name, lowercased, without size marks: the same file whatever its thumbnail
    words: str  # the words of its name: the `filename` caption ("" when it has no letters)
    drawing: bool  # a vector drawing (SVG), maybe served rendered (`Star_full.svg.png`)
    furniture: bool  # a word of its name says page furniture (logo, icon, btn, nav, ...)
    generated: bool = False  # its name is a content-management system's (rendition words, size marks, codes)


NO_FILE = ImageFile("", "", False, False)


def enclosing_caption(img: etree._Element) -> str:
    """The text of the caption element around an <img> (`caption_element`), "" if none."""
    element = caption_element(img)
    return "" if element is None else text_of(element)


def caption_element(img: etree._Element) -> etree._Element | None:
    """The caption around an <img>: its figure's <figcaption>, its table's <caption>, or the nearest
    element with a caption class within a few ancestors (not one that holds the image itself)."""
    figure = next(img.iterancestors("figure"), None)
    if figure is not None:
        for figcaption in figure.iter("figcaption"):
            return figcaption
    table = next(img.iterancestors("table"), None)
    if table is not None:
        for caption in table.iterchildren("caption"):
            return caption
    for depth, ancestor in enumerate(img.iterancestors()):
        if depth >= CAPTION_SEARCH_DEPTH:
            break
        for element in ancestor.iterchildren():  # beside the image's branch, as MediaWiki's thumbcaption
            if isinstance(element.tag, str) and CAPTION_CLASS.search(element.get("class", "")) \
                    and img not in element.iter("img"):
                return element
    return None


def holds_heading(element: etree._Element | None) -> bool:
    """Whether a caption element holds a heading: a story's teaser block (date, section, headline,
    summary), which says what the story is about, not what the picture shows."""
    return element is not None and next(element.iter(*HEADINGS), None) is not None


def shown_form(text: str) -> str:
    """A text as compared with what the page shows: its words, case folded."""
    return " ".join(SHOWN_WORDS.findall(text.casefold()))


def link_of(img: etree._Element) -> str:
    """The href of the link an <img> is in, as written ("" if none)."""
    link = next(img.iterancestors("a"), None)
    return "" if link is None else link.get("href", "").strip()


def links_to_section(href: str, base: str) -> bool:
    """Whether a link leads to a site's home or a top-level section (`/`, `/floor/`, `index.html`):
    a picture that links there is a navigation tile or the site's own advert; a story's picture
    links to the story, deeper. A relative link is read as written when the page's address is no
    web address (a saved page: the site's root is unknown)."""
    if not href or href.startswith("#"):
        return False
    try:
        address = urlsplit(urljoin(base, href) if urlsplit(base).scheme in ("http", "https") else href)
    except ValueError:
        return False
    if address.scheme not in ("", "http", "https"):
        return False
    segments = [segment for segment in address.path.split("/") if segment not in ("", ".", "..")]
    if segments and INDEX_PAGE.match(segments[-1]):
        segments.pop()
    return not segments or (len(segments) == 1 and SECTION_NAME.match(segments[0]) is not None)


def text_of(element: etree._Element) -> str:
    """An element's text, whitespace collapsed."""
    return " ".join("".join(element.itertext()).split())


@functools.lru_cache(maxsize=1 << 16)  # interface files recur on every page
def image_file(img_src: str) -> ImageFile:
    """The file an image's address names: `//upload.wikimedia.org/.../220px-Eiffel_Tower_2011.jpg`
    has the key `eiffel_tower_2011.jpg` and the words `Eiffel Tower 2011`; every trailing image
    extension goes (`Star_full.svg.png`, a rendered SVG, gives `Star full`, a drawing)."""
    try:
        address = urlsplit(img_src.strip())
    except ValueError:
        return NO_FILE
    if address.scheme == "data":  # the image is in the address: no file, no name
        return NO_FILE
    stem, suffixes = PurePosixPath(unquote(address.path)).name, ""
    while PurePosixPath(stem).suffix.lower() in IMAGE_SUFFIXES:
        suffixes = PurePosixPath(stem).suffix.lower() + suffixes
        stem = PurePosixPath(stem).stem
    stem = SIZE_SUFFIX.sub("", SIZE_PREFIX.sub("", stem))
    words = [word for part in NAME_WORDS.findall(stem) for word in CAMEL_CASE.split(part)]
    text = " ".join(words)
    return ImageFile(
        key=(stem + suffixes).lower() if stem else "",
        words=text if any(char.isalpha() for char in text) else "",
        drawing=any(suffix in suffixes for suffix in VECTOR_SUFFIXES),
        furniture=any(word.lower() in FURNITURE_FILE_WORDS for word in words),
        generated=any(_generated_token(word) for word in words),
    )


def _generated_token(token: str) -> bool:
    """A token of a file name that a content-management system wrote: a rendition word, a
    one-letter size mark (`a` and `I` are words), or a code (letters with digits, a number of five
    digits or more or with a leading zero; `2011`, `1st` and `1960s` are words)."""
    lowered = token.lower()
    if lowered in RENDITION_WORDS:
        return True
    if len(token) == 1:
        return token.isalpha() and lowered not in ("a", "i")
    if not any(char.isdigit() for char in token):
        return False
    if token.isdigit():
        return len(token) >= 5 or token.startswith("0")
    return ORDINAL.match(lowered) is None


def filename_words(img_src: str) -> str:
    """The words of an image's file name: `Eiffel_Tower_2011.jpg` -> `Eiffel Tower 2011`."""
    return image_file(img_src).words


def occurrence_captions(attributes: dict[str, str], caption: str, img_src: str) -> dict[str, str]:
    """The non-empty caption texts of one <img> occurrence, by kind, whitespace collapsed."""
    texts = {"alt": attributes.get("alt", ""), "title": attributes.get("title", ""), "caption": caption,
             "filename": image_file(img_src).words if img_src else ""}
    return {kind: " ".join(text.split()) for kind, text in texts.items() if text and text.strip()}


def page_text_counts(images) -> Counter:
    """(kind, text) -> how many <img> of the page carry it (file names aside: they name the file)."""
    counts: Counter = Counter()
    for element in images:
        for kind, text in occurrence_captions(element.attributes, element.caption, "").items():
            counts[(kind, text)] += 1
    return counts


def page_texts(page_id: str, images, first_src) -> list[dict]:
    """The `caption_texts` rows of a page: each distinct (kind, text, file) of its <img> elements, what
    the collection-wide counts count. `first_src(element)`: the address the element shows."""
    seen: dict[tuple[str, str, str], None] = {}
    for element in images:
        src = first_src(element)
        key = image_file(src).key
        for kind, text in occurrence_captions(element.attributes, element.caption, src).items():
            seen[(kind, text, key)] = None
    return [{"page_id": page_id, "kind": kind, "text": text, "file": key} for kind, text, key in seen]


def caption_row(image_id: str, page_id: str, kind: str, text: str, same_on_page: int,
                size: tuple[int, int] | None = None, file: ImageFile | None = None, *,
                headline: bool = False, teaser: bool = False, section_link: bool = False) -> dict:
    """A candidate row: the measures one page and the images table give (the counts over the
    collection and the verdict come with `filter_row`). `headline`: an alt or title the page also
    shows as a link or heading; `teaser`: a caption element that holds a heading; `section_link`:
    the image links to a site's home or a top-level section."""
    tokens = [token.strip(EDGE_PUNCTUATION) for token in text.split()]
    tokens = [token for token in tokens if token]
    words = sum(1 for token in tokens if LETTERS.match(token))
    lowered = [token.lower() for token in tokens]
    boilerplate = bool(tokens) and (all(token in BOILERPLATE_WORDS for token in lowered)
                                    or (len(tokens) < LABEL_TOKENS and any(token in FURNITURE_WORDS for token in lowered))
                                    or any(_is_file_name(token) for token in lowered))
    file = file or NO_FILE
    return {"image_id": image_id, "page_id": page_id, "kind": kind, "text": text, "words": words,
            "word_share": words / len(tokens) if tokens else 0.0, "boilerplate": boilerplate,
            "same_on_page": same_on_page, "width": size[0] if size else None, "height": size[1] if size else None,
            "drawing": file.drawing, "furniture_file": file.furniture, "generated_file": file.generated,
            "headline": headline, "teaser": teaser, "section_link": section_link, "file": file.key}


def _is_file_name(token: str) -> bool:
    """A token that is an image's file name (`us_sed.jpg`): a page that names its images by file."""
    return PurePosixPath(token).suffix in IMAGE_SUFFIXES and len(token) > len(PurePosixPath(token).suffix)


def filter_row(row: dict, text_pages: int, text_images: int, file_pages: int, rules: CaptionFilter) -> dict:
    """The final `page_captions` row of a candidate: its counts over the collection, keep and reason."""
    row = {**row, "text_pages": text_pages, "text_images": text_images, "file_pages": file_pages}
    reason = dropped_because(row, rules)
    row.update(keep=reason is None, reason=reason)
    return row


def dropped_because(row: dict, rules: CaptionFilter) -> str | None:
    """The first test of the default filter a caption fails: what the file is, the image's size,
    the words, where the page puts it, then repetition on the page and across the collection;
    None if it passes."""
    filename = row["kind"] == "filename"
    width, height = row["width"], row["height"]
    if row["boilerplate"]:
        return "boilerplate"
    if row["furniture_file"]:
        return "furniture file"
    if filename and row["drawing"]:
        return "drawing"  # its name names a symbol (a star, a flag, a logo), not what a photo shows
    if width is not None and height is not None:
        if min(width, height) < rules.min_image_side:
            return "image too small"
        if max(width, height) > rules.max_image_aspect * min(width, height):
            return "image too elongated"
    if row["words"] < (rules.min_filename_words if filename else rules.min_words):
        return "too short"
    if row["words"] > rules.max_words:
        return "too long"
    if row["word_share"] < rules.min_word_share:
        return "few words"
    if filename and row["generated_file"]:
        return "generated file name"
    if row["headline"] and row["words"] >= rules.min_headline_words:
        return "headline"  # shorter ones are names: a portrait titled with the person the page links to
    if row["teaser"]:
        return "teaser"
    if row["section_link"]:
        return "navigation link"
    if row["same_on_page"] > rules.max_same_on_page:
        return "repeated on the page"
    if row["text_pages"] > rules.max_pages:
        return "repeated across pages"
    if row["file_pages"] > rules.max_pages:
        return "image on many pages"
    if row["text_images"] > rules.max_images:
        return "text of many images"
    return None
