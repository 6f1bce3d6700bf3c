"""The release browser shows hostile text as text: every field it shows (page text, alt text,
captions, titles, concept names, image ids, run names, descriptions, the dataset's title and
description) is fed markup that would run a script if it were written raw, and every page
stays inert, on disk and in a real headless Chromium.

The browser writes markup only through Jinja2 templates with automatic escaping; the last
tests check that it stays so: the environment escapes and refuses undefined names, no
template marks data safe, and no module of annobench/release/browser builds a tag in a string.
"""

from __future__ import annotations

import ast
import re
import tomllib
from html.parser import HTMLParser
from pathlib import Path

import jinja2
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from annobench.benchmark.boxes.model import BOX_RUN_ARTEFACT, BOX_RUN_SCHEMA
from annobench.core.tables import write_table
from annobench.release.browser import templating
from annobench.release.browser.files import image_page_path
from annobench.release.browser.writer import build_browser
from test_browse import REPO, check_site_files

BROWSER = REPO / "annobench" / "release" / "browser"


def hostile(field: str) -> str:
    """Markup that runs a script wherever it is written raw: in text, in a quoted attribute, in a
    textarea, as a link."""
    return (f'<script>window.__pwned="{field}";alert(1)</script><img src=x onerror="window.__pwned=1">'
            f'" onerror="window.__pwned=1" x="</textarea><svg onload=alert(1)>javascript:alert("{field}")')


def hostile_name(field: str) -> str:
    """As hostile(), for what names a file (an image id, a run, a feature): no `/`, no edge spaces."""
    return f"<img src=x onerror=window.__pwned=1 alt='{field}'>\" onmouseover=\"window.__pwned=1"


HOSTILE_ID = hostile_name("image id")
PLAIN_ID = "plain"
FIELDS = {  # what each field holds: its hostile text
    **{name: hostile(name) for name in (
        "title", "description", "source path", "format", "term", "page id", "page url", "img src", "page title",
        "page status", "text reject", "region label", "label path", "topology", "horizontal", "vertical",
        "segmentation reject", "concept", "split", "ingest reject", "run concept", "leaderboard column",
        "leaderboard cell", "box concept", "box reject concept", "box reject reason", "box run concept",
        "reference", "reference source", "page caption", "caption kind", "caption reason", "caption run",
        "run caption")},
    "image id": HOSTILE_ID,
    "run": hostile_name("run"),
    "box run": hostile_name("box run"),
    "feature": hostile_name("feature"),
}


def write(path: Path, columns: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)


def write_images(root: Path, ids: list[str]) -> None:
    photo = Image.open(REPO / "demo" / "images" / "coffee.jpg").resize((240, 180))
    paths = []
    for image_id in ids:
        path = root / "resized" / "shard-00000" / f"{image_id}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        photo.save(path, quality=90)
        paths.append(path.relative_to(root).as_posix())
    n = len(ids)
    write(root / "tables" / "images" / "shard-00000.parquet", {
        "image_id": ids, "width": [480] * n, "height": [360] * n, "resized_path": paths,
        "resized_width": pa.array([240] * n, pa.int32()), "resized_height": pa.array([180] * n, pa.int32()),
        "shard": pa.array([0] * n, pa.int32()), "source_path": [FIELDS["source path"]] * n,
        "format": [FIELDS["format"]] * n})
    write(root / "tables" / "duplicates" / "all.parquet", {
        "image_id": [PLAIN_ID], "duplicate_of": [HOSTILE_ID], "group_size": pa.array([2], pa.int32())})
    write(root / "tables" / "rejects" / "all.parquet", {
        "image_id": [HOSTILE_ID + " (rejected)"], "reason": [FIELDS["ingest reject"]]})


