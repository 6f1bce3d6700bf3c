"""The release browser: a static website over a build's tables and stored images.

A benchmark maintainer opens `browse/index.html` from disk (file://, no
server, no network) to check a release by eye: the collection's figures
(counts, label frequencies, regions per image, rejects, feature norms), a
paged grid of the stored images, and one page per image with its text
terms and the pages they came from, its regions drawn over the picture,
its spatial relations, its ground truth and split, and what each baseline
run predicted for it.

The site links the stored images where they are (`browse/` sits next to
`resized/`, in the build folder and in the release), so it adds HTML and
one small overlay PNG per segmentation, nothing more. Every page is bounded
(caps on the rows a section shows), so no file grows with the collection.

Memory stays bounded too: tables split by shard are read one shard at a
time; per-image tables that are not (ground truth, splits, duplicates, runs)
are first regrouped by image shard into a scratch folder. Output is
deterministic: everything is sorted, numbers have fixed formats, and no
time or absolute path is written.
"""

from __future__ import annotations

import colorsys
import functools
import hashlib
import html
import io
import re
import string
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import quote

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from PIL import Image

from annobench.core.layout import shard_name

DEFAULTS = {"enabled": True, "images_per_page": 100, "top_terms": 20}

# Caps on what one page lists, so no HTML file grows with the collection.
MAX_PAGES_SHOWN = 50         # pages an image came from
MAX_RELATIONS_SHOWN = 1000   # spatial relation rows of one image
RELATIONS_OPEN = 40          # more relation rows than this start folded
MAX_REGIONS_SHOWN = 500      # legend rows of one segmentation
MAX_DECIDED_SHOWN = 60       # predicted concepts of one run for one image
MAX_TRUTH_SHOWN = 500        # ground truth concepts of one image
MAX_LABEL_ROWS = 1000        # rows of a frequency table on the index
MAX_CHART_BARS = 40          # bars of a frequency chart
MAX_REJECT_GROUPS = 100      # reason groups on the index
REJECT_EXAMPLES = 5          # ids shown per reason group
MAX_DUPLICATES_SHOWN = 200   # duplicate rows on the index
MAX_JUMPS = 100              # grid pages listed on the index by first id
HISTOGRAM_BINS = 24
REGIONS_HISTOGRAM_TAIL = 40  # segmentations with more regions share the last bar

FILL_ALPHA = 110             # overlay: regions semi-transparent, outlines opaque

RUN_COLUMNS = ("image_id", "concept", "score", "decision")

Log = Callable[[str], None]


def browser_settings(config: dict) -> dict:
    """The browser's settings from a build config (`release.browse`), defaults filled in."""
    release = config.get("release") or {}
    settings = {**DEFAULTS, **(release.get("browse") or {})}
    settings.setdefault("title", release.get("title") or "annobench release")
    return settings


# ---------------------------------------------------------------- names and links

SAFE_CHARS = frozenset(string.ascii_letters + string.digits + "-_.")
MAX_STEM_BYTES = 200


def file_stem(image_id: str) -> str:
    """A file name for an id: safe on every file system, and distinct ids give distinct names.

    Characters outside [A-Za-z0-9._-] become `~` and the hex of their UTF-8
    bytes (a leading dot too, so no page is hidden); `~` never appears
    otherwise, so the mapping is one-to-one. Over-long names are cut and end
    in `~~` and a hash of the id.
    """
    stem = "".join(ch if ch in SAFE_CHARS else escape_char(ch) for ch in image_id)
    if stem.startswith("."):
        stem = "~2e" + stem[1:]
    if len(stem) > MAX_STEM_BYTES:
        stem = stem[:150] + "~~" + hashlib.sha256(image_id.encode("utf-8")).hexdigest()[:16]
    return stem or "~"


def escape_char(ch: str) -> str:
    return "".join(f"~{byte:02x}" for byte in ch.encode("utf-8", "surrogatepass"))


def image_page_path(shard: int, image_id: str) -> str:
    return f"images/{shard_name(shard)}/{file_stem(image_id)}.html"


def overlay_path(shard: int, annotator: int, image_id: str) -> str:
    return f"overlays/{shard_name(shard)}/annotator-{annotator}/{file_stem(image_id)}.png"


def grid_page_path(page: int) -> str:
    return f"grid/page-{page:05d}.html"


def up(site_path: str) -> str:
    """The way from a page of the site back to the site's root."""
    return "../" * site_path.count("/")


def href(from_page: str, site_path: str) -> str:
    """A relative, percent-encoded link between two files of the site."""
    return quote(up(from_page) + site_path, safe="/.~-_")


def stored_image_href(from_page: str, resized_path: str) -> str:
    """The stored picture, where it is: the build root is the browser's parent."""
    return quote(up(from_page) + "../" + resized_path, safe="/.~-_")


# ---------------------------------------------------------------- HTML helpers

