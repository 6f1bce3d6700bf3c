"""Captions harvested from pages (page_captions): rows checked by hand against three real pages."""

from __future__ import annotations

from pathlib import Path

from lxml import etree

from annobench.sources.pages import PageLimits
from annobench.text.captions import (
    CaptionFilter,
    caption_row,
    enclosing_caption,
    filename_words,
    filter_row,
    links_to_section,
)
from annobench.text.features import TextParams
from annobench.text.page_map import derive_mapping
from annobench.text.stage import MappingRow, extract_text
from helpers import REAL, require_shared

PAGES = REAL / "pages"
COLUMNS = ("kind", "text", "words", "same_on_page", "boilerplate", "keep", "reason")


def captions_of(collection: str, page_id: str) -> dict[str, list[tuple]]:
    """The page_captions rows of one real page, per image, as (kind, text, words, ...) tuples."""
    folder = require_shared(PAGES / collection)
    rows = sorted({MappingRow(*row) for row in derive_mapping(folder).mapping if row[1] == page_id})
    assert rows, page_id
    result = extract_text(rows, folder, TextParams(), PageLimits(), log=lambda line: None)
    found: dict[str, list[tuple]] = {}
    for row in result.page_captions():
        found.setdefault(row["image_id"], []).append(tuple(row[name] for name in COLUMNS))
    return found


def test_mediawiki_thumbcaptions_and_file_names_of_a_kiwix_page():
    # A/The_Nanny.html: <div class="thumbinner"><a ...><img ...></a><div class="thumbcaption">7 East 75th
    # Street on the Upper East Side of New York City was used for the exterior shots of the Sheffield
    # townhouse.</div></div>; the <img> has no alt.
    found = captions_of("kiwix_wikipedia", "A/The_Nanny.html")
    street = found["I__m__7_East_75th_Street_001.JPG"]
    assert street == [
        ("caption", "7 East 75th Street on the Upper East Side of New York City was used for the exterior shots "
                    "of the Sheffield townhouse.", 21, 1, False, True, None),  # 23 tokens less 7 and 75th
        # 7, 75th and 001 are no words: 2, fewer than a file name needs
        ("filename", "7 East 75th Street 001", 2, 1, False, False, "too short"),
    ]


def test_a_caption_and_a_one_word_file_name_of_another_kiwix_page():
    # A/America_the_Beautiful.html: the plaque photo's thumbcaption, and its file Americathebeautiful.jpg.
    found = captions_of("kiwix_wikipedia", "A/America_the_Beautiful.html")
    assert found["I__m__Americathebeautiful.jpg"] == [
        ("caption", "Commemoration plaque atop Pikes Peak in July 1999.", 7, 1, False, True, None),
        ("filename", "Americathebeautiful", 1, 1, False, False, "too short"),
    ]


def test_alt_title_and_file_names_of_a_news_page():
    # www.edmunds.com/index.html: <img alt="What's Hot on Edmunds.com" title="What's Hot on Edmunds.com"
    # src=".../IL_promo-2.jpg">; <img alt="New Car Ratings" src=".../2013_honda_accord_f34_ot_32613_196.jpg">.
    found = captions_of("dataset_popular", "www.edmunds.com/www.edmunds.com/index.html")
    promo = "www.edmunds.com__static.ed.edmunds-media.com__unversioned__img__il__IL_promo-2.jpg"
    assert found[promo] == [
        ("alt", "What's Hot on Edmunds.com", 3, 1, False, True, None),
        ("title", "What's Hot on Edmunds.com", 3, 1, False, True, None),
        ("filename", "IL promo 2", 2, 1, False, False, "too short"),  # a CMS's name: fewer than 3 words
    ]
    accord = ("www.edmunds.com__media.ed.edmunds-media.com__honda__accord__2013__ot__"
              "2013_honda_accord_f34_ot_32613_196.jpg")
    assert found[accord] == [
        ("alt", "New Car Ratings", 3, 1, False, True, None),
        ("filename", "2013 honda accord f34 ot 32613 196", 3, 1, False, False, "few words"),
    ]


