"""Near-image text features (Villegas and Paredes 2014, section 2.3, equation 1; DOM factors
after La Cascia et al. 1998).

A page becomes one sequence of words in document order (tags and attributes
are not words), each with its DOM factor: title, headings and anchor text
weigh more than body text. For every occurrence of an image in a page, a
word n at word distance d from the image contributes F(n) * sigm(d), with
sigm(d) = min + (max - min) / (1 + exp(slope * (d - centre))), if it lies
within `window` words of the image or is in the page title; the image's own
alt/title attributes and the words of its file name contribute at d = 0.
An image's term scores are summed over all its occurrences and pages,
normalised to sum 1, and the best `top_terms` kept.
"""

from __future__ import annotations

import html
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import numpy as np
from lxml import etree

from annobench.sources.page_images import ImageElement, candidate_urls, normalise_url, picture_sources
from annobench.sources.pages import Page
from annobench.text.captions import caption_element, holds_heading, link_of, shown_form, text_of

# Letters and digits of any script; underscores and punctuation separate words.
WORD = re.compile(r"[^\W_]+")
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


@dataclass(frozen=True)
class TextParams:
    window: int = 600
    centre: float = 35.0
    slope: float = 0.15
    minimum: float = 1.0
    maximum: float = 10.0
    title: float = 2.0
    alt: float = 3.0
    src: float = 2.0
    heading: float = 1.5
    anchor: float = 1.5
    body: float = 1.0
    lowercase: bool = True
    min_term_length: int = 2
    max_term_length: int = 40
    drop_numbers: bool = True
    top_terms: int = 100
    stopwords: frozenset[str] = frozenset()

    @classmethod
    def from_config(cls, text: dict) -> "TextParams":
        sigmoid, factors = text["sigmoid"], text["factors"]
        stopwords = frozenset()
        if text["stopwords_file"]:
            words = Path(text["stopwords_file"]).read_text(encoding="utf-8").split()
            stopwords = frozenset(w.lower() if text["lowercase"] else w for w in words)
        return cls(
            window=text["window"], centre=sigmoid["centre"], slope=sigmoid["slope"],
            minimum=sigmoid["min"], maximum=sigmoid["max"], title=factors["title"], alt=factors["alt"],
            src=factors["src"], heading=factors["heading"], anchor=factors["anchor"], body=factors["body"],
            lowercase=text["lowercase"], min_term_length=text["min_term_length"],
            max_term_length=text["max_term_length"], drop_numbers=text["drop_numbers"],
            top_terms=text["top_terms"], stopwords=stopwords,
        )

    def sigm(self, distance: np.ndarray) -> np.ndarray:
        exponent = np.clip(self.slope * (distance - self.centre), -700.0, 700.0)  # no overflow far away
        return self.minimum + (self.maximum - self.minimum) / (1.0 + np.exp(exponent))


@dataclass
class PageWords:
    vocabulary: list[str]
    term_ids: np.ndarray  # per word occurrence; word n is at position n
    factors: np.ndarray
    title_words: np.ndarray  # positions of the words inside <title>
    images: list[ImageElement] = field(default_factory=list)
    link_texts: frozenset[str] = frozenset()  # what the page's links and headings say (`shown_form`)


def terms_of(text: str, params: TextParams) -> list[str]:
    words = WORD.findall(text.lower() if params.lowercase else text)
    return [
        w for w in words
        if params.min_term_length <= len(w) <= params.max_term_length
        and not (params.drop_numbers and w.isdigit())
        and w not in params.stopwords
    ]


def page_words(page: Page, params: TextParams) -> PageWords:
    """All words of the page in document order with their DOM factors, its <img> elements, and the
    texts of its links and headings."""
    vocabulary: dict[str, int] = {}
    ids, factors, titles, images, link_texts = [], [], [], [], set()
    context = {"title": 0, "heading": 0, "anchor": 0}

    def add(text: str | None) -> None:
        if not text:
            return
        in_title = context["title"] > 0
        factor = params.title if in_title else max(
            params.heading if context["heading"] else params.body, params.anchor if context["anchor"] else params.body
        )
        for term in terms_of(text, params):
            ids.append(vocabulary.setdefault(term, len(vocabulary)))
            factors.append(factor)
            titles.append(in_title)

    for event, element in etree.iterwalk(page.root, events=("start", "end")):
        tag = element.tag.lower() if isinstance(element.tag, str) else ""
        kind = "title" if tag == "title" else "heading" if tag in HEADINGS else "anchor" if tag == "a" else None
        if event == "start":
            if kind:
                context[kind] += 1
                if kind != "title":
                    link_texts.add(shown_form("".join(element.itertext())))
            if tag == "img":
                images.append(image_element(element, len(ids)))
            add(element.text)
        else:
            if kind:
                context[kind] -= 1
            add(element.tail)
    return PageWords(
        vocabulary=list(vocabulary),
        term_ids=np.asarray(ids, dtype=np.int64),
        factors=np.asarray(factors, dtype=np.float64),
        title_words=np.flatnonzero(np.asarray(titles, dtype=bool)),
        images=images,
        link_texts=frozenset(link_texts),
    )


