"""The Snakemake workflow end to end: demo build, determinism, crash recovery, reruns."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import skimage.data
import yaml

from annobench.images.resize import read_stored
from annobench.visual.dsift import KINDS
from helpers import (
    REAL,
    REAL_IMAGES,
    REPO,
    bsds_photos,
    demo_sections,
    require_shared,
    run_snakemake,
    tree_bytes,
    write_image_list,
)


# Codebooks of 50 words keep the builds of these tests to seconds.
SMALL_CODEBOOKS = {"bow": {"words": 50, "iterations": 10}}


def write_config(workdir: Path, **sections) -> Path:
    """A config for a build in `workdir`; no pages unless the test gives some."""
    config = {"output": "out", "features": SMALL_CODEBOOKS, **sections}
    config["input"] = {"page_map": "", "segmentations": "", **sections.get("input", {})}
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def planned_jobs(workdir: Path, config: Path, *extra: str) -> dict[str, int]:
    """Jobs a dry run would execute, per rule."""
    result = run_snakemake(workdir, "--cores", "1", "--configfile", str(config), "-n", *extra)
    counts, in_table = {}, False
    for line in result.stdout.splitlines():
        fields = line.split()
        if fields[:2] == ["job", "count"]:
            in_table = True
        elif in_table and len(fields) == 2 and fields[1].isdigit() and fields[0] != "total":
            counts[fields[0]] = int(fields[1])
        elif in_table and fields[:1] == ["total"]:
            break
    return counts


def test_demo_build(demo_default_workdir):
    """The demo with the default codebooks (demo_default_workdir)."""
    out = demo_default_workdir / "out"
    config = demo_default_workdir / "config.yaml"
    images = pd.read_parquet(out / "tables" / "images")
    rejects = pd.read_parquet(out / "tables" / "rejects")
    assert sorted(images.image_id) == ["astronaut", "astronaut_copy", "camera", "chelsea", "coffee", "coins", "logo", "rocket"]
    assert rejects.image_id.tolist() == ["truncated"]
    assert rejects.reason[0].startswith("cannot decode: image file is truncated")
    chelsea = images.set_index("image_id").loc["chelsea"]
    assert (chelsea.width, chelsea.height, chelsea.resized_width, chelsea.resized_height) == (451, 300, 240, 160)
    # Stored on its side with EXIF orientation 6: upright again after ingest.
    upright = cv2.resize(skimage.data.chelsea(), (240, 160), interpolation=cv2.INTER_AREA).astype(int)
    assert np.abs(read_stored(out / chelsea.resized_path).astype(int) - upright).mean() < 3.0
    duplicates = pd.read_parquet(out / "tables" / "duplicates")
    assert duplicates.image_id.tolist() == ["astronaut", "astronaut_copy"]
    for feature, dimension in (("colorhist", 576), ("getlf", 256), ("gist", 960)):
        table = pq.read_table(out / "tables" / feature)
        assert sorted(table.column("image_id").to_pylist()) == sorted(images.image_id)
        assert table.schema.field("vector").type.list_size == dimension
    assert pq.read_table(out / "artefacts" / "getlf_projection.parquet").num_rows == 8
    # Every job measured its own CPU time and, apart, what went before its work (start-up).
    for record in (out / "provenance" / "jobs").glob("*.json"):
        usage = json.loads(record.read_text())["usage"]
        assert 0 < usage["startup_cpu_seconds"] <= usage["cpu_seconds"], record.name
    for kind, dimension in (("sift", 128), ("csift", 384), ("rgbsift", 384), ("opponentsift", 384)):
        codebook = pq.read_table(out / "artefacts" / f"codebook_{kind}.parquet")
        assert codebook.num_rows == 1000 and codebook.schema.field("vector").type.list_size == dimension
        vectors = np.stack(pq.read_table(out / "tables" / f"bow_{kind}").column("vector").to_numpy(zero_copy_only=False))
        assert vectors.shape == (8, 5000)
        np.testing.assert_allclose(vectors.reshape(8, 5, 1000).sum(axis=2), 1.0, rtol=1e-5)
    terms = pd.read_parquet(out / "tables" / "text_terms")
    assert set(terms.image_id) == set(images.image_id) - {"astronaut_copy"}  # the copy is on no page
    # The truncated file is on a page, but the ingest rejected it: the dataset holds no row of it
    # beside its reason in rejects.
    assert pd.read_parquet(out / "tables" / "text_rejects").empty
    assert "truncated" not in set(pd.read_parquet(out / "tables" / "image_urls").image_id)
    assert pd.read_parquet(out / "tables" / "pages").status.tolist() == ["ok", "ok", "ok"]
    first = (out / "exports" / "text.scofeat").read_text().splitlines()[0].split()
    assert first[0] == "astronaut" and int(first[1]) == (len(first) - 2) // 2 == (terms.image_id == "astronaut").sum()
    regions = pd.read_parquet(out / "tables" / "regions")
    assert regions.groupby("image_id").size().to_dict() == {"astronaut": 5, "coins": 24}
    relations = pd.read_parquet(out / "tables" / "spatial_relations")
    assert len(relations) == 5 * 4 + 24 * 23
    assert len(pd.read_parquet(out / "tables" / "region_features")) == 29
    assert (out / "exports" / "saiapr" / "features.txt").read_text().count("\n") == 29
    log = (out / "logs" / "ingest" / "shard-00000.log").read_text()
    assert "9/9 (100.0%)" in log and "1 rejected" in log
    # The benchmark: 3 test images (the demo's split), 4 simple baselines + k-NN and co-occurrence on 7 features.
    splits = pd.read_parquet(out / "tables" / "splits")
    assert sorted(splits.loc[splits.split == "test", "image_id"]) == ["astronaut", "coffee", "rocket"]
    board = pd.read_parquet(out / "tables" / "leaderboard")
    assert len(board) == 4 + 7 + 7 and board["MAP-samples"].between(0, 1).all()
    assert "| cooccurrence_gist |" in (out / "reports" / "leaderboard.md").read_text()
    assert sorted(p.name for p in (out / "exports" / "imageclef2012" / "annotations").iterdir())[:2] == [
        "astronaut.txt", "astronaut_copy.txt"]
    again = run_snakemake(demo_default_workdir, "--cores", "2", "--configfile", str(config))
    assert "Nothing to be done" in again.stdout


@pytest.fixture(scope="module")
def mixed_list(tmp_path_factory) -> Path:
    """48 real images of all kinds, 8 to a shard: several shards, rejects in some."""
    root = require_shared(REAL_IMAGES)
    chosen = {p.stem: p for p in bsds_photos(30)}
    chosen.update({f"fmt_{p.name.replace('.', '_')}": p for p in sorted((root / "formats").iterdir())[:9]})
    chosen.update({p.stem: p for p in sorted((root / "exif_orientation").glob("*.jpg"))})
    return write_image_list(tmp_path_factory.mktemp("lists") / "images.csv", chosen)


def build(workdir: Path, image_list: Path, cores: int) -> dict[str, bytes]:
    workdir.mkdir(parents=True, exist_ok=True)
    config = write_config(workdir, input={"image_list": str(image_list)}, sharding={"images_per_shard": 8})
    run_snakemake(workdir, "--cores", str(cores), "--configfile", str(config))
    return tree_bytes(workdir / "out")


def test_same_bytes_with_one_or_two_cores_and_after_sigkill(tmp_path, mixed_list):
    """A build on one core against one killed mid-ingest and resumed on two cores: everything after
    the kill (most of the ingest, every feature, codebook, browser and release job) runs on two."""
    one = build(tmp_path / "one", mixed_list, cores=1)
    assert sum(name.startswith("tables/images/") for name in one) == 8

    killed = tmp_path / "killed"
    killed.mkdir()
    config = write_config(killed, input={"image_list": str(mixed_list)}, sharding={"images_per_shard": 8})
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(killed),
               "--cores", "1", "--configfile", str(config)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    tables = killed / "out" / "tables" / "images"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(tables.glob("*.parquet"))) < 3:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert 3 <= len(list(tables.glob("*.parquet"))) < 8, "the kill should land mid-build"

    # The README's resume command: release the stale lock, then run again.
    run_snakemake(killed, "--unlock", "--configfile", str(config))
    run_snakemake(killed, "--cores", "2", "--configfile", str(config))
    assert tree_bytes(killed / "out") == one


def test_reruns_follow_parameters_and_inputs(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    photos = bsds_photos(21)
    for p in photos[:20]:
        shutil.copy(p, images / p.name)
    # Four shards and no merged jobs: the rule structure of a full build.
    sections = {"input": {"images": str(images)}, "sharding": {"images_per_shard": 8, "merge_below_images": 0}}
    config = write_config(tmp_path, **sections)
    run_snakemake(tmp_path, "--cores", "2", "--configfile", str(config))
    assert planned_jobs(tmp_path, config) == {}

    # A setting that changes no output reruns nothing.
    (tmp_path / "quiet.yaml").write_text(yaml.safe_dump({"progress": {"log_every_seconds": 1}}))
    assert planned_jobs(tmp_path, config, "--configfile", str(config), str(tmp_path / "quiet.yaml")) == {}

    # A feature setting reruns that feature only.
    (tmp_path / "gist.yaml").write_text(yaml.safe_dump({"features": {"gist": {"blocks": 2}}}))
    jobs = planned_jobs(tmp_path, config, "--configfile", str(config), str(tmp_path / "gist.yaml"))
    # The browser shows each feature's norms, so it is rebuilt too: with 4 shards, a job per shard
    # (and each shard's norms again).
    # The integrity check reads every table, so it runs again before the release.
    assert jobs == {"feature_gist": 4, "browse_norms": 4, "browse_prepare": 1, "browse_shard": 4, "browse": 1,
                    "integrity": 1, "release": 1, "all": 1}
    (tmp_path / "seed.yaml").write_text(yaml.safe_dump({"features": {"getlf": {"seed": 5}}}))
    jobs = planned_jobs(tmp_path, config, "--configfile", str(config), str(tmp_path / "seed.yaml"))
    assert jobs == {"getlf_projection": 1, "feature_getlf": 4, "browse_norms": 4, "browse_prepare": 1, "browse_shard": 4,
                    "browse": 1, "integrity": 1, "release": 1, "all": 1}

    # Another codebook seed: new sample, new codebooks, new BoW vectors; nothing else.
    codebook = tmp_path / "out" / "artefacts" / "codebook_csift.parquet"
    before = codebook.read_bytes()
    bow_seed = tmp_path / "bow_seed.yaml"
    bow_seed.write_text(yaml.safe_dump({"features": {"bow": {**SMALL_CODEBOOKS["bow"], "seed": 99}}}))
    jobs = planned_jobs(tmp_path, config, "--configfile", str(config), str(bow_seed))
    assert set(jobs) == {"bow_sample", *(f"bow_codebook_{k}" for k in KINDS), "feature_bow", "browse_norms",
                         "browse_prepare", "browse_shard", "browse", "integrity", "release", "all"}
    run_snakemake(tmp_path, "--cores", "2", "--configfile", str(config), str(bow_seed))
    assert codebook.read_bytes() != before
    run_snakemake(tmp_path, "--cores", "2", "--configfile", str(config))
    assert codebook.read_bytes() == before  # the first seed again: the same bytes

    # A resize setting reruns every shard and what depends on it.
    (tmp_path / "quality.yaml").write_text(yaml.safe_dump({"resize": {"jpeg_quality": 80}}))
    jobs = planned_jobs(tmp_path, config, "--configfile", str(config), str(tmp_path / "quality.yaml"))
    assert jobs["ingest_shard"] == 4 and jobs["duplicates"] == 1
    assert jobs["feature_colorhist"] == jobs["feature_gist"] == 4

    # One more raw image reruns its shard only.
    shutil.copy(photos[20], images / photos[20].name)
    jobs = planned_jobs(tmp_path, config)
    assert jobs["ingest_shard"] == 1 and jobs["feature_gist"] == 1


def test_text_tables_are_the_same_bytes_with_one_or_two_cores(tmp_path):
    from annobench.text.page_map import derive_mapping, write_mapping

    pages = require_shared(REAL / "pages" / "kiwix_wikipedia")
    write_mapping(derive_mapping(pages), tmp_path / "mapping.csv", tmp_path / "images.csv", pages)
    trees = []
    for cores in ("1", "2"):
        workdir = tmp_path / f"cores{cores}"
        workdir.mkdir()
        config = write_config(workdir, sharding={"images_per_shard": 16}, input={
            "image_list": str(tmp_path / "images.csv"), "pages": str(pages), "page_map": str(tmp_path / "mapping.csv")})
        run_snakemake(workdir, "text_all", "--cores", cores, "--configfile", str(config))
        trees.append(tree_bytes(workdir / "out"))
    assert sum(name.startswith("tables/text_terms/") for name in trees[0]) == 8
    assert trees[0] == trees[1]
    # The caption filter counts over every shard in one job: changing it reruns that job alone.
    filter_change = workdir / "captions.yaml"
    filter_change.write_text(yaml.safe_dump({"text": {"captions": {"min_image_side": 100}}}))
    jobs = planned_jobs(workdir, config, "text_all", "--configfile", str(config), str(filter_change))
    assert jobs == {"page_captions": 1, "text_all": 1}


def test_id_collision_stops_the_workflow_with_a_clear_error(tmp_path):
    images = tmp_path / "images"
    (images / "b").mkdir(parents=True)
    photo = bsds_photos(1)[0]
    shutil.copy(photo, images / "x.jpg")
    shutil.copy(photo, images / "b" / "x.jpg")
    config = write_config(tmp_path, input={"images": str(images)})
    result = run_snakemake(tmp_path, "--cores", "1", "--configfile", str(config), check=False)
    assert result.returncode != 0
    assert "'x' <- b/x.jpg, x.jpg" in result.stdout


def test_lint_is_clean():
    result = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Congratulations, your workflow is in a good condition" in result.stdout + result.stderr


def test_each_baseline_run_is_a_job_of_its_own_unless_the_build_is_small(tmp_path):
    """The runs are independent, and one job for all of them sat last on the 2016 critical path:
    each run's job is planned apart (its files, its feature's neighbours). A build of fewer
    images than sharding.merge_below_images runs each such family as one job instead."""
    from annobench.benchmark.annotation.stage import baseline_runs
    from annobench.core.config import deep_merge, load_config

    settings = {"output": "out", **demo_sections(REPO / "demo"), "features": {"bow": {"words": 50, "iterations": 10}}}
    runs = baseline_runs(deep_merge(load_config(), settings), has_text=True)
    assert {"random", "knn_gist", "cooccurrence_gist"} <= set(runs)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({**settings, "sharding": {"merge_below_images": 0}}))
    jobs = planned_jobs(tmp_path, config)
    assert jobs["baseline"] == len(runs) and jobs["benchmark_neighbours"] == 7 and jobs["bow_codebook_sift"] == 1
    assert not [rule for rule in jobs if rule.endswith("_merged")]

    config.write_text(yaml.safe_dump(settings))  # the demo's 9 images: under the default 1,000
    jobs = planned_jobs(tmp_path, config)
    assert {rule: count for rule, count in jobs.items() if rule.endswith("_merged")} == {
        "baseline_merged": 1, "benchmark_neighbours_merged": 1}
    assert not {"baseline", "benchmark_neighbours"} & set(jobs) and jobs["bow_codebook_sift"] == 1
