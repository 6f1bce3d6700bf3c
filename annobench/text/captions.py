"""Captions a page gives its images: the noisy descriptions web-scale caption sets are built from.

For each occurrence of a mapped image in a page, up to four texts, each a
`page_captions` row with its kind: the `alt` and `title` attributes of the
<img>, the `caption` around it (the <figcaption> of its <figure>, the
<caption> of its table, or an element whose class names a caption beside
the image's branch within three ancestors, as MediaWiki's `thumbcaption`),
and the words of its `filename`. They come
from the parse the text features already made (page_words keeps each <img>'s
caption), never from a second one.

Every row records what a caption-set builder filters on: its length in
words, the share of its tokens that are words, whether it is boilerplate
(only placeholder words: "image", "photo", "click here", ...; or a word of
page furniture anywhere: "logo", "icon", "banner", ...), and how many <img> of the
page carry the same text of that kind (a text shared by many images names
none of them). `keep` applies the default filter of `text.captions`, and
`reason` says which test a dropped caption failed first.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from lxml import etree

# Tokens that are words: letters only once edge punctuation is stripped ("Tower," is a word, "2011" is not).
EDGE_PUNCTUATION = "\"'.,;:!?()[]{}<>«»“”‘’-–—/|"
LETTERS = re.compile(r"^[^\W\d_]+(?:['’-][^\W\d_]+)*$")
# Extensions an image's file name may end with, possibly several (MediaWiki renders `x.svg` as `x.svg.png`).
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".gif", ".bmp", ".webp", ".svg", ".tif",
                            ".tiff", ".ico", ".avif", ".jp2"})
FILENAME_SEPARATORS = re.compile(r"[\W_]+")
# What sites write when they have nothing to say about an image ...
BOILERPLATE_WORDS = frozenset({
    "image", "images", "img", "photo", "photos", "picture", "pic", "thumbnail", "thumb", "untitled",
    "loading", "arrow", "graphic", "jpg", "jpeg", "png", "gif", "click", "here", "enlarge", "a", "an", "the",
    "of", "this", "to", "see", "view", "larger",
})
# ... and words that say the image is page furniture, not content, wherever they stand.
FURNITURE_WORDS = frozenset({"logo", "icon", "banner", "button", "spacer", "placeholder", "avatar", "sprite",
                             "loader"})
CAPTION_CLASS = re.compile(r"caption", re.IGNORECASE)
CAPTION_SEARCH_DEPTH = 3  # ancestors of an <img> searched for a caption element
KINDS = ("alt", "title", "caption", "filename")


@dataclass(frozen=True)
class CaptionFilter:
    """The default filter of `text.captions` (config.schema.yaml documents each key)."""

    min_words: int = 2
    max_words: int = 50
    min_word_share: float = 0.5
    max_same_on_page: int = 3

    @classmethod
    def from_config(cls, text: dict) -> "CaptionFilter":
        captions = text["captions"]
        return cls(captions["min_words"], captions["max_words"], captions["min_word_share"],
                   captions["max_same_on_page"])


def enclosing_caption(img: etree._Element) -> str:
    """The caption around an <img>: its figure's <figcaption>, its table's <caption>, or the nearest
    element with a caption class within a few ancestors (not one that holds the image itself)."""
    figure = next(img.iterancestors("figure"), None)
    if figure is not None:
        for figcaption in figure.iter("figcaption"):
            return _text_of(figcaption)
    table = next(img.iterancestors("table"), None)
    if table is not None:
        for caption in table.iterchildren("caption"):
            return _text_of(caption)
    for depth, ancestor in enumerate(img.iterancestors()):
        if depth >= CAPTION_SEARCH_DEPTH:
            break
        for element in ancestor.iterchildren():  # beside the image's branch, as MediaWiki's thumbcaption
            if isinstance(element.tag, str) and CAPTION_CLASS.search(element.get("class", "")) \
                    and img not in element.iter("img"):
                return _text_of(element)
    return ""


def _text_of(element: etree._Element) -> str:
    return " ".join("".join(element.itertext()).split())


def filename_words(img_src: str) -> str:
    """The words of an image's file name: `Eiffel_Tower_2011.jpg` -> `Eiffel Tower 2011`; every
    trailing image extension goes (`Star_full.svg.png`, a rendered SVG, -> `Star full`)."""
    try:
        path = urlsplit(img_src.strip()).path
    except ValueError:
        return ""
    stem = PurePosixPath(unquote(path)).name
    while PurePosixPath(stem).suffix.lower() in IMAGE_SUFFIXES:
        stem = PurePosixPath(stem).stem
    text = " ".join(part for part in FILENAME_SEPARATORS.split(stem) if part)
    return text if any(char.isalpha() for char in text) else ""


def occurrence_captions(attributes: dict[str, str], caption: str, img_src: str) -> dict[str, str]:
    """The non-empty caption texts of one <img> occurrence, by kind, whitespace collapsed."""
    texts = {"alt": attributes.get("alt", ""), "title": attributes.get("title", ""), "caption": caption,
             "filename": filename_words(img_src)}
    return {kind: " ".join(text.split()) for kind, text in texts.items() if text and text.strip()}


def page_text_counts(images) -> Counter:
    """(kind, text) -> how many <img> of the page carry it (file names aside: they name the file)."""
    counts: Counter = Counter()
    for element in images:
        for kind, text in occurrence_captions(element.attributes, element.caption, "").items():
            counts[(kind, text)] += 1
    return counts


def caption_row(image_id: str, page_id: str, kind: str, text: str, same_on_page: int,
                rules: CaptionFilter) -> dict:
    tokens = [token.strip(EDGE_PUNCTUATION) for token in text.split()]
    tokens = [token for token in tokens if token]
    words = sum(1 for token in tokens if LETTERS.match(token))
    share = words / len(tokens) if tokens else 0.0
    lowered = [token.lower() for token in tokens]
    boilerplate = bool(tokens) and (all(token in BOILERPLATE_WORDS for token in lowered)
                                    or any(token in FURNITURE_WORDS for token in lowered))
    reason = _dropped_because(words, share, boilerplate, same_on_page, rules)
    return {"image_id": image_id, "page_id": page_id, "kind": kind, "text": text, "words": words,
            "word_share": share, "boilerplate": boilerplate, "same_on_page": same_on_page,
            "keep": reason is None, "reason": reason}


def _dropped_because(words: int, share: float, boilerplate: bool, same_on_page: int,
                     rules: CaptionFilter) -> str | None:
    if boilerplate:
        return "boilerplate"
    if words < rules.min_words:
        return "too short"
    if words > rules.max_words:
        return "too long"
    if share < rules.min_word_share:
        return "few words"
    if same_on_page > rules.max_same_on_page:
        return "repeated on the page"
    return None
