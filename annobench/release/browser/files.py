"""The browser site's files: a safe file name per image id, the relative
links between pages, and the Site that writes the files and counts them."""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from annobench.core.layout import shard_name

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


@dataclass(frozen=True)
class Link:
    """A link of a page: what it says and where it goes (made by `href`)."""

    text: str
    href: str


def stored_image_href(from_page: str, resized_path: str) -> str:
    """The stored picture, where it is: the build root is the browser's parent."""
    return quote(up(from_page) + "../" + resized_path, safe="/.~-_")


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
