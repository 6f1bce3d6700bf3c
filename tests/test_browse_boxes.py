"""The release browser draws boxes: the truth boxes of the `boxes` table and each box run's
best-scored boxes, as SVG rectangles over the stored picture, scaled from the original size.

The build is a copy of the demo build with a boxes table derived from the
demo's own segmentations (`annobench boxes --segmentations canonical`) and
two box runs written with the package's writer: real boxes on real photos,
scaled by different factors across and down (coins: 384x303 -> 240x189).
"""

from __future__ import annotations

import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from annobench.benchmark.boxes.commands import BOXES_TABLE, boxes_main
from annobench.benchmark.boxes.forms import write_box_run
from annobench.release.browser.box_overlays import RUN_COLOURS, TRUTH_COLOUR
from annobench.release.browser.files import image_page_path
from annobench.release.browser.writer import build_browser
from test_browse import check_site_files, screenshot_dir, show, tree_bytes

REPO = Path(__file__).resolve().parents[1]
SETTINGS = {"images_per_page": 100, "top_terms": 20, "title": "boxes"}
SHIFT = 3  # the detector's boxes: the truth moved right and down by this many original pixels


class Rects(HTMLParser):
    """The rectangles of each group (`box-truth`, or a box run by its colour) of a page's box SVG."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.groups: dict[str, list[tuple[float, ...]]] = {}
        self.titles: dict[str, list[str]] = {}
        self.group: str | None = None
        self.in_title = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "g" and {"box-truth", "box-run"} & set(classes):
            self.group = "truth" if "box-truth" in classes else attrs["stroke"]
            self.groups.setdefault(self.group, [])
            self.titles.setdefault(self.group, [])
        elif tag == "rect" and self.group:
            self.groups[self.group].append(tuple(float(attrs[k]) for k in ("x", "y", "width", "height")))
        elif tag == "title" and self.group:
            self.in_title = True

    def handle_data(self, data):
        if self.in_title:
            self.titles[self.group].append(data)

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        elif tag == "g":
            self.group = None


def rects_of(page: Path) -> Rects:
    parser = Rects()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def detector_run(truth: pd.DataFrame, images: pd.DataFrame) -> pd.DataFrame:
    """Every truth box but the backgrounds, moved by SHIFT (kept in the image), scores falling."""
    boxes = truth[truth.concept != "background"].merge(images[["image_id", "width", "height"]], on="image_id")
    xmax = np.minimum(boxes.xmax + SHIFT, boxes.width - 1)
    ymax = np.minimum(boxes.ymax + SHIFT, boxes.height - 1)
    return pd.DataFrame({
        "image_id": boxes.image_id, "concept": boxes.concept, "score": np.linspace(0.95, 0.30, len(boxes)),
        "xmin": (boxes.xmin + SHIFT).astype("int32"), "ymin": (boxes.ymin + SHIFT).astype("int32"),
        "xmax": xmax.astype("int32"), "ymax": ymax.astype("int32")})


@pytest.fixture(scope="module")
def boxed_build(demo_build, tmp_path_factory) -> Path:
    """The demo build's data with a boxes table and two box runs (no browser, no release)."""
    out = tmp_path_factory.mktemp("boxed") / "out"
    shutil.copytree(demo_build, out, ignore=shutil.ignore_patterns("browse", "release", "logs", "provenance", "work"))
    assert boxes_main(str(REPO / "demo" / "segmentations"), str(out), segmentations="canonical") == 0
    truth = pd.read_parquet(out / BOXES_TABLE)
    images = pd.read_parquet(out / "tables" / "images")
    write_box_run(detector_run(truth, images), out / "runs" / "detector.parquet", "parquet")
    coarse = pd.DataFrame({"image_id": ["astronaut", "coins"], "concept": ["person", "coin"], "score": [0.5, 0.25],
                           "xmin": [0, 0], "ymin": [0, 0], "xmax": [255, 191], "ymax": [255, 151]})
    write_box_run(coarse.astype({c: "int32" for c in ("xmin", "ymin", "xmax", "ymax")}),
                  out / "runs" / "coarse.parquet", "parquet")
    return out


def site(build: Path, folder: Path, settings: dict = SETTINGS) -> Path:
    folder.mkdir(parents=True)
    (folder / "resized").symlink_to(build / "resized", target_is_directory=True)
    build_browser(build, folder / "browse", settings)
    return folder / "browse"


def expected_rects(build: Path, image_id: str, boxes: pd.DataFrame) -> list[tuple[float, ...]]:
    """x, y, width, height on the stored picture: a box covers xmin..xmax inclusive, so [xmin, xmax + 1)."""
    image = pd.read_parquet(build / "tables" / "images").set_index("image_id").loc[image_id]
    across, down = image.resized_width / image.width, image.resized_height / image.height
    return [(b.xmin * across, b.ymin * down, (b.xmax + 1 - b.xmin) * across, (b.ymax + 1 - b.ymin) * down)
            for b in boxes.itertuples()]