def image_element(img: etree._Element, position: int) -> ImageElement:
    """An <img> as the text stage keeps it: its attributes and alternatives, its caption, its link."""
    caption = caption_element(img)
    return ImageElement(position, dict(img.attrib), picture_sources(img),
                        "" if caption is None else text_of(caption),
                        holds_heading(caption), link_of(img))


class ImageAddresses:
    """Every address of a page's <img> elements, as written and resolved against the page's base,
    indexed once: finding each mapped image of the page is then a lookup, not a pass that resolves
    every address of the page again (a page of 100 images and 20 mapped ones resolved 2,000)."""

    def __init__(self, images: list[ImageElement], base: str):
        self.images, self.base = images, base
        self.written: dict[str, list[int]] = defaultdict(list)
        self.resolved: dict[str, list[int]] = defaultdict(list)
        for index, element in enumerate(images):
            for url in candidate_urls(element):
                self.written[url].append(index)
                normalised = _normalised_or_none(url, base)
                if normalised is not None:
                    self.resolved[normalised].append(index)

    def occurrences(self, img_src: str) -> list[ImageElement]:
        """The elements that show `img_src`, in document order: as written, HTML-unescaped (an
        address copied from the HTML source keeps its `&amp;`), each also resolved against the base."""
        forms = _written_forms(img_src)
        resolved = {_normalised_or_none(form, self.base) for form in forms} - {None}
        hits = {index for form in forms for index in self.written.get(form, ())}
        hits.update(index for url in resolved for index in self.resolved.get(url, ()))
        return [self.images[index] for index in sorted(hits)]


def _written_forms(img_src: str) -> list[str]:
    """img_src as written, then HTML-unescaped if that differs (as the parsed page holds it)."""
    written = img_src.strip()
    unescaped = html.unescape(written)
    return [written] if unescaped == written else [written, unescaped]


def _normalised_or_none(url: str, base: str) -> str | None:
    """normalise_url, or None for an address urllib cannot parse (a page may hold "http://[")."""
    try:
        return normalise_url(url, base)
    except ValueError:
        return None


def not_found_reason(img_src: str, base: str) -> str:
    """The rejects reason when `ImageAddresses.occurrences` found nothing: which forms were looked for, where."""
    forms = _written_forms(img_src)
    tried = ["as written"] + [f'HTML-unescaped "{form}"' for form in forms[1:]]
    resolved = [_normalised_or_none(form, base) for form in forms]
    shown = " and ".join(f'"{url}"' if url is not None else "(not a valid URL)" for url in resolved)
    tried.append(f'resolved against "{base}" as {shown}')
    return (
        f"img_src not found in the page (tried: {'; '.join(tried)}; looked in <img> src, srcset and "
        "lazy-load attributes, <picture> sources and <noscript>)"
    )


def occurrence_scores(words: PageWords, element: ImageElement, params: TextParams) -> dict[str, float]:
    """Term -> F * sigm(d) summed over the words near one occurrence, plus its own attributes."""
    # The words within the window, and the title's words outside it: nothing else is read.
    start = max(0, element.position - params.window)
    stop = min(len(words.term_ids), element.position + params.window + 1)
    title = words.title_words[(words.title_words < start) | (words.title_words >= stop)]
    kept = np.concatenate([np.arange(start, stop), title])
    distance = np.abs(kept - element.position).astype(np.float64)
    weights = words.factors[kept] * params.sigm(distance)
    sums = np.bincount(words.term_ids[kept], weights=weights, minlength=len(words.vocabulary))
    scores = {words.vocabulary[i]: float(sums[i]) for i in np.flatnonzero(sums)}
    at_image = float(params.sigm(np.array(0.0)))
    own = [(params.alt, element.attributes.get(a, "")) for a in ("alt", "title")]
    for url in candidate_urls(element)[:1]:
        own.append((params.src, PurePosixPath(urlsplit(url).path).stem))
    for factor, text in own:
        for term in terms_of(unquote(text), params):
            scores[term] = scores.get(term, 0.0) + factor * at_image
    return scores


def top_terms(scores: dict[str, float], params: TextParams) -> list[tuple[str, float]]:
    """Normalised to sum 1 over all terms, best first (ties by term), the first `top_terms`."""
    total = math.fsum(scores.values())
    if total <= 0:
        return []
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[: params.top_terms]
    return [(term, score / total) for term, score in ranked]


def scofeat_line(image_id: str, terms: list[tuple[str, float]], scale: int = 100_000) -> str:
    """WEBUPV's legacy form: `image_id nterms term score ...`, integer scores summing to <= scale."""
    integers = [(term, int(score * scale)) for term, score in terms]
    integers = [(term, value) for term, value in integers if value > 0]
    return " ".join([image_id, str(len(integers))] + [f"{term} {value}" for term, value in integers])
