"""One shard of ingest on real files, and reading its tables back."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from annobench.core.config import load_config
from annobench.core.tables import IMAGES_SCHEMA, REJECTS_SCHEMA, read_metadata
from annobench.images.ingest import ingest_shard
from annobench.images.resize import read_stored
from annobench.sources.listing import ImageSource


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    from helpers import REAL_IMAGES, require_shared

    root = require_shared(REAL_IMAGES)
    files = sorted(p for sub in ("formats", "exif_orientation", "caffe") for p in (root / sub).iterdir()
                   if p.suffix.lower() in {".jpg", ".png", ".bmp", ".tif", ".tiff", ".psd", ".pgm", ".pbm", ".jp2"})
    # Several files share a stem (hopper.jpg, hopper.bmp, ...): ids from the relative path.
    sources = [ImageSource(p.relative_to(root).as_posix().replace("/", "__"), p.relative_to(root).as_posix(), str(p))
               for p in files]
    sources.append(ImageSource("missing", "formats/not_there.jpg", str(root / "formats" / "not_there.jpg")))
    sources.sort(key=lambda s: s.image_id)
    out = tmp_path_factory.mktemp("ingest")
    config = load_config()
    lines = []
    ingest_shard(sources, 0, out, config, "testhash", log=lines.append)
    return sources, out, lines


def test_every_file_is_an_image_or_a_reject(ingested):
    sources, out, _ = ingested
    images = pq.read_table(out / "tables/images/shard-00000.parquet")
    rejects = pq.read_table(out / "tables/rejects/shard-00000.parquet")
    assert images.schema.equals(IMAGES_SCHEMA.with_metadata(images.schema.metadata))
    assert rejects.schema.equals(REJECTS_SCHEMA.with_metadata(rejects.schema.metadata))
    ids = images.column("image_id").to_pylist() + rejects.column("image_id").to_pylist()
    assert sorted(ids) == [s.image_id for s in sources]
    reasons = dict(zip(rejects.column("image_id").to_pylist(), rejects.column("reason").to_pylist()))
    assert reasons["missing"] == "file not found"
    assert reasons["formats__exif_gps.jpg"].startswith("too small")


def test_resized_files_match_their_rows(ingested):
    _, out, _ = ingested
    rows = pd.read_parquet(out / "tables/images/shard-00000.parquet")
    for row in rows.itertuples():
        stored = out / row.resized_path
        assert hashlib.sha256(stored.read_bytes()).hexdigest() == row.resized_sha256
        pixels = read_stored(stored)
        assert pixels.shape == (row.resized_height, row.resized_width, 3)
        assert max(pixels.shape[:2]) <= 240
        assert max(pixels.shape[:2]) == min(240, max(row.width, row.height))
    landscape = rows.set_index("image_id").loc["exif_orientation__Landscape_6.jpg"]
    assert (landscape.width, landscape.height, landscape.exif_orientation) == (1800, 1200, 6)


def test_raw_hashes_are_the_file_hashes(ingested):
    sources, out, _ = ingested
    rows = pd.read_parquet(out / "tables/images/shard-00000.parquet").set_index("image_id")
    by_id = {s.image_id: s for s in sources}
    for image_id, row in rows.iterrows():
        assert row.sha256 == hashlib.sha256(Path(by_id[image_id].path).read_bytes()).hexdigest()


def test_tables_read_as_one_dataset_with_pyarrow_pandas_and_duckdb(ingested):
    _, out, _ = ingested
    folder = out / "tables" / "images"
    expected = pq.read_table(folder / "shard-00000.parquet").num_rows
    assert ds.dataset(folder, format="parquet").count_rows() == expected
    assert len(pd.read_parquet(folder)) == expected
    count = duckdb.sql(f"select count(*) from read_parquet('{folder}/*.parquet')").fetchall()[0][0]
    assert count == expected


def test_files_carry_artefact_version_and_params_hash(ingested):
    _, out, _ = ingested
    meta = read_metadata(out / "tables/rejects/shard-00000.parquet")
    assert meta == {"annobench.artefact": "rejects", "annobench.format_version": "1", "annobench.params_hash": "testhash"}
    assert pq.ParquetFile(out / "tables/images/shard-00000.parquet").metadata.row_group(0).column(0).compression == "ZSTD"


def test_progress_and_rejects_are_logged(ingested):
    _, _, lines = ingested
    assert lines[0].startswith("ingest shard-00000: starting")
    assert lines[-1].endswith("(done)")
    assert any(line.startswith("rejected missing (formats/not_there.jpg): file not found") for line in lines)


def test_no_partial_files_are_left(ingested):
    _, out, _ = ingested
    assert not [p for p in out.rglob(".*")]


def test_ingest_twice_gives_identical_bytes(ingested, tmp_path):
    sources, out, _ = ingested
    ingest_shard(sources, 0, tmp_path, load_config(), "testhash", log=lambda line: None)
    for relative in ("tables/images/shard-00000.parquet", "tables/rejects/shard-00000.parquet"):
        assert (tmp_path / relative).read_bytes() == (out / relative).read_bytes()
    first = sorted((out / "resized/shard-00000").iterdir())
    second = sorted((tmp_path / "resized/shard-00000").iterdir())
    assert [p.name for p in first] == [p.name for p in second]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(first, second))


def test_empty_shard_writes_empty_tables(tmp_path):
    ingest_shard([], 3, tmp_path, load_config(), "h", log=lambda line: None)
    assert pq.read_table(tmp_path / "tables/images/shard-00003.parquet").num_rows == 0
    assert (tmp_path / "resized/shard-00003").is_dir()


def test_duplicate_raw_files_are_found(tmp_path):
    from annobench.images.duplicates import find_duplicates
    from helpers import bsds_photos

    a, b = bsds_photos(2)
    sources = [ImageSource("a", "a.jpg", str(a)), ImageSource("b", "b.jpg", str(b)), ImageSource("c", "c.jpg", str(a))]
    ingest_shard(sources, 0, tmp_path, load_config(), "h", log=lambda line: None)
    table = find_duplicates([tmp_path / "tables/images/shard-00000.parquet"]).to_pydict()
    assert table["image_id"] == ["a", "c"]
    assert table["duplicate_of"] == ["a", "a"]
    assert np.unique(table["sha256"]).size == 1
