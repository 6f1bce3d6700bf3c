"""The benchmark end to end in the workflow (docs/measures.md: ImageCLEF 2012 task page, Villegas
and Paredes 2014, Dutta et al. 2018): real MSRC-v2 photos with the image labels of their
segmentations as ground truth, splits, baselines, evaluations, leaderboard, release."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers import REAL, copy_build, run_snakemake, shared_build, tree_bytes


MSRC = REAL / "segmentations" / "msrc_v2"
FEATURES = ["colorhist", "getlf", "gist", "bow_sift"]
BENCHMARK_OUTPUTS = ("runs", "evaluations", "reports/leaderboard.md", "reports/label_frequencies.png",
                     "reports/benchmark_diagnostics.json", "work/neighbours", "tables/splits", "tables/ground_truth",
                     "tables/concepts", "tables/concept_results", "tables/leaderboard", "tables/region_splits",
                     "tables/visual_overlap",
                     "exports/imageclef2012")


@pytest.fixture(scope="session")
def msrc_benchmark_build(tmp_path_factory) -> Path:
    """Working directory of the MSRC-v2 photos built without pages: the benchmark alone (no text
    features, so no co-occurrence baselines, captions or illustration)."""
    if not MSRC.is_dir():
        pytest.skip(f"needs the real MSRC-v2 photos and segmentations at {MSRC} (../shared is absent)")
    return shared_build(tmp_path_factory, "msrc_benchmark", write_and_build)


def write_and_build(workdir: Path) -> None:
    config = {
        "output": "out",
        "input": {"images": str(MSRC / "Images"), "page_map": "", "segmentations": str(MSRC)},
        "segmentations": {"kind": "msrc"},
        "features": {"bow": {"kinds": ["sift"], "words": 50, "iterations": 10}},
        "benchmark": {"vocabulary": "", "ground_truth": {"source": "regions", "path": ""},
                      "features": FEATURES, "region_split": {"subset_sizes": [5, 10]}},
    }
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(workdir, "--cores", "2", "--configfile", str(workdir / "config.yaml"))


def test_msrc_benchmark_splits_runs_and_evaluations(msrc_benchmark_build):
    out = msrc_benchmark_build / "out"
    truth = pd.read_parquet(out / "tables" / "ground_truth")
    regions = pd.read_parquet(out / "tables" / "regions")
    expected = regions.dropna(subset=["label"]).groupby("image_id")["label"].apply(frozenset).to_dict()
    assert truth.groupby("image_id")["concept"].apply(frozenset).to_dict() == expected
    concepts = pd.read_parquet(out / "tables" / "concepts")
    assert concepts["concept"].tolist() == sorted(truth["concept"].unique())
    splits = pd.read_parquet(out / "tables" / "splits")
    assert set(splits["image_id"]) == set(expected)
    shares = splits["split"].value_counts(normalize=True)
    assert abs(shares["test"] - 0.3) < 0.08 and abs(shares["train"] - 0.6) < 0.08
    board = pd.read_parquet(out / "tables" / "leaderboard").set_index("run")
    runs = {"random", "most_frequent", "rarest", "random_k", *(f"knn_{f}" for f in FEATURES)}
    assert set(board.index) == runs
    for name in runs:
        run = pd.read_parquet(out / "runs" / f"{name}.parquet")
        assert sorted(run["image_id"].unique()) == sorted(splits.loc[splits["split"] == "test", "image_id"])
        evaluation = json.loads((out / "evaluations" / f"{name}.json").read_text())
        assert set(evaluation["subsets"]) == {"most_overlap", "least_overlap"}
        lines = (out / "runs" / f"{name}.txt").read_text().splitlines()
        assert len(lines) == run["image_id"].nunique() and len(lines[0].split()) == 1 + 2 * len(concepts)
    for feature in FEATURES:  # k-NN label transfer beats random on MAP-samples and F1_L
        knn = board.loc[f"knn_{feature}"]
        assert knn["MAP-samples"] > board.loc["random", "MAP-samples"] + 0.1, feature
        assert knn["F1_L"] > board.loc["random", "F1_L"], feature
    assert (out / "reports" / "leaderboard.md").read_text().count("| knn_") == len(FEATURES)
    assert (out / "reports" / "label_frequencies.png").read_bytes()[:4] == b"\x89PNG"
    diagnostics = json.loads((out / "reports" / "benchmark_diagnostics.json").read_text())
    assert 0 < diagnostics["unique_label_sets"] <= 1 and 0 <= diagnostics["novel_label_sets"] <= 1
    overlap = pd.read_parquet(out / "tables" / "visual_overlap")
    assert sorted(overlap["image_id"]) == sorted(splits.loc[splits["split"] == "test", "image_id"])
    most, least = (overlap.loc[overlap["subset"] == s, "overlap"] for s in ("most_overlap", "least_overlap"))
    assert len(most) == len(least) == len(overlap) // 5 and most.max() <= least.min()
    region = json.loads((out / "evaluations" / "regions_random.json").read_text())
    assert [s["subset"] for s in region["subsets"]] == [5, 10]
    # A uniform guess among n classes is wrong about (n-1)/n of the time.
    for subset in region["subsets"]:
        assert abs(subset["e_hard"] - (1 - 1 / subset["classes"])) < 0.1
    released = {json.loads(line)["path"] for line in (out / "release" / "data" / "MANIFEST.jsonl").read_text().splitlines()}
    assert {"runs/knn_gist.parquet", "evaluations/knn_gist.json", "reports/leaderboard.md",
            "tables/splits/all.parquet", "tables/leaderboard/all.parquet"} <= released


def test_benchmark_outputs_are_the_same_bytes_on_one_core(msrc_benchmark_build, tmp_path):
    """Rebuilt from the same features with --cores 1, every benchmark output is byte-identical
    (in a copy of the build: other tests read it meanwhile)."""
    msrc_build = copy_build(msrc_benchmark_build, tmp_path / "copy")
    out = msrc_build / "out"
    before = {k: v for k, v in tree_bytes(out).items() if k.startswith(BENCHMARK_OUTPUTS)}
    assert len(before) > 40
    for name in BENCHMARK_OUTPUTS:
        path = out / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    # Named as the target: Snakemake does not rebuild deleted intermediate files behind an existing release.
    run_snakemake(msrc_build, "benchmark_all", "--cores", "1", "--configfile", str(msrc_build / "config.yaml"))
    after = {k: v for k, v in tree_bytes(out).items() if k.startswith(BENCHMARK_OUTPUTS)}
    assert sorted(after) == sorted(before)
    assert [k for k in before if before[k] != after[k]] == []