def test_every_mapped_img_with_an_alt_or_a_caption_gets_its_row():
    for collection in ("kiwix_wikipedia", "dataset_popular"):
        folder = require_shared(PAGES / collection)
        rows = sorted(set(MappingRow(*row) for row in derive_mapping(folder).mapping))
        result = extract_text(rows, folder, TextParams(), PageLimits(), log=lambda line: None)
        got = {(r["image_id"], r["page_id"], r["kind"]) for r in result.tables["caption_candidates"]}
        # Every image found on its page has its file name's row at least, when the name has letters.
        for url in result.tables["image_urls"]:
            if url["occurrences"] and filename_words(url["img_src"]):
                assert (url["image_id"], url["page_id"], "filename") in got
        assert any(kind == "alt" for _, _, kind in got) and any(kind == "caption" for _, _, kind in got)


def verdict(text: str, same_on_page: int = 1, rules: CaptionFilter = CaptionFilter(), kind: str = "alt") -> dict:
    """The filtered row of a caption of a 200 x 150 image seen on one page."""
    return filter_row(caption_row("i", "p", kind, text, same_on_page, (200, 150)), 1, 1, 1, rules)


def test_the_filter_reasons_in_order():
    rules = CaptionFilter(min_words=2, max_words=5, min_word_share=0.5, max_same_on_page=2)
    assert verdict("Company logo of Acme", 1, rules)["reason"] == "boilerplate"
    assert verdict("click here", 1, rules)["reason"] == "boilerplate"
    assert verdict("Tower", 1, rules)["reason"] == "too short"
    assert verdict("one two three four five six", 1, rules)["reason"] == "too long"
    assert verdict("IMG 0042 2013 x7 cat", 1, rules)["reason"] == "few words"  # 2 of 5
    assert verdict("DSC 0042 2013 cat", 1, rules)["keep"]  # 2 of 4: at the share
    assert verdict("a grey cat", 3, rules)["reason"] == "repeated on the page"
    kept = verdict("A grey cat, asleep.", 2, rules)
    assert kept["keep"] and kept["reason"] is None and kept["words"] == 4 and kept["word_share"] == 1.0


def test_figure_and_table_captions_beat_class_names_and_never_take_the_image_itself():
    root = etree.HTML(
        "<body><figure><div class='caption-box'><img id='a' src='x.jpg'></div><figcaption> A  <b>red</b> "
        "kite </figcaption></figure><table><caption>Table of kites</caption><tr><td><img id='b'></td></tr>"
        "</table><div class='thumb'><a><img id='c'></a><div class='thumbcaption'>Blue kite</div></div>"
        "<div class='caption'><img id='d'></div></body>")
    image = {element.get("id"): element for element in root.iter("img")}
    assert enclosing_caption(image["a"]) == "A red kite"
    assert enclosing_caption(image["b"]) == "Table of kites"
    assert enclosing_caption(image["c"]) == "Blue kite"
    assert enclosing_caption(image["d"]) == ""  # the caption-class element holds the image: not its caption
    assert filename_words("/w/images/Eiffel_Tower_2011.jpg?x=1") == "Eiffel Tower 2011"
    assert filename_words("../img/0042.png") == ""
    # MediaWiki serves an SVG rendered as PNG: both extensions go, not the word "svg", nor the size prefix.
    assert filename_words("//upload.wikimedia.org/thumb/a/ab/Star_full.svg/20px-Star_full.svg.png") == "Star full"
    assert filename_words("photo.v2.final.JPEG") == "photo v2 final"


def test_caption_work_files_are_written_with_the_other_text_tables(tmp_path: Path):
    from annobench.text.stage import write_text_tables
    import pyarrow.parquet as pq

    folder = require_shared(PAGES / "kiwix_wikipedia")
    rows = sorted({MappingRow(*row) for row in derive_mapping(folder).mapping if row[1] == "A/The_Nanny.html"})
    result = extract_text(rows, folder, TextParams(), PageLimits(), log=lambda line: None)
    write_text_tables(result, tmp_path, 0, "hash")
    candidates = pq.read_table(tmp_path / "work" / "caption_candidates" / "shard-00000.parquet")
    texts = pq.read_table(tmp_path / "work" / "caption_texts" / "shard-00000.parquet")
    assert candidates.num_rows == len(result.tables["caption_candidates"]) > 0
    # Every <img> of the page is counted, its icons too, by file (the thumbnail's size marks aside).
    assert set(texts.column("page_id").to_pylist()) == {"A/The_Nanny.html"}
    assert {"wikiquote-logo.svg.png", "the_nanny_adaptations_world.png"} <= set(texts.column("file").to_pylist())
    assert not (tmp_path / "tables" / "page_captions").exists()  # written from every shard's, by page_captions_job
    kept = [row for row in result.page_captions() if row["keep"]]
    assert kept and all(row["reason"] is None for row in kept)


