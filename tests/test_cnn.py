"""CNN embeddings (features.cnn): networks given as files, run by OpenCV's DNN module.

Small networks with seeded weights (tests/cnn_nets.py) in both forms, ONNX and Caffe, against
onnxruntime on 20 real photos; the clear errors of a network that cannot be used; the plan's
check and its cache; a build with a network configured (a copy of the two-shard demo build):
the table, the k-NN baseline on it, the browser, Croissant and the dataset card, the same bytes
on one core as on two, a job replayed from the release; and the projection's stated cost.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

import cnn_nets
from annobench.visual import cnn
from annobench.visual.protobuf import ProtobufError, parse_text
from helpers import REAL_IMAGES, copy_build, require_shared, run_snakemake, shared_build, workflow_rules

BSDS = REAL_IMAGES / "bsds500" / "train"
TOLERANCE = 1e-5  # relative difference of a vector from onnxruntime's: ||ours - theirs|| / ||theirs||
# torchvision's recipe (RGB, 0-1 values, ImageNet mean and std), and Caffe's (BGR, 0-255, mean only)
TORCHVISION = {"size": [cnn_nets.SIDE, cnn_nets.SIDE], "resize": "shorter_side", "resize_to": 56,
               "interpolation": "linear", "channels": "RGB", "mean": [123.675, 116.28, 103.53],
               "scale": 1 / 255, "std": [0.229, 0.224, 0.225]}
CAFFE = {"size": [cnn_nets.SIDE, cnn_nets.SIDE], "resize": "warp", "resize_to": 52, "interpolation": "linear",
         "channels": "BGR", "mean": [103.939, 116.779, 123.68], "scale": 1.0, "std": [1.0, 1.0, 1.0]}


@pytest.fixture(scope="module")
def nets(tmp_path_factory) -> dict[str, Path]:
    pytest.importorskip("onnx", reason="the test extra writes the networks with onnx (pip install -e '.[test]')")
    folder = tmp_path_factory.mktemp("nets")
    weights = cnn_nets.weights()
    files = {"onnx": cnn_nets.onnx_model(folder / "small.onnx", weights),
             "symbolic": cnn_nets.onnx_model(folder / "symbolic.onnx", weights, symbolic=True)}
    for form, v1 in (("caffe", False), ("caffe_v1", True)):
        files[f"{form}_prototxt"], files[form] = cnn_nets.caffe_files(folder / form, weights, v1)
    return files


@pytest.fixture(scope="module")
def photos() -> list[np.ndarray]:
    """20 BSDS500 photos as the pipeline stores them (at most 240 pixels a side), decoded to RGB."""
    import cv2

    from annobench.images.resize import resize_area

    paths = sorted(require_shared(BSDS).glob("*.jpg"))[:20]
    return [resize_area(cv2.cvtColor(cv2.imread(str(p)), cv2.COLOR_BGR2RGB), 240) for p in paths]


def settings(model: Path, layer: str, recipe: dict, prototxt: Path | None = None, **extra) -> dict:
    return {"model": str(model), "prototxt": str(prototxt or ""), "layer": layer, "input": dict(recipe),
            "optional": False, **extra}


def onnxruntime_vectors(model: Path, output: str, images: list[np.ndarray], recipe: dict, folder: Path) -> np.ndarray:
    """The reference: onnx's own extractor cuts the model to `output`, onnxruntime runs it on the recipe
    written again in cnn_nets.reference_input."""
    onnxruntime = pytest.importorskip("onnxruntime", reason="the reference (pip install -e '.[test]')")
    cut = cnn_nets.onnx_cut(model, output, folder / f"{model.stem}-{output}.onnx")
    session = onnxruntime.InferenceSession(str(cut), providers=["CPUExecutionProvider"])
    return np.stack([session.run(None, {"data": cnn_nets.reference_input(rgb, recipe)})[0].reshape(-1)
                     for rgb in images])


def relative_differences(ours: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    return np.linalg.norm(ours - theirs, axis=1) / np.linalg.norm(theirs, axis=1)


@pytest.mark.parametrize("layer", ["fc7", "relu7", "pool1", "prob"])
def test_onnx_features_match_onnxruntime_on_20_real_photos(nets, photos, layer, tmp_path):
    network = cnn.load_network("small", settings(nets["onnx"], layer, TORCHVISION))
    ours = np.stack([network(rgb) for rgb in photos])
    theirs = onnxruntime_vectors(nets["onnx"], layer, photos, TORCHVISION, tmp_path)
    assert ours.dtype == np.float32 and ours.shape == theirs.shape == (20, network.dimension)
    differences = relative_differences(ours, theirs)
    print(f"ONNX {layer}: largest relative difference from onnxruntime {differences.max():.2e}")
    assert differences.max() <= TOLERANCE


# Caffe's names: blob fc7 after relu7 and drop7 (in place) is ONNX's relu7; blob conv1 after relu1
# is relu1; pool2 and fc8 are the layers' own outputs.
@pytest.mark.parametrize("form", ["caffe", "caffe_v1"])
@pytest.mark.parametrize("layer, onnx_output", [("fc7", "relu7"), ("conv1", "relu1"), ("pool2", "pool2"),
                                                 ("fc8", "fc8")])
def test_caffe_features_match_onnxruntime_on_20_real_photos(nets, photos, form, layer, onnx_output, tmp_path):
    network = cnn.load_network("small", settings(nets[form], layer, CAFFE, nets[f"{form}_prototxt"]))
    ours = np.stack([network(rgb) for rgb in photos])
    theirs = onnxruntime_vectors(nets["onnx"], onnx_output, photos, CAFFE, tmp_path)
    differences = relative_differences(ours, theirs)
    print(f"Caffe ({form}) {layer}: largest relative difference from onnxruntime {differences.max():.2e}")
    assert differences.max() <= TOLERANCE


def test_a_network_without_fixed_input_dims_takes_the_recipes_size(nets, photos):
    network = cnn.load_network("small", settings(nets["symbolic"], "pool2", {**TORCHVISION, "size": [64, 40],
                                                                              "resize_to": 72}))
    assert network.dimension == 16 * cnn_nets.pooled(cnn_nets.pooled(40, 3, 2), 3, 2) * \
        cnn_nets.pooled(cnn_nets.pooled(64, 3, 2), 3, 2)
    assert network(photos[0]).shape == (network.dimension,)


def test_the_recipe_resizes_the_shorter_side_and_crops_the_centre():
    image = np.arange(30 * 40 * 3, dtype=np.uint8).reshape(30, 40, 3)
    recipe = {**TORCHVISION, "size": [20, 20], "resize_to": 30, "scale": 1.0, "std": [1, 1, 1],
              "mean": [0, 0, 0], "channels": "RGB"}
    blob = cnn.network_input(image, recipe)  # 30 x 40 stays; its centre 20 x 20 is rows 5-24, columns 10-29
    assert blob.shape == (1, 3, 20, 20) and blob.dtype == np.float32
    assert np.array_equal(blob[0].transpose(1, 2, 0), image[5:25, 10:30].astype(np.float32))
    bgr = cnn.network_input(image, {**recipe, "channels": "BGR"})
    assert np.array_equal(bgr[0, 0], blob[0, 2])
    np.testing.assert_array_equal(cnn.network_input(image, recipe), cnn_nets.reference_input(image, recipe))


# ---------------------------------------------------------------- errors


def one_line_error(configured: dict, name: str = "small") -> str:
    with pytest.raises(cnn.CnnError) as caught:
        cnn.load_network(name, configured)
    [line] = caught.value.report_lines()
    return line


def test_a_missing_model_file_is_named(nets, tmp_path):
    line = one_line_error(settings(tmp_path / "absent.onnx", "fc7", TORCHVISION))
    assert "absent.onnx: no such file (features.cnn.small.model)" in line
    line = one_line_error(settings(nets["caffe"], "fc7", CAFFE, tmp_path / "absent.prototxt"))
    assert "absent.prototxt: no such file (features.cnn.small.prototxt)" in line


def test_garbage_bytes_are_not_a_network(nets, tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    assert f"{garbage}: not an ONNX model" in one_line_error(settings(garbage, "fc7", TORCHVISION))
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(nets["onnx"].read_bytes()[:5000])
    assert f"{truncated}: not an ONNX model" in one_line_error(settings(truncated, "fc7", TORCHVISION))
    weights = tmp_path / "garbage.caffemodel"
    weights.write_bytes(garbage.read_bytes())
    line = one_line_error(settings(weights, "fc7", CAFFE, nets["caffe_prototxt"]))
    assert f"{weights}: not Caffe weights" in line
    text = tmp_path / "garbage.prototxt"
    text.write_text("layer { name: 'conv1' type: ", encoding="utf-8")
    assert f"{text}: not a Caffe network definition" in one_line_error(settings(nets["caffe"], "fc7", CAFFE, text))


def test_weights_missing_for_a_layer_name_both_files(nets, tmp_path):
    weights = {key: value for key, value in cnn_nets.weights().items() if not key.startswith("fc7")}
    deploy, model = cnn_nets.caffe_files(tmp_path, weights)
    line = one_line_error(settings(model, "fc8", CAFFE, deploy))
    assert f"{deploy}: layer fc7 (InnerProduct): needs weight blob 1, {model} has 0 for a layer of that name" in line


def test_an_unknown_layer_is_named_with_the_names_there_are(nets):
    line = one_line_error(settings(nets["onnx"], "fc77", TORCHVISION))
    assert f"{nets['onnx']}: no node or tensor named 'fc77'; it has conv1, relu1, pool1" in line
    line = one_line_error(settings(nets["caffe"], "fc77", CAFFE, nets["caffe_prototxt"]))
    assert f"{nets['caffe_prototxt']}: no blob or layer named 'fc77'; it has conv1, pool1, conv2" in line


def test_a_recipe_the_network_cannot_take_is_opencvs_error_rephrased(nets):
    line = one_line_error(settings(nets["onnx"], "fc7", {**TORCHVISION, "size": [40, 40]}))
    assert f"{nets['onnx']}: the network takes 3 x 48 x 48 (channels x height x width), " \
           "features.cnn.small.input.size gives 3 x 40 x 40" in line
    # No fixed input dims: the convolutions take 40 x 40, fc7's weights do not, and OpenCV says so.
    line = one_line_error(settings(nets["symbolic"], "fc7", {**TORCHVISION, "size": [40, 40]}))
    assert f"{nets['symbolic']}: the network cannot take a 3 x 40 x 40 input (features.cnn.small.input): " in line
    assert "OpenCV(" not in line and "in function" not in line and "K_a' is 1600" in line
    line = one_line_error(settings(nets["onnx"], "fc7", {**TORCHVISION, "resize_to": 40}))
    assert "features.cnn.small.input: resize_to 40 is smaller than the 48 x 48 crop" in line


def test_the_prototxt_reader_takes_the_text_format():
    message = parse_text('# a comment\nname: "a \\"b\\"" value: -1.5e-3 flag: true items: [1, 2, 3]\n'
                         "nested { inner: 'x' } nested < inner: OTHER >\n")
    assert message.last("name") == 'a "b"' and message.last("value") == -1.5e-3
    assert message.all("items") == [1, 2, 3] and message.last("flag") == "true"
    assert [m.last("inner") for m in message.all("nested")] == ["x", "OTHER"]
    for broken in ("a { b: 1", "a: ", "a: @", "{ }"):
        with pytest.raises(ProtobufError):
            parse_text(broken)


# ---------------------------------------------------------------- the plan


def plan_config(tmp_path: Path, networks: dict) -> dict:
    from annobench.core.config import load_config
    from helpers import REPO

    return load_config(overrides={
        "output": str(tmp_path / "out"), "input": {"images": str(REPO / "demo" / "images"), "page_map": "",
                                                   "segmentations": ""},
        "features": {"cnn": networks},
        "benchmark": {"ground_truth": {"source": "csv", "path": str(REPO / "demo" / "benchmark" / "ground_truth.csv")},
                      "features": ["gist", "cnn_small", "cnn_spare"]}})


def test_the_plan_stops_on_a_network_it_needs_and_goes_on_without_an_optional_one(nets, tmp_path):
    from annobench.plan import PlanError, make_plan

    small = settings(nets["onnx"], "fc7", TORCHVISION)
    spare = settings(tmp_path / "absent.onnx", "fc7", TORCHVISION, optional=True)
    plan = make_plan(plan_config(tmp_path, {"small": small, "spare": spare}), log=lambda line: None)
    assert list(plan.cnn_models) == ["small"] and plan.cnn_models["small"]["dimension"] == cnn_nets.FC7
    assert plan.global_tables == ["colorhist", "getlf", "gist", "cnn_small"]
    assert "knn_cnn_small" in plan.baselines and "knn_cnn_spare" not in plan.baselines
    assert any("features.cnn.spare is optional" in note and "absent.onnx: no such file" in note for note in plan.notes)
    with pytest.raises(PlanError, match="absent.onnx: no such file"):
        make_plan(plan_config(tmp_path, {"small": small, "spare": {**spare, "optional": False}}))


def test_the_check_is_cached_until_a_file_changes(nets, tmp_path, monkeypatch):
    model = tmp_path / "small.onnx"
    shutil.copyfile(nets["onnx"], model)
    configured = settings(model, "fc7", TORCHVISION)
    assert cnn.checked_dimension("small", configured, tmp_path, "code") == cnn_nets.FC7
    assert json.loads((tmp_path / cnn.CHECKS / "small.json").read_text())["dimension"] == cnn_nets.FC7

    def not_again(*args, **kwargs):
        raise AssertionError("loaded again")

    monkeypatch.setattr(cnn, "load_network", not_again)
    assert cnn.checked_dimension("small", configured, tmp_path, "code") == cnn_nets.FC7
    os.utime(model, ns=(1, 1))  # a new file: checked again
    with pytest.raises(AssertionError, match="loaded again"):
        cnn.checked_dimension("small", configured, tmp_path, "code")


# ---------------------------------------------------------------- a build


def configure_network(workdir: Path) -> None:
    """features.cnn.small (the ONNX network, named relative to the build) and the baselines on it and
    on gist (the overlap feature) only, without the caption benchmark, so that the build copy reruns
    the network's jobs and what reads them, and little else."""
    (workdir / "models").mkdir()
    cnn_nets.onnx_model(workdir / "models" / "small.onnx", cnn_nets.weights())
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config.setdefault("features", {})["cnn"] = {"small": {"model": "models/small.onnx", "layer": "fc7",
                                                          "input": dict(TORCHVISION)}}
    config["benchmark"]["features"] = ["cnn_small", "gist"]
    config["benchmark"]["captions"] = {}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


