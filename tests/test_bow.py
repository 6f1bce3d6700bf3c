"""Sampling, codebooks and the spatial pyramid."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from annobench.images.decode import DecodeLimits, decode_image
from annobench.images.resize import resize_area
from annobench.visual import bow
from annobench.visual.dsift import DsiftParams, describe
from helpers import bsds_photos, can_play_other_cpus, python_as_cpu


def real_descriptors(n_photos: int, kind: str = "sift") -> np.ndarray:
    parts = []
    for photo in bsds_photos(n_photos):
        rgb = resize_area(decode_image(photo.read_bytes(), DecodeLimits(10**8, 32, 32)).pixels, 240)
        parts.append(describe(rgb, kind, DsiftParams())[1])
    return np.concatenate(parts)


def test_codebook_is_deterministic_for_a_seed_and_changes_with_it():
    sample = real_descriptors(4)
    first = bow.train_codebook(sample, 64, 8, seed=1)
    assert first.shape == (64, 128) and first.dtype == np.float32
    np.testing.assert_array_equal(first, bow.train_codebook(sample, 64, 8, seed=1))
    assert not np.array_equal(first, bow.train_codebook(sample, 64, 8, seed=2))


def test_kmeans_lowers_the_distortion_of_its_seeding():
    sample = real_descriptors(3)
    seeds = bow.kmeans_plus_plus(sample, 32, np.random.default_rng(0))
    trained = bow.train_codebook(sample, 32, 15, seed=0)
    assert bow.nearest(sample, trained)[1].mean() < bow.nearest(sample, seeds)[1].mean()


def test_kmeans_plus_plus_picks_the_same_centres_on_any_number_of_threads():
    sample = real_descriptors(6)
    assert len(sample) > 2 * bow.SEEDING_BLOCK_ROWS  # several blocks to share
    alone = bow.kmeans_plus_plus(sample, 50, np.random.default_rng(3))
    with ThreadPoolExecutor(3) as pool:
        shared = bow.kmeans_plus_plus(sample, 50, np.random.default_rng(3), pool)
    assert alone.tobytes() == shared.tobytes()
    # Each centre is a row, none twice.
    rows = {row.tobytes() for row in sample}
    assert all(centre.tobytes() in rows for centre in alone) and len({c.tobytes() for c in alone}) == 50


def test_nearest_matches_brute_force():
    sample = real_descriptors(1)
    codebook = sample[::37][:50]
    labels, distances = bow.nearest(sample, codebook)
    brute = ((sample[:, None, :] - codebook[None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_array_equal(labels, brute.argmin(axis=1))
    np.testing.assert_allclose(distances, brute.min(axis=1), atol=1e-4)


def test_too_small_a_sample_is_a_clear_error():
    with pytest.raises(ValueError, match="cannot make 100 words"):
        bow.train_codebook(np.zeros((10, 128), np.float32), 100, 5, seed=0)


def test_pyramid_cells_are_normalised_and_placed_by_centre():
    points = np.array([[10, 10], [200, 10], [10, 150], [230, 150], [231, 151]])
    words = np.array([0, 1, 2, 3, 3])
    vector = bow.pyramid_histogram(points, words, 240, 160, 4, [1, 2]).reshape(5, 4)
    np.testing.assert_allclose(vector.sum(axis=1), 1.0)
    np.testing.assert_allclose(vector[0], [0.2, 0.2, 0.2, 0.4])
    assert vector[1, 0] == 1.0 and vector[2, 1] == 1.0 and vector[3, 2] == 1.0 and vector[4, 3] == 1.0
    empty = bow.pyramid_histogram(points[:1], words[:1], 240, 160, 4, [1, 2]).reshape(5, 4)
    assert empty[2].sum() == 0.0  # an empty cell stays zero


def test_sampling_is_a_function_of_seed_and_id_only():
    plan = bow.sampling_plan(1_250_000, 12_500, 500_000)
    assert plan == {"fraction": 0.025, "per_image": 100}
    assert bow.sampling_plan(1_250_000, 12_500, 200) == {"fraction": 1.0, "per_image": 6250}
    ids = [f"img{k:06d}" for k in range(20000)]
    chosen = [i for i in ids if bow.is_sampled(7, i, 0.025)]
    assert 400 < len(chosen) < 600
    assert chosen == [i for i in reversed(ids) if bow.is_sampled(7, i, 0.025)][::-1]
    rows = np.arange(1000)[:, None].astype(np.float32)
    np.testing.assert_array_equal(bow.sample_rows(rows, 10, 7, "a"), bow.sample_rows(rows, 10, 7, "a"))
    assert not np.array_equal(bow.sample_rows(rows, 10, 7, "a"), bow.sample_rows(rows, 10, 7, "b"))


DSIFT_DEFAULTS = dataclasses.asdict(DsiftParams())


def _stored_shard(tmp_path, photos):
    """A shard as the ingest stage leaves it: resized JPEGs and an images table naming them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from annobench.images.resize import encode

    (tmp_path / "resized").mkdir()
    ids, paths = [], []
    for k, photo in enumerate(photos):
        rgb = resize_area(decode_image(photo.read_bytes(), DecodeLimits(10**8, 32, 32)).pixels, 240)
        relative = f"resized/p{k}.jpg"
        (tmp_path / relative).write_bytes(encode(rgb, {"format": "jpeg", "jpeg_quality": 90}))
        ids.append(f"p{k}")
        paths.append(relative)
    pq.write_table(pa.table({"image_id": ids, "resized_path": paths}), tmp_path / "images.parquet")
    return tmp_path / "images.parquet"


