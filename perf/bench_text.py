"""Near-image text features: pages per second and peak memory on the shared pages.

    python3 perf/bench_text.py

For each collection: reading, decoding, parsing and cleaning every page
(and its well-formed XML copy), then the whole text extraction of the
mapping derived from the folder (pages parsed again, words weighted for
every image occurrence, caption candidates), and the caption filter with
its counts over the collection (rule page_captions). One core.
"""

from __future__ import annotations

import time

from annobench.sources.pages import PageLimits, PageRejected, read_page
from annobench.text.features import TextParams
from annobench.text.page_map import derive_mapping
from annobench.text.stage import MappingRow, extract_text
from common import SHARED, peak_rss_mb

PAGES = SHARED / "data" / "real" / "pages"


def read_all(folder) -> None:
    pages = sorted(p for p in folder.rglob("*") if p.is_file() and ".htm" in p.name)
    size = sum(p.stat().st_size for p in pages)
    started = time.perf_counter()
    rejected = 0
    for path in pages:
        try:
            read_page(path.name, path, PageLimits()).to_xml()
        except PageRejected:
            rejected += 1
    elapsed = time.perf_counter() - started
    print(f"{folder.name:16s} read+clean+XML: {len(pages)} pages ({size / 2**20:.1f} MiB) in {elapsed:.2f} s = "
          f"{len(pages) / elapsed:.0f} pages/s, {size / 2**20 / elapsed:.1f} MiB/s; {rejected} rejected")


def extract_all(folder) -> None:
    derived = derive_mapping(folder)
    rows = sorted({MappingRow(*row) for row in derived.mapping}, key=lambda r: (r.image_id, r.page_id, r.img_src))
    pages = {r.page_id for r in rows}
    started = time.perf_counter()
    result = extract_text(rows, folder, TextParams(), PageLimits(), log=lambda line: None)
    captions = result.page_captions()
    elapsed = time.perf_counter() - started
    print(f"{folder.name:16s} text features: {len(rows)} image/page rows on {len(pages)} pages in {elapsed:.2f} s = "
          f"{len(pages) / elapsed:.0f} pages/s, {len(result.terms_by_image)} images, {len(captions)} caption rows")


def main() -> None:
    for name in ("kiwix_wikipedia", "dataset_popular", "readability"):
        read_all(PAGES / name)
    for name in ("kiwix_wikipedia", "dataset_popular"):
        extract_all(PAGES / name)
    print(f"peak memory: {peak_rss_mb():.0f} MiB")


if __name__ == "__main__":
    main()
