"""The benchmark jobs called directly (no Snakemake): clear errors on ground truth that cannot be used."""

from __future__ import annotations

import pyarrow as pa
import pytest

from annobench.benchmark.annotation.stage import build_truth
from annobench.benchmark.json_form import json_bytes
from annobench.benchmark.region_annotation.stage import rooted
from annobench.benchmark.settings import BenchmarkSettings
from annobench.benchmark.vocabulary import GroundTruthError
from annobench.core.config import load_config
from annobench.core.tables import write_table
from helpers import bsds_photos


def _images_table(path, ids):
    write_table(pa.table({"image_id": ids}), path, "images", params_hash="test")
    return str(path)


def _config(tmp_path, truth_rows, vocabulary="cat\ndog\n"):
    (tmp_path / "concepts.txt").write_text(vocabulary)
    (tmp_path / "truth.csv").write_text("image_id,concept\n" + "".join(f"{i},{c}\n" for i, c in truth_rows))
    return load_config(overrides={"output": str(tmp_path / "out"), "benchmark": {
        "vocabulary": str(tmp_path / "concepts.txt"),
        "ground_truth": {"source": "csv", "path": str(tmp_path / "truth.csv")}}})


def _paths(tmp_path):
    return {name: str(tmp_path / "out" / f"{name}.parquet") for name in ("concepts", "ground_truth", "splits")} | {
        "export": str(tmp_path / "out" / "export")}


def test_truth_of_other_images_is_refused_with_the_reason(tmp_path):
    ids = [p.stem for p in bsds_photos(20)]
    images = _images_table(tmp_path / "images.parquet", ids)
    config = _config(tmp_path, [("not_here", "cat"), ("nor_here", "dog")])
    with pytest.raises(GroundTruthError, match="none of the 2 images of the ground truth"):
        build_truth(BenchmarkSettings.from_config(config), [images], [], _paths(tmp_path), log=lambda line: None)
    assert not (tmp_path / "out").exists()


def test_unknown_concept_in_a_csv_is_an_error_and_missing_images_are_logged(tmp_path):
    ids = [p.stem for p in bsds_photos(20)]
    images = _images_table(tmp_path / "images.parquet", ids)
    config = _config(tmp_path, [(ids[0], "cat"), (ids[1], "zebra")])
    with pytest.raises(GroundTruthError, match="zebra"):
        build_truth(BenchmarkSettings.from_config(config), [images], [], _paths(tmp_path), log=lambda line: None)
    config = _config(tmp_path, [(i, "cat") for i in ids] + [("gone", "dog")])
    lines = []
    raw = build_truth(BenchmarkSettings.from_config(config), [images], [], _paths(tmp_path), log=lines.append)
    assert any("1 ground-truth image(s) are not in the built images" in line and "gone" in line for line in lines)
    assert {r["role"] for r in raw} == {"vocabulary", "ground_truth"}


def test_ontology_gets_one_root_and_json_has_no_nan():
    assert rooted({"tree": "trees", "trees": "vegetation"}) == {"tree": "trees", "trees": "vegetation"}
    assert rooted({"cat": "animal", "oak": "plant"}) == {"cat": "animal", "oak": "plant", "animal": "(root)",
                                                        "plant": "(root)"}
    assert json_bytes({"MnAP": float("nan"), "x": [1.0]}) == b'{\n "MnAP": null,\n "x": [\n  1.0\n ]\n}\n'