def write_text(root: Path, ids: list[str]) -> None:
    write(root / "tables" / "text_terms" / "shard-00000.parquet", {
        "image_id": ids, "term": [FIELDS["term"]] * len(ids), "score": pa.array([1.0] * len(ids), pa.float32()),
        "rank": pa.array([1] * len(ids), pa.int16())})
    write(root / "tables" / "image_urls" / "shard-00000.parquet", {
        "image_id": [HOSTILE_ID], "page_id": [FIELDS["page id"]], "img_src": [FIELDS["img src"]],
        "url": [FIELDS["page url"]], "occurrences": pa.array([1], pa.int32())})
    write(root / "tables" / "pages" / "all.parquet", {
        "page_id": [FIELDS["page id"]], "title": [FIELDS["page title"]], "status": [FIELDS["page status"]]})
    write(root / "tables" / "text_rejects" / "shard-00000.parquet", {
        "image_id": [HOSTILE_ID], "page_id": [FIELDS["page id"]], "reason": [FIELDS["text reject"]]})


def write_regions(root: Path) -> None:
    labels = np.zeros((360, 480), np.uint16)
    labels[:180, :] = 1
    labels[200:, 100:400] = 2
    path = root / "segmentations" / "shard-00000" / "annotator-1" / f"{HOSTILE_ID}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(labels).save(path)
    write(root / "tables" / "regions" / "shard-00000.parquet", {
        "image_id": [HOSTILE_ID] * 2, "annotator": pa.array([1, 1], pa.int16()),
        "region_id": pa.array([1, 2], pa.int32()), "label": [FIELDS["region label"], "cup"],
        "label_path": [[FIELDS["label path"]], ["cup"]]})
    write(root / "tables" / "spatial_relations" / "shard-00000.parquet", {
        "image_id": [HOSTILE_ID], "annotator": pa.array([1], pa.int16()), "region_i": pa.array([1], pa.int32()),
        "region_j": pa.array([2], pa.int32()), "topology": [FIELDS["topology"]],
        "horizontal": [FIELDS["horizontal"]], "vertical": [FIELDS["vertical"]]})
    write(root / "tables" / "segmentation_rejects" / "shard-00000.parquet", {
        "image_id": [HOSTILE_ID], "annotator": pa.array([1], pa.int16()), "region_id": pa.array([3], pa.int32()),
        "reason": [FIELDS["segmentation reject"]]})


def write_benchmark(root: Path, ids: list[str]) -> None:
    write(root / "tables" / "ground_truth" / "all.parquet", {
        "image_id": ids, "concept": [FIELDS["concept"]] * len(ids), "agreement": [1.0] * len(ids)})
    write(root / "tables" / "splits" / "all.parquet", {"image_id": ids, "split": [FIELDS["split"]] * len(ids)})
    write(root / "runs" / f"{FIELDS['run']}.parquet", {
        "image_id": ids, "concept": [FIELDS["run concept"]] * len(ids), "score": [0.5] * len(ids),
        "decision": [True] * len(ids)})
    write(root / "tables" / "leaderboard" / "all.parquet", {
        "run": [FIELDS["run"]], FIELDS["leaderboard column"]: [FIELDS["leaderboard cell"]], "map": [0.5]})
    write(root / "tables" / FIELDS["feature"] / "shard-00000.parquet", {
        "image_id": ids, "vector": pa.FixedSizeListArray.from_arrays(pa.array([0.5, 1.0] * len(ids), pa.float32()), 2)})


def write_boxes(root: Path) -> None:
    """Two truth boxes, a rejected one and a box run, on the hostile image."""
    write(root / "tables" / "boxes" / "all.parquet", {
        "image_id": [HOSTILE_ID] * 2, "instance": pa.array([1, 3], pa.int32()),
        "concept": [FIELDS["box concept"], "cup"], **{k: pa.array(v, pa.int32()) for k, v in (
            ("xmin", [10, 200]), ("ymin", [20, 100]), ("xmax", [200, 400]), ("ymax", [150, 300]))},
        "source": ["table:boxes.csv"] * 2})
    write(root / "tables" / "box_rejects" / "all.parquet", {
        "image_id": [HOSTILE_ID], "instance": pa.array([2], pa.int32()), "concept": [FIELDS["box reject concept"]],
        "xmin": [-5.0], "ymin": [0.0], "xmax": [900.0], "ymax": [None], "reason": [FIELDS["box reject reason"]],
        "source": ["table:boxes.csv"]})
    run = pa.table({"image_id": [HOSTILE_ID], "concept": [FIELDS["box run concept"]], "score": [0.75],
                    **{k: pa.array([v], pa.int32()) for k, v in (("xmin", 12), ("ymin", 22), ("xmax", 190),
                                                                ("ymax", 140))}}, schema=BOX_RUN_SCHEMA)
    write_table(run, root / "runs" / f"{FIELDS['box run']}.parquet", BOX_RUN_ARTEFACT, params={})


