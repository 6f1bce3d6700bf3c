"""Pages and images read from a web archive (WARC) against the same files read from their folders.

    python3 perf/bench_warc.py [--repeat 3] [--profile]

GNU wget crawls the shared saved pages (dataset_popular, kiwix_wikipedia),
served on 127.0.0.1, into a per-record gzip .warc.gz in a temporary folder
(tests/warc_crawl.py); a plain .warc is gunzipped from it. Then, on one core:
- catalogue: warc_index.build_index (every record read, digests checked,
  every page parsed for its images) against page_map.derive_mapping of each
  collection plus reading every image file it names;
- page bytes, page read+parse and image bytes: warc.read_record_payload
  (what the jobs do) and WarcPages.read against reading the files and
  pages.read_page, over the pages and images both sides have;
- text extraction: text_stage.extract_text from WarcPages against the
  folders, over the (page, img_src) rows both mappings have.
Times are the best of --repeat runs; WARC/folder is the time per item (per
page where pages are counted) over the folder's. --profile adds the top
costs of the catalogue pass on the .warc.gz.
"""

from __future__ import annotations

import argparse
import cProfile
import gzip
import pstats
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from common import REPO, SHARED, peak_rss_mb

sys.path.insert(0, str(REPO / "tests"))  # the crawl helper the WARC tests use

from warc_crawl import crawl, html_pages, wget_path  # noqa: E402

from annobench.sources.pages import PageLimits, read_page  # noqa: E402
from annobench.sources.warc import read_record_payload  # noqa: E402
from annobench.sources.warc_index import IndexSettings, WarcPages, build_index  # noqa: E402
from annobench.text.features import TextParams  # noqa: E402
from annobench.text.page_map import derive_mapping  # noqa: E402
from annobench.text.stage import MappingRow, extract_text  # noqa: E402

PAGES = SHARED / "data" / "real" / "pages"
COLLECTIONS = ["dataset_popular", "kiwix_wikipedia"]
SETTINGS = IndexSettings(images="all", workers=1)
LIMITS = PageLimits()
MIB = 2**20


def quiet(line: str) -> None:
    pass


@dataclass
class Figure:
    source: str  # warc.gz, warc or folder
    seconds: float
    pages: int = 0
    images: int = 0
    size: int = 0  # bytes read

    @property
    def items(self) -> int:
        return self.pages or self.images


