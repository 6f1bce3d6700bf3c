"""The release browser (annobench.release.browser): a static site checked on disk and in a real headless Chromium.

The site must sit next to the stored images' `resized/`, so each test builds
it into its own folder holding a link to the build's `resized/`, leaving the
shared build untouched.
"""

from __future__ import annotations

import os
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from annobench.release.browser.files import file_stem, image_page_path
from annobench.release.browser.writer import browser_settings, build_browser

REPO = Path(__file__).resolve().parents[1]
SETTINGS = {"images_per_page": 100, "top_terms": 20, "title": "test release"}
MAX_HTML_BYTES = 2 * 1024 * 1024
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


# ---------------------------------------------------------------- helpers

def site_of(build: Path, folder: Path, settings: dict = SETTINGS) -> Path:
    """Build the browser of `build` into folder/browse, with folder/resized linking the build's."""
    folder.mkdir(parents=True)
    (folder / "resized").symlink_to(build / "resized", target_is_directory=True)
    browse = folder / "browse"
    assert build_browser(build, browse, settings) == sum(1 for p in browse.rglob("*") if p.is_file())
    return browse


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


class Markup(HTMLParser):
    """Collects the links of a page and checks that its elements nest."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.links += [value for name, value in attrs if name in ("href", "src") and value]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
        else:
            self.stack.pop()


def check_site_files(browse: Path) -> int:
    """Every page: under 2 MB, HTML5 with utf-8, nested elements, no script, and only local
    links that resolve to a file. Returns the number of pages."""
    pages = sorted(browse.rglob("*.html"))
    for page in pages:
        data = page.read_bytes()
        assert len(data) < MAX_HTML_BYTES, page
        text = data.decode("utf-8")
        assert text.startswith("<!DOCTYPE html>\n") and '<meta charset="utf-8">' in text, page
        markup = Markup()
        markup.feed(text)
        markup.close()
        assert not markup.problems and not markup.stack, (page, markup.problems[:3], markup.stack)
        assert "script" not in markup.tags, page
        for link in markup.links:
            parts = urlsplit(link)
            assert not parts.scheme and not parts.netloc, (page, link)  # nothing from the network
            if parts.path:
                target = page.parent / unquote(parts.path)
                assert target.is_file(), (page, link)
    return len(pages)


def screenshot_dir(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("ANNOBENCH_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def open_in_chromium(browser, url: str, shot: Path) -> tuple[str, object]:
    """Open a page, load every image (lazy ones too), screenshot it; fail on any error.
    Returns the page's visible text and the page (closed by the caller)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} {r.failure}"))
    page.goto(url)
    page.evaluate("document.querySelectorAll('img[loading=lazy]').forEach(i => { i.loading = 'eager'; })")
    page.wait_for_function("Array.from(document.images).every(i => i.complete)", timeout=30_000)
    broken = page.evaluate("Array.from(document.images).filter(i => !(i.naturalWidth > 0)).map(i => i.src)")
    page.screenshot(path=str(shot), full_page=True)
    assert not problems, problems
    assert not broken, broken
    return page.inner_text("body"), page


def show(browser, url: str, shot: Path) -> str:
    text, page = open_in_chromium(browser, url, shot)
    page.close()
    return text


def richest_image(build: Path) -> str:
    """An image that has text terms, regions and ground truth (the smallest such id)."""
    ids = set(pd.read_parquet(build / "tables" / "text_terms", columns=["image_id"]).image_id)
    ids &= set(pd.read_parquet(build / "tables" / "regions", columns=["image_id"]).image_id)
    ids &= set(pd.read_parquet(build / "tables" / "ground_truth", columns=["image_id"]).image_id)
    return min(ids)


def image_page(build: Path, browse: Path, image_id: str) -> Path:
    images = pd.read_parquet(build / "tables" / "images", columns=["image_id", "shard"])
    shard = int(images.loc[images.image_id == image_id, "shard"].iloc[0])
    return browse / image_page_path(shard, image_id)


