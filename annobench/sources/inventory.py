"""Which images a build contains, their ids, and the shard each lands in.

The inventory is computed twice from the same config: once when Snakemake
plans the DAG (to know the shards and a fingerprint of each) and once inside
each shard's job (to get its own listing). The fingerprint covers ids, paths,
sizes and modification times, so an added, removed or edited raw image
reruns its shard only, and a job refuses to run on a listing that changed
after planning.
"""

from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from annobench.core.errors import AnnobenchError
from annobench.sources.ids import encode_id, shard_count, shard_of
from annobench.sources.listing import ImageSource, listing_fingerprint


class InventoryError(AnnobenchError):
    """The image inputs cannot be turned into a consistent set of ids."""


@dataclass
class Inventory:
    n_shards: int
    shards: list[list[ImageSource]]
    _fingerprints: dict[int, str] = field(default_factory=dict, repr=False)

    @property
    def n_images(self) -> int:
        return sum(len(s) for s in self.shards)

    def fingerprint(self, shard: int) -> str:
        if shard not in self._fingerprints:
            self._fingerprints[shard] = listing_fingerprint(self.shards[shard], self.n_shards)
        return self._fingerprints[shard]


def build_inventory(config: dict) -> Inventory:
    sources = list_images(config)
    sharding = config["sharding"]
    n_shards = shard_count(len(sources), sharding["images_per_shard"], sharding["num_shards"])
    shards: list[list[ImageSource]] = [[] for _ in range(n_shards)]
    for source in sources:  # sorted by id, so every shard is too
        shards[shard_of(source.image_id, n_shards)].append(source)
    return Inventory(n_shards=n_shards, shards=shards)


def list_images(config: dict) -> list[ImageSource]:
    inputs = config["input"]
    if inputs["warc"]:
        sources = archived_images(config)
    elif inputs["image_list"]:
        sources = read_image_list(Path(inputs["image_list"]))
    else:
        sources = walk_image_folder(Path(inputs["images"]), config["ingest"]["extensions"],
                                    config["ingest"]["image_id"])
    check_unique_ids(sources)
    return sorted(sources, key=lambda source: source.image_id)


def shard_sources(config: dict, shard: int) -> tuple[list[ImageSource], int]:
    """The sources of one shard and the shard count: what a job needs to check its listing.
    Archived images come from the shard's part of the catalogue, not the whole of it."""
    if config["input"]["warc"]:
        from annobench.sources.warc_index import shard_slice

        part = shard_slice(config, shard)
        return sorted(_archived(part.images), key=lambda source: source.image_id), part.n_shards
    inventory = build_inventory(config)
    return (inventory.shards[shard] if shard < inventory.n_shards else []), inventory.n_shards


def archived_images(config: dict) -> list[ImageSource]:
    """The images of input.warc's archives (warc_index), each read from its record."""
    from annobench.sources.warc_index import index_for

    if config["input"]["segmentations"]:
        raise InventoryError("input.segmentations cannot be used with input.warc: regions are cut from image "
                             "files, and archived images have none; set input.segmentations: \"\"")
    try:
        index = index_for(config)
    except FileNotFoundError as error:
        raise InventoryError(str(error)) from None
    return _archived(index.images)


def _archived(images: dict) -> list[ImageSource]:
    """Image sources of a catalogue's images (image_id -> warc_index.Located)."""
    return [ImageSource(image_id=check_image_id(image_id, located.address), source_path=located.address,
                        path=located.ref.warc, warc=located.ref)
            for image_id, located in images.items()]


def walk_image_folder(root: Path, extensions: list[str], ids: str = "stem") -> list[ImageSource]:
    if not root.is_dir():
        raise InventoryError(f"image folder {root} does not exist or is not a folder")
    wanted = {e.lower() for e in extensions}
    sources = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [d for d in subfolders if not d.startswith(".")]
        for name in files:
            if name.startswith("."):
                continue
            stem, ext = os.path.splitext(name)
            if ext.lower() not in wanted:
                continue
            path = os.path.join(folder, name)
            rel = Path(os.path.relpath(path, root)).as_posix()
            image_id = stem if ids == "stem" else path_image_id(rel)
            sources.append(ImageSource(image_id=check_image_id(image_id, rel), source_path=rel, path=path))
    return sources


