"""Publishing a release: its Croissant metadata (read back with mlcroissant) and its Hugging Face
dataset card (every table loaded with `datasets`, offline).

The writers run on a hard-linked copy of each build's release, so the build's
own files are never written to.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from annobench.release.croissant import LICENSE_NOT_GIVEN, croissant_license, release_tables, write_croissant
from annobench.release.dataset_card import dataset_card, hf_license, write_dataset_card

# Third-party noise: rdflib's JSON-LD parser and mlcroissant's Parquet reader use deprecated APIs.
pytestmark = [
    pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated"),
    pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index is deprecated"),
]

BUILDS = ["demo_build", "msrc_build"]
PUBLISHED = ("croissant.json", "README.md")


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def hf_offline(tmp_path_factory):
    """`datasets`, imported with the Hub offline and every cache in a temporary folder."""
    cache = tmp_path_factory.mktemp("hf_cache")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(cache),
                            "HF_DATASETS_CACHE": str(cache / "datasets")}.items():
            patch.setenv(name, value)
        datasets = pytest.importorskip("datasets")
        datasets.disable_progress_bars()
        yield datasets, cache / "datasets"


def linked_copy(release: Path, target: Path) -> Path:
    """The release as hard links, without files this module writes (a write must not reach the build)."""
    def ignore(folder, names):
        return [name for name in names if Path(folder) == release and name in PUBLISHED]

    shutil.copytree(release, target, copy_function=os.link, ignore=ignore)
    return target


def release_config(release: Path) -> dict:
    """The config the build ran with, as RELEASE.json records it."""
    return json.loads((release / "RELEASE.json").read_text(encoding="utf-8"))["config"]


@pytest.fixture(scope="module", params=BUILDS)
def published(request) -> tuple[Path, dict]:
    """A build's release (its croissant.json and README.md written by the release job), and its config."""
    pytest.importorskip("mlcroissant")
    release = request.getfixturevalue(request.param) / "release" / "data"
    return release, release_config(release)


# ---------------------------------------------------------------- helpers


def expected_table(files) -> pa.Table:
    return pa.concat_tables([pq.read_table(path) for path in files]).replace_schema_metadata(None)


def loaded_croissant(path: Path):
    import mlcroissant as mlc

    return mlc.Dataset(jsonld=str(path))


def allowed_warnings(config: dict) -> set[str]:
    """Recommended properties a release may lack: no date is written (bytes must not depend on
    when the release was built), and citeAs only when the config gives a citation."""
    missing = {"https://schema.org/datePublished"}
    if not config.get("release", {}).get("citation"):
        missing.add("http://mlcommons.org/croissant/citeAs")
    return {f'Property "{name}" is recommended, but does not exist.' for name in missing}


def assert_no_unexpected_warnings(dataset, config: dict) -> None:
    issues = dataset.metadata.ctx.issues
    assert not issues.errors
    allowed = allowed_warnings(config)
    unexpected = [warning for warning in issues.warnings if not any(warning.endswith(a) for a in allowed)]
    assert not unexpected


def croissant_column(values: list, arrow_type: pa.DataType) -> list:
    """Records' values as Arrow's to_pylist() gives them: text from bytes, vectors as float32."""
    def convert(value):
        if value is None:
            return None
        if isinstance(value, bytes):
            return value.decode("utf-8")
        if isinstance(value, list):
            return [convert(item) for item in value]
        return value

    converted = [convert(value) for value in values]
    if pa.types.is_fixed_size_list(arrow_type) or pa.types.is_floating(arrow_type):
        return pa.array(converted, type=arrow_type).to_pylist()  # rounds through the column's float type
    return converted


def assert_records_equal_parquet(dataset, record_set: dict, files) -> None:
    expected = expected_table(files)
    records = list(dataset.records(record_set=record_set["@id"]))
    assert len(records) == expected.num_rows, record_set["@id"]
    columns = {field["source"]["extract"]["column"]: field["@id"] for field in record_set["field"]}
    assert sorted(columns) == sorted(expected.column_names)
    for column, field_id in columns.items():
        arrow_type = expected.schema.field(column).type
        values = croissant_column([record[field_id] for record in records], arrow_type)
        assert values == expected.column(column).to_pylist(), f"{record_set['@id']}.{column}"


