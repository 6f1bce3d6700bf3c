"""`annobench feature` on real files."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq

from annobench.cli import main
from annobench.core.tables import read_metadata
from helpers import REPO, SHARED, require_shared


def test_gist_of_lear_inputs_from_the_command_line(tmp_path):
    inputs = sorted((require_shared(SHARED / "reference" / "gist_lear") / "inputs").glob("*.png"))[:3]
    out = tmp_path / "gist.parquet"
    assert main(["feature", "gist", *map(str, inputs), "--out", str(out)]) == 0
    table = pq.read_table(out)
    assert table.column("image_id").to_pylist() == [p.stem for p in inputs]
    assert table.schema.field("vector").type.list_size == 960
    meta = read_metadata(out)
    assert meta["annobench.artefact"] == "gist"
    assert json.loads(meta["annobench.params"])["orientations_per_scale"] == [8, 8, 4]


def test_params_change_the_feature(tmp_path):
    images = [str(p) for p in sorted((REPO / "demo" / "images").glob("*.png"))]
    grey, seeded = tmp_path / "grey.parquet", tmp_path / "seeded.parquet"
    assert main(["feature", "gist", *images, "--param", "colour=false", "--out", str(grey)]) == 0
    assert pq.read_table(grey).schema.field("vector").type.list_size == 320
    assert main(["feature", "getlf", *images, "--param", "seed=1", "--out", str(seeded)]) == 0
    assert main(["feature", "getlf", *images, "--param", "seed=2", "--out", str(tmp_path / "other.parquet")]) == 0
    a = np.stack(pq.read_table(seeded).column("vector").to_numpy(zero_copy_only=False))
    b = np.stack(pq.read_table(tmp_path / "other.parquet").column("vector").to_numpy(zero_copy_only=False))
    assert not np.array_equal(a, b)


def test_unusable_image_or_parameter_writes_nothing(tmp_path, capsys):
    out = tmp_path / "x.parquet"
    assert main(["feature", "colorhist", str(REPO / "demo" / "images" / "truncated.jpg"), "--out", str(out)]) == 1
    assert "image file is truncated" in capsys.readouterr().err
    assert main(["feature", "gist", str(REPO / "demo" / "images" / "logo.png"), "--param", "blocks=four",
                 "--out", str(out)]) == 2
    assert "features/gist/blocks" in capsys.readouterr().err
    assert not out.exists()