def read_image_list(list_path: Path) -> list[ImageSource]:
    if not list_path.is_file():
        raise InventoryError(f"image list {list_path} does not exist")
    base = str(list_path.parent)
    sources = []
    with open(list_path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = next(reader, [])
        missing = {"image_id", "path"} - set(header)
        if missing:
            raise InventoryError(
                f"image list {list_path} needs a header with columns image_id,path; missing: {sorted(missing)}"
            )
        id_column, path_column = header.index("image_id"), header.index("path")
        for line, row in enumerate(reader, start=2):
            if len(row) != len(header):
                raise InventoryError(f"{list_path}:{line}: {len(row)} fields, the header has {len(header)}")
            image_id, raw_path = row[id_column], row[path_column].strip()
            if not raw_path:
                raise InventoryError(f"{list_path}:{line}: empty path")
            sources.append(
                ImageSource(
                    image_id=check_image_id(image_id, f"{list_path}:{line}"),
                    source_path=raw_path,
                    path=os.path.join(base, raw_path),  # an absolute raw_path stays as it is
                )
            )
    return sources


MAX_PATH_ID_BYTES = 240  # with its extension, the stored image's file name must stay under 255 bytes


def path_image_id(relative: str) -> str:
    """ingest.image_id: path -- the path under the image folder without its extension, encoded."""
    image_id = encode_id(os.path.splitext(relative)[0])
    if len(image_id.encode("utf-8")) > MAX_PATH_ID_BYTES:
        raise InventoryError(f"the id of {relative} would be {len(image_id.encode())} bytes, too long for a file "
                             f"name (at most {MAX_PATH_ID_BYTES}); give shorter ids in input.image_list")
    return image_id


# Non-empty, no path separators or control characters, no surrounding spaces.
_ID_INNER = r"[^/\\\x00-\x1f\x7f]"
_ID_EDGE = r"[^/\\\x00-\x1f\x7f\s]"
USABLE_ID = re.compile(f"{_ID_EDGE}(?:{_ID_INNER}*{_ID_EDGE})?")


def check_image_id(image_id: str, where: str) -> str:
    """Ids name files and Parquet keys: refuse those that cannot do both safely."""
    if image_id in {".", ".."} or not USABLE_ID.fullmatch(image_id):
        raise InventoryError(
            f"unusable image_id {image_id!r} ({where}): ids must be non-empty, without "
            "path separators, control characters or surrounding spaces"
        )
    return image_id


def check_unique_ids(sources: list[ImageSource]) -> None:
    by_id: dict[str, list[str]] = {}
    for source in sources:
        by_id.setdefault(source.image_id, []).append(source.source_path)
    collisions = {k: v for k, v in by_id.items() if len(v) > 1}
    if collisions:
        examples = "; ".join(
            f"{image_id!r} <- {', '.join(sorted(paths))}" for image_id, paths in sorted(collisions.items())[:10]
        )
        raise InventoryError(
            f"{len(collisions)} image_id(s) are given by more than one file: {examples}. "
            "Set ingest.image_id: path (ids from the path under the folder), rename the files, or give "
            "explicit ids in input.image_list (CSV image_id,path)."
        )


def recorded_sources(raw_inputs: list[dict]) -> list[ImageSource]:
    """The images a job record says were read (files or archive records), in id order."""
    from annobench.sources.warc_index import ref_of_raw

    return sorted((ImageSource(r["key"], r["path"], r["absolute_path"], ref_of_raw(r) if r.get("warc") else None)
                   for r in raw_inputs), key=lambda s: s.image_id)
