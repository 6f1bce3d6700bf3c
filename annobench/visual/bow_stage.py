"""The three stages of the bag-of-words features, as the workflow runs them.

1. sample_shard: dense SIFT of the sampled images of a shard, a seeded
   subset of descriptors per image, one .npy per kind;
2. train_kind: k-means over all shards' samples of a kind -> codebook table;
3. encode_shard: every image of a shard -> nearest words of each kind -> spatial pyramids.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from annobench.core.fsutil import atomic_path
from annobench.core.jobs import Job
from annobench.core.progress import Progress
from annobench.core.tables import field, vector_column, write_table
from annobench.images.resize import read_stored
from annobench.visual import bow, dsift
from annobench.visual.stage import write_vectors

Log = Callable[[str], None]
# The codebook's fit to its training sample, in its Parquet metadata (JSON).
CODEBOOK_FIT = "annobench.codebook_fit"
# Rows read at a time when codebook training loads the shards' samples (100 MB at 384 values).
SAMPLE_CHUNK_ROWS = 65536


def _stored_images(images_table: Path | str, out_dir: Path | str):
    rows = pq.read_table(images_table, columns=["image_id", "resized_path"]).to_pydict()
    for image_id, relative in zip(rows["image_id"], rows["resized_path"]):
        yield image_id, Path(out_dir) / relative


def sample_shard(
    images_table: Path | str, out_dir: Path | str, out_paths: dict[str, str], dsift_config: dict,
    fraction: float, per_image: int, seed: int, log: Log = print, every_seconds: float = 10.0,
) -> dict[str, int]:
    params = dsift.DsiftParams.from_config(dsift_config)
    chosen = [(i, p) for i, p in _stored_images(images_table, out_dir) if bow.is_sampled(seed, i, fraction)]
    progress = Progress(f"bow sample {Path(images_table).stem}", len(chosen), log, every_seconds)
    with contextlib.ExitStack() as stack:
        writers = {kind: stack.enter_context(_npy_rows(path, _descriptor_width(kind, params)))
                   for kind, path in out_paths.items()}
        for image_id, path in chosen:
            _, descriptors = dsift.describe_kinds(read_stored(path), list(writers), params)
            for kind, writer in writers.items():
                writer.append(bow.sample_rows(descriptors[kind], per_image, seed, image_id))
            progress.step()
    progress.finish()
    return {kind: writer.count for kind, writer in writers.items()}


def _descriptor_width(kind: str, params: dsift.DsiftParams) -> int:
    return 128 * len(dsift.channels(np.zeros((1, 1, 3), np.uint8), kind, params))


class _RowSink:
    def __init__(self, handle):
        self.handle, self.count = handle, 0

    def append(self, rows: np.ndarray) -> None:
        self.handle.write(np.ascontiguousarray(rows, dtype="<f4").tobytes())
        self.count += len(rows)


@contextlib.contextmanager
def _npy_rows(final: Path | str, width: int):
    """Stream float32 rows into an .npy file: at mid-size collections a shard's
    sample reaches gigabytes, so it goes to disk as it comes, never whole in memory."""
    with atomic_path(final) as partial:
        rows_path = Path(f"{partial}.rows")  # same hidden prefix: cleaned up like any partial
        try:
            with open(rows_path, "wb") as rows:
                sink = _RowSink(rows)
                yield sink
            with open(partial, "wb") as out, open(rows_path, "rb") as rows:
                header = {"descr": "<f4", "fortran_order": False, "shape": (sink.count, width)}
                np.lib.format.write_array_header_1_0(out, header)
                shutil.copyfileobj(rows, out, 16 << 20)
        finally:
            rows_path.unlink(missing_ok=True)


def train_kind(
    sample_paths: list[str], kind: str, params: dict, out_path: Path | str, log: Log = print, threads: int = 1,
) -> np.ndarray:
    """Concatenate the shards' samples (in shard order), cap them, and run k-means."""
    sample = _load_capped(sorted(sample_paths), params["sample_descriptors"], params["seed"], kind, log)
    codebook = bow.train_codebook(sample, params["words"], params["iterations"], params["seed"], log=log,
                                  threads=threads, warm_start_share=params["warm_start_share"],
                                  warm_start_iterations=params["warm_start_iterations"])
    fit = {"mean_squared_distance": bow.codebook_fit(sample, codebook, threads), "sample_rows": len(sample)}
    log(f"{kind}: fit {fit['mean_squared_distance']:.6f} (mean squared distance of the {len(sample)} sample rows "
        "to their nearest word)")
    write_codebook(codebook, kind, params, out_path, fit)
    return codebook


def _load_capped(paths: list[str], cap: int, seed: int, kind: str, log: Log) -> np.ndarray:
    """The rows of all shard samples, or a seeded choice of `cap` of them, in shard order.

    The sample is the largest thing in the job (1.25 M x 384 float32 = 1.9 GB
    at full scale), so rows go straight into one array, read in chunks:
    neither a second copy nor a mapped file (whose pages would count as the
    job's memory) ever sits beside it.
    """
    shapes = [npy_shape(path) for path in paths]
    total = sum(rows for rows, _ in shapes)
    keep = np.sort(np.random.default_rng(seed).choice(total, cap, replace=False)) if total > cap else None
    sample = np.empty((total if keep is None else cap, shapes[0][1]), dtype=np.float32)
    filled = offset = 0
    for path, (n_rows, _) in zip(paths, shapes):
        for first, chunk in _npy_chunks(path):
            if keep is not None:
                lo, hi = np.searchsorted(keep, [offset + first, offset + first + len(chunk)])
                chunk = chunk[keep[lo:hi] - offset - first]
            sample[filled : filled + len(chunk)] = chunk
            filled += len(chunk)
        offset += n_rows
    log(f"{kind}: {total} sampled descriptors of {sample.shape[1]} values from {len(paths)} shard(s)"
        + (f"; kept {cap} (features.bow.sample_descriptors)" if keep is not None else ""))
    return sample


def _npy_header(handle) -> tuple[int, int]:
    version = np.lib.format.read_magic(handle)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran_order, dtype = read(handle)
    if len(shape) != 2 or fortran_order or dtype != np.dtype("<f4"):
        raise ValueError(f"{handle.name}: expected float32 rows, found {dtype} {shape}")
    return shape


def npy_shape(path: str) -> tuple[int, int]:
    with open(path, "rb") as handle:
        return _npy_header(handle)


def _npy_chunks(path: str):
    """(first row, rows) of a float32 row file, SAMPLE_CHUNK_ROWS at a time."""
    with open(path, "rb") as handle:
        n_rows, width = _npy_header(handle)
        for first in range(0, n_rows, SAMPLE_CHUNK_ROWS):
            chunk = np.empty((min(SAMPLE_CHUNK_ROWS, n_rows - first), width), dtype="<f4")
            if handle.readinto(memoryview(chunk).cast("B")) != chunk.nbytes:
                raise ValueError(f"{path}: truncated sample file")
            yield first, chunk


def write_codebook(codebook: np.ndarray, kind: str, params: dict, path: Path | str, fit: dict | None = None) -> None:
    """The codebook table; with `fit` (codebook_fit's figure and the sample's rows), kept in its
    metadata under CODEBOOK_FIT (a k-means change is judged by it: issue 29)."""
    k, dimension = codebook.shape
    schema = pa.schema(
        [
            field("word", pa.int32(), "visual word index, as in the bag-of-words vectors"),
            field("vector", pa.list_(pa.float32(), dimension), f"{kind} descriptor of the cluster centre"),
        ]
    )
    if fit is not None:
        schema = schema.with_metadata({CODEBOOK_FIT: json.dumps(fit, sort_keys=True)})
    table = pa.Table.from_arrays([pa.array(np.arange(k, dtype=np.int32)), vector_column(codebook)], schema=schema)
    write_table(table, path, f"codebook_{kind}", params=params)


def read_codebook_fit(path: Path | str) -> dict | None:
    """The fit write_codebook kept, if any."""
    raw = (pq.read_schema(path).metadata or {}).get(CODEBOOK_FIT.encode())
    return json.loads(raw) if raw else None


def read_codebook(path: Path | str) -> np.ndarray:
    vectors = pq.read_table(path).column("vector").combine_chunks()
    return vectors.values.to_numpy().reshape(len(vectors), -1)