@pytest.fixture(scope="module")
def cnn_workdir(tmp_path_factory, demo_workdir_in_shards) -> Path:
    """The two-shard demo build with features.cnn.small, built on 2 cores."""
    pytest.importorskip("onnx", reason="the test extra writes the network with onnx (pip install -e '.[test]')")

    def make(workdir: Path) -> None:
        copy_build(demo_workdir_in_shards, workdir)
        configure_network(workdir)
        run_snakemake(workdir, "--cores", "2", "--configfile", str(workdir / "config.yaml"))

    return shared_build(tmp_path_factory, "cnn_build", make)


def test_a_build_with_a_network_releases_its_table_runs_and_descriptions(cnn_workdir):
    import pyarrow.parquet as pq

    out = cnn_workdir / "out"
    tables = sorted((out / "tables" / "cnn_small").glob("shard-*.parquet"))
    assert [t.name for t in tables] == ["shard-00000.parquet", "shard-00001.parquet"]
    schema = pq.read_schema(tables[0])
    assert str(schema.field("vector").type) == f"fixed_size_list<element: float>[{cnn_nets.FC7}]"
    params = json.loads(schema.metadata[b"annobench.params"])
    assert params["files"][0]["file"] == "small.onnx" and params["layer"] == "fc7"
    images = sum(pq.read_metadata(path).num_rows for path in (out / "tables" / "images").glob("*.parquet"))
    assert sum(pq.read_metadata(t).num_rows for t in tables) == images
    assert (out / "runs" / "knn_cnn_small.parquet").is_file()
    evaluation = json.loads((out / "evaluations" / "knn_cnn_small.json").read_text())
    assert evaluation["run"] == "knn_cnn_small" and evaluation["MAP-samples"] is not None
    assert "cnn_small" in (out / "browse" / "index.html").read_text()  # the feature norms' table
    croissant = json.loads((out / "release" / "data" / "croissant.json").read_text())
    record = next(r for r in croissant["recordSet"] if r["@id"] == "cnn_small")
    assert record["description"].startswith("CNN embeddings of network small: the output of 'fc7' of small.onnx")
    card = (out / "release" / "data" / "README.md").read_text()
    assert "config_name: cnn_small" in card and "| `cnn_small` |" in card
    assert (out / "release" / "data" / "kit" / "data" / "tables" / "cnn_small").is_dir()