def test_where_a_news_page_puts_a_text_drops_teasers_headlines_and_navigation():
    # www.sciencemag.org: <div class="cn-img"><img alt="Bioweapon-Armed Ladybugs" src=".../RT_sci_may17_
    # Vilcinskas.jpg"></div><div class="cn-caption"><div>17 May 2013</div><div>Ecology</div><h3><a ...>
    # Bioweapon-Armed Ladybugs</a></h3><p>Invasive harlequin ...</p></div>: a teaser block, not a caption.
    science = captions_of("dataset_popular", "www.sciencemag.org/www.sciencemag.org/index.html")
    ladybugs = science["www.sciencemag.org__www.sciencemag.org__site__icons_shared__rotator__RT_sci_may17_Vilcinskas.jpg"]
    assert [row[0] for row in ladybugs] == ["alt", "caption", "filename"]
    assert ladybugs[1][-2:] == (False, "teaser")
    assert ladybugs[0][-2:] == (True, None)  # the headline's 2 words, under min_headline_words: a name, maybe
    assert ladybugs[2][-1] == "generated file name"  # "RT sci may17 Vilcinskas": may17 is a code
    # www.wired.com: <a href="http://www.wired.com/wiredenterprise/2013/03/oracle-nimbula/"><img alt="Oracle
    # Gobbles Up Ex-Amazon Cloud Czar" ...></a>, then the same words as the story's link.
    wired = captions_of("dataset_popular", "www.wired.com/www.wired.com/index.html")
    oracle = [row for rows in wired.values() for row in rows if row[1] == "Oracle Gobbles Up Ex-Amazon Cloud Czar"]
    assert "alt" in {row[0] for row in oracle} and {row[-2:] for row in oracle} == {(False, "headline")}
    # www.senate.gov: <a href="http://www.senate.gov/floor/index.htm"><img alt="Senate Floor" ...></a>.
    senate = captions_of("dataset_popular", "www.senate.gov/www.senate.gov/index.html")
    floor = senate["www.senate.gov__www.senate.gov__resources__images__home__uss_img_floor_off.gif"]
    assert floor[0][:2] == ("alt", "Senate Floor") and floor[0][-1] == "navigation link"


def test_an_image_the_mapping_names_twice_on_a_page_counts_its_img_elements_once():
    # www.cato.org writes nine images' addresses both relatively and absolutely (.../povprog_fc.jpg):
    # two mapping rows that find the same <img>. Its caption rows and terms are those of one row.
    folder = require_shared(PAGES / "dataset_popular")
    page_id = "www.cato.org/www.cato.org/index.html"
    rows = sorted({MappingRow(*row) for row in derive_mapping(folder).mapping if row[1] == page_id})
    once = list({row.image_id: row for row in reversed(rows)}.values())  # each image's first row
    assert len(rows) > len(once)
    twice = extract_text(rows, folder, TextParams(), PageLimits(), log=lambda line: None)
    single = extract_text(once, folder, TextParams(), PageLimits(), log=lambda line: None)
    keys = [(row["image_id"], row["kind"], row["text"]) for row in twice.page_captions()]
    assert len(keys) == len(set(keys)) > 0
    assert twice.page_captions() == single.page_captions()
    assert twice.terms_by_image == single.terms_by_image
    assert len(twice.tables["image_urls"]) == len(rows)  # every spelling keeps its address row


def test_links_to_a_site_home_or_section_are_navigation():
    web = "http://www.example.org/news/2013/05/story.html"
    for href in ("/", "http://www.example.org/floor/index.htm", "/engage", "../../../index.html",
                 "http://membercentral.example.net/?campaign=x"):
        assert links_to_section(href, web), href
    for href in ("", "#top", "/news/2013/05/other-story.html", "/authors/jack-shafer", "javascript:void(0)",
                 "mailto:desk@example.org", "/2013/story"):
        assert not links_to_section(href, web), href
    saved = "file:///www.example.org/www.example.org/index.html"  # a saved page: relative links as written
    assert links_to_section("index.html", saved) and links_to_section("floor", saved)
    assert not links_to_section("news/story-1.html", saved)