def best_of(repeat: int, run) -> tuple[float, object]:
    """The shortest time of `repeat` runs, and the last run's result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return best, result


def folder_path(address: str) -> str:
    """The served file an address came from, as a path under PAGES."""
    return unquote(urlsplit(address).path).lstrip("/")


def by_folder_path(entries: dict) -> dict:
    """Located entries keyed by their file under PAGES; the first of several addresses of one file."""
    found = {}
    for located in entries.values():
        found.setdefault(folder_path(located.address), located)
    return found


# --- making the archives -------------------------------------------------------------------

def make_archives(workdir: Path) -> tuple[Path, Path]:
    wget = wget_path()
    if wget is None:
        sys.exit("needs GNU wget to make the WARC (apt-get install wget, as root)")
    pages = html_pages(PAGES, COLLECTIONS)
    started = time.perf_counter()
    packed, _ = crawl(PAGES, pages, workdir, wget=wget)
    plain = workdir / "crawl.warc"
    with gzip.open(packed, "rb") as source, open(plain, "wb") as target:
        shutil.copyfileobj(source, target, 1 << 20)
    print(f"crawl of {len(pages)} pages by wget in {time.perf_counter() - started:.1f} s: "
          f"{packed.name} {packed.stat().st_size / MIB:.1f} MiB, {plain.name} {plain.stat().st_size / MIB:.1f} MiB")
    return packed, plain


# --- the catalogue -------------------------------------------------------------------------

def catalogue_warc(archive: Path, repeat: int):
    seconds, index = best_of(repeat, lambda: build_index([str(archive)], SETTINGS, log=quiet))
    return Figure(source_of(archive), seconds, len(index.pages), len(index.images), archive.stat().st_size), index


def source_of(archive: Path) -> str:
    return "warc.gz" if archive.name.endswith(".gz") else "warc"


def catalogue_folder(repeat: int):
    """derive_mapping of each collection, then every image file it names read."""
    map_seconds, mappings = best_of(repeat, lambda: {c: derive_mapping(PAGES / c) for c in COLLECTIONS})
    images = [PAGES / c / relative for c, derived in mappings.items() for relative in derived.images.values()]
    read = read_files(images, repeat)
    pages = [PAGES / p for p in html_pages(PAGES, COLLECTIONS)]
    size = sum(p.stat().st_size for p in pages) + read.size
    return Figure("folder", map_seconds + read.seconds, len(pages), len(images), size), mappings


# --- reading the same pages and images again -------------------------------------------------

def reread_records(located: list, kind: str, source: str, repeat: int) -> Figure:
    limit = LIMITS.max_bytes if kind == "page" else SETTINGS.max_image_bytes

    def run() -> int:
        return sum(len(read_record_payload(entry.ref, kind, limit)[0]) for entry in located)

    seconds, size = best_of(repeat, run)
    return Figure(source, seconds, size=size, **{f"{kind}s": len(located)})


def read_files(paths: list[Path], repeat: int, kind: str = "image") -> Figure:
    def run() -> int:
        total = 0
        for path in paths:
            with open(path, "rb") as handle:  # as ingest.read_source
                total += len(handle.read())
        return total

    seconds, size = best_of(repeat, run)
    return Figure("folder", seconds, size=size, **{f"{kind}s": len(paths)})


def parse_warc_pages(located: list, source: str, repeat: int) -> Figure:
    store = WarcPages({entry.address: entry for entry in located})
    seconds, _ = best_of(repeat, lambda: [store.read(entry.address, LIMITS) for entry in located])
    return Figure(source, seconds, pages=len(located))


def parse_folder_pages(paths: list[Path], repeat: int) -> Figure:
    seconds, _ = best_of(repeat, lambda: [read_page(path.name, path, LIMITS) for path in paths])
    return Figure("folder", seconds, pages=len(paths))


# --- text extraction -------------------------------------------------------------------------

def text_from_warc(index, addresses: set[str], shared_rows: set, source: str, repeat: int) -> Figure:
    rows = [MappingRow(*row) for row in index.mapping
            if row[1] in addresses and (folder_path(row[1]), row[2]) in shared_rows]
    store = WarcPages(index.pages)
    seconds, _ = best_of(repeat, lambda: extract_text(rows, store, TextParams(), LIMITS, log=quiet))
    return Figure(source, seconds, pages=len({r.page_id for r in rows}), images=len({r.image_id for r in rows}))


def text_from_folders(mappings: dict, shared_rows: set, repeat: int) -> Figure:
    rows = {c: [MappingRow(*row) for row in derived.mapping if (f"{c}/{row[1]}", row[2]) in shared_rows]
            for c, derived in mappings.items()}

    def run() -> None:
        for collection, collection_rows in rows.items():
            extract_text(collection_rows, PAGES / collection, TextParams(), LIMITS, log=quiet)

    seconds, _ = best_of(repeat, run)
    pages = {(c, r.page_id) for c, rs in rows.items() for r in rs}
    images = {(c, r.image_id) for c, rs in rows.items() for r in rs}
    return Figure("folder", seconds, pages=len(pages), images=len(images))


# --- the same pages, images and rows on both sides ---------------------------------------

@dataclass
class Shared:
    """What both sides hold, as files under PAGES. The archives also hold the images styles show;
    the folders also resolve addresses of other hosts into the mirror's host folders."""

    pages: list[str]
    images: list[str]
    rows: set[tuple[str, str]]  # text rows: (page file, img_src)


def shared_items(mappings: dict, indexes: list) -> Shared:
    pages = set(html_pages(PAGES, COLLECTIONS))
    images = {f"{c}/{relative}" for c, derived in mappings.items() for relative in derived.images.values()}
    rows = {(f"{c}/{row[1]}", row[2]) for c, derived in mappings.items() for row in derived.mapping}
    for index in indexes:
        pages &= by_folder_path(index.pages).keys()
        images &= by_folder_path(index.images).keys()
        rows &= {(folder_path(row[1]), row[2]) for row in index.mapping}
    return Shared(sorted(pages), sorted(images), rows)


