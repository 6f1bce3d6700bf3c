"""A listed raw image, and the check that a job's listing is the one Snakemake planned with.

The fingerprint covers ids, paths, sizes and modification times (or an
archive's state and a record's place in it), so an added, removed or edited
raw input reruns its shard only, and a job refuses to run on a listing that
changed after planning.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from annobench.core.fingerprint import file_state


@dataclass(frozen=True)
class ImageSource:
    image_id: str
    source_path: str  # as recorded in the tables: relative to the image folder, as listed, or its address
    path: str  # where to read it from (a str: pathlib costs seconds at 500,000 images)
    warc: object = None  # a warc.RecordRef when the bytes are a record of a web archive at `path`


class ListingChanged(RuntimeError):
    """The raw inputs changed between planning the workflow and running the job."""


def listing_fingerprint(sources: list[ImageSource], n_shards: int) -> str:
    digest = hashlib.sha256(f"shards={n_shards}\n".encode())
    archive_states: dict[str, str] = {}  # records share a few archives: a stat per archive
    for source in sources:
        if source.warc is None:
            state = file_state(source.path)
        else:  # a record: the archive's state and its place in it
            if source.path not in archive_states:
                archive_states[source.path] = file_state(source.path)
            state = f"{archive_states[source.path]}@{source.warc.offset}:{source.warc.record_id}"
        digest.update(f"{source.image_id}\t{source.source_path}\t{state}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()
