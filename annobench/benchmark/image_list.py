"""The test images a run or a ground truth is checked against: their ids in run order, with their sizes
(width, height) when the list gives them.

Two forms: one image id a line (blank lines skipped), or a CSV whose header has an `image_id` column and,
optionally, `width` and `height`. A CSV may name an image on several rows (a ground-truth file has one
row per label): its first row counts. In a plain list, a repeated id is an error, as is whitespace in an id.
read_images also takes a build folder: the images of its `images` table, with their sizes (the
original's, after EXIF orientation), in image_id order.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from annobench.core.errors import AnnobenchError


class ImageListError(AnnobenchError):
    """The image list cannot be used; the message names the file and line."""


@dataclass
class ImageList:
    ids: tuple[str, ...]
    sizes: dict[str, tuple[int, int]] | None  # image_id -> (width, height)

    def __post_init__(self) -> None:
        self.known = frozenset(self.ids)

    def __contains__(self, image_id: str) -> bool:
        return image_id in self.known


def read_images(path: Path | str) -> ImageList:
    """An image list file (read_image_list), or a build folder (one holding tables/images/)."""
    path = Path(path)
    if path.is_dir():
        return read_build_images(path)
    return read_image_list(path)


def read_build_images(build: Path | str) -> ImageList:
    """The images of a build folder's `images` table with their sizes, in image_id order."""
    import pyarrow.parquet as pq

    folder = Path(build) / "tables" / "images"
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    if not files:
        raise ImageListError(f"{build}: a folder given for the images is a build folder, with tables/images/; "
                             "this one has none")
    sizes: dict[str, tuple[int, int]] = {}
    for file in files:
        table = pq.read_table(file, columns=["image_id", "width", "height"]).to_pydict()
        sizes.update(zip(table["image_id"], zip(table["width"], table["height"])))
    ids = tuple(sorted(sizes))
    return ImageList(ids, {i: (int(sizes[i][0]), int(sizes[i][1])) for i in ids})


def read_image_list(path: Path | str) -> ImageList:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise ImageListError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    lines = text.splitlines()
    header = next(csv.reader(lines[:1]), [])
    images = _image_csv(path, text, header) if "image_id" in header else _plain_list(path, lines)
    if not images.ids:
        raise ImageListError(f"{path}: no image ids")
    return images


def _plain_list(path: Path, lines: list[str]) -> ImageList:
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        image_id = line.strip()
        if not image_id:
            continue
        if any(char.isspace() for char in image_id):
            raise ImageListError(f"{path}:{number}: image id {image_id!r} contains whitespace")
        if image_id in first_line:
            raise ImageListError(f"{path}:{number}: image '{image_id}' repeats line {first_line[image_id]}")
        first_line[image_id] = number
    return ImageList(tuple(first_line), None)


def _image_csv(path: Path, text: str, header: list[str]) -> ImageList:
    with_sizes = {"width", "height"} <= set(header)
    ids: dict[str, None] = {}
    sizes: dict[str, tuple[int, int]] = {}
    for line, row in enumerate(csv.DictReader(io.StringIO(text)), 2):
        image_id = (row.get("image_id") or "").strip()
        if not image_id:
            raise ImageListError(f"{path}:{line}: empty image_id")
        if image_id in ids:
            continue
        ids[image_id] = None
        given = [(row.get(name) or "").strip() for name in ("width", "height")] if with_sizes else ["", ""]
        if any(given):  # both empty: the size is unknown
            sizes[image_id] = _size(path, line, given)
    return ImageList(tuple(ids), sizes if with_sizes else None)


def _size(path: Path, line: int, given: list[str]) -> tuple[int, int]:
    try:
        size = (int(given[0]), int(given[1]))
    except ValueError:
        raise ImageListError(f"{path}:{line}: width and height must be whole numbers") from None
    if min(size) < 1:
        raise ImageListError(f"{path}:{line}: width and height must be at least 1")
    return size
