"""Derive the image/page mapping of a folder of saved pages whose images sit beside them.

This is how a browser's "save page" or `wget -p` leaves a crawl: pages,
and the images they show under relative paths (or, in a wget mirror,
under `HOST/PATH` for absolute URLs). Every <img> address that leads to an
image file inside the folder becomes a mapping row; the image's id is its
path under the folder with '/' replaced by '__', so ids never collide.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from annobench.sources.page_images import candidate_urls, page_images
from annobench.sources.pages import PageLimits, PageRejected, read_page

PAGE_ENDINGS = {".html", ".htm", ".xhtml", ".shtml"}
IMAGE_ENDINGS = {".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff"}


@dataclass
class DerivedMapping:
    mapping: list[tuple[str, str, str]]  # image_id, page_id, img_src
    images: dict[str, str]  # image_id -> path under the folder
    unusable_pages: list[tuple[str, str]]  # page_id, reason
    unresolved: list[tuple[str, str]]  # page_id, <img> address that leads to no image file in the folder


def image_id_for(relative: str) -> str:
    return relative.replace("/", "__")


def local_image(root: Path, page_path: Path, url: str) -> Path | None:
    """The image file an <img> address points at inside `root`, if there is one."""
    parts = urlsplit(url.strip())
    if parts.scheme in ("data", "javascript", "mailto"):
        return None
    path = unquote(parts.path)
    if not path:
        return None
    if parts.scheme in ("http", "https") or parts.netloc:
        # wget mirrors an absolute URL as HOST/PATH next to the page's own host folder.
        candidates = [folder / parts.netloc / path.lstrip("/") for folder in _ancestors(page_path.parent, root)]
    elif path.startswith("/"):
        candidates = [folder / path.lstrip("/") for folder in _ancestors(page_path.parent, root)]
    else:
        candidates = [page_path.parent / path]
    for candidate in candidates:
        resolved = Path(os.path.normpath(candidate))
        if resolved.suffix.lower() in IMAGE_ENDINGS and resolved.is_file() and _inside(resolved, root):
            return resolved
    return None


def _ancestors(folder: Path, root: Path) -> list[Path]:
    chain = [folder]
    while chain[-1] != root and root in chain[-1].parents:
        chain.append(chain[-1].parent)
    return chain


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def derive_mapping(pages_dir: Path | str, limits: PageLimits = PageLimits()) -> DerivedMapping:
    root = Path(pages_dir).resolve()
    mapping, images, unusable, unresolved = set(), {}, [], []
    for page_path in sorted(p for p in root.rglob("*") if p.suffix.lower() in PAGE_ENDINGS and p.is_file()):
        page_id = page_path.relative_to(root).as_posix()
        try:
            page = read_page(page_id, page_path, limits)
        except PageRejected as error:
            unusable.append((page_id, str(error)))
            continue
        for element in page_images(page):
            for url in candidate_urls(element):
                image = local_image(root, page_path, url)
                if image is None:
                    unresolved.append((page_id, url))
                    continue
                relative = image.relative_to(root).as_posix()
                image_id = image_id_for(relative)
                images[image_id] = relative
                mapping.add((image_id, page_id, url))
    return DerivedMapping(sorted(mapping), dict(sorted(images.items())), unusable, unresolved)


def write_mapping(derived: DerivedMapping, mapping_csv: Path, images_csv: Path, pages_dir: Path) -> None:
    """mapping.csv for the text stage, an image list (absolute paths) for ingest, and the misses."""
    with open(Path(mapping_csv).with_name("unresolved.csv"), "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["page_id", "img_src", "reason"])
        writer.writerows((page, url, "no image file at this address") for page, url in derived.unresolved)
        writer.writerows((page, "", f"page unusable: {reason}") for page, reason in derived.unusable_pages)
    with open(mapping_csv, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["image_id", "page_id", "img_src"])
        writer.writerows(derived.mapping)
    with open(images_csv, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["image_id", "path"])
        writer.writerows((image_id, str(Path(pages_dir).resolve() / path)) for image_id, path in derived.images.items())
