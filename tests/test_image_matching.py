"""How a mapping's image is found in its page: <noscript> fallbacks (parsed or kept as
escaped text), <picture> sources, character references in img_src, the reason given when
nothing matches; and, on every real page, its first <img src> as written in the source."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from lxml import etree

from annobench.sources.page_images import candidate_urls, page_base
from annobench.sources.pages import PageLimits, decode_page, parse_html, read_page
from annobench.text.features import (
    ImageAddresses,
    TextParams,
    _normalised_or_none,
    _written_forms,
    not_found_reason,
    page_words,
)
from annobench.text.stage import extract_text, read_mapping
from helpers import REAL, require_shared

PAGES = REAL / "pages"
PARAMS = TextParams()
LIMITS = PageLimits()

LOOKED_IN = "looked in <img> src, srcset and lazy-load attributes, <picture> sources and <noscript>)"


def read_markup(tmp_path: Path, markup: str, name: str = "page.html"):
    (tmp_path / name).write_text(markup, encoding="utf-8")
    return read_page(name, tmp_path / name, LIMITS)


def found(page, img_src: str):
    words = page_words(page, PARAMS)
    return words, ImageAddresses(words.images, page_base(page, "")).occurrences(img_src)


def words_before(words, element) -> list[str]:
    return [words.vocabulary[i] for i in words.term_ids[: element.position]]


def only_noscript(markup: str) -> etree._Element:
    """The page's one <noscript> as libxml2's HTML parser leaves it (before cleaning)."""
    (noscript,) = parse_html(markup).iter("noscript")
    return noscript


# --- <noscript> -------------------------------------------------------------------------

LAZY_GALLERY = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Harbour gallery</title></head>
<body><h1>Evening at the harbour</h1>
<p>The sun sets behind the lighthouse.</p>
<img class="lazyload" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" data-src="/photos/sunset-800.jpg">
<noscript><img src="/photos/sunset.jpg" alt="Sunset at the harbour">
Please enable JavaScript to see the gallery.</noscript>
<p>Fishing boats come back at dusk.</p>
</body></html>"""


def test_noscript_in_body_is_parsed_into_elements_and_its_image_found_where_it_stands(tmp_path):
    # libxml2 parses a <noscript> in <body> as markup: the <img> is a child element.
    assert [child.tag for child in only_noscript(LAZY_GALLERY)] == ["img"]
    page = read_markup(tmp_path, LAZY_GALLERY)
    words, (element,) = found(page, "/photos/sunset.jpg")
    assert element.attributes["alt"] == "Sunset at the harbour"
    assert words_before(words, element)[-3:] == ["behind", "the", "lighthouse"]
    assert words.vocabulary[words.term_ids[element.position]] == "fishing"
    # The noscript's own text is still not page text.
    assert not {"please", "enable", "javascript"} & set(words.vocabulary)
    assert "enable JavaScript" not in page.to_xml()


TRACKING_PIXEL_IN_HEAD = """<html><head><meta charset="utf-8"><title>Weekly market report</title>
<noscript><img height="1" width="1" style="display:none" src="/pixel/view.gif" alt=""/></noscript>
<link rel="stylesheet" href="/css/site.css"></head>
<body><p>Prices of grain rose again this week.</p></body></html>"""


def test_noscript_in_head_is_parsed_into_elements_and_its_image_found(tmp_path):
    noscript = only_noscript(TRACKING_PIXEL_IN_HEAD)
    assert noscript.getparent().tag == "head" and [child.tag for child in noscript] == ["img"]
    page = read_markup(tmp_path, TRACKING_PIXEL_IN_HEAD)
    words, (element,) = found(page, "/pixel/view.gif")
    assert words_before(words, element) == ["weekly", "market", "report"]