def front_matter(card: str) -> dict:
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n", 2)[1])


def load_table(hf_offline, release: Path, name: str, rows: int):
    """One config; an empty table only streams (datasets writes no file for an empty split)."""
    datasets, cache = hf_offline
    if rows == 0:
        return datasets.load_dataset(str(release), name, split="train", streaming=True, cache_dir=str(cache))
    return datasets.load_dataset(str(release), name, split="train", cache_dir=str(cache))


def assert_loaded_equals_parquet(hf_offline, loaded, files) -> None:
    datasets, _ = hf_offline
    expected = expected_table(files)
    assert loaded.features == datasets.Features.from_arrow_schema(expected.schema)
    for field in expected.schema:
        if pa.types.is_fixed_size_list(field.type):
            feature = loaded.features[field.name]
            assert feature.length == field.type.list_size
            assert feature.feature.dtype == {"float": "float32", "double": "float64"}[str(field.type.value_type)]
    rows = list(loaded) if isinstance(loaded, datasets.IterableDataset) else None
    if rows is not None:
        assert rows == expected.to_pylist()
        return
    assert loaded.num_rows == expected.num_rows
    actual = loaded.with_format("arrow")[:]
    for name in expected.column_names:
        assert actual.column(name).to_pylist() == expected.column(name).to_pylist(), name


# ---------------------------------------------------------------- Croissant on the builds


def test_croissant_validates_and_reads_every_record_set(published):
    release, config = published
    document = json.loads((release / "croissant.json").read_text(encoding="utf-8"))
    dataset = loaded_croissant(release / "croissant.json")
    assert_no_unexpected_warnings(dataset, config)
    record_sets = {node["@id"]: node for node in document["recordSet"]}
    tables = release_tables(release)
    assert {table.name for table in tables} <= set(record_sets)
    files = {node["@id"]: node for node in document["distribution"]}
    for name, record_set in record_sets.items():
        if name.startswith("resized_images"):
            continue
        source = record_set["field"][0]["source"]
        node = files[(source.get("fileSet") or source["fileObject"])["@id"]]
        paths = sorted(release.glob(node["includes"])) if "includes" in node else [release / node["contentUrl"]]
        assert_records_equal_parquet(dataset, record_set, paths)


def test_croissant_reads_the_stored_images(published):
    release, _ = published
    dataset = loaded_croissant(release / "croissant.json")
    images = expected_table(sorted((release / "tables" / "images").glob("*.parquet"))).to_pylist()
    records = list(dataset.records(record_set="resized_images"))
    by_id = {record["resized_images/image_id"].decode(): record for record in records}
    assert sorted(by_id) == sorted(row["image_id"] for row in images)
    for row in images:
        record = by_id[row["image_id"]]
        assert record["resized_images/path"].decode() == row["resized_path"]
        assert record["resized_images/image"].size == (row["resized_width"], row["resized_height"])


def test_croissant_describes_vectors_with_their_length(published):
    release, _ = published
    document = json.loads((release / "croissant.json").read_text(encoding="utf-8"))
    vector = next(field for record_set in document["recordSet"] if record_set["@id"] == "gist"
                  for field in record_set["field"] if field["name"] == "vector")
    assert vector["repeated"] is True and vector["isArray"] is True
    assert vector["arrayShape"] == "960" and vector["dataType"] == "sc:Float"
    assert "float32[960]" in vector["description"]
    sha256 = {node["@id"]: node.get("sha256") for node in document["distribution"]}
    assert sha256["artefacts/getlf_projection.parquet"]


def test_published_files_are_deterministic(published, tmp_path):
    release, config = published
    other = linked_copy(release, tmp_path / "elsewhere" / "release")
    assert write_croissant(other, config).read_bytes() == (release / "croissant.json").read_bytes()
    assert write_dataset_card(other, config).read_bytes() == (release / "README.md").read_bytes()
    text = (release / "croissant.json").read_text() + (release / "README.md").read_text()
    assert str(release) not in text and str(tmp_path) not in text


# ---------------------------------------------------------------- dataset card on the builds