# ---------------------------------------------------------------- the real builds

@pytest.mark.parametrize("build_name", ["demo_build", "msrc_build"])
def test_site_in_chromium(build_name, request, chromium, tmp_path):
    build = request.getfixturevalue(build_name)
    browse = site_of(build, tmp_path / "site")
    shots = screenshot_dir(tmp_path)
    assert check_site_files(browse) > 3

    index = show(chromium, (browse / "index.html").as_uri(), shots / f"{build_name}-index.png")
    n_images = pq.read_table(build / "tables" / "images", columns=["image_id"]).num_rows
    assert f"<dt>images</dt><dd>{n_images:,}</dd>" in (browse / "index.html").read_text(encoding="utf-8")
    assert f"{n_images:,} grid pages" in index or f"of {SETTINGS['images_per_page']} images" in index
    assert "Feature norms" in index and "Region labels" in index and "Regions per image" in index

    image_id = richest_image(build)
    text = show(chromium, image_page(build, browse, image_id).as_uri(), shots / f"{build_name}-image.png")
    terms = pd.read_parquet(build / "tables" / "text_terms")
    assert terms[(terms.image_id == image_id) & (terms["rank"] == 1)].term.iloc[0] in text
    truth = pd.read_parquet(build / "tables" / "ground_truth")
    for concept in truth[truth.image_id == image_id].concept:
        assert concept in text
    regions = pd.read_parquet(build / "tables" / "regions")
    assert regions[regions.image_id == image_id].label.dropna().iloc[0] in text
    split = pd.read_parquet(build / "tables" / "splits")
    assert f"Split: {split[split.image_id == image_id].split.iloc[0]}" in text

    grid = show(chromium, (browse / "grid" / "page-00000.html").as_uri(), shots / f"{build_name}-grid.png")
    assert image_id in grid or n_images > SETTINGS["images_per_page"]
    if (build / "tables" / "leaderboard").is_dir():
        board = show(chromium, (browse / "leaderboard.html").as_uri(), shots / f"{build_name}-leaderboard.png")
        assert pd.read_parquet(build / "tables" / "leaderboard").run.iloc[0] in board


def test_image_page_content(demo_build, tmp_path):
    """The demo's astronaut: its pages, its regions drawn, its relations, its runs marked."""
    browse = site_of(demo_build, tmp_path / "site")
    text = image_page(demo_build, browse, "astronaut").read_text(encoding="utf-8")
    assert "Space exploration in pictures" in text and "space.html" in text  # page title and id
    assert "overlays/shard-00000/annotator-1/astronaut.png" in text and "helmet" in text
    assert "adjacent" in text and "y_aligned" in text  # spatial relations
    assert 'class="tag hit"' in text and "knn_gist" in text  # a run's correct predictions
    overlay = Image.open(browse / "overlays" / "shard-00000" / "annotator-1" / "astronaut.png")
    assert overlay.size == (240, 240)
    alpha = np.asarray(overlay.convert("RGBA"))[..., 3]
    assert set(np.unique(alpha)) <= {0, 110, 255} and 0 < alpha.mean() < 255  # clear, filled, outlined
    assert "../../../resized/shard-00000/astronaut.jpg" in text  # the stored picture, linked


@pytest.mark.parametrize("build_name", ["demo_build", "msrc_build"])
def test_deterministic(build_name, request, tmp_path):
    build = request.getfixturevalue(build_name)
    first = tree_bytes(site_of(build, tmp_path / "first"))
    second = tree_bytes(site_of(build, tmp_path / "second"))
    assert first == second and len(first) > 10
    assert not any(str(tmp_path).encode() in data for data in first.values())  # no absolute paths


