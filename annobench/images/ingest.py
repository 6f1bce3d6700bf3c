"""One shard of ingest: raw files -> images/rejects tables and resized files."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from annobench.core import layout
from annobench.core.fsutil import atomic_path
from annobench.core.jobs import Job
from annobench.core.progress import Progress
from annobench.core.tables import IMAGES_SCHEMA, REJECTS_SCHEMA, rows_to_table, write_table
from annobench.images import resize
from annobench.images.decode import DecodeLimits, ImageRejected, decode_image
from annobench.sources.inventory import recorded_sources
from annobench.sources.listing import ImageSource


@dataclass
class ShardResult:
    images: list[dict]
    rejects: list[dict]


def ingest_shard(
    sources: list[ImageSource],
    shard: int,
    out_dir: Path,
    config: dict,
    params_hash: str,
    log: Callable[[str], None] = print,
) -> ShardResult:
    """Decode, resize and store every image of one shard, then write its two tables.

    The resized folder is built under a partial name and renamed when
    complete; each table is written atomically after it, so a killed job
    leaves nothing that looks finished.
    """
    limits = DecodeLimits.from_config(config["ingest"])
    max_record_bytes = config["warc"]["max_image_bytes"]
    resize_config = config["resize"]
    extension = resize.EXTENSIONS[resize_config["format"]]
    folder = layout.resized_dir(shard)
    result = ShardResult(images=[], rejects=[])
    progress = Progress(
        f"ingest {layout.shard_name(shard)}", len(sources), log, config["progress"]["log_every_seconds"]
    )
    with atomic_path(out_dir / folder) as partial_dir:
        partial_dir.mkdir()
        for source in sources:
            relative = f"{folder}/{source.image_id}{extension}"
            row, encoded = ingest_one(source, limits, resize_config, relative, shard, max_record_bytes)
            if encoded is None:
                result.rejects.append(row)
                log(f"rejected {source.image_id} ({source.source_path}): {row['reason']}")
            else:
                (partial_dir / f"{source.image_id}{extension}").write_bytes(encoded)
                result.images.append(row)
            progress.step(rejected=encoded is None)
    write_table(rows_to_table(result.images, IMAGES_SCHEMA), out_dir / layout.table_file("images", shard), "images", params_hash)
    write_table(rows_to_table(result.rejects, REJECTS_SCHEMA), out_dir / layout.table_file("rejects", shard), "rejects", params_hash)
    progress.finish()
    return result


def ingest_one(
    source: ImageSource, limits: DecodeLimits, resize_config: dict, resized_path: str, shard: int,
    max_record_bytes: int = 50_000_000,
) -> tuple[dict, bytes | None]:
    """Return (images row, encoded resized file) or (rejects row, None)."""
    sha256 = None
    try:
        data = read_source(source.path) if source.warc is None else read_record(source.warc, max_record_bytes)
        sha256 = hashlib.sha256(data).hexdigest()
        decoded = decode_image(data, limits)
    except ImageRejected as exc:
        reject = {"image_id": source.image_id, "source_path": source.source_path, "sha256": sha256,
                  "reason": str(exc), "shard": shard}
        return reject, None
    pixels = resize.resize_area(decoded.pixels, resize_config["max_side"])
    encoded = resize.encode(pixels, resize_config)
    row = {
        "image_id": source.image_id,
        "source_path": source.source_path,
        "sha256": sha256,
        "file_size": len(data),
        "width": decoded.width,
        "height": decoded.height,
        "mode": decoded.mode,
        "format": decoded.format,
        "exif_orientation": decoded.orientation,
        "conversion": decoded.conversion,
        "resized_path": resized_path,
        "resized_width": pixels.shape[1],
        "resized_height": pixels.shape[0],
        "resized_sha256": hashlib.sha256(encoded).hexdigest(),
        "shard": shard,
    }
    return row, encoded


def read_source(path: str | Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise ImageRejected("file not found") from None
    except IsADirectoryError:
        raise ImageRejected("is a folder, not a file") from None
    except OSError as exc:
        raise ImageRejected(f"unreadable file: {exc.strerror or exc}") from None


def read_record(ref, max_bytes: int) -> bytes:
    """An image's bytes from its web-archive record, checked again as it is read."""
    from annobench.sources.warc import RecordRejected, read_record_payload

    try:
        return read_record_payload(ref, "image", max_bytes)[0]
    except RecordRejected as error:
        raise ImageRejected(str(error)) from None


def ingest_shard_job(job: Job) -> list[dict]:
    """Rule ingest_shard: the shard's images as listed now (refused if the listing changed since
    planning), or, replaying a record, the images it read. Returns them with their hashes."""
    if job.recorded_raw is None:
        sources = planned_sources(job.config, job.shard, job.params["listing"])
    else:
        sources = recorded_sources(job.raw("image"))
    result = ingest_shard(sources, job.shard, job.out_dir, job.config, job.params["params_hash"], job.log)
    return image_raw_inputs(sources, result)


def planned_sources(config: dict, shard: int, expected_fingerprint: str) -> list[ImageSource]:
    """The shard's listing, if it is still the one the workflow was planned with."""
    from annobench.sources.inventory import shard_sources
    from annobench.sources.listing import ListingChanged, listing_fingerprint

    sources, n_shards = shard_sources(config, shard)
    found = listing_fingerprint(sources, n_shards) if shard < n_shards else "no such shard"
    if found != expected_fingerprint:
        raise ListingChanged(
            f"the images of shard {shard} changed after the workflow was planned "
            "(files added, removed or edited); run snakemake again to plan with the new inputs"
        )
    return sources


def image_raw_inputs(sources: list[ImageSource], result: ShardResult) -> list[dict]:
    from annobench.core.provenance import archived_file, raw_file

    rows = {row["image_id"]: row for row in result.images + result.rejects}
    raw = []
    for source in sources:
        row = rows.get(source.image_id, {})
        if source.warc is None:
            raw.append(raw_file(source.path, source.source_path, row.get("sha256"), role="image", key=source.image_id))
        else:
            raw.append(archived_file(source.warc, source.source_path, "image", source.image_id, row.get("sha256")))
    return raw