def test_the_table_is_the_same_bytes_on_one_core(cnn_workdir, tmp_path):
    one_core = tmp_path / "one_core"
    shutil.copytree(cnn_workdir, one_core, symlinks=True)
    tables = sorted((one_core / "out" / "tables" / "cnn_small").glob("*.parquet"))
    for table in tables:
        table.unlink()
    # Targets first (--configfile takes the words after it), the shards in the other order.
    run_snakemake(one_core, *[str(t.relative_to(one_core)) for t in reversed(tables)], "--cores", "1",
                  "--configfile", str(one_core / "config.yaml"))
    for table in tables:
        assert table.read_bytes() == (cnn_workdir / table.relative_to(one_core)).read_bytes(), table.name


def test_a_network_job_replays_from_the_release(cnn_workdir):
    from annobench.release.audit import recompute_named_job

    assert recompute_named_job(cnn_workdir / "out" / "release" / "data", "feature_cnn_small-00001") == []


def test_the_projection_states_the_benchmarks_cost_for_a_network_no_build_ran(nets, tmp_path):
    from annobench.projection.costs import CNN_STATED, CNN_STATED_SECONDS_PER_IMAGE, Calibration, RuleCost
    from annobench.projection.project import print_projection, project

    # Every rule of the workflow has a record but the network's (its rule is named after it).
    calibration = Calibration({rule: RuleCost(rule, "images", 1.0, 0.0) for rule in workflow_rules()})
    networks = {"small": settings(nets["onnx"], "fc7", TORCHVISION)}
    projection = project("webupv2014", 300, 2, calibration, 8000, images_per_shard=200, workdir=tmp_path, cnn=networks)
    jobs = [job for job in projection.jobs.values() if job.rule == "feature_cnn_small"]
    assert len(jobs) == 2 and projection.stated["feature_cnn_small"].build == CNN_STATED
    assert "benchmark_neighbours-cnn_small" in projection.jobs
    shard_images = sum(job.seconds for job in jobs) - 2 * projection.stated["feature_cnn_small"].fixed
    assert shard_images == pytest.approx(300 * CNN_STATED_SECONDS_PER_IMAGE)
    from io import StringIO

    printed = StringIO()
    print_projection(projection, printed)
    assert f"feature_cnn_small: {CNN_STATED_SECONDS_PER_IMAGE:.3g} core-s per image" in printed.getvalue()


def test_the_bench_takes_the_networks_of_a_config_with_absolute_paths(nets, tmp_path, monkeypatch):
    from annobench.bench import cnn_section
    from annobench.core.errors import AnnobenchError

    shutil.copyfile(nets["onnx"], tmp_path / "small.onnx")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"features": {"cnn": {"small": {"model": "small.onnx", "layer": "fc7",
                                                                     "input": TORCHVISION}}}}))
    monkeypatch.chdir(tmp_path)
    section = cnn_section(config)
    assert section["small"]["model"] == str(tmp_path / "small.onnx") and section["small"]["prototxt"] == ""
    assert section["small"]["input"]["interpolation"] == "linear"  # the schema's defaults, filled
    config.write_text("features: {}\n")
    with pytest.raises(AnnobenchError, match="configures no network"):
        cnn_section(config)
