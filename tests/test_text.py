"""Near-image text features from real web pages (Villegas and Paredes 2014, section 2.3, equation
1), and hostile pages."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from annobench.cli import main
from annobench.sources.pages import PageLimits, PageRejected, read_page
from annobench.text.features import TextParams, scofeat_line
from annobench.text.page_map import derive_mapping
from annobench.text.stage import MappingRow, extract_text
from helpers import REAL, require_shared

PAGES = REAL / "pages"
PARAMS = TextParams()
LIMITS = PageLimits()


def text_of(pages_dir: Path, rows: list[MappingRow]):
    return extract_text(sorted(set(rows), key=lambda r: (r.image_id, r.page_id, r.img_src)), pages_dir, PARAMS, LIMITS,
                        log=lambda line: None)


@pytest.mark.parametrize("collection, min_images", [("kiwix_wikipedia", 100), ("dataset_popular", 500)])
def test_derived_mapping_finds_the_images_and_each_gets_features_or_a_reason(collection, min_images):
    folder = require_shared(PAGES / collection)
    derived = derive_mapping(folder)
    assert len(derived.images) >= min_images
    assert all((folder / path).is_file() for path in derived.images.values())
    result = text_of(folder, [MappingRow(*row) for row in derived.mapping])
    with_terms = {image_id for image_id, terms in result.terms_by_image.items() if terms}
    reported = {row["image_id"] for row in result.tables["text_rejects"]}
    assert with_terms | reported == {image_id for image_id, _, _ in derived.mapping}
    for row in result.tables["image_urls"]:
        assert row["occurrences"] > 0 or any(
            r["image_id"] == row["image_id"] and r["page_id"] == row["page_id"] for r in result.tables["text_rejects"]
        )


def test_caption_terms_rank_above_terms_far_from_the_image():
    folder = require_shared(PAGES / "kiwix_wikipedia")
    page = "A/Quincy_Jones.html"
    # The Davos photo's caption: "Jones during an annual meeting in 2004 of the World Economic Forum in Davos..."
    result = text_of(folder, [MappingRow("davos", page, "../I/m/Quincy_Jones%2C_Davos.jpg")])
    ranks = {term: rank for rank, (term, _) in enumerate(result.terms_by_image["davos"], start=1)}
    caption = ["davos", "economic", "forum", "switzerland"]
    # Without a stop-word list, "the", "of" and the subject's name come first.
    assert all(term in ranks and ranks[term] <= 50 for term in caption), {t: ranks.get(t) for t in caption}
    # The caption of the article's last photo, far below: ranked lower, or cut from the top 100.
    far = ["nutcracker", "chocolate"]
    assert all(ranks.get(term, 10**6) > max(ranks[t] for t in caption) for term in far)


def test_scores_are_normalised_ranked_and_exported_as_integers():
    folder = require_shared(PAGES / "kiwix_wikipedia")
    result = text_of(folder, [MappingRow("grand", "A/Baby_Grand.html", "../I/m/Baby_Grand_Billy_Joel.jpg")])
    terms = result.terms_by_image["grand"]
    scores = np.array([score for _, score in terms])
    assert len(terms) == 100 and (np.diff(scores) <= 0).all() and scores.sum() <= 1.0 + 1e-9
    line = scofeat_line("grand", terms).split()
    assert line[0] == "grand" and int(line[1]) == (len(line) - 2) // 2
    assert sum(int(v) for v in line[3::2]) <= 100_000


def test_every_real_page_is_read_or_rejected_with_a_reason():
    folders = [require_shared(PAGES / "readability"), PAGES / "dataset_popular"]
    pages = sorted(p for folder in folders for p in folder.rglob("*") if p.is_file() and ".htm" in p.name)
    assert len(pages) > 250
    outcomes = {"read": 0, "rejected": 0}
    for path in pages:
        try:
            read_page(path.name, path, LIMITS).to_xml()
            outcomes["read"] += 1
        except PageRejected:
            outcomes["rejected"] += 1
    assert outcomes["read"] >= len(pages) - 5


def test_cleaned_copy_is_well_formed_xml_without_scripts():
    from lxml import etree

    path = require_shared(PAGES / "dataset_popular") / "www.wired.com" / "www.wired.com" / "index.html"
    xml = read_page("wired", path, LIMITS).to_xml()
    root = etree.fromstring(xml.encode(), etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True))
    assert not root.xpath("//script | //style")
    assert root.xpath("//img")


BILLION_LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 10))
    + ']><html><head><title>&lol9;</title></head><body><p>laughs &lol9; here</p><img src="a.jpg" alt="a cat"></body></html>'
)


def hostile_pages(folder: Path) -> dict[str, str]:
    (folder / "laughs.html").write_text(BILLION_LAUGHS)
    with open(folder / "huge.html", "wb") as handle:
        handle.write(b"<html><body>" + b"<p>word</p>" * (50_000_000 // 11) + b'<img src="a.jpg"></body></html>')
    (folder / "bytes.html").write_bytes(
        b'<html><head><meta charset="utf-8"><title>caf\xe9 \xff\xfe broken</title></head>'
        b'<body><p>bad \x80\x81 bytes near the photo</p><img src="a.jpg" alt="caf\xc3\xa9"></body></html>'
    )
    (folder / "bare.html").write_text('just words and then <img src="a.jpg"> and more words')
    (folder / "empty.html").write_text("")
    return {name: "a.jpg" for name in ("laughs.html", "huge.html", "bytes.html", "bare.html", "empty.html")}


def test_hostile_pages_get_a_clear_result_quickly(tmp_path):
    pages = hostile_pages(tmp_path)
    rows = [MappingRow(f"img_{name.split('.')[0]}", name, src) for name, src in pages.items()]
    started = time.monotonic()
    result = text_of(tmp_path, rows)
    assert time.monotonic() - started < 30
    reasons = {r["image_id"]: r["reason"] for r in result.tables["text_rejects"]}
    assert reasons["img_huge"].startswith("page unusable: page too large: 5")
    assert reasons["img_empty"] == "page unusable: empty page"
    for image_id in ("img_laughs", "img_bytes", "img_bare"):
        assert result.terms_by_image[image_id], image_id
    laughs = dict(result.terms_by_image["img_laughs"])
    assert "cat" in laughs and len(laughs) < 10  # entities were not expanded into a billion words
    assert "bytes" in dict(result.terms_by_image["img_bytes"])
    assert {"just", "words"} <= set(dict(result.terms_by_image["img_bare"]))


def test_time_limit_per_page(tmp_path):
    path = tmp_path / "many.html"
    path.write_text("<p>word</p>" * 300_000)
    with pytest.raises(PageRejected, match="longer than"):
        read_page("many", path, PageLimits(timeout_seconds=0.001))


def test_text_command_on_a_real_crawl(tmp_path):
    folder = require_shared(PAGES / "kiwix_wikipedia")
    assert main(["text", "--pages", str(folder), "--out", str(tmp_path)]) == 0
    terms = pq.read_table(tmp_path / "tables" / "text_terms" / "shard-00000.parquet")
    assert terms.num_rows > 100 * 50
    lines = (tmp_path / "exports" / "text.scofeat").read_text().splitlines()
    assert [line.split()[0] for line in lines] == (tmp_path / "exports" / "text_iids.txt").read_text().split()
    assert (tmp_path / "mapping.csv").is_file() and (tmp_path / "images.csv").is_file()


@pytest.mark.parametrize("page_id", ["/etc/passwd", "../outside.html", "a/../../outside.html", ""])
def test_a_mapping_row_naming_a_page_outside_the_folder_is_refused(tmp_path, page_id):
    from annobench.sources.inventory import InventoryError
    from annobench.text.stage import read_mapping

    mapping = tmp_path / "map.csv"
    mapping.write_text(f"image_id,page_id,img_src\nok,A/page.html,x.jpg\nbad,{page_id},x.jpg\n")
    with pytest.raises(InventoryError, match="outside the folder"):
        read_mapping(mapping)


def test_mapping_columns_may_come_in_any_order_and_page_url_is_optional(tmp_path):
    from annobench.text.stage import MappingRow, read_mapping

    mapping = tmp_path / "map.csv"
    mapping.write_text("img_src,page_url,page_id,image_id\nx.jpg, http://a.org/p ,A/p.html,i1\n")
    assert read_mapping(mapping) == [MappingRow("i1", "A/p.html", "x.jpg", "http://a.org/p")]
    mapping.write_text("page_id,image_id,img_src\nA/p.html,i1,x.jpg\n")
    assert read_mapping(mapping) == [MappingRow("i1", "A/p.html", "x.jpg", "")]