def test_card_front_matter_lists_every_table(published):
    release, config = published
    front = front_matter((release / "README.md").read_text(encoding="utf-8"))
    tables = release_tables(release)
    assert [entry["config_name"] for entry in front["configs"]] == [table.name for table in tables]
    assert [entry["config_name"] for entry in front["dataset_info"]] == [table.name for table in tables]
    assert front["pretty_name"] == config["release"]["title"]
    assert front["license"] == hf_license(config["release"].get("license", ""))["license"]
    assert "multi-label-image-classification" in front["task_ids"]
    assert [entry["config_name"] for entry in front["configs"] if entry.get("default")] == ["images"]


def test_card_loads_every_table_with_datasets(published, hf_offline):
    release, _ = published
    for table in release_tables(release):
        loaded = load_table(hf_offline, release, table.name, table.rows)
        assert_loaded_equals_parquet(hf_offline, loaded, table.files)


# ---------------------------------------------------------------- a small release made here


def write_parquet(path: Path, table: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def vector_table(ids: list[str], dimension: int) -> pa.Table:
    values = pa.array(np.arange(len(ids) * dimension, dtype=np.float32) / 7)
    schema = pa.schema([pa.field("image_id", pa.string(), metadata={"description": "key of the image"}),
                        pa.field("vector", pa.list_(pa.float32(), dimension),
                                 metadata={"description": "a feature vector"})],
                       metadata={"annobench.artefact": "feature"})
    return pa.table([pa.array(ids, pa.string()), pa.FixedSizeListArray.from_arrays(values, dimension)],
                    schema=schema)


@pytest.fixture
def small_release(tmp_path) -> Path:
    """Shards (one empty), a folder of two unrelated tables, odd column names, a PNG image."""
    from PIL import Image

    release = tmp_path / "release"
    write_parquet(release / "tables/feature/shard-00000.parquet", vector_table(["a", "b"], 3))
    write_parquet(release / "tables/feature/shard-00001.parquet", vector_table([], 3))
    write_parquet(release / "tables/stats/one.parquet", pa.table({"label": ["x", None], "n": [1, 2]}))
    write_parquet(release / "tables/stats/two.parquet",
                  pa.table({"MAP (most)": [0.5], "N+": [3], "ok": [True], "words": [["p", "q"]]}))
    write_parquet(release / "tables/empty/all.parquet", pa.table({"id": pa.array([], pa.string())}))
    (release / "resized/shard-00000").mkdir(parents=True)
    Image.new("RGB", (4, 3), "red").save(release / "resized/shard-00000/a.b.png")
    return release


SMALL_CONFIG = {"release": {"name": "small", "title": "Small", "description": "A test release.",
                            "version": "0.0.1", "license": "CC-BY-4.0", "citation": "@misc{small}",
                            "url": "", "creators": ["Tester"], "keywords": ["tiny set"]}}


def test_small_release_croissant_reads_back(small_release):
    pytest.importorskip("mlcroissant")
    document = json.loads(write_croissant(small_release, SMALL_CONFIG).read_text(encoding="utf-8"))
    assert document["license"] == "https://spdx.org/licenses/CC-BY-4.0.html"
    record_sets = {node["@id"]: node for node in document["recordSet"]}
    assert set(record_sets) == {"empty", "feature", "stats_one", "stats_two", "resized_images"}
    dataset = loaded_croissant(small_release / "croissant.json")
    assert not dataset.metadata.ctx.issues.errors
    tables = {table.name: table for table in release_tables(small_release)}
    for name, table in tables.items():
        assert_records_equal_parquet(dataset, record_sets[name], table.files)
    [image] = list(dataset.records(record_set="resized_images"))
    assert image["resized_images/image_id"] == b"a.b" and image["resized_images/image"].size == (4, 3)


def test_small_release_card_loads(small_release, hf_offline):
    card = dataset_card(small_release, SMALL_CONFIG)
    front = front_matter(card)
    assert front["license"] == "cc-by-4.0" and front["size_categories"] == ["n<1K"]
    assert "tiny-set" in front["tags"]
    assert [entry["config_name"] for entry in front["configs"]] == ["empty", "feature", "stats_one", "stats_two"]
    assert "```bibtex\n@misc{small}\n```" in card
    write_dataset_card(small_release, SMALL_CONFIG)
    for table in release_tables(small_release):
        loaded = load_table(hf_offline, small_release, table.name, table.rows)
        assert_loaded_equals_parquet(hf_offline, loaded, table.files)


def test_unspecified_licence():
    assert hf_license("") == {"license": "other", "license_name": "unspecified"}
    assert hf_license("https://example.org/terms") == {"license": "other", "license_name": "custom",
                                                       "license_link": "https://example.org/terms"}
    assert croissant_license("") == croissant_license("other") == LICENSE_NOT_GIVEN
    assert croissant_license("mit") == "https://spdx.org/licenses/MIT.html"


# ---------------------------------------------------------------- boxes (ImageCLEF 2016 subtask 1)

VOC_TOY = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real" / "boxes" / "voc_toyexample"


@pytest.fixture
def box_release(tmp_path) -> Path:
    """The shared VOC toy example as a release: its cat boxes as the boxes (and box rejects) tables, its
    detections as a box run with its evaluation, all written by the package's own commands."""
    from annobench.benchmark.boxes.commands import boxes_main, evaluate_boxes_main
    from annobench.benchmark.boxes.forms import read_box_run, write_box_run

    if not VOC_TOY.is_dir():
        pytest.skip(f"needs the real test data at {VOC_TOY}")
    release = tmp_path / "release"
    assert boxes_main(str(VOC_TOY / "gts_vocpascal_format"), str(release)) == 0
    run = release / "runs" / "cat_detector.parquet"
    write_box_run(read_box_run(VOC_TOY / "dets_classname_abs_xywh", geometry="xywh"), run, "parquet")
    (release / "evaluations").mkdir()
    assert evaluate_boxes_main(str(VOC_TOY / "gts_vocpascal_format"), str(run),
                               str(release / "evaluations" / "cat_detector.json"), "0,0.5,0.75") == 0
    return release


def test_box_release_croissant_reads_back(box_release):
    from annobench.release.croissant import BOX_SUMMARIES

    pytest.importorskip("mlcroissant")
    document = json.loads(write_croissant(box_release, SMALL_CONFIG).read_text(encoding="utf-8"))
    record_sets = {node["@id"]: node for node in document["recordSet"]}
    assert set(record_sets) == {"boxes", "box_rejects", "box_notes", "runs_cat_detector"}
    for name, artefact in (("boxes", "boxes"), ("box_rejects", "box_rejects"), ("box_notes", "box_notes"),
                           ("runs_cat_detector", "box_run")):
        assert record_sets[name]["description"].startswith(BOX_SUMMARIES[artefact])
    fields = {field["name"]: field for field in record_sets["boxes"]["field"]}
    assert fields["xmax"]["dataType"] == "sc:Integer" and "inclusive" in fields["xmax"]["description"]
    dataset = loaded_croissant(box_release / "croissant.json")
    assert not dataset.metadata.ctx.issues.errors
    files = {"boxes": sorted((box_release / "tables" / "boxes").glob("*.parquet")),
             "box_rejects": sorted((box_release / "tables" / "box_rejects").glob("*.parquet")),
             "runs_cat_detector": [box_release / "runs" / "cat_detector.parquet"]}
    for name, paths in files.items():
        assert_records_equal_parquet(dataset, record_sets[name], paths)


def test_box_release_card(box_release, hf_offline):
    card = dataset_card(box_release, SMALL_CONFIG)
    front = front_matter(card)
    assert "object-detection" in front["task_categories"]
    assert [entry["config_name"] for entry in front["configs"]] == ["box_notes", "box_rejects", "boxes"]
    assert "## Boxes" in card and "### Box runs" in card
    evaluation = json.loads((box_release / "evaluations" / "cat_detector.json").read_text(encoding="utf-8"))
    assert round(evaluation["MAP"]["0.5"], 4) == 0.8958  # the toy example's published cat AP (all points)
    rows = pq.read_metadata(box_release / "runs" / "cat_detector.parquet").num_rows
    assert (f"| `cat_detector` | `runs/cat_detector.parquet` | {rows} | {evaluation['MAP']['0']:.4f} | 0.8958 |"
            in card)
    assert "| `score` | `float64` |" in card  # the box run's columns, described
    write_dataset_card(box_release, SMALL_CONFIG)
    for table in release_tables(box_release):
        loaded = load_table(hf_offline, box_release, table.name, table.rows)
        assert_loaded_equals_parquet(hf_offline, loaded, table.files)