def test_shard_sample_streamed_to_disk_equals_the_rows_chosen_in_memory(tmp_path):
    from annobench.images.resize import read_stored
    from annobench.visual.bow_stage import sample_shard

    table = _stored_shard(tmp_path, bsds_photos(3))
    outs = {kind: str(tmp_path / f"{kind}.npy") for kind in ("sift", "opponentsift")}
    counts = sample_shard(table, tmp_path, outs, DSIFT_DEFAULTS, fraction=1.0, per_image=300, seed=7, log=lambda _: None)
    for kind, path in outs.items():
        expected = np.concatenate([
            bow.sample_rows(describe(read_stored(tmp_path / f"resized/p{k}.jpg"), kind, DsiftParams())[1], 300, 7, f"p{k}")
            for k in range(3)])
        stored = np.load(path, allow_pickle=False)
        assert stored.dtype == np.float32 and counts[kind] == len(stored) == 900
        np.testing.assert_array_equal(stored, expected)


def test_a_failed_shard_sample_leaves_neither_outputs_nor_partial_files(tmp_path):
    from annobench.visual.bow_stage import sample_shard

    table = _stored_shard(tmp_path, bsds_photos(2))
    (tmp_path / "resized" / "p1.jpg").unlink()
    outs = {kind: str(tmp_path / "out" / f"{kind}.npy") for kind in ("sift", "csift")}
    with pytest.raises(OSError, match="cannot read stored image"):
        sample_shard(table, tmp_path, outs, DSIFT_DEFAULTS, fraction=1.0, per_image=50, seed=7, log=lambda _: None)
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("cap", [10**9, 700])
def test_codebook_training_reads_shard_samples_as_one_capped_sample(tmp_path, monkeypatch, cap):
    """The sample equals all shards' rows concatenated, then a seeded choice of `cap` of them."""
    from annobench.visual import bow_stage as bow_stages
    from annobench.visual.bow_stage import train_kind

    monkeypatch.setattr(bow_stages, "SAMPLE_CHUNK_ROWS", 128)  # many chunks per shard file

    parts = [real_descriptors(1), real_descriptors(2)[:500]]
    paths = []
    for k, part in enumerate(parts):
        paths.append(str(tmp_path / f"shard-{k}.npy"))
        np.save(paths[-1], part)
    params = {"sample_descriptors": cap, "seed": 5, "words": 16, "iterations": 4, "warm_start_share": 0.1,
              "warm_start_iterations": 10}
    codebook = train_kind(paths, "sift", params, tmp_path / "codebook.parquet", log=lambda _: None)
    whole = np.concatenate(parts)
    if len(whole) > cap:
        whole = whole[np.sort(np.random.default_rng(5).choice(len(whole), cap, replace=False))]
    np.testing.assert_array_equal(codebook, bow.train_codebook(whole, 16, 4, seed=5))


