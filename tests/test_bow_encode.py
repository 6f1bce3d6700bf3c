"""One job encodes a shard into every kind's bag of words; each table as if its kind were alone."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
from test_bow import _stored_shard

from annobench.images.decode import DecodeLimits, decode_image
from annobench.images.resize import read_stored, resize_area
from annobench.visual import bow
from annobench.visual.bow_stage import (
    WordAssigner,
    bow_table_params,
    encode_image,
    encode_shard,
    read_codebook,
    write_codebook,
)
from annobench.visual.dsift import KINDS, DsiftParams, describe
from helpers import bsds_photos

SETTINGS = {"kinds": list(KINDS), "dsift": {"step": 6, "bin_size": 4, "smoothing_sigma": 0.44, "clip": 0.2,
                                             "csift_epsilon": 1.0}, "pyramid": [1, 2], "words": 50}


def _codebooks(tmp_path, photos) -> dict:
    """Codebooks of 50 words trained on the photos' own descriptors, one per kind."""
    paths = {}
    for kind in KINDS:
        sample = np.concatenate([describe(resize_area(decode_image(p.read_bytes(), DecodeLimits(10**8, 32, 32)).pixels,
                                                      240), kind, DsiftParams())[1] for p in photos])
        paths[kind] = tmp_path / f"codebook_{kind}.parquet"
        write_codebook(bow.train_codebook(sample, 50, 5, seed=3), kind, {"kind": kind}, paths[kind])
    return paths


def test_one_job_writes_every_kinds_table_as_each_image_encoded_alone(tmp_path):
    photos = bsds_photos(4)
    images_table = _stored_shard(tmp_path, photos)
    codebooks = _codebooks(tmp_path, photos)
    tables = {kind: tmp_path / f"bow_{kind}.parquet" for kind in KINDS}
    assert encode_shard(images_table, tmp_path, codebooks, SETTINGS, tables, log=lambda line: None) == 4

    stored = [read_stored(tmp_path / "resized" / f"p{k}.jpg") for k in range(4)]
    for kind in KINDS:
        table = pq.read_table(tables[kind])
        assert table.column("image_id").to_pylist() == [f"p{k}" for k in range(4)]
        vectors = np.stack(table.column("vector").to_numpy(zero_copy_only=False))
        codebook = read_codebook(codebooks[kind])
        expected = [encode_image(rgb, kind, DsiftParams(), codebook, [1, 2]) for rgb in stored]
        assert vectors.tobytes() == np.stack(expected).tobytes(), kind
        assert np.allclose(vectors.reshape(4, 5, 50).sum(axis=2), 1.0)  # each pyramid cell a distribution
        params = table.schema.metadata[b"annobench.params"].decode()
        assert f'"kind":"{kind}"' in params.replace(" ", "") and '"kinds"' not in params
    assert bow_table_params(SETTINGS, "csift")["kind"] == "csift"


def test_word_assignment_equals_the_brute_force_nearest_word_on_real_descriptors():
    rgb = resize_area(decode_image(bsds_photos(1)[0].read_bytes(), DecodeLimits(10**8, 32, 32)).pixels, 240)
    descriptors = describe(rgb, "opponentsift", DsiftParams())[1]
    codebook = descriptors[np.random.default_rng(0).choice(len(descriptors), 200, replace=False)] + 0.01
    distances = ((descriptors[:, None, :].astype(np.float64) - codebook[None, :, :]) ** 2).sum(axis=2)
    brute = np.argmin(distances, axis=1)
    assert np.array_equal(WordAssigner(codebook)(descriptors), brute)


def test_near_ties_go_to_the_exactly_nearest_word_whatever_the_rows_beside_them():
    # Words a float32 rounding apart: the float64 distance decides, not the product's
    # rounding, which depends on where the row sits in the product and on the CPU.
    rgb = resize_area(decode_image(bsds_photos(1)[0].read_bytes(), DecodeLimits(10**8, 32, 32)).pixels, 240)
    descriptors = describe(rgb, "sift", DsiftParams())[1]
    row = descriptors[descriptors.sum(axis=1) > 0][:1]
    step = np.zeros_like(row)
    step[0, 5] = 2.0**-20  # far below float32's resolution of |x - c|^2 near |x|^2
    codebook = np.concatenate([row + 4 * step, descriptors[-1:] + 0.5, row + step, row + 9 * step])
    assign = WordAssigner(codebook.astype(np.float32))
    for count in (1, 7, 300):
        batch = np.concatenate([descriptors[:count - 1], row]) if count > 1 else row
        assert assign(batch)[-1] == 2, count