def test_build_with_images_only(demo_build, chromium, tmp_path):
    """No pages, segmentations, features or benchmark: the site shows what there is."""
    out = tmp_path / "out"
    shutil.copytree(demo_build / "tables" / "images", out / "tables" / "images")
    shutil.copytree(demo_build / "resized", out / "resized")
    browse = out / "browse"
    assert build_browser(out, browse, SETTINGS) == 1 + 1 + 1 + 8  # style, index, grid, image pages
    assert check_site_files(browse) == 10
    shots = screenshot_dir(tmp_path)
    index = show(chromium, (browse / "index.html").as_uri(), shots / "images-only-index.png")
    assert "<dt>images</dt><dd>8</dd>" in (browse / "index.html").read_text(encoding="utf-8")
    assert "1 grid pages of 100 images" in index
    assert "Region labels" not in index and "leaderboard" not in index
    text = show(chromium, (browse / image_page_path(0, "coffee")).as_uri(), shots / "images-only-coffee.png")
    assert "coffee" in text and "Regions" not in text and "Runs" not in text


# ---------------------------------------------------------------- awkward ids, escaping, bounds

AWKWARD = ["a b#c%20d", "ünïcødé 画像", ".hidden", "<b>&amp;'\"", "q?x=1;y", "plain"]


def write_parquet(path: Path, columns: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)