def fresh_means(sample: np.ndarray, labels: np.ndarray, distances: np.ndarray, k: int) -> np.ndarray:
    """The words' means as a training step makes them, from sums made afresh."""
    sums = bow._WordSums(sample, k)
    sums.move(np.arange(len(sample)), np.full(len(sample), -1), labels)
    return bow._means(sums.float_sums(), sums.counts, sample, lambda: distances)


def test_cluster_means_are_the_means_of_each_words_rows():
    sample = real_descriptors(10)  # more rows than one block
    assert len(sample) > bow.BLOCK_ROWS
    labels = np.arange(len(sample)) % 7
    labels[labels == 3] = 5  # word 3 left empty: re-seeded with the worst-fitting row
    distances = np.linspace(0, 1, len(sample), dtype=np.float32)
    means = fresh_means(sample, labels, distances, 7)
    for word in (0, 1, 2, 4, 5, 6):
        np.testing.assert_allclose(means[word], sample[labels == word].astype(np.float64).mean(axis=0), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(means[3], sample[np.argmax(distances)])


@pytest.mark.parametrize("init_size", [20000, 1000])  # without and with a warm start
def test_codebook_is_the_same_bytes_on_one_or_three_threads(init_size):
    sample = real_descriptors(20)  # three blocks
    assert len(sample) > 2 * bow.BLOCK_ROWS
    one = bow.train_codebook(sample, 40, 5, seed=3, threads=1, init_size=init_size)
    assert one.tobytes() == bow.train_codebook(sample, 40, 5, seed=3, threads=3, init_size=init_size).tobytes()


def exact_lloyd(sample: np.ndarray, centres: np.ndarray, iterations: int) -> np.ndarray:
    """Lloyd's algorithm from these centres with every distance in float64 (ties: lowest index)."""
    k = len(centres)
    rows = sample.astype(np.float64)
    rows_sq = np.einsum("ij,ij->i", rows, rows)
    labels = None
    for _ in range(iterations):
        words = centres.astype(np.float64)
        distances = rows_sq[:, None] - 2.0 * rows @ words.T + np.einsum("ij,ij->i", words, words)
        new_labels = np.argmin(distances, axis=1)
        if labels is not None and np.array_equal(new_labels, labels):
            break
        labels = new_labels
        # An empty word takes the worst-fitting rows by float32 distance, as training does.
        centres = fresh_means(sample, labels, bow.nearest(sample, centres)[1], k)
    return centres


def exact_training(sample: np.ndarray, k: int, iterations: int, seed: int, init_size: int) -> np.ndarray:
    """train_codebook's seeding, warm start and steps, each step by exact_lloyd."""
    centres = bow.seed_centres(sample, k, seed, init_size)
    warm_rows = bow.warm_start_rows(len(sample), k, seed, init_size, 0.1, 10)
    if warm_rows is not None:
        with bow.rows_in_front(sample.copy(), warm_rows) as warm_sample:
            centres = exact_lloyd(warm_sample.copy(), centres, 10)
    return exact_lloyd(sample, centres, iterations)


@pytest.mark.parametrize("kind, k, init_size", [("opponentsift", 200, 20000), ("sift", 30, 20000),
                                                ("opponentsift", 60, 1000)])
def test_bounded_lloyd_gives_the_bytes_of_exact_lloyd(kind, k, init_size):
    # The bounds skip distances but must never change an assignment, near ties included:
    # any change would move the codebook and with it the words of every image.
    # (A small init_size lets the warm start run on this sample.)
    sample = real_descriptors(12, kind)
    bounded = bow.train_codebook(sample, k, 12, seed=4, threads=2, init_size=init_size)
    assert bounded.tobytes() == exact_training(sample, k, 12, seed=4, init_size=init_size).tobytes()


def test_warm_start_takes_a_seeded_share_of_the_rows_only_when_it_beats_seeding():
    rows = bow.warm_start_rows(50_000, 100, seed=7, init_size=1000, share=0.1, iterations=10)
    assert len(rows) == 5000 and len(np.unique(rows)) == 5000 and np.all(np.diff(rows) > 0)
    np.testing.assert_array_equal(rows, bow.warm_start_rows(50_000, 100, 7, 1000, 0.1, 10))
    assert not np.array_equal(rows, bow.warm_start_rows(50_000, 100, 8, 1000, 0.1, 10))
    # No steps asked for, or no more rows than k-means++ seeded from: no warm start.
    assert bow.warm_start_rows(50_000, 100, 7, 1000, 0.1, 0) is None
    assert bow.warm_start_rows(50_000, 100, 7, 5000, 0.1, 10) is None
    assert bow.warm_start_rows(50_000, 6000, 7, 1000, 0.1, 10) is None


def test_rows_in_front_lends_the_chosen_rows_and_gives_the_sample_back():
    sample = real_descriptors(3)
    before = sample.copy()
    rows = bow.warm_start_rows(len(sample), 10, seed=1, init_size=100, share=0.3, iterations=1)
    assert rows[0] < len(rows) < rows[-1]  # some chosen rows in front already, some behind
    with bow.rows_in_front(sample, rows) as front:
        assert np.shares_memory(front, sample) and len(front) == len(rows)
        assert sorted(r.tobytes() for r in front) == sorted(r.tobytes() for r in before[rows])
        kept = rows[rows < len(rows)]
        np.testing.assert_array_equal(front[kept], before[kept])  # no chosen row in front moves
    assert sample.tobytes() == before.tobytes()
    with pytest.raises(RuntimeError), bow.rows_in_front(sample, rows):
        raise RuntimeError("a step failed")
    assert sample.tobytes() == before.tobytes()


def test_warm_start_moves_the_centres_training_starts_from():
    sample = real_descriptors(12)
    before = sample.copy()
    cold = bow.train_codebook(sample, 40, 3, seed=2, init_size=1000, warm_start_iterations=0)
    warm = bow.train_codebook(sample, 40, 3, seed=2, init_size=1000)
    assert cold.tobytes() != warm.tobytes()
    assert sample.tobytes() == before.tobytes()  # lent to the warm start, given back
    # Warm-start steps on a tenth of the rows then three full steps fit the sample no
    # worse than three full steps from k-means++ alone.
    assert bow.nearest(sample, warm)[1].mean() <= bow.nearest(sample, cold)[1].mean()


def test_near_ties_go_to_the_exactly_nearest_word():
    # Two words a float32 rounding apart from a row: the float64 distance decides,
    # not whichever the product's rounding favours.
    row = real_descriptors(1)[:1]
    step = np.zeros_like(row)
    step[0, 0] = 2.0**-20  # far below float32's resolution of |x - c|^2 near |x|^2
    centres = np.concatenate([row + 4 * step, row + step, row + 9 * step]).astype(np.float32)
    lloyd = bow._Lloyd(np.repeat(row, 3, axis=0), 3, None)
    lloyd.groups = bow._WordGroups(centres, 1)
    lloyd.lower = np.zeros((3, 1), dtype=np.float32)
    lloyd._assign_fully(np.arange(3), bow._Centres(centres, lloyd.groups, None))
    assert lloyd.labels.tolist() == [1, 1, 1]


def test_word_sums_moved_step_by_step_equal_sums_made_afresh():
    # Training moves only the rows that changed word; the sums must be those of
    # summing every row again, bit for bit, on any number of threads.
    sample = real_descriptors(3)
    rng = np.random.default_rng(0)
    first = rng.integers(0, 13, len(sample))
    second = first.copy()
    changed = rng.choice(len(sample), len(sample) // 10, replace=False)
    second[changed] = rng.integers(0, 13, len(changed))
    moved = np.flatnonzero(first != second)
    with ThreadPoolExecutor(3) as pool:
        stepped = bow._WordSums(sample, 13, pool)
        stepped.move(np.arange(len(sample)), np.full(len(sample), -1), first)
        stepped.move(moved, first[moved], second[moved])
    fresh = bow._WordSums(sample, 13)
    fresh.move(np.arange(len(sample)), np.full(len(sample), -1), second)
    assert stepped.sums.tobytes() == fresh.sums.tobytes()
    assert stepped.counts.tolist() == np.bincount(second, minlength=13).tolist()
    exact = np.stack([sample[second == word].astype(np.float64).sum(axis=0) for word in range(13)])
    # Each row is rounded by at most half a fixed-point step.
    steps = np.abs(fresh.float_sums() - exact) * 2.0**fresh.exponent
    assert (steps <= 0.5 * stepped.counts[:, None]).all()


def test_word_sums_never_overflow_however_large_the_rows():
    for largest in (1.0, 3.0e5, 2.0**-30):
        sample = np.full((5000, 4), largest, dtype=np.float32)
        sample[::2] *= -1
        sample[1::4] = 0.0
        sums = bow._WordSums(sample, 2)
        sums.move(np.arange(len(sample)), np.full(len(sample), -1), (np.arange(len(sample)) % 2 == 0).astype(int))
        words = np.arange(len(sample)) % 2 == 0
        np.testing.assert_allclose(sums.float_sums(), [sample[~words].sum(0, dtype=np.float64), sample[words].sum(0, dtype=np.float64)], rtol=1e-12)
        # and the scale wastes at most two of int64's bits
        assert len(sample) * largest * 2.0**sums.exponent >= 2.0**60


BLAS_KERNEL_RUN = """
import sys
import numpy as np
from annobench.visual import bow
from annobench.visual.bow_stage import WordAssigner
sample = np.load(sys.argv[1])
codebook = bow.train_codebook(sample, 200, 12, seed=4)
np.savez(sys.argv[2], codebook=codebook, words=WordAssigner(codebook)(sample), product=sample @ codebook.T)
"""


def test_codebook_and_words_are_the_same_bytes_under_other_blas_kernels(tmp_path):
    # OpenBLAS picks its kernel by CPU; OPENBLAS_CORETYPE makes this machine use another
    # CPU's. Their float32 products differ in the last bits, which must change no word.
    can_play_other_cpus()
    np.save(tmp_path / "sample.npy", real_descriptors(12, "opponentsift"))
    runs = {}
    for kernel in ("Haswell", "Sandybridge"):
        python_as_cpu(BLAS_KERNEL_RUN, str(tmp_path / "sample.npy"), str(tmp_path / kernel), OPENBLAS_CORETYPE=kernel)
        runs[kernel] = np.load(tmp_path / f"{kernel}.npz")
    haswell, sandybridge = runs["Haswell"], runs["Sandybridge"]
    if haswell["product"].tobytes() == sandybridge["product"].tobytes():
        pytest.skip("this numpy's BLAS ignores OPENBLAS_CORETYPE: both runs used one kernel")
    assert haswell["codebook"].tobytes() == sandybridge["codebook"].tobytes()
    assert np.array_equal(haswell["words"], sandybridge["words"])


def test_the_codebook_records_its_fit_the_same_on_any_threads(tmp_path):
    """The fit is the mean squared distance to the nearest word by brute force in float64, kept in
    the codebook's metadata; a trained codebook fits its sample better than its first centres."""
    from annobench.visual.bow_stage import read_codebook_fit, train_kind

    sample = real_descriptors(20)
    path = tmp_path / "sample.npy"
    np.save(path, sample)
    params = {"sample_descriptors": 10**9, "seed": 3, "words": 40, "iterations": 5, "warm_start_share": 0.1,
              "warm_start_iterations": 10}
    fits = []
    for threads in (1, 3):
        codebook = train_kind([str(path)], "sift", params, tmp_path / f"codebook{threads}.parquet",
                              log=lambda _: None, threads=threads)
        fits.append(read_codebook_fit(tmp_path / f"codebook{threads}.parquet"))
    assert fits[0] == fits[1] and fits[0]["sample_rows"] == len(sample)
    rows = sample.astype(np.float64)
    brute = np.min([((rows - word) ** 2).sum(axis=1) for word in codebook.astype(np.float64)], axis=0).mean()
    assert fits[0]["mean_squared_distance"] == pytest.approx(brute, rel=1e-12)
    assert bow.codebook_fit(sample, codebook) == fits[0]["mean_squared_distance"]
    first = bow.seed_centres(sample, 40, 3)
    assert bow.codebook_fit(sample, first) > fits[0]["mean_squared_distance"]
