"""Many box runs over a small picture stay readable: each run has its own colour (20 distinct
ones, the same on every page), the runs past the twentieth are listed without an overlay, each
run draws only its `drawn_run_boxes` best-scored boxes and says how many more it has, a
legend's box hides its run, and the truth's line counts the rejected truth boxes. The build: two stored pictures of 120 x 80 with 21 box runs of
12 boxes each on them (a user met 14 runs and 175 boxes on a picture of 240 x 180)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annobench.benchmark.boxes.model import BOX_RUN_ARTEFACT, BOX_RUN_SCHEMA
from annobench.core.tables import write_table
from annobench.release.browser.box_overlays import RUN_COLOURS, TRUTH_COLOUR, run_styles
from annobench.release.browser.files import image_page_path
from annobench.release.browser.writer import build_browser
from test_browse import screenshot_dir, synthetic_source
from test_browse_boxes import rects_of

IDS = ["first", "second"]
RUNS = [f"run{k:02d}" for k in range(21)]
BOXES_PER_RUN = 12
DRAWN = 4


def run_table(k: int) -> pa.Table:
    """Run k's boxes on each image: scores falling, boxes spread over the original 600 x 400."""
    rows = [(image_id, f"concept{j}", round(0.99 - j / 20, 3), 20 * j + k, 10 * j, 20 * j + k + 80, 10 * j + 120)
            for image_id in IDS for j in range(BOXES_PER_RUN)]
    columns = list(zip(*rows))
    return pa.table({"image_id": list(columns[0]), "concept": list(columns[1]), "score": list(columns[2]),
                     **{name: pa.array(values, pa.int32())
                        for name, values in zip(("xmin", "ymin", "xmax", "ymax"), columns[3:])}},
                    schema=BOX_RUN_SCHEMA)


@pytest.fixture(scope="module")
def crowded(tmp_path_factory) -> Path:
    build = synthetic_source(tmp_path_factory.mktemp("crowded") / "out", IDS)
    for k, name in enumerate(RUNS):
        write_table(run_table(k), build / "runs" / f"{name}.parquet", BOX_RUN_ARTEFACT, params={})
    build_browser(build, build / "browse", {"title": "crowded", "drawn_run_boxes": DRAWN})
    return build / "browse"


def test_the_palette_has_twenty_distinct_colours():
    assert len(RUN_COLOURS) == len(set(RUN_COLOURS)) == 20 and TRUTH_COLOUR not in RUN_COLOURS
    styles = run_styles(RUNS)
    assert [s.line.colour for s in styles[:20]] == list(RUN_COLOURS) and styles[20].line is None
    assert {s.line.dashes for s in styles[:7]} == {"5 3"} and styles[7].line.dashes != "5 3"


def test_each_run_its_colour_on_every_page(crowded):
    pages = [rects_of(crowded / image_page_path(0, image_id)) for image_id in IDS]
    for page in pages:
        assert list(page.groups) == ["truth", *RUN_COLOURS]  # 20 runs drawn in name order, the 21st not
        assert page.groups["truth"] == [] and all(len(page.groups[colour]) == DRAWN for colour in RUN_COLOURS)
        assert [title.split(":")[0] for title in page.titles[RUN_COLOURS[3]]] == ["run03"] * DRAWN
    assert pages[0].titles == pages[1].titles  # the same runs and boxes in the same colours


def test_the_best_boxes_are_drawn_and_the_rest_counted(crowded):
    text = (crowded / image_page_path(0, "first")).read_text(encoding="utf-8")
    page = rects_of(crowded / image_page_path(0, "first"))
    assert page.titles[RUN_COLOURS[0]] == [f"run00: concept{j} {0.99 - j / 20:.3f}" for j in range(DRAWN)]
    more = BOXES_PER_RUN - DRAWN
    assert f"<strong>run00</strong>: {DRAWN} best-scored of {BOXES_PER_RUN} boxes drawn, {more} more not drawn" in text
    assert (f"<strong>run20</strong>: {BOXES_PER_RUN} boxes, listed, not drawn (only the first 20 runs are drawn)"
            in text)
    assert f"{21 * BOXES_PER_RUN} boxes listed, {20 * DRAWN} drawn" in text
    assert text.count('class="show-run-') == 20


def test_a_legend_box_hides_its_run(crowded, chromium, tmp_path):
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    page.goto((crowded / image_page_path(0, "first")).as_uri())
    shots = screenshot_dir(tmp_path)
    page.locator("#boxes").screenshot(path=str(shots / "crowded-boxes.png"))

    def shown(selector: str) -> bool:
        return page.eval_on_selector(selector, "e => getComputedStyle(e).display") != "none"

    assert shown("g.run-3") and shown("g.run-4")
    page.locator("input.show-run-3").click()
    assert not shown("g.run-3") and shown("g.run-4")
    page.locator("input.show-run-3").click()
    assert shown("g.run-3")
    strokes = [page.eval_on_selector(f"g.run-{k}", "e => e.getAttribute('stroke')") for k in range(20)]
    assert strokes == list(RUN_COLOURS)
    page.close()


def test_truth_line_counts_rejected_boxes(tmp_path):
    """Two truth boxes and a rejected one (box_rejects): the legend counts both and says why."""
    build = synthetic_source(tmp_path / "out", ["boxed"])
    corners = {"xmin": [10, 300], "ymin": [20, 100], "xmax": [200, 500], "ymax": [150, 300]}
    pq.write_table(pa.table({"image_id": ["boxed"] * 2, "instance": pa.array([1, 3], pa.int32()),
                             "concept": ["cup", "saucer"],
                             **{k: pa.array(v, pa.int32()) for k, v in corners.items()},
                             "source": ["table:boxes.csv"] * 2}), mkdir(build / "tables" / "boxes") / "all.parquet")
    pq.write_table(pa.table({"image_id": ["boxed"], "instance": pa.array([2], pa.int32()), "concept": ["spoon"],
                             "xmin": [550.0], "ymin": [0.0], "xmax": [700.0], "ymax": [None],
                             "reason": ["outside the image (600x400)"], "source": ["table:boxes.csv"]}),
                   mkdir(build / "tables" / "box_rejects") / "all.parquet")
    build_browser(build, build / "browse", {"title": "rejects"})
    text = (build / "browse" / image_page_path(0, "boxed")).read_text(encoding="utf-8")
    assert "truth: 2 boxes, 1 rejected (outside the image (600x400))" in text
    assert "1 rejected truth box (not drawn)" in text and "<td>550, 0, 700, \u2013</td>" in text
    assert len(rects_of(build / "browse" / image_page_path(0, "boxed")).groups["truth"]) == 2


def mkdir(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder
