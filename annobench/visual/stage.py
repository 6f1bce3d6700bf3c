"""Per-image feature tables: which features exist, and computing one for a shard.

Every feature starts from the stored resized image (Villegas and Paredes 2014,
section 2.3: at most 240 pixels, aspect ratio kept), decoded from its file,
and is written as a sharded table `image_id, vector` (fixed_size_list<float32>)
whose metadata carries the parameters.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from annobench.core.jobs import Job
from annobench.core.progress import Progress
from annobench.core.tables import field, vector_column, write_table
from annobench.images.resize import read_stored

Extractor = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Feature:
    """A feature and where its code lives.

    The module is imported by name only when the feature runs, so the code
    fingerprint of a feature's rule covers that module and not the others:
    editing GIST's code reruns GIST, not Colorhist.
    """

    name: str
    module: str
    factory: str  # module.factory(params, projection) -> Extractor
    dimension: Callable[[dict], int]
    needs_projection: bool = False


FEATURES = {
    "colorhist": Feature(
        "colorhist", "annobench.visual.colour", "colorhist_extractor",
        lambda p: p["grid"] ** 2 * 8 ** p["bits_per_channel"],
    ),
    "getlf": Feature(
        "getlf", "annobench.visual.colour", "getlf_extractor",
        lambda p: 2 ** p["projections"], needs_projection=True,
    ),
    "gist": Feature(
        "gist", "annobench.visual.gist", "gist_extractor",
        lambda p: (3 if p["colour"] else 1) * sum(p["orientations_per_scale"]) * p["blocks"] ** 2,
    ),
}


def vector_schema(name: str, dimension: int) -> pa.Schema:
    return pa.schema(
        [
            field("image_id", pa.string(), "key of the image"),
            field("vector", pa.list_(pa.float32(), dimension), f"{name} feature vector"),
        ]
    )


def vectors_table(name: str, image_ids: list[str], vectors: np.ndarray, description: str = "") -> pa.Table:
    """The table of a feature's vectors; `description` (one line on the whole table, for Croissant and
    the dataset card) goes into the schema's metadata as `annobench.description`."""
    column = vector_column(vectors)
    schema = vector_schema(name, column.type.list_size)
    if description:
        schema = schema.with_metadata({"annobench.description": description})
    return pa.Table.from_arrays([pa.array(image_ids, pa.string()), column], schema=schema)


def write_vectors(name: str, params: dict, image_ids: list[str], vectors: np.ndarray, path: Path | str,
                  description: str = "") -> None:
    write_table(vectors_table(name, image_ids, vectors, description), path, name, params=params)


def make_extractor(name: str, params: dict, projection_path: Path | str | None = None) -> Extractor:
    """The feature's function of an RGB image; a projection is read from its artefact or made from the seed."""
    feature = FEATURES[name]
    module = importlib.import_module(feature.module)
    projection = None
    if feature.needs_projection:
        projection = module.read_projection(projection_path) if projection_path else module.projection_for(params)
    return getattr(module, feature.factory)(params, projection)


def feature_shard(
    name: str,
    params: dict,
    images_table: Path | str,
    out_dir: Path | str,
    out_path: Path | str,
    projection_path: Path | str | None = None,
    log: Callable[[str], None] = print,
    every_seconds: float = 10.0,
) -> int:
    """Compute one feature for every image of a shard, from its stored resized file."""
    extract = make_extractor(name, params, projection_path)
    return extract_shard(name, params, extract, FEATURES[name].dimension(params), images_table, out_dir, out_path,
                         log, every_seconds)


def extract_shard(name: str, params: dict, extract: Extractor, dimension: int, images_table: Path | str,
                  out_dir: Path | str, out_path: Path | str, log: Callable[[str], None] = print,
                  every_seconds: float = 10.0, description: str = "") -> int:
    """`extract` on the stored resized file of every image of a shard, in the shard's order: its table."""
    rows = pq.read_table(images_table, columns=["image_id", "resized_path"]).to_pydict()
    vectors = np.empty((len(rows["image_id"]), dimension), dtype=np.float32)
    progress = Progress(f"{name} {Path(out_path).stem}", len(vectors), log, every_seconds)
    for row, relative in enumerate(rows["resized_path"]):
        vectors[row] = extract(read_stored(Path(out_dir) / relative))
        progress.step()
    write_vectors(name, params, rows["image_id"], vectors, out_path, description)
    progress.finish()
    return len(vectors)


def feature_job(job: Job) -> None:
    """Rules feature_colorhist, feature_getlf, feature_gist: one feature of a shard."""
    projection = job.inputs.get("projection")
    feature_shard(job.params["feature"], job.params["settings"], job.input("images"), job.out_dir,
                  job.output_files[0], projection, job.log, job.every_seconds)


def getlf_projection_job(job: Job) -> None:
    """Rule getlf_projection: GETLF's projection vectors, from their seed."""
    from annobench.visual.colour import write_projection

    projection = write_projection(job.params["settings"], job.output_files[0])
    job.log(f"{projection.shape[0]} projection vectors over {projection.shape[1]} bins")