def write_captions(root: Path) -> None:
    write(root / "tables" / "captions" / "all.parquet", {
        "image_id": [HOSTILE_ID], "reference": pa.array([1], pa.int32()), "text": [FIELDS["reference"]],
        "source": [FIELDS["reference source"]]})
    write(root / "tables" / "page_captions" / "all.parquet", {
        "image_id": [HOSTILE_ID], "page_id": [FIELDS["page id"]], "kind": [FIELDS["caption kind"]],
        "text": [FIELDS["page caption"]], "keep": [False], "reason": [FIELDS["caption reason"]]})
    write(root / "tables" / "caption_scores" / "all.parquet", {
        "image_id": [HOSTILE_ID], "run": [FIELDS["caption run"]], "caption": [FIELDS["run caption"]],
        "meteor": [0.25]})


def hostile_build(root: Path) -> Path:
    ids = sorted([HOSTILE_ID, PLAIN_ID])
    write_images(root, ids)
    write_text(root, ids)
    write_regions(root)
    write_benchmark(root, ids)
    write_boxes(root)
    write_captions(root)
    return root


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory) -> tuple[Path, set[str]]:
    """The browser of the hostile build, and the templates that rendered it (read anew)."""
    build = hostile_build(tmp_path_factory.mktemp("hostile") / "out")
    loaded: set[str] = set()
    loader = jinja2.FileSystemLoader.get_source

    def get_source(self, environment, template):
        loaded.add(template)
        return loader(self, environment, template)

    templating.environment.cache_clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jinja2.FileSystemLoader, "get_source", get_source)
        build_browser(build, build / "browse", {"title": FIELDS["title"], "description": FIELDS["description"],
                                                "images_per_page": 1})
    templating.environment.cache_clear()
    return build / "browse", loaded


class Inert(HTMLParser):
    """A page's elements, attributes and text, as a browser would parse them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.handlers: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.handlers += [f"<{tag} {name}>" for name, _ in attrs if name.startswith("on")]
        self.text += [value for _, value in attrs if value]

    def handle_data(self, data):
        self.text.append(data)


def parsed(page: Path) -> Inert:
    parser = Inert()
    parser.feed(page.read_text(encoding="utf-8"))
    parser.close()
    return parser


# ---------------------------------------------------------------- on disk

def test_every_field_is_shown_as_text(hostile_site):
    browse, _ = hostile_site
    pages = sorted(browse.rglob("*.html"))
    assert check_site_files(browse) == len(pages) == 1 + 1 + 2 + 2  # index, leaderboard, 2 grid pages, 2 images
    shown = ""
    for page in pages:
        inert = parsed(page)
        assert not inert.handlers, (page, inert.handlers[:3])
        assert not inert.tags & {"script", "textarea", "iframe", "object", "embed"}, (page, inert.tags)
        raw = page.read_text(encoding="utf-8")
        assert not [tag for tag in ("<script", "<img src=x", "<svg onload", "</textarea") if tag in raw], page
        shown += "\n".join(inert.text)
    # The index groups rejects by their reason's words before a colon; the rest are shown whole.
    expected = {**FIELDS, "ingest reject": FIELDS["ingest reject"].split(":")[0].strip()}
    missing = [field for field, text in expected.items() if text not in shown]
    assert not missing, f"fields not shown whole as text: {missing}"


def test_every_template_rendered_the_hostile_build(hostile_site):
    _, loaded = hostile_site
    assert loaded == set(templating.template_names())


# ---------------------------------------------------------------- in Chromium

INJECTED = ("[...document.querySelectorAll('*')].filter(e => ['SCRIPT', 'TEXTAREA', 'IFRAME'].includes(e.tagName)"
            " || [...e.attributes].some(a => a.name.startsWith('on'))).map(e => e.outerHTML.slice(0, 80))")


def test_no_script_runs_in_chromium(hostile_site, chromium):
    """Every page loaded, pointed at, its legend's boxes clicked: no dialog, no script, no handler."""
    browse, _ = hostile_site
    for path in sorted(browse.rglob("*.html")):
        page = chromium.new_page()
        dialogs, errors = [], []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        page.mouse.move(60, 300)
        for box in page.locator("input[type=checkbox]").all():
            box.click()
        page.wait_for_timeout(50)
        assert page.evaluate("window.__pwned") is None, path
        assert page.evaluate("document.scripts.length") == 0, path
        assert page.evaluate(INJECTED) == [], path
        assert not dialogs and not errors, (path, dialogs, errors)
        if path == browse / image_page_path(0, HOSTILE_ID):  # its page shows the id whole
            assert page.inner_text("h1") == HOSTILE_ID
        page.close()