def esc(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


@functools.lru_cache(maxsize=4096)
def esc_word(value) -> str:
    """esc for the few values a categorical column repeats (relation names, splits)."""
    return esc(value)


def html_page(site_path: str, title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{esc(title)}</title>\n"
        f"<link rel=\"stylesheet\" href=\"{href(site_path, 'style.css')}\">\n"
        f"</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def html_table(headers: list[str], rows: list[list[str]], classes: str = "") -> str:
    """A table whose cells are already HTML (escape data before)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    css = f' class="{classes}"' if classes else ""
    return f"<table{css}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def section(title: str, body: str, anchor: str = "") -> str:
    ident = f' id="{anchor}"' if anchor else ""
    return f"<section{ident}>\n<h2>{esc(title)}</h2>\n{body}\n</section>"


def more_note(shown: int, total: int, what: str) -> str:
    return f'<p class="note">Showing {shown:,} of {total:,} {esc(what)}.</p>' if total > shown else ""


def number(value, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "&ndash;"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    return f"{float(value):.{digits}f}"


STYLE = """\
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;padding:0 16px 40px;max-width:1200px;color:#1d1d1f}
h1{font-size:22px;margin:16px 0 8px}h2{font-size:17px;margin:24px 0 8px;border-bottom:1px solid #ddd}
nav{margin:8px 0;display:flex;flex-wrap:wrap;gap:4px 12px}
table{border-collapse:collapse;margin:4px 0 8px}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}table.numbers td:not(:first-child){text-align:right}
.note{color:#666;font-size:12px}code{font-size:12px;word-break:break-all}
.grid{display:flex;flex-wrap:wrap;gap:8px}
.thumb{display:flex;flex-direction:column;align-items:center;width:168px;text-decoration:none;color:#1d1d1f;
font-size:11px}
.thumb img{border:1px solid #ccc;background:#eee}
.thumb span{max-width:164px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.figures{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
figure{margin:0}figcaption{font-size:12px;color:#444}
.stack{position:relative}.stack img{position:absolute;left:0;top:0}
.stack:hover .overlay{opacity:0}
.sw{display:inline-block;width:12px;height:12px;border:1px solid #555;vertical-align:middle}
.hit{color:#0a6b0a;font-weight:600}.miss{color:#a11}.tag{display:inline-block;margin:1px 6px 1px 0}
svg.chart text{font:11px system-ui,sans-serif;fill:#222}svg.chart rect{fill:#4a78b0}
svg.chart rect.axis{fill:#999}
dl.counts{display:grid;grid-template-columns:max-content max-content;gap:2px 16px}
dl.counts dd{margin:0;text-align:right}
"""


# ---------------------------------------------------------------- SVG charts

def short(text: str, length: int = 26) -> str:
    return text if len(text) <= length else text[: length - 1] + "\u2026"


def bar_chart(items: list[tuple[str, int]], caption: str) -> str:
    """Horizontal bars, one per (label, count), longest first as given."""
    if not items:
        return ""
    label_width, bar_width, row = 180, 380, 16
    width, height = label_width + bar_width + 70, row * len(items) + 4
    top = max(value for _, value in items) or 1
    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(caption)}">']
    for k, (label, value) in enumerate(items):
        y = 2 + k * row
        length = round(bar_width * value / top) if value else 0
        parts.append(f'<text x="{label_width - 6}" y="{y + 12}" text-anchor="end">{esc(short(label))}</text>'
                     f'<rect x="{label_width}" y="{y + 2}" width="{length}" height="{row - 4}">'
                     f'<title>{esc(label)}: {value:,}</title></rect>'
                     f'<text x="{label_width + length + 4}" y="{y + 12}">{value:,}</text>')
    parts.append("</svg>")
    return "".join(parts)


def column_chart(bins: list[tuple[str, int]], caption: str, plot_height: int = 110, labels: bool = True) -> str:
    """Vertical bars (a histogram), labelled under the first, the last and a few between
    (or not at all: a sparkline, whose bars still name their bin on hover)."""
    if not bins:
        return ""
    column = max(6, min(28, 640 // len(bins))) if labels else 6
    width, height = column * len(bins) + 8, plot_height + (30 if labels else 8)
    top = max(value for _, value in bins) or 1
    every = max(1, len(bins) // 8)
    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(caption)}">',
             f'<rect class="axis" x="0" y="{plot_height + 4}" width="{width}" height="1"></rect>']
    for k, (label, value) in enumerate(bins):
        x, bar = 4 + k * column, round(plot_height * value / top) if value else 0
        parts.append(f'<rect x="{x}" y="{plot_height + 4 - bar}" width="{column - 1}" height="{bar}">'
                     f'<title>{esc(label)}: {value:,}</title></rect>')
        if labels and (k % every == 0 or k == len(bins) - 1):
            parts.append(f'<text x="{x}" y="{plot_height + 18}">{esc(short(label, 10))}</text>')
    parts.append("</svg>")
    return "".join(parts)


# ---------------------------------------------------------------- reading the build

def table_files(folder: Path) -> list[Path]:
    """The Parquet files of a table folder (not the hidden partial files of a running job)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.parquet") if not p.name.startswith("."))


SHARD_FILE = re.compile(r"shard-(\d+)\.parquet")


def read_file(path: Path, columns: list[str] | None = None, filters=None) -> pa.Table:
    """One Parquet file, with those of `columns` it has."""
    if columns is not None:
        names = pq.read_schema(path).names
        columns = [c for c in columns if c in names]
    return pq.read_table(path, columns=columns, filters=filters)


def read_all(files: list[Path], columns: list[str] | None = None) -> pa.Table | None:
    tables = [read_file(f, columns) for f in files]
    return pa.concat_tables(tables, promote_options="permissive") if tables else None


@dataclass
class Source:
    """The build folder the site is made from; every part may be absent."""

    root: Path

    def files(self, table: str) -> list[Path]:
        return table_files(self.root / "tables" / table)

    def shard_files(self, table: str) -> dict[int, Path] | None:
        """Shard number -> file, when the table is split by image shard; else None."""
        files = self.files(table)
        matches = [SHARD_FILE.fullmatch(f.name) for f in files]
        if not files or not all(matches):
            return None
        return {int(m.group(1)): f for m, f in zip(matches, files)}

    def features(self) -> list[str]:
        """Every table whose columns are exactly (image_id, vector)."""
        folder = self.root / "tables"
        names = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
        return [n for n in names if self.files(n) and pq.read_schema(self.files(n)[0]).names == ["image_id", "vector"]]

    def runs(self) -> dict[str, Path]:
        """Image-level baseline runs (region runs and other forms are left out)."""
        files = table_files(self.root / "runs")
        return {f.stem: f for f in files if set(RUN_COLUMNS) <= set(pq.read_schema(f).names)}

    def table(self, table: str, columns: list[str] | None = None) -> pa.Table | None:
        return read_all(self.files(table), columns)


# ---------------------------------------------------------------- the catalogue of images

@dataclass
class Catalogue:
    """Every usable image in id order: its shard, stored picture and place in the grid."""

    table: pa.Table
    per_page: int
    ids: list[str] = field(init=False)
    shards: np.ndarray = field(init=False)
    index: pd.Index = field(init=False)

    def __post_init__(self):
        self.ids = self.table.column("image_id").to_pylist()
        self.shards = self.table.column("shard").to_numpy().astype(np.int64)
        self.index = pd.Index(self.ids, dtype=object)

    @classmethod
    def load(cls, source: Source, per_page: int) -> "Catalogue":
        columns = ["image_id", "shard", "resized_path", "resized_width", "resized_height"]
        table = source.table("images", columns)
        if table is None:
            table = pa.table({c: pa.array([], pa.string() if c in ("image_id", "resized_path") else pa.int32())
                              for c in columns})
        table = table.sort_by([("image_id", "ascending")]).combine_chunks()
        return cls(table, per_page)

    def __len__(self) -> int:
        return len(self.ids)

    def positions(self, ids) -> np.ndarray:
        """Positions of ids in the catalogue (-1 for an id that is not an image)."""
        values = ids.to_pylist() if hasattr(ids, "to_pylist") else list(ids)
        return self.index.get_indexer(pd.Index(values, dtype=object))

    def page_of(self, position: int) -> int:
        return position // self.per_page

    def pages(self) -> int:
        return max(1, -(-len(self) // self.per_page))

    def page_path(self, position: int) -> str:
        return image_page_path(int(self.shards[position]), self.ids[position])

    def shard_numbers(self) -> list[int]:
        return sorted(set(self.shards.tolist()))


# ---------------------------------------------------------------- per-image tables, shard by shard

# The per-image tables an image page reads, and the columns it uses.
PER_IMAGE = {
    "images": None,
    "text_terms": ["image_id", "term", "score", "rank"],
    "image_urls": ["image_id", "page_id", "img_src", "url", "occurrences"],
    "text_rejects": ["image_id", "page_id", "reason"],
    "regions": ["image_id", "annotator", "region_id", "label", "label_path"],
    "spatial_relations": ["image_id", "annotator", "region_i", "region_j", "topology", "horizontal", "vertical"],
    "segmentation_rejects": ["image_id", "annotator", "region_id", "reason"],
    "ground_truth": ["image_id", "concept", "agreement", "derived"],
    "splits": ["image_id", "split"],
    "duplicates": ["image_id", "duplicate_of", "group_size"],
}


def decided(schema: pa.Schema) -> ds.Expression:
    """Rows a run decided (its `decision` is a bool or a 0/1 number)."""
    if pa.types.is_boolean(schema.field("decision").type):
        return ds.field("decision") == True  # noqa: E712 (an Arrow expression, not a Python test)
    return ds.field("decision") != 0


class PerImage:
    """Reads a per-image table for one image shard: straight from its shard file when the
    table is split by shard, else from a copy regrouped by shard in a scratch folder."""

    def __init__(self, source: Source, catalogue: Catalogue, scratch: Path, top_terms: int, log: Log):
        self.source, self.catalogue, self.scratch, self.log = source, catalogue, scratch, log
        self.filters = {"text_terms": ds.field("rank") <= top_terms}
        self.sharded: dict[str, dict[int, Path]] = {}
        self.bucketed: set[str] = set()
        for name, columns in PER_IMAGE.items():
            if name == "text_terms" and top_terms <= 0:
                continue
            self.add(name, source.files(name), columns, self.filters.get(name), source.shard_files(name))
        runs = source.runs()
        self.runs = sorted(runs)
        for name, path in sorted(runs.items()):
            self.add(f"run:{name}", [path], ["image_id", "concept", "score"], decided(pq.read_schema(path)), None)

    def add(self, key: str, files: list[Path], columns, filters, shard_files) -> None:
        if shard_files:
            self.sharded[key] = shard_files
        elif files:
            self.log(f"browse: regrouping {key} by image shard")
            self.bucket(key, files, columns, filters)
            self.bucketed.add(key)

    def bucket(self, key: str, files: list[Path], columns, filters) -> None:
        dataset = ds.dataset([str(f) for f in files], format="parquet")
        if columns is not None:
            columns = [c for c in columns if c in dataset.schema.names]
        scanner = dataset.scanner(columns=columns, filter=filters, batch_size=1 << 18, use_threads=False)
        schema = scanner.projected_schema.append(pa.field("browse_shard", pa.int64()))

        def with_shards():
            for batch in scanner.to_batches():
                positions = self.catalogue.positions(batch.column("image_id"))
                keep = positions >= 0
                if keep.any():
                    batch = batch.filter(pa.array(keep))
                    shards = pa.array(self.catalogue.shards[positions[keep]])
                    yield pa.RecordBatch.from_arrays([*batch.columns, shards], schema=schema)

        ds.write_dataset(with_shards(), self.folder(key), schema=schema, format="ipc", use_threads=False,
                         partitioning=ds.partitioning(pa.schema([schema.field("browse_shard")])))

    def folder(self, key: str) -> Path:
        return self.scratch / hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]

    def has(self, key: str) -> bool:
        return key in self.sharded or key in self.bucketed

    def read(self, key: str, shard: int) -> pa.Table | None:
        if key in self.sharded:
            path = self.sharded[key].get(shard)
            name = key.split(":")[0]
            return read_file(path, PER_IMAGE.get(name), self.filters.get(name)) if path else None
        folder = self.folder(key) / str(shard)
        if key in self.bucketed and folder.is_dir():
            return ds.dataset(folder, format="ipc").to_table()
        return None


@dataclass
class Rows:
    """One image's rows of a table (up to a cap) and how many it has."""

    rows: list[dict]
    total: int


class GroupedRows:
    """Each image's rows of a table, kept in Arrow and made Python rows only when
    its page asks: a shard's relations as Python dicts would take a gigabyte."""

    def __init__(self, shown: pa.Table, groups: dict[str, tuple[int, int, int]]):
        self.shown, self.groups = shown, groups

    def get(self, image_id: str, default: Rows | None = None) -> Rows | None:
        if image_id not in self.groups:
            return default
        first, n, count = self.groups[image_id]
        return Rows(self.shown.slice(first, n).to_pylist(), count)


def group_by_image(table: pa.Table | None, order: list[tuple[str, str]], cap: int | None = None
                   ) -> dict[str, Rows] | GroupedRows:
    """Rows grouped by image_id, each group sorted by `order` and cut at `cap`."""
    if table is None or table.num_rows == 0:
        return {}
    order = [o for o in order if o[0] in table.column_names]
    table = table.sort_by([("image_id", "ascending"), *order]).combine_chunks()
    runs = pc.run_end_encode(table.column("image_id").combine_chunks())
    ends = runs.run_ends.to_numpy().astype(np.int64)
    starts = np.concatenate([[0], ends[:-1]])
    counts = ends - starts
    shown = counts if cap is None else np.minimum(counts, cap)
    first_shown = np.cumsum(shown) - shown
    take = np.repeat(starts, shown) + np.arange(int(shown.sum())) - np.repeat(first_shown, shown)
    return GroupedRows(table.take(pa.array(take)), {
        image_id: (first, n, count) for image_id, first, n, count
        in zip(runs.values.to_pylist(), first_shown.tolist(), shown.tolist(), counts.tolist())})


# ---------------------------------------------------------------- colours and overlays

def palette_colour(index: int) -> tuple[int, int, int]:
    """Well-separated colours: hues a golden angle apart, three lightness levels."""
    hue = (index * 0.618033988749895) % 1.0
    lightness = (0.50, 0.38, 0.62)[index % 3]
    red, green, blue = colorsys.hls_to_rgb(hue, lightness, 0.80)
    return round(red * 255), round(green * 255), round(blue * 255)


def hex_colour(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


class Palette:
    """A colour per region label, the most frequent labels first, the same on every page;
    regions without a label are coloured by their id."""

    def __init__(self, labels_by_frequency: list[str]):
        self.order = {label: k for k, label in enumerate(labels_by_frequency)}

    def colour(self, label: str | None, region_id: int) -> tuple[int, int, int]:
        if label is None or label not in self.order:
            return palette_colour(len(self.order) + int(region_id))
        return palette_colour(self.order[label])


def nearest_resize(labels: np.ndarray, width: int, height: int) -> np.ndarray:
    """Nearest-neighbour resampling by pixel centres (exact, independent of any library)."""
    rows = ((np.arange(height) + 0.5) * labels.shape[0] / height).astype(np.int64)
    cols = ((np.arange(width) + 0.5) * labels.shape[1] / width).astype(np.int64)
    return labels[np.minimum(rows, labels.shape[0] - 1)][:, np.minimum(cols, labels.shape[1] - 1)]


def region_edges(labels: np.ndarray) -> np.ndarray:
    """Labelled pixels with a 4-neighbour of another region."""
    edges = np.zeros(labels.shape, dtype=bool)
    vertical = labels[1:, :] != labels[:-1, :]
    horizontal = labels[:, 1:] != labels[:, :-1]
    edges[1:, :] |= vertical
    edges[:-1, :] |= vertical
    edges[:, 1:] |= horizontal
    edges[:, :-1] |= horizontal
    return edges & (labels != 0)


def overlay_png(label_map: np.ndarray, width: int, height: int, colours: dict[int, tuple[int, int, int]]) -> bytes:
    """The regions as a semi-transparent PNG at the stored picture's size, outlined.

    Each pixel is (region, on its outline); with at most 256 such pairs the PNG is
    a palette image (a quarter of the bytes to compress), else RGBA."""
    labels = nearest_resize(label_map, width, height).astype(np.int64)
    codes = labels * 2 + region_edges(labels)
    present = np.bincount(codes.ravel()) > 0  # codes are small: a count beats a sort
    values, inverse = np.flatnonzero(present), (np.cumsum(present) - 1)[codes]
    palette = np.array([pixel_colour(int(v) // 2, bool(v % 2), colours) for v in values], dtype=np.uint8)
    buffer = io.BytesIO()
    if len(values) <= 256:
        image = Image.fromarray(inverse.reshape(labels.shape).astype(np.uint8), "P")
        image.putpalette(palette[:, :3].tobytes(), "RGB")
        image.save(buffer, "PNG", transparency=palette[:, 3].tobytes(), compress_level=6)
    else:
        Image.fromarray(palette[inverse.reshape(labels.shape)], "RGBA").save(buffer, "PNG", compress_level=6)
    return buffer.getvalue()


def pixel_colour(region_id: int, outline: bool, colours: dict[int, tuple[int, int, int]]) -> tuple[int, ...]:
    """Unlabelled pixels and regions without a row stay clear; fills are semi-transparent,
    outlines opaque and darker."""
    rgb = colours.get(region_id)
    if region_id == 0 or rgb is None:
        return (0, 0, 0, 0)
    if outline:
        return (rgb[0] // 2, rgb[1] // 2, rgb[2] // 2, 255)
    return (*rgb, FILL_ALPHA)


def read_label_map(path: Path) -> np.ndarray | None:
    if not path.is_file():
        return None
    with Image.open(path) as image:
        return np.asarray(image)


# ---------------------------------------------------------------- the site's files

class Site:
    """Writes the site's files and counts them."""

    def __init__(self, root: Path):
        self.root = root
        self.files = 0
        self.folders: set[Path] = set()

    def write(self, site_path: str, data: str | bytes) -> None:
        path = self.root / site_path
        if path.parent not in self.folders:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.folders.add(path.parent)
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        self.files += 1


# ---------------------------------------------------------------- the index's figures

@dataclass
class Figures:
    counts: dict[str, int] = field(default_factory=dict)
    region_labels: Counter = field(default_factory=Counter)        # label -> regions
    region_label_images: Counter = field(default_factory=Counter)  # label -> images
    regions_per_segmentation: Counter = field(default_factory=Counter)
    relations: dict[str, Counter] = field(default_factory=dict)
    concepts: Counter = field(default_factory=Counter)             # concept -> images
    splits: Counter = field(default_factory=Counter)
    rejects: dict[tuple[str, str], list] = field(default_factory=dict)  # (where, reason) -> [count, ids]
    norms: dict[str, dict] = field(default_factory=dict)

    def labels_by_frequency(self) -> list[str]:
        return [label for label, _ in sorted(self.region_labels.items(), key=lambda kv: (-kv[1], kv[0]))]


def count_rows(files: list[Path]) -> int:
    return sum(pq.read_metadata(f).num_rows for f in files)


def count_images(files: list[Path]) -> int:
    """Distinct image ids; tables are split by image shard, so per-file counts add up."""
    return sum(pc.count_distinct(read_file(f, ["image_id"]).column("image_id")).as_py() for f in files)


def collect_counts(source: Source, catalogue: Catalogue, runs: list[str]) -> dict[str, int]:
    counts = {"images": len(catalogue)}
    for key, table in (("rejects", "rejects"), ("duplicates", "duplicates"), ("pages", "pages"),
                       ("regions", "regions"), ("spatial relations", "spatial_relations"),
                       ("concepts", "concepts"), ("ground truth labels", "ground_truth")):
        if source.files(table):
            counts[key] = count_rows(source.files(table))
    for key, table in (("images with text terms", "text_terms"), ("images with pages", "image_urls"),
                       ("images with regions", "regions"), ("images with ground truth", "ground_truth")):
        if source.files(table):
            counts[key] = count_images(source.files(table))
    if runs:
        counts["baseline runs"] = len(runs)
    return counts


def collect_regions(source: Source, figures: Figures) -> None:
    for path in source.files("regions"):
        table = read_file(path, ["image_id", "annotator", "label"])
        if "label" in table.column_names:
            labelled = table.filter(pc.is_valid(table.column("label")))
            for row in labelled.group_by("label").aggregate([("image_id", "count"),
                                                              ("image_id", "count_distinct")]).to_pylist():
                figures.region_labels[row["label"]] += row["image_id_count"]
                figures.region_label_images[row["label"]] += row["image_id_count_distinct"]
        keys = [k for k in ("image_id", "annotator") if k in table.column_names]
        sizes = table.group_by(keys).aggregate([([], "count_all")]).column("count_all").to_pylist()
        figures.regions_per_segmentation.update(sizes)


def collect_relations(source: Source, figures: Figures) -> None:
    for path in source.files("spatial_relations"):
        table = read_file(path, ["topology", "horizontal", "vertical"])
        for name in table.column_names:
            counts = figures.relations.setdefault(name, Counter())
            for row in table.group_by(name).aggregate([([], "count_all")]).to_pylist():
                counts[row[name]] += row["count_all"]


def collect_benchmark(source: Source, figures: Figures) -> None:
    for path in source.files("ground_truth"):
        table = read_file(path, ["image_id", "concept"])
        for row in table.group_by("concept").aggregate([("image_id", "count_distinct")]).to_pylist():
            figures.concepts[row["concept"]] += row["image_id_count_distinct"]
    for path in source.files("splits"):
        for row in read_file(path, ["split"]).group_by("split").aggregate([([], "count_all")]).to_pylist():
            figures.splits[row["split"]] += row["count_all"]


def reason_group(reason: str | None) -> str:
    """A reason without its particulars: `cannot decode: image file is truncated` -> `cannot decode`."""
    return (reason or "(none)").split(":", 1)[0].strip()


def collect_rejects(source: Source, figures: Figures) -> None:
    for where, table_name in (("ingest", "rejects"), ("text", "text_rejects"),
                              ("segmentation", "segmentation_rejects")):
        for path in source.files(table_name):
            table = read_file(path, ["image_id", "reason"])
            for image_id, reason in zip(table.column("image_id").to_pylist(), table.column("reason").to_pylist()):
                entry = figures.rejects.setdefault((where, reason_group(reason)), [0, []])
                entry[0] += 1
                entry[1] = sorted(set(entry[1]) | {image_id or ""})[:REJECT_EXAMPLES]


def vector_norms(path: Path) -> tuple[np.ndarray, int]:
    column = read_file(path, ["vector"]).column("vector").combine_chunks()
    dim = column.type.list_size
    values = column.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
    return np.sqrt(np.einsum("ij,ij->i", values, values, dtype=np.float64)), dim


def collect_norms(source: Source, figures: Figures, log: Log) -> None:
    for feature in source.features():
        parts, dim = [], 0
        for path in source.files(feature):
            norms, dim = vector_norms(path)
            parts.append(norms)
        norms = np.concatenate(parts) if parts else np.zeros(0)
        finite = norms[np.isfinite(norms)]
        figures.norms[feature] = {"dim": dim, "vectors": len(norms), "non_finite": len(norms) - len(finite),
                                  "zero": int((finite == 0).sum()), "norms": finite}
        log(f"browse: feature norms of {feature} ({len(norms):,} vectors)")


def collect_figures(source: Source, catalogue: Catalogue, runs: list[str], log: Log) -> Figures:
    figures = Figures(counts=collect_counts(source, catalogue, runs))
    collect_regions(source, figures)
    collect_relations(source, figures)
    collect_benchmark(source, figures)
    collect_rejects(source, figures)
    collect_norms(source, figures, log)
    return figures


# ---------------------------------------------------------------- the index

def counts_html(counts: dict[str, int]) -> str:
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{v:,}</dd>" for k, v in counts.items())
    return f'<dl class="counts">{rows}</dl>'


def frequency_html(counts: Counter, images: Counter | None, what: str, unit: str) -> str:
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    chart = bar_chart(ranked[:MAX_CHART_BARS], f"{what}: the {min(len(ranked), MAX_CHART_BARS)} most frequent")
    headers = [what, unit] + (["images"] if images is not None else [])
    rows = [[esc(label), number(count)] + ([number(images[label])] if images is not None else [])
            for label, count in ranked[:MAX_LABEL_ROWS]]
    table = html_table(headers, rows)
    return (f"<p>{len(ranked):,} distinct; the {min(len(ranked), MAX_CHART_BARS)} most frequent:</p>{chart}"
            f"<details><summary>All {esc(what)}s</summary>{table}{more_note(len(rows), len(ranked), what + 's')}"
            "</details>")


def regions_histogram_html(sizes: Counter) -> str:
    if not sizes:
        return ""
    top = min(max(sizes), REGIONS_HISTOGRAM_TAIL)
    bins = [(str(n), sizes.get(n, 0)) for n in range(1, top)]
    bins.append((f"{top}+" if max(sizes) > top else str(top), sum(v for n, v in sizes.items() if n >= top)))
    return (f"<p>{sum(sizes.values()):,} segmentations (image and annotator); regions in each:</p>"
            + column_chart(bins, "regions per segmentation"))


def relations_html(relations: dict[str, Counter]) -> str:
    blocks = []
    for name in ("topology", "horizontal", "vertical"):
        counts = relations.get(name)
        if counts:
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
            rows = [[esc(value), number(count)] for value, count in ranked]
            blocks.append(html_table([name, "pairs"], rows))
    return f'<div class="figures">{"".join(blocks)}</div>'


def rejects_html(rejects: dict) -> str:
    if not rejects:
        return "<p>No rejects.</p>"
    ordered = sorted(rejects.items(), key=lambda kv: (kv[0][0], -kv[1][0], kv[0][1]))
    rows = [[esc(where), esc(reason), number(count), esc(", ".join(ids))]
            for (where, reason), (count, ids) in ordered[:MAX_REJECT_GROUPS]]
    chart = bar_chart([(f"{where}: {reason}", count) for (where, reason), (count, _) in ordered[:MAX_CHART_BARS]],
                      "rejects by reason")
    return chart + html_table(["stage", "reason", "rows", "examples"], rows) + more_note(
        len(rows), len(ordered), "reasons")


def norms_html(norms: dict[str, dict]) -> str:
    rows = []
    for feature, info in norms.items():
        values = info["norms"]
        low, mid, high = (number(float(f(values)), 4) for f in (np.min, np.median, np.max)) if len(values) else (
            "&ndash;",) * 3
        counts, edges = np.histogram(values, bins=HISTOGRAM_BINS) if len(values) else (np.zeros(0, int), [])
        bins = [(f"{edges[k]:.3f}-{edges[k + 1]:.3f}", int(c)) for k, c in enumerate(counts)]
        rows.append([esc(feature), number(info["dim"]), number(info["vectors"]), number(info["non_finite"]),
                     number(info["zero"]), low, mid, high, column_chart(bins, f"{feature} norms", 32, labels=False)])
    return html_table(["feature", "dim", "vectors", "non-finite", "zero", "min", "median", "max",
                       "histogram of L2 norms"], rows)


def jump_html(catalogue: Catalogue) -> str:
    """Grid pages by their first image id, like a dictionary's thumb index."""
    if not len(catalogue):
        return "<p>No images.</p>"
    pages = catalogue.pages()
    shown = min(pages, MAX_JUMPS)
    picks = sorted({(k * (pages - 1)) // max(1, shown - 1) for k in range(shown)})
    links = [f'<a href="{href("index.html", grid_page_path(p))}">{p + 1:,}: '
             f'{esc(short(catalogue.ids[p * catalogue.per_page], 30))}</a>' for p in picks]
    return (f"<p>{pages:,} grid pages of {catalogue.per_page:,} images, in id order; "
            f"pages by their first image:</p><nav>{' '.join(links)}</nav>")


def duplicates_html(source: Source, catalogue: Catalogue) -> str:
    table = source.table("duplicates", ["image_id", "duplicate_of", "group_size"])
    if table is None or table.num_rows == 0:
        return "<p>No duplicates.</p>"
    table = table.sort_by([("duplicate_of", "ascending"), ("image_id", "ascending")]).slice(0, MAX_DUPLICATES_SHOWN)
    rows = [[image_link("index.html", catalogue, row["image_id"]),
             image_link("index.html", catalogue, row["duplicate_of"]), number(row.get("group_size"))]
            for row in table.to_pylist()]
    total = count_rows(source.files("duplicates"))
    return html_table(["image", "same bytes as", "group size"], rows) + more_note(len(rows), total, "rows")


def image_link(from_page: str, catalogue: Catalogue, image_id: str | None) -> str:
    positions = catalogue.positions([image_id]) if image_id is not None else [-1]
    if positions[0] < 0:
        return esc(image_id)
    return f'<a href="{href(from_page, catalogue.page_path(int(positions[0])))}">{esc(image_id)}</a>'


def index_html(settings: dict, source: Source, catalogue: Catalogue, figures: Figures, has_leaderboard: bool) -> str:
    links = [f'<a href="{href("index.html", grid_page_path(0))}">image grid</a>']
    if has_leaderboard:
        links.append(f'<a href="{href("index.html", "leaderboard.html")}">leaderboard</a>')
    parts = [f"<h1>{esc(settings['title'])}</h1>", f"<nav>{' '.join(links)}</nav>",
             section("Counts", counts_html(figures.counts), "counts"),
             section("Browse the images", jump_html(catalogue), "browse")]
    if figures.splits:
        parts.append(section("Splits", html_table(["split", "images"], [[esc(k), number(v)] for k, v in sorted(
            figures.splits.items())]), "splits"))
    if figures.region_labels:
        parts.append(section("Region labels", frequency_html(figures.region_labels, figures.region_label_images,
                                                             "label", "regions"), "labels"))
    if figures.concepts:
        parts.append(section("Ground-truth concepts", frequency_html(figures.concepts, None, "concept", "images"),
                             "concepts"))
    if figures.regions_per_segmentation:
        parts.append(section("Regions per image", regions_histogram_html(figures.regions_per_segmentation),
                             "regions"))
    if figures.relations:
        parts.append(section("Spatial relations", relations_html(figures.relations), "relations"))
    parts.append(section("Rejects by reason", rejects_html(figures.rejects), "rejects"))
    if source.files("duplicates"):
        parts.append(section("Duplicates", duplicates_html(source, catalogue), "duplicates"))
    if figures.norms:
        parts.append(section("Feature norms", norms_html(figures.norms), "features"))
    return html_page("index.html", settings["title"], "\n".join(parts))


def leaderboard_html(settings: dict, table: pa.Table) -> str:
    headers = table.column_names
    rows = [[esc(v) if isinstance(v, str) or v is None else number(v) for v in row.values()]
            for row in table.to_pylist()]
    body = ('<h1>Leaderboard</h1><nav><a href="index.html">index</a></nav>'
            '<p class="note">Runs as the build ranked them (best MAP-samples first).</p>'
            + html_table(headers, rows, "numbers"))
    return html_page("leaderboard.html", f"{settings['title']}: leaderboard", body)


# ---------------------------------------------------------------- the grid

THUMB = 160


def thumb_size(width: int, height: int) -> tuple[int, int]:
    scale = min(1.0, THUMB / max(width, height, 1))
    return max(1, round(width * scale)), max(1, round(height * scale))


def pager(page: int, pages: int) -> str:
    here = grid_page_path(page)
    steps = [("first", 0), ("\u2212100", page - 100), ("\u221210", page - 10), ("previous", page - 1),
             ("next", page + 1), ("+10", page + 10), ("+100", page + 100), ("last", pages - 1)]
    links = [f'<a href="{href(here, grid_page_path(target))}">{label}</a>'
             for label, target in steps if 0 <= target < pages and target != page]
    return (f'<nav><a href="{href(here, "index.html")}">index</a> <span>page {page + 1:,} of {pages:,}</span> '
            + " ".join(links) + "</nav>")


def grid_html(settings: dict, catalogue: Catalogue, page: int) -> str:
    here = grid_page_path(page)
    start = page * catalogue.per_page
    rows = catalogue.table.slice(start, catalogue.per_page).to_pylist()
    tiles = []
    for offset, row in enumerate(rows):
        width, height = thumb_size(row["resized_width"] or THUMB, row["resized_height"] or THUMB)
        tiles.append(f'<a class="thumb" href="{href(here, catalogue.page_path(start + offset))}">'
                     f'<img src="{stored_image_href(here, row["resized_path"] or "")}" width="{width}" '
                     f'height="{height}" loading="lazy" alt="{esc(row["image_id"])}">'
                     f'<span title="{esc(row["image_id"])}">{esc(row["image_id"])}</span></a>')
    body = (f"<h1>{esc(settings['title'])}: images {start + 1:,}&ndash;{start + len(rows):,}</h1>"
            + pager(page, catalogue.pages()) + '<div class="grid">\n' + "\n".join(tiles) + "\n</div>"
            + pager(page, catalogue.pages()))
    return html_page(here, f"{settings['title']}: grid page {page + 1}", body)


def write_grid(site: Site, settings: dict, catalogue: Catalogue, log: Log) -> None:
    for page in range(catalogue.pages()):
        site.write(grid_page_path(page), grid_html(settings, catalogue, page))
    log(f"browse: {catalogue.pages():,} grid pages")


# ---------------------------------------------------------------- image pages

@dataclass
class ShardData:
    """One image shard's rows of every per-image table, grouped by image."""

    terms: dict[str, Rows]
    urls: dict[str, Rows]
    text_rejects: dict[str, Rows]
    regions: dict[str, Rows]
    relations: dict[str, Rows]
    segmentation_rejects: dict[str, Rows]
    truth: dict[str, Rows]
    splits: dict[str, Rows]
    duplicates: dict[str, Rows]
    runs: dict[str, dict[str, Rows]]
    pages: dict[str, dict]


def load_shard(per_image: PerImage, pages: pa.Table | None, shard: int) -> ShardData:
    def grouped(key, order, cap=None):
        return group_by_image(per_image.read(key, shard), order, cap)

    urls = per_image.read("image_urls", shard)
    return ShardData(
        terms=grouped("text_terms", [("rank", "ascending"), ("term", "ascending")]),
        urls=group_by_image(urls, [("page_id", "ascending"), ("img_src", "ascending")], MAX_PAGES_SHOWN),
        text_rejects=grouped("text_rejects", [("page_id", "ascending"), ("reason", "ascending")], MAX_PAGES_SHOWN),
        regions=grouped("regions", [("annotator", "ascending"), ("region_id", "ascending")]),
        relations=grouped("spatial_relations", [("annotator", "ascending"), ("region_i", "ascending"),
                                                ("region_j", "ascending")], MAX_RELATIONS_SHOWN),
        segmentation_rejects=grouped("segmentation_rejects", [("annotator", "ascending"),
                                                              ("region_id", "ascending")], MAX_REGIONS_SHOWN),
        truth=grouped("ground_truth", [("concept", "ascending")], MAX_TRUTH_SHOWN),
        splits=grouped("splits", [("split", "ascending")]),
        duplicates=grouped("duplicates", [("duplicate_of", "ascending")]),
        runs={name: grouped(f"run:{name}", [("score", "descending"), ("concept", "ascending")])
              for name in per_image.runs},
        pages=pages_of(pages, urls),
    )


def pages_of(pages: pa.Table | None, urls: pa.Table | None) -> dict[str, dict]:
    """The `pages` rows (title, status) of the pages a shard's images came from."""
    if pages is None or urls is None or urls.num_rows == 0:
        return {}
    wanted = pc.unique(urls.column("page_id").combine_chunks())
    rows = pages.filter(pc.is_in(pages.column("page_id"), value_set=wanted.cast(pages.schema.field("page_id").type)))
    return {row["page_id"]: row for row in rows.to_pylist()}


@dataclass
class ImageView:
    """What one image page needs."""

    row: dict
    position: int
    data: ShardData
    shard: int

    @property
    def image_id(self) -> str:
        return self.row["image_id"]

    def rows(self, table: dict[str, Rows]) -> Rows:
        return table.get(self.image_id) or Rows([], 0)


def facts_html(view: ImageView) -> str:
    row = view.row
    facts = [("image id", esc(row["image_id"])), ("shard", number(view.shard)),
             ("original size", f"{number(row.get('width'))} &times; {number(row.get('height'))}"),
             ("stored size", f"{number(row.get('resized_width'))} &times; {number(row.get('resized_height'))}")]
    for key in ("source_path", "format", "mode", "conversion", "file_size", "sha256"):
        if row.get(key) not in (None, ""):
            facts.append((key.replace("_", " "), f"<code>{esc(row[key])}</code>" if isinstance(row[key], str)
                          else number(row[key])))
    for duplicate in view.rows(view.data.duplicates).rows:
        facts.append(("byte-identical", f"group of {number(duplicate.get('group_size'))}, first id "
                                        f"{esc(duplicate.get('duplicate_of'))}"))
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in facts)
    return f'<table class="facts"><tbody>{rows}</tbody></table>'


def picture_html(here: str, view: ImageView) -> str:
    row = view.row
    return (f'<figure><img src="{stored_image_href(here, row["resized_path"] or "")}" width="{row["resized_width"]}" '
            f'height="{row["resized_height"]}" alt="{esc(row["image_id"])}"><figcaption>stored picture'
            "</figcaption></figure>")


def text_html(view: ImageView) -> str:
    terms = view.rows(view.data.terms)
    urls = view.rows(view.data.urls)
    rejects = view.rows(view.data.text_rejects)
    parts = []
    if terms.total:
        parts.append(html_table(["rank", "term", "score"], [[number(t.get("rank")), esc(t["term"]),
                                                             f'{t["score"]:.6f}'] for t in terms.rows]))
    else:
        parts.append("<p>No text terms.</p>")
    if urls.total:
        rows = []
        for url in urls.rows:
            page = view.data.pages.get(url["page_id"], {})
            rows.append([esc(page.get("title")), f"<code>{esc(url['page_id'])}</code>",
                         f"<code>{esc(url.get('url'))}</code>", f"<code>{esc(url.get('img_src'))}</code>",
                         number(url.get("occurrences")), esc(page.get("status"))])
        parts.append("<h3>Pages</h3>" + html_table(["title", "page id", "url", "img src", "occurrences", "status"],
                                                    rows) + more_note(len(urls.rows), urls.total, "pages"))
    if rejects.total:
        rows = [[f"<code>{esc(r.get('page_id'))}</code>", esc(r.get("reason"))] for r in rejects.rows]
        parts.append("<h3>Text rejects</h3>" + html_table(["page id", "reason"], rows))
    return "\n".join(parts)


def region_key(row: dict) -> tuple[int, int]:
    return int(row.get("annotator") or 0), int(row["region_id"])


def segmentation_html(here: str, view: ImageView, annotator: int, regions: list[dict], palette: Palette,
                      source: Source, site: Site) -> str:
    row = view.row
    colours = {int(r["region_id"]): palette.colour(r.get("label"), r["region_id"]) for r in regions}
    label_map = read_label_map(source.root / "segmentations" / shard_name(view.shard) / f"annotator-{annotator}"
                               / f"{row['image_id']}.png")
    if label_map is not None and row.get("resized_width") and row.get("resized_height"):
        path = overlay_path(view.shard, annotator, row["image_id"])
        site.write(path, overlay_png(label_map, row["resized_width"], row["resized_height"], colours))
        size = f'width="{row["resized_width"]}" height="{row["resized_height"]}"'
        figure = (f'<figure><div class="stack" style="width:{row["resized_width"]}px;height:{row["resized_height"]}px">'
                  f'<img src="{stored_image_href(here, row["resized_path"])}" {size} alt="">'
                  f'<img class="overlay" src="{href(here, path)}" {size} alt="regions of annotator {annotator}">'
                  f"</div><figcaption>annotator {annotator}: {len(regions):,} regions (hover to hide)</figcaption>"
                  "</figure>")
    else:
        figure = f'<p class="note">No label map for annotator {annotator}.</p>'
    paths = any(r.get("label_path") for r in regions)
    legend = [[f'<span class="sw" style="background:{hex_colour(colours[int(r["region_id"])])}"></span>',
               number(r["region_id"]), esc(r.get("label") or "\u2014")]
              + ([esc(" / ".join(r.get("label_path") or []))] if paths else [])
              for r in regions[:MAX_REGIONS_SHOWN]]
    headers = ["", "region", "label"] + (["label path"] if paths else [])
    table = html_table(headers, legend) + more_note(len(legend), len(regions), "regions")
    return f'<div class="figures">{figure}<div>{table}</div></div>'


def regions_html(here: str, view: ImageView, palette: Palette, source: Source, site: Site) -> str:
    regions = view.rows(view.data.regions).rows
    by_annotator: dict[int, list[dict]] = {}
    for region in regions:
        by_annotator.setdefault(region_key(region)[0], []).append(region)
    parts = [segmentation_html(here, view, annotator, rows, palette, source, site)
             for annotator, rows in sorted(by_annotator.items())]
    rejects = view.rows(view.data.segmentation_rejects)
    if rejects.total:
        rows = [[number(r.get("annotator")), number(r.get("region_id")), esc(r.get("reason"))] for r in rejects.rows]
        parts.append("<h3>Segmentation rejects</h3>" + html_table(["annotator", "region", "reason"], rows))
    return "\n".join(parts)


def relations_table_html(view: ImageView) -> str:
    labels = {region_key(r): r.get("label") or "\u2014" for r in view.rows(view.data.regions).rows}
    names = {key: esc(f"{key[1]} \u00b7 {label}") for key, label in labels.items()}
    relations = view.rows(view.data.relations)
    multiple = len({int(r.get("annotator") or 0) for r in relations.rows}) > 1
    rows = []
    for r in relations.rows:
        annotator = int(r.get("annotator") or 0)
        cells = [names.get((annotator, int(r[end])), f"{int(r[end])} \u00b7 ?") for end in ("region_i", "region_j")]
        cells += [esc_word(r.get(k)) for k in ("topology", "horizontal", "vertical")]
        rows.append(([number(annotator)] if multiple else []) + cells)
    headers = (["annotator"] if multiple else []) + ["region i", "region j", "topology", "horizontal", "vertical"]
    opened = " open" if relations.total <= RELATIONS_OPEN else ""  # long lists fold away
    return (f"<details{opened}><summary>{relations.total:,} ordered pairs of regions</summary>"
            + html_table(headers, rows) + more_note(len(rows), relations.total, "ordered pairs") + "</details>")


def truth_html(view: ImageView, per_image: PerImage) -> str:
    truth = view.rows(view.data.truth)
    split = view.rows(view.data.splits).rows
    parts = [f"<p>Split: <strong>{esc(split[0]['split']) if split else '&ndash; (in no split)'}</strong></p>"]
    if truth.total:
        tags = [f'<span class="tag">{esc(t["concept"])}'
                + (f' <span class="note">({t["agreement"]:.2f}{", derived" if t.get("derived") else ""})</span>'
                   if t.get("agreement") is not None else "") + "</span>" for t in truth.rows]
        parts.append(f"<p>{' '.join(tags)}</p>" + more_note(len(truth.rows), truth.total, "concepts"))
    elif per_image.has("ground_truth"):
        parts.append("<p>No ground-truth concept.</p>")
    return "\n".join(parts)


CORRECT, WRONG = "\u2713", "\u2717"


def prediction_tag(prediction: dict, correct: bool) -> str:
    mark, css = (CORRECT, "hit") if correct else (WRONG, "miss")
    return f'<span class="tag {css}">{mark} {esc(prediction["concept"])} {prediction["score"]:.3f}</span>'


def runs_html(view: ImageView, per_image: PerImage) -> str:
    truth = {t["concept"] for t in view.rows(view.data.truth).rows}
    rows = []
    for name in per_image.runs:
        predicted = view.data.runs[name].get(view.image_id)
        if predicted is None:
            continue
        hits = sum(p["concept"] in truth for p in predicted.rows)
        tags = [prediction_tag(p, p["concept"] in truth) for p in predicted.rows[:MAX_DECIDED_SHOWN]]
        missed = sorted(truth - {p["concept"] for p in predicted.rows})
        rows.append([esc(name), f"{hits:,} / {predicted.total:,}", " ".join(tags)
                     + more_note(min(len(predicted.rows), MAX_DECIDED_SHOWN), predicted.total, "predictions"),
                     esc(", ".join(missed[:MAX_DECIDED_SHOWN]))])
    if not rows:
        return "<p>No run predicts concepts for this image (runs cover the test images).</p>"
    return ('<p class="note">Concepts each run decided, best score first: '
            '<span class="hit">\u2713 correct</span>, <span class="miss">\u2717 wrong</span>.</p>'
            + html_table(["run", "correct / decided", "decided concepts", "missed ground truth"], rows))


def image_nav(here: str, view: ImageView, catalogue: Catalogue) -> str:
    links = [f'<a href="{href(here, "index.html")}">index</a>',
             f'<a href="{href(here, grid_page_path(catalogue.page_of(view.position)))}">grid page '
             f"{catalogue.page_of(view.position) + 1:,}</a>"]
    if view.position > 0:
        links.append(f'<a href="{href(here, catalogue.page_path(view.position - 1))}">previous image</a>')
    if view.position + 1 < len(catalogue):
        links.append(f'<a href="{href(here, catalogue.page_path(view.position + 1))}">next image</a>')
    return f"<nav>{' '.join(links)}</nav>"


def image_html(view: ImageView, context: "Context") -> str:
    here = image_page_path(view.shard, view.image_id)
    per_image = context.per_image
    parts = [f"<h1>{esc(view.image_id)}</h1>", image_nav(here, view, context.catalogue),
             f'<div class="figures">{picture_html(here, view)}{facts_html(view)}</div>']
    if per_image.has("text_terms") or per_image.has("image_urls"):
        parts.append(section("Text", text_html(view), "text"))
    if per_image.has("regions"):
        if view.rows(view.data.regions).total:
            parts.append(section("Regions", regions_html(here, view, context.palette, context.source, context.site),
                                 "regions"))
            if per_image.has("spatial_relations"):
                parts.append(section("Spatial relations", relations_table_html(view), "relations"))
        else:
            parts.append(section("Regions", "<p>No regions.</p>", "regions"))
    if per_image.has("ground_truth") or per_image.has("splits"):
        parts.append(section("Ground truth", truth_html(view, per_image), "truth"))
    if per_image.runs:
        parts.append(section("Baseline runs", runs_html(view, per_image), "runs"))
    return html_page(here, f"{view.image_id}: {context.settings['title']}", "\n".join(parts))


@dataclass
class Context:
    settings: dict
    source: Source
    catalogue: Catalogue
    per_image: PerImage
    palette: Palette
    site: Site
    pages: pa.Table | None


def write_image_pages(context: Context, log: Log) -> None:
    shards = context.catalogue.shard_numbers()
    for number_done, shard in enumerate(shards, 1):
        data = load_shard(context.per_image, context.pages, shard)
        images = context.per_image.read("images", shard)
        rows = images.sort_by([("image_id", "ascending")]).to_pylist() if images is not None else []
        positions = context.catalogue.positions([r["image_id"] for r in rows])
        for row, position in zip(rows, positions):
            if position >= 0:
                view = ImageView(row, int(position), data, shard)
                context.site.write(image_page_path(shard, row["image_id"]), image_html(view, context))
        log(f"browse: shard {number_done}/{len(shards)} ({shard_name(shard)}): {len(rows):,} image pages")


# ---------------------------------------------------------------- the whole site

def build_browser(source_dir: Path, browse_dir: Path, settings: dict, log: Log = lambda line: None) -> int:
    """Write the static browser of the build in `source_dir` into the new folder `browse_dir`
    (which must sit next to the stored images' `resized/`); return the number of files written."""
    settings = {**DEFAULTS, "title": "annobench release", **settings}
    source = Source(Path(source_dir))
    browse_dir = Path(browse_dir)
    browse_dir.mkdir(parents=True, exist_ok=False)
    site = Site(browse_dir)
    catalogue = Catalogue.load(source, max(1, int(settings["images_per_page"])))
    log(f"browse: {len(catalogue):,} images")
    with tempfile.TemporaryDirectory(prefix="annobench-browse-") as scratch:
        per_image = PerImage(source, catalogue, Path(scratch), int(settings["top_terms"]), log)
        figures = collect_figures(source, catalogue, per_image.runs, log)
        leaderboard = source.table("leaderboard")
        site.write("style.css", STYLE)
        site.write("index.html", index_html(settings, source, catalogue, figures, leaderboard is not None))
        if leaderboard is not None:
            site.write("leaderboard.html", leaderboard_html(settings, leaderboard))
        write_grid(site, settings, catalogue, log)
        context = Context(settings, source, catalogue, per_image, Palette(figures.labels_by_frequency()), site,
                          source.table("pages", ["page_id", "title", "status"]))
        write_image_pages(context, log)
    log(f"browse: {site.files:,} files written")
    return site.files