# Pages saved from a live DOM (as heise's and the dataset_popular *.dom.html pages) hold
# the noscript's content as escaped text, which libxml2 keeps as the noscript's text.
ESCAPED_IN_BODY = """<html><head><title>Password managers</title></head><body>
<p>One time passwords for the Mac.</p>
<noscript>&lt;img id="avw_pixel" src="/avw-bin/ivw/CP/0.gif?a=1&amp;amp;b=2" alt="counter"&gt;</noscript>
<p>The app generates codes offline.</p></body></html>"""
ESCAPED_IN_HEAD = """<html><head><title>Password managers</title>
<noscript>&lt;div&gt;&lt;picture&gt;&lt;source srcset="/ads/banner.webp 1x"&gt;
&lt;img src="/ads/banner.jpg"&gt;&lt;/picture&gt; advertisement&lt;/div&gt;</noscript>
</head><body><p>One time passwords for the Mac.</p></body></html>"""


@pytest.mark.parametrize("markup, img_src, words_first", [
    (ESCAPED_IN_BODY, "/avw-bin/ivw/CP/0.gif?a=1&b=2",
     ["password", "managers", "one", "time", "passwords", "for", "the", "mac"]),
    (ESCAPED_IN_HEAD, "/ads/banner.webp", ["password", "managers"]),
], ids=["body", "head"])
def test_noscript_markup_kept_as_escaped_text_is_parsed_as_a_fragment(tmp_path, markup, img_src, words_first):
    noscript = only_noscript(markup)
    assert len(noscript) == 0 and noscript.text.lstrip().startswith("<")
    page = read_markup(tmp_path, markup)
    words, (element,) = found(page, img_src)
    assert words_before(words, element) == words_first
    assert not {"advertisement", "counter"} & set(words.vocabulary)
    assert "&lt;" not in page.to_xml()


def test_noscript_images_with_attributes_xml_cannot_hold_leave_well_formed_xml(tmp_path):
    markup = """<html><head><title>Odd attributes</title></head><body><p>Counters below.</p>
<noscript><img src="/a.gif" 1x="2" data-note="bell\x07here"></noscript>
<noscript>&lt;img src="/b.gif" bad"name="x" xmlns="urn:x" alt="counter"&gt;</noscript></body></html>"""
    xml = read_markup(tmp_path, markup).to_xml()
    root = etree.fromstring(xml.encode(), etree.XMLParser(resolve_entities=False, no_network=True))
    assert not root.xpath("//noscript")
    assert [dict(img.attrib) for img in root.iter("img")] == [
        {"src": "/a.gif", "data-note": "bellhere"}, {"src": "/b.gif", "alt": "counter"}]


# --- <picture> ----------------------------------------------------------------------------

PICTURE = """<html><head><title>Mountain huts</title></head><body><p>A hut below the glacier.</p>
<picture>
  <source media="(min-width: 900px)" type="image/webp" srcset="/img/hut-1600.webp 1600w, /img/hut-900.webp 900w">
  <source data-srcset="/img/hut-lazy.jpg 1x">
  <source src="/img/hut.avif" type="image/avif">
  <img src="/img/hut-640.jpg" alt="The hut in winter">
</picture>
<p>Open from June to September.</p></body></html>"""


@pytest.mark.parametrize("img_src", ["/img/hut-1600.webp", "/img/hut-900.webp", "/img/hut-lazy.jpg", "/img/hut.avif",
                                     "/img/hut-640.jpg"])
def test_the_addresses_of_a_pictures_sources_are_addresses_of_its_img(tmp_path, img_src):
    words, (element,) = found(read_markup(tmp_path, PICTURE), img_src)
    assert element.attributes["src"] == "/img/hut-640.jpg"
    assert candidate_urls(element)[0] == "/img/hut-640.jpg"  # its own src first: the file-name words
    assert words_before(words, element)[-2:] == ["the", "glacier"]


def test_a_picture_inside_noscript_keeps_its_sources(tmp_path):
    markup = PICTURE.replace("<picture>", "<noscript><picture>").replace("</picture>", "</picture></noscript>")
    words, (element,) = found(read_markup(tmp_path, markup), "/img/hut-900.webp")
    assert element.attributes["alt"] == "The hut in winter"


# --- character references in img_src ---------------------------------------------------

THUMBNAIL = """<html><head><title>Recipes</title></head><body><p>Lemon tart</p>
<img src="/thumbs/tart.jpg?w=300&amp;h=200" alt="Lemon tart">
<img src="/thumbs/pie.jpg?w=300&amp;amp;h=200" alt="Apple pie"></body></html>"""


@pytest.mark.parametrize("img_src, alt", [
    ("/thumbs/tart.jpg?w=300&amp;h=200", "Lemon tart"),  # as written in the HTML source
    ("/thumbs/tart.jpg?w=300&h=200", "Lemon tart"),  # as the parsed page holds it (matched before too)
    ("file:///thumbs/tart.jpg?w=300&amp;h=200", "Lemon tart"),  # unescaped, then resolved
    ("/thumbs/pie.jpg?w=300&amp;amp;h=200", "Apple pie"),
    ("/thumbs/pie.jpg?w=300&amp;h=200", "Apple pie"),  # the parsed value, written as is
])
def test_img_src_with_character_references_matches_its_unescaped_form(tmp_path, img_src, alt):
    _, (element,) = found(read_markup(tmp_path, THUMBNAIL), img_src)
    assert element.attributes["alt"] == alt


def test_an_address_urllib_cannot_parse_does_not_stop_the_matching(tmp_path):
    markup = THUMBNAIL.replace('<img src="/thumbs/tart', '<img src="http://[broken"><img src="/thumbs/tart')
    _, (element,) = found(read_markup(tmp_path, markup), "/thumbs/tart.jpg?w=300&amp;h=200")
    assert element.attributes["alt"] == "Lemon tart"
    assert found(read_markup(tmp_path, markup), "http://[other")[1] == []


def test_not_found_reason_says_which_forms_were_tried():
    base = "http://news.example.org/2024/story.html"
    assert not_found_reason("../img/a.jpg?w=1&amp;h=2", base) == (
        'img_src not found in the page (tried: as written; HTML-unescaped "../img/a.jpg?w=1&h=2"; '
        f'resolved against "{base}" as "http://news.example.org/img/a.jpg?w=1&amp;h=2" and '
        f'"http://news.example.org/img/a.jpg?w=1&h=2"; {LOOKED_IN}'
    )
    assert not_found_reason(" photo.jpg ", base) == (
        f'img_src not found in the page (tried: as written; resolved against "{base}" as '
        f'"http://news.example.org/2024/photo.jpg"; {LOOKED_IN}'
    )


# --- the first <img src> of every real page ----------------------------------------------

# An <img ...> start tag with a src attribute, its value exactly as written (any quoting).
IMG_SRC = re.compile(
    r"""<img\b[^>]*?(?<![\w-])src\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\s"'>]+))""", re.IGNORECASE
)
# Source text in which `<img` is no element: comments, and the raw text of elements whose
# content is not markup (to their end tag, or the end of the file when it is missing).
NOT_MARKUP = re.compile(
    r"<!--(?:-?>|.*?(?:--!?>|\Z))"
    r"|<(?P<tag>script|style|textarea|title|xmp|iframe|noembed|noframes)\b[^>]*>.*?(?:</(?P=tag)\s*>|\Z)",
    re.IGNORECASE | re.DOTALL,
)
NOSCRIPT = re.compile(r"<noscript\b[^>]*>.*?(?:</noscript\s*>|\Z)", re.IGNORECASE | re.DOTALL)

# The real pages whose first <img src> names no image of the page, and why (see names_no_image).
NBC_SCRIPT_PIXEL = (
    "../ad.doubleclick.net/activity%3Bsrc=2183402%3Btype=count651%3Bcat=msnbc778%3Bord=1%3Bnum="
    "'&#32;+&#32;a&#32;+&#32;'"
)
EXPECTED_NOT_FOUND = [
    # document.write('<img src="...num=' + a + '" ...>') in a <script>: written by a script, no element.
    ("dataset_popular/www.nbcnews.com/www.nbcnews.com/index.blocks.html", NBC_SCRIPT_PIXEL),
    ("dataset_popular/www.nbcnews.com/www.nbcnews.com/index.html", NBC_SCRIPT_PIXEL),
    # <img nopin="nopin" src="" ...> of the user menu: an empty src names no image.
    ("readability/buzzfeed-1/source.html", ""),
]