# ---------------------------------------------------------------- the code that writes markup

def test_the_environment_escapes_everything():
    environment = templating.environment()
    assert environment.autoescape is True and environment.undefined is jinja2.StrictUndefined
    with pytest.raises(jinja2.UndefinedError):
        environment.from_string("{{ missing }}").render()
    assert environment.from_string("{{ value }}").render(value='<b a="1">') == "&lt;b a=&#34;1&#34;&gt;"


def test_no_template_marks_data_safe():
    unsafe = re.compile(r"\|\s*safe\b|autoescape\s+false|Markup|\|\s*e\b|\|\s*escape\b")
    for path in sorted((BROWSER / "templates").rglob("*")):
        if path.is_file():
            assert not unsafe.search(path.read_text(encoding="utf-8")), path


TAG = re.compile(r"<\s*/?\s*[A-Za-z!]|&[a-z]+;|&#")


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of a module, its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_no_module_builds_markup_in_strings():
    """No string of a browser module but docstrings holds a tag or an entity (so no f-string,
    % or .format template, or concatenation writes HTML), and nothing escapes by hand."""
    found = []
    for path in sorted(BROWSER.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        skip = docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                if TAG.search(node.value):
                    found.append(f"{path.name}:{node.lineno}: {node.value[:60]!r}")
        for name in ("html.escape", "import html", "markupsafe", "Markup(", "escape("):
            if name in source:
                found.append(f"{path.name}: {name}")
    assert not found, found


def test_the_static_check_sees_markup_in_strings():
    tree = ast.parse('def f(x):\n    """<b>docs</b>"""\n    return f"<td>{x}</td>" + "&ndash;"\n')
    skip = docstrings(tree)
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
               and id(n) not in skip]
    assert sorted(s for s in strings if TAG.search(s)) == ["&ndash;", "</td>", "<td>"]


def test_the_templates_digest_sees_every_template(tmp_path, monkeypatch):
    """The browse rules' `templates` param: any change of any template changes it."""
    copy = tmp_path / "templates"
    copy.mkdir()
    for name in templating.template_names():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes((templating.TEMPLATES / name).read_bytes())
    monkeypatch.setattr(templating, "TEMPLATES", copy)
    digests = {templating.templates_digest()}
    for name in templating.template_names():
        (copy / name).write_text((copy / name).read_text(encoding="utf-8") + " ", encoding="utf-8")
        digests.add(templating.templates_digest())
    assert len(digests) == len(templating.template_names()) + 1


def test_every_template_ships_as_package_data():
    """pyproject.toml's package-data globs cover every file of templates/ (a wheel carries them)."""
    globs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "annobench.release.browser"]
    shipped = {path for glob in globs for path in BROWSER.glob(glob)}
    files = {path for path in (BROWSER / "templates").rglob("*") if path.is_file()}
    assert files and files <= shipped, sorted(str(f) for f in files - shipped)