def assert_rects_close(drawn, expected) -> None:
    assert len(drawn) == len(expected)
    np.testing.assert_allclose(np.array(drawn), np.array(expected), atol=0.006)  # two decimals written


def test_truth_boxes_scaled_onto_the_stored_picture(boxed_build, tmp_path):
    browse = site(boxed_build, tmp_path / "site")
    truth = pd.read_parquet(boxed_build / BOXES_TABLE)
    for image_id in ("astronaut", "coins"):
        page = browse / image_page_path(0, image_id)
        rects = rects_of(page)
        boxes = truth[truth.image_id == image_id].sort_values("instance")
        assert_rects_close(rects.groups["truth"], expected_rects(boxed_build, image_id, boxes))
        assert rects.titles["truth"][0] == f"truth 1: {boxes.concept.iloc[0]}"
    coins = (browse / image_page_path(0, "coins")).read_text(encoding="utf-8")
    assert '<rect x="0" y="0" width="240" height="189">' in coins  # the background: the whole picture
    assert f"truth: {int((truth.image_id == 'coins').sum())} boxes" in coins
    check_site_files(browse)


def test_run_boxes_capped_best_score_first(boxed_build, tmp_path):
    browse = site(boxed_build, tmp_path / "site", {**SETTINGS, "max_run_boxes": 5})
    run = pd.read_parquet(boxed_build / "runs" / "detector.parquet")
    coins = run[run.image_id == "coins"]
    assert len(coins) > 5
    page = browse / image_page_path(0, "coins")
    rects = rects_of(page)
    best = coins.sort_values("score", ascending=False).head(5)
    detector, coarse = RUN_COLOURS[1], RUN_COLOURS[0]  # runs in name order: coarse, detector
    assert_rects_close(rects.groups[detector], expected_rects(boxed_build, "coins", best))
    assert rects.titles[detector] == [f"detector: coin {s:.3f}" for s in best.score]
    assert rects.titles[coarse] == ["coarse: coin 0.250"]
    text = page.read_text(encoding="utf-8")
    assert f"5 best-scored of {len(coins)} boxes drawn, {len(coins) - 5} more not drawn" in text
    assert "<strong>coarse</strong>: 1 box</label></li>" in text
    assert f'stroke="{TRUTH_COLOUR}" stroke-width="3"></line>' in text  # the legend: truth solid, runs dashed
    assert f'stroke="{detector}" stroke-width="3" stroke-dasharray="5 3"></line>' in text
    assert 'class="box-run run-1" stroke="' + detector + '" stroke-dasharray="5 3"' in text

    default = rects_of(site(boxed_build, tmp_path / "default") / image_page_path(0, "coins"))
    assert len(default.groups[detector]) == min(len(coins), 5)  # drawn_run_boxes
    wide = site(boxed_build, tmp_path / "wide", {**SETTINGS, "drawn_run_boxes": 50})
    wide = rects_of(wide / image_page_path(0, "coins"))
    assert len(wide.groups[detector]) == min(len(coins), 20)  # never more than max_run_boxes


def test_pages_without_boxes_and_the_index(boxed_build, tmp_path):
    browse = site(boxed_build, tmp_path / "site")
    logo = (browse / image_page_path(0, "logo")).read_text(encoding="utf-8")
    assert "truth: 0 boxes" in logo and "no boxes for this image" in logo
    index = (browse / "index.html").read_text(encoding="utf-8")
    truth = pd.read_parquet(boxed_build / BOXES_TABLE)
    assert f"<dt>boxes</dt><dd>{len(truth)}</dd>" in index and "<dt>baseline box runs</dt><dd>2</dd>" in index


def test_deterministic_and_unchanged_without_boxes(boxed_build, demo_build, tmp_path):
    assert tree_bytes(site(boxed_build, tmp_path / "a")) == tree_bytes(site(boxed_build, tmp_path / "b"))
    bare = tmp_path / "bare"
    shutil.copytree(boxed_build, bare, ignore=shutil.ignore_patterns("boxes", "box_rejects", "detector.*",
                                                                      "coarse.*"))
    assert tree_bytes(site(bare, tmp_path / "bare-site")) == tree_bytes(site(demo_build, tmp_path / "demo-site"))


def test_boxes_in_chromium(boxed_build, chromium, tmp_path):
    """The page loads without an error, every image with it; the screenshot is kept with the others."""
    browse = site(boxed_build, tmp_path / "site")
    shots = screenshot_dir(tmp_path)
    text = show(chromium, (browse / image_page_path(0, "coins")).as_uri(), shots / "boxes-coins.png")
    assert "Boxes" in text and "run detector" in text