def real_pages() -> list[Path]:
    require_shared(PAGES / "readability")
    require_shared(PAGES / "dataset_popular")
    return sorted([*PAGES.glob("readability/*/source.html"), *PAGES.glob("dataset_popular/**/index*.html")])


def spans(pattern: re.Pattern, text: str) -> list[tuple[int, int]]:
    return [match.span() for match in pattern.finditer(text)]


def inside(offset: int, spans_of_text: list[tuple[int, int]]) -> bool:
    return any(start <= offset < end for start, end in spans_of_text)


def names_no_image(text: str, src: str) -> bool:
    """`src` is the address of no image of the parsed page: it is empty, or every
    <img src> of the source that has it lies in a comment or raw text."""
    not_markup = spans(NOT_MARKUP, text)
    same_src = [match for match in IMG_SRC.finditer(text) if src_of(match) == src]
    return not src.strip() or all(inside(match.start(), not_markup) for match in same_src)


def src_of(match: re.Match) -> str:
    return next(value for value in match.group("dq", "sq", "bare") if value is not None)


def test_the_first_img_of_every_real_page_is_found_unless_it_names_no_image(tmp_path):
    rows, expected_not_found, in_noscript = [], set(), set()
    for path in real_pages():
        text, _ = decode_page(path.read_bytes())
        match = IMG_SRC.search(text)
        if match is None:
            continue
        page_id, src = path.relative_to(PAGES).as_posix(), src_of(match)
        rows.append((page_id.replace("/", "__"), page_id, src))
        if names_no_image(text, src):
            expected_not_found.add((page_id, src))
        if inside(match.start(), spans(NOSCRIPT, text)):
            in_noscript.add(page_id)
    assert len(rows) > 100 and in_noscript  # the real pages do exercise <noscript>

    mapping = tmp_path / "mapping.csv"
    with open(mapping, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([("image_id", "page_id", "img_src"), *rows])
    result = extract_text(read_mapping(mapping), PAGES, PARAMS, LIMITS, log=lambda line: None)

    page_of = {image_id: (page_id, src) for image_id, page_id, src in rows}
    rejects = {(row["image_id"], row["reason"]) for row in result.tables["text_rejects"]}
    assert all(reason.startswith("img_src not found in the page") for _, reason in rejects), rejects
    not_found = {page_of[image_id] for image_id, _ in rejects}
    assert not_found == expected_not_found
    assert sorted(not_found) == sorted(EXPECTED_NOT_FOUND)
    assert not in_noscript & {page_id for page_id, _ in not_found}
    without_terms = {page_of[i][0] for i, terms in result.terms_by_image.items() if not terms} - {
        page_id for page_id, _ in not_found}
    assert all(page_has_no_words(page_id) for page_id in without_terms), without_terms


def page_has_no_words(page_id: str) -> bool:
    return len(page_words(read_page(page_id, PAGES / page_id, LIMITS), PARAMS).term_ids) == 0


def shows(element, img_src: str, base: str) -> bool:
    """The element shows img_src: one of its addresses is a written form of it, or resolves where
    one of them does (what every element of the page was once tested for, for every mapped image)."""
    forms = _written_forms(img_src)
    resolved = {_normalised_or_none(form, base) for form in forms} - {None}
    return any(url in forms or _normalised_or_none(url, base) in resolved for url in candidate_urls(element))


def test_the_page_address_index_finds_what_a_pass_over_every_element_finds():
    """Every address of every <img> of the real pages, looked up in the page's index, gives the
    elements a test of each element of the page gives, in document order."""
    looked_up = 0
    for path in real_pages():
        page = read_page(path.name, path, LIMITS)
        words = page_words(page, PARAMS)
        base = page_base(page, "https://example.org/section/page.html")
        index = ImageAddresses(words.images, base)
        for url in {url for element in words.images for url in candidate_urls(element)} | {"", "#", "http://["}:
            expected = [element for element in words.images if shows(element, url, base)]
            assert index.occurrences(url) == expected, (path, url)
            looked_up += 1
    assert looked_up > 3000