def measure_warc(figure: Figure, index, shared: Shared, repeat: int) -> dict[str, Figure]:
    pages, images = by_folder_path(index.pages), by_folder_path(index.images)
    located_pages = [pages[p] for p in shared.pages]
    addresses = {entry.address for entry in located_pages}
    return {"page bytes": reread_records(located_pages, "page", figure.source, repeat),
            "page read+parse": parse_warc_pages(located_pages, figure.source, repeat),
            "image bytes": reread_records([images[i] for i in shared.images], "image", figure.source, repeat),
            "text extraction": text_from_warc(index, addresses, shared.rows, figure.source, repeat)}


def measure_folder(mappings: dict, shared: Shared, repeat: int) -> dict[str, Figure]:
    pages = [PAGES / p for p in shared.pages]
    return {"page bytes": read_files(pages, repeat, kind="page"),
            "page read+parse": parse_folder_pages(pages, repeat),
            "image bytes": read_files([PAGES / i for i in shared.images], repeat),
            "text extraction": text_from_folders(mappings, shared.rows, repeat)}


def measure(archives: list[Path], repeat: int) -> list[tuple[str, list[Figure]]]:
    folder_catalogue, mappings = catalogue_folder(repeat)
    catalogues = [catalogue_warc(archive, repeat) for archive in archives]
    shared = shared_items(mappings, [index for _, index in catalogues])
    runs = [measure_warc(figure, index, shared, repeat) for figure, index in catalogues]
    runs.append(measure_folder(mappings, shared, repeat))
    groups = [("catalogue", [figure for figure, _ in catalogues] + [folder_catalogue])]
    return groups + [(title, [run[title] for run in runs]) for title in runs[0]]


# --- report ----------------------------------------------------------------------------------

def print_table(groups: list[tuple[str, list[Figure]]]) -> None:
    print(f"{'measurement':16s} {'source':7s} {'pages':>6s} {'images':>6s} {'MiB':>6s} {'s':>7s} "
          f"{'pages/s':>8s} {'images/s':>8s} {'MiB/s':>7s} {'WARC/folder':>11s}")
    for title, figures in groups:
        folder = next(f for f in figures if f.source == "folder")
        for figure in figures:
            ratio = "" if figure is folder else f"{ratio_to(figure, folder):.2f}x"
            print(f"{title:16s} {table_cells(figure)} {ratio:>11s}")


def table_cells(figure: Figure) -> str:
    per_second = [rate(n, figure.seconds) for n in (figure.pages, figure.images, figure.size / MIB)]
    return (f"{figure.source:7s} {count(figure.pages):>6s} {count(figure.images):>6s} {mib(figure.size):>6s} "
            f"{figure.seconds:7.3f} {per_second[0]:>8s} {per_second[1]:>8s} {per_second[2]:>7s}")


def ratio_to(figure: Figure, folder: Figure) -> float:
    return (figure.seconds / figure.items) / (folder.seconds / folder.items)


def count(n: int) -> str:
    return str(n) if n else "-"


def mib(size: int) -> str:
    return f"{size / MIB:.1f}" if size else "-"


def rate(n: float, seconds: float) -> str:
    return f"{n / seconds:.0f}" if n else "-"


def profile_catalogue(archive: Path, top: int = 14) -> None:
    profiler = cProfile.Profile()
    profiler.runcall(build_index, [str(archive)], SETTINGS, log=quiet)
    print(f"\ntop {top} costs of the catalogue pass on {archive.name} (own time):")
    pstats.Stats(profiler, stream=sys.stdout).strip_dirs().sort_stats("tottime").print_stats(top)


# --- main ------------------------------------------------------------------------------------

def require_data() -> None:
    for collection in COLLECTIONS:
        if not (PAGES / collection).is_dir():
            sys.exit(f"needs the saved pages at {PAGES / collection} (../shared next to the checkout)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="also profile the catalogue pass on the .warc.gz")
    args = parser.parse_args()
    require_data()
    with tempfile.TemporaryDirectory(prefix="bench_warc-") as work:
        archives = list(make_archives(Path(work)))
        print_table(measure(archives, args.repeat))
        if args.profile:
            profile_catalogue(archives[0])
    print(f"best of {args.repeat}; WARC/folder: time per page (per image in image rows) over the folder's. "
          "The catalogue counts every page and image record, the folder every page file and named image.")
    print(f"peak memory: {peak_rss_mb():.0f} MiB")


if __name__ == "__main__":
    main()