class WordAssigner:
    """Nearest word of each descriptor by one float32 product with the codebook prepared once:
    [x, 1] . [-2 c; |c|^2] = |x - c|^2 - |x|^2, so the argmin needs no other pass over the scores.
    Near ties are ordered by float64 distances (bow.settle_near_ties): float32's choice there
    depends on how BLAS splits the product, so it could differ between machines."""

    def __init__(self, codebook: np.ndarray):
        squared_norms = np.einsum("ij,ij->i", codebook, codebook)
        self.codebook = codebook
        self.words = len(codebook)
        self.longest_word_sq = float(squared_norms.max())
        self.prepared = np.ascontiguousarray(np.vstack([-2.0 * codebook.T, squared_norms[None, :]]), dtype=np.float32)

    def __call__(self, descriptors: np.ndarray) -> np.ndarray:
        augmented = np.empty((len(descriptors), descriptors.shape[1] + 1), dtype=np.float32)
        augmented[:, :-1] = descriptors
        augmented[:, -1] = 1.0
        scores = augmented @ self.prepared
        # The product sums one term more than the dimension: |c|^2 times 1.
        tolerance = bow.assignment_tolerance(descriptors, self.longest_word_sq, extra_terms=1)
        return bow.settle_near_ties(scores, np.argmin(scores, axis=1), descriptors, self.codebook, tolerance)


def encode_image(rgb: np.ndarray, kind: str, params: dsift.DsiftParams, codebook: np.ndarray,
                 levels: list[int]) -> np.ndarray:
    """The pyramid of visual words of one image and kind (what `encode_shard` stores)."""
    points, descriptors = dsift.describe(rgb, kind, params)
    words = WordAssigner(codebook)(descriptors)
    return bow.pyramid_histogram(points, words, rgb.shape[1], rgb.shape[0], len(codebook), levels)


def encode_shard(
    images_table: Path | str, out_dir: Path | str, codebook_paths: dict[str, Path | str], params: dict,
    out_paths: dict[str, Path | str], log: Log = print, every_seconds: float = 10.0,
) -> int:
    """Every image of a shard into the bag of words of each kind, the images read and their
    shared planes described once. Words are kept (2 bytes a descriptor), not vectors: the
    vectors of one kind at a time are built at the end, so memory is that of one kind's table."""
    dsift_params = dsift.DsiftParams.from_config(params["dsift"])
    kinds = list(out_paths)
    assigners = {kind: WordAssigner(read_codebook(codebook_paths[kind])) for kind in kinds}
    images = list(_stored_images(images_table, out_dir))
    sizes, points, words = [], [], {kind: [] for kind in kinds}
    progress = Progress(f"bow {Path(images_table).stem}", len(images), log, every_seconds)
    for _, path in images:
        rgb = read_stored(path)
        grid_points, descriptors = dsift.describe_kinds(rgb, kinds, dsift_params)
        sizes.append(rgb.shape[:2])
        points.append(grid_points.astype(np.int32))
        for kind in kinds:
            words[kind].append(assigners[kind](descriptors[kind]).astype(np.min_scalar_type(assigners[kind].words)))
        progress.step()
    image_ids = [image_id for image_id, _ in images]
    for kind in kinds:
        k, levels = assigners[kind].words, params["pyramid"]
        vectors = np.empty((len(images), k * sum(level * level for level in levels)), dtype=np.float32)
        for row, ((height, width), grid_points, image_words) in enumerate(zip(sizes, points, words.pop(kind))):
            vectors[row] = bow.pyramid_histogram(grid_points.astype(np.int64), image_words.astype(np.int64),
                                                 width, height, k, levels)
        write_vectors(f"bow_{kind}", bow_table_params(params, kind), image_ids, vectors, out_paths[kind])
    progress.finish()
    return len(images)


def bow_table_params(params: dict, kind: str) -> dict:
    """The parameters stored in one kind's table: the job's, for that kind alone."""
    return {"kind": kind, **{key: value for key, value in params.items() if key != "kinds"}}


def bow_sample_job(job: Job) -> None:
    """Rule bow_sample: a shard's share of the descriptor sample, one file per kind."""
    sampling = job.params["sampling"]
    counts = sample_shard(job.input("images"), job.out_dir, job.outputs, job.params["dsift"], sampling["fraction"],
                          sampling["per_image"], sampling["seed"], job.log, job.every_seconds)
    job.log(f"sampled descriptors: {counts}")


def bow_codebook_job(job: Job) -> None:
    """Rules bow_codebook_KIND: one kind's codebook from every shard's sample."""
    train_kind(job.input_files, job.params["kind"], job.params["settings"], job.output_files[0], job.log,
               threads=job.threads)


def bow_encode_job(job: Job) -> None:
    """Rule feature_bow: every kind's bag of words for a shard."""
    settings = job.params["settings"]
    kinds = settings["kinds"]
    encode_shard(job.input("images"), job.out_dir, dict(zip(kinds, job.input_list("codebooks"))), settings,
                 {kind: job.output(kind) for kind in kinds}, job.log, job.every_seconds)