def synthetic_source(root: Path, ids: list[str]) -> Path:
    """A build with awkward ids: images (a real photo each), text terms, one segmentation."""
    photo = Image.open(REPO / "demo" / "images" / "coffee.jpg")
    resized = photo.resize((120, 80))
    paths = []
    for image_id in ids:
        path = root / "resized" / "shard-00000" / f"{image_id}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        resized.save(path, quality=90)
        paths.append(path.relative_to(root).as_posix())
    n = len(ids)
    write_parquet(root / "tables" / "images" / "shard-00000.parquet", {
        "image_id": ids, "width": [600] * n, "height": [400] * n, "resized_path": paths,
        "resized_width": pa.array([120] * n, pa.int32()), "resized_height": pa.array([80] * n, pa.int32()),
        "shard": pa.array([0] * n, pa.int32())})
    write_parquet(root / "tables" / "text_terms" / "shard-00000.parquet", {
        "image_id": ids, "term": ["<script>alert(1)</script>"] * n, "score": pa.array([1.0] * n, pa.float32()),
        "rank": pa.array([1] * n, pa.int16())})
    labels = np.zeros((400, 600), np.uint16)
    labels[:200, :] = 1
    labels[250:, 100:400] = 2
    for image_id in ids[:2]:
        path = root / "segmentations" / "shard-00000" / "annotator-1" / f"{image_id}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(labels).save(path)
    drawn = sorted(ids[:2]) * 2
    write_parquet(root / "tables" / "regions" / "shard-00000.parquet", {
        "image_id": drawn, "annotator": pa.array([1] * len(drawn), pa.int16()),
        "region_id": pa.array([1] * (len(drawn) // 2) + [2] * (len(drawn) // 2), pa.int32()),
        "label": ["sky & <cloud>"] * (len(drawn) // 2) + ["cup"] * (len(drawn) // 2)})
    return root


def test_awkward_ids(chromium, tmp_path):
    source = synthetic_source(tmp_path / "out", AWKWARD)
    browse = source / "browse"
    build_browser(source, browse, {"images_per_page": 4, "top_terms": 5})
    assert check_site_files(browse) == 1 + 2 + len(AWKWARD)
    names = {p.name for p in (browse / "images" / "shard-00000").iterdir()}
    assert len(names) == len(AWKWARD) and all(not n.startswith(".") for n in names)
    assert len(list((browse / "overlays" / "shard-00000" / "annotator-1").iterdir())) == 2

    shots = screenshot_dir(tmp_path)
    visited = []
    for grid in ("page-00000.html", "page-00001.html"):
        _, page = open_in_chromium(chromium, (browse / "grid" / grid).as_uri(), shots / f"awkward-{grid}.png")
        links = page.eval_on_selector_all("a.thumb", "links => links.map(a => a.href)")
        page.close()
        for k, link in enumerate(links):  # follow each link as the browser resolved it
            text, browser_page = open_in_chromium(chromium, link, shots / f"awkward-{grid}-{k}.png")
            heading = browser_page.inner_text("h1")
            visited.append(heading)
            assert "<script>alert(1)</script>" in text  # shown as text, never run
            browser_page.close()
    assert sorted(visited) == sorted(AWKWARD)
    region_page = (browse / image_page_path(0, AWKWARD[0])).read_text(encoding="utf-8")
    assert "sky &amp; &lt;cloud&gt;" in region_page


def test_pages_stay_small(tmp_path):
    """An image with 150 regions (22,350 ordered pairs) and a run deciding 2,000 concepts:
    its page shows the first rows and says how many there are."""
    source = synthetic_source(tmp_path / "out", ["big"])
    pairs = [(i, j) for i in range(1, 151) for j in range(1, 151) if i != j]
    write_parquet(source / "tables" / "regions" / "shard-00000.parquet", {
        "image_id": ["big"] * 150, "annotator": pa.array([1] * 150, pa.int16()),
        "region_id": pa.array(range(1, 151), pa.int32()), "label": [f"label {k}" for k in range(150)]})
    write_parquet(source / "tables" / "spatial_relations" / "shard-00000.parquet", {
        "image_id": ["big"] * len(pairs), "annotator": pa.array([1] * len(pairs), pa.int16()),
        "region_i": pa.array([i for i, _ in pairs], pa.int32()),
        "region_j": pa.array([j for _, j in pairs], pa.int32()),
        "topology": ["disjoint"] * len(pairs), "horizontal": ["beside"] * len(pairs),
        "vertical": ["above"] * len(pairs)})
    concepts = [f"concept{k:04d}" for k in range(2000)]
    write_parquet(source / "runs" / "wide.parquet", {
        "image_id": ["big"] * 2000, "concept": concepts, "score": np.linspace(1, 0, 2000),
        "decision": [True] * 2000, "line": pa.array([1] * 2000, pa.int32())})
    write_parquet(source / "tables" / "ground_truth" / "all.parquet", {"image_id": ["big"], "concept": ["concept0000"]})
    browse = source / "browse"
    build_browser(source, browse, SETTINGS)
    page = browse / image_page_path(0, "big")
    text = page.read_text(encoding="utf-8")
    assert page.stat().st_size < 300_000
    assert "Showing 1,000 of 22,350 ordered pairs" in text and "Showing 60 of 2,000 predictions" in text
    assert "1 / 2,000" in text  # correct / decided
    check_site_files(browse)


# ---------------------------------------------------------------- small parts

def test_file_stems():
    ids = AWKWARD + ["a~b", "a~7eb", "A", "a", "", "x" * 300, "x" * 299 + "y", "."]
    stems = [file_stem(i) for i in ids]
    assert len(set(stems)) == len(ids)
    assert all(len(s.encode()) <= 200 and not s.startswith(".") for s in stems)
    assert all(set(s) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~") for s in stems)
    assert file_stem("10_10_s") == "10_10_s" and file_stem("a b") == "a~20b"


def test_browser_settings():
    # No title or description: the neutral ones named after the output folder (core.config.release_identity).
    unnamed = browser_settings({"output": "results/mine"})
    assert unnamed == {"enabled": True, "images_per_page": 100, "top_terms": 20, "max_run_boxes": 20,
                       "drawn_run_boxes": 5, "title": "mine: a dataset built by annobench",
                       "description": unnamed["description"]}
    assert "mine" in unnamed["description"] and "demo" not in unnamed["description"]
    config = {"release": {"title": "T", "description": "D", "browse": {"images_per_page": 7, "enabled": False}}}
    assert browser_settings(config) == {"enabled": False, "images_per_page": 7, "top_terms": 20, "max_run_boxes": 20,
                                        "drawn_run_boxes": 5, "title": "T", "description": "D"}
