"""Captions and text illustration in the workflow (ImageCLEF 2016 subtask 2 and teaser, Gilbert
et al. 2016): the shared demo and MSRC-v2 + kiwix builds take their harvested page captions as
references (where Java runs Meteor) and make illustration queries from their pages; runs,
evaluations, leaderboard, browser, card, Croissant, and the same bytes at --cores 1 as at
--cores 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from annobench.benchmark.illustration.queries import query_id
from helpers import can_play_other_cpus, copy_build, java_available, python_as_cpu, run_snakemake, tree_bytes


CAPTION_OUTPUTS = ("tables/captions", "tables/caption_scores", "tables/caption_leaderboard")
ILLUSTRATION_OUTPUTS = ("tables/queries", "tables/query_rejects", "tables/illustration_leaderboard",
                        "exports/illustration_truth.csv")


def needs_captions(out: Path) -> None:
    if not java_available():
        pytest.skip("the build has no caption benchmark: Meteor 1.5 needs Java (`java` not on PATH)")
    assert (out / "tables" / "captions").is_dir()


def split_of(out: Path, name: str) -> set[str]:
    splits = pd.read_parquet(out / "tables" / "splits")
    return set(splits.loc[splits["split"] == name, "image_id"])


def caption_runs(out: Path) -> list[str]:
    return sorted(p.stem for p in (out / "runs").glob("caption_*.parquet"))


@pytest.fixture(params=["demo_build", "msrc_build"])
def build(request) -> Path:
    return request.getfixturevalue(request.param)


def test_harvested_references_are_the_kept_page_captions_of_the_benchmark_images(build):
    needs_captions(build)
    captions = pd.read_parquet(build / "tables" / "captions")
    harvested = pd.read_parquet(build / "tables" / "page_captions")
    benchmark = split_of(build, "train") | split_of(build, "dev") | split_of(build, "test")
    kept = harvested[harvested["keep"] & harvested["image_id"].isin(benchmark)]
    expected = {(image, text) for image, text in zip(kept["image_id"], kept["text"])}
    assert set(zip(captions["image_id"], captions["text"])) == expected
    assert not captions.duplicated(["image_id", "text"]).any()  # the same text twice counts once
    assert captions.groupby("image_id")["reference"].apply(lambda r: list(r) == list(range(1, len(r) + 1))).all()
    assert captions["source"].str.match(r"^page_captions:.+:(alt|title|caption|filename)$").all()


def test_caption_runs_transfer_training_references_and_are_scored(build):
    needs_captions(build)
    train, test = split_of(build, "train"), split_of(build, "test")
    references = pd.read_parquet(build / "tables" / "captions")
    by_image = {image: list(group.sort_values("reference")["text"]) for image, group in references.groupby("image_id")}
    scores = pd.read_parquet(build / "tables" / "caption_scores")
    runs = caption_runs(build)
    features = {p.stem for p in (build / "work" / "neighbours").glob("*.parquet")}
    assert runs == sorted(f"caption_{kind}_{feature}" for kind in ("nearest", "consensus") for feature in features)
    for name in runs:
        run = pd.read_parquet(build / "runs" / f"{name}.parquet")
        assert set(run["image_id"]) <= test and len(run) > 0, name
        assert set(run["source_image"]) <= train, name
        for row in run.itertuples():  # each caption is the training image's reference it names
            assert by_image[row.source_image][row.reference - 1] == row.caption
        if "_nearest_" in name:
            assert (run["reference"] == 1).all()
        result = json.loads((build / "evaluations" / f"{name}.json").read_text())
        mine = scores[scores["run"] == name]
        assert result["images"] == len(mine) == len(test & set(by_image))
        assert result["meteor"]["mean"] == pytest.approx(mine["meteor"].mean(), abs=1e-12)
        assert 0 <= result["meteor"]["min"] <= result["meteor"]["max"] <= 1
        assert {"bleu_4", "rouge_l", "cider"} <= set(result)
    human = json.loads((build / "evaluations" / "caption_human.json").read_text())
    assert human["run"] == "caption_human"
    board = pd.read_parquet(build / "tables" / "caption_leaderboard")
    assert sorted(board["run"]) == sorted([*runs, "caption_human"])
    assert "## Captions (ImageCLEF 2016 subtask 2)" in (build / "reports" / "leaderboard.md").read_text()


def test_a_caption_run_scores_the_same_through_evaluate_captions(msrc_build, tmp_path):
    """The build's evaluation and the command a participant runs agree on a build's run."""
    needs_captions(msrc_build)
    test = split_of(msrc_build, "test")
    references = pd.read_parquet(msrc_build / "tables" / "captions")
    references[references["image_id"].isin(test)][["image_id", "text"]].rename(columns={"text": "caption"}).to_csv(
        tmp_path / "refs.csv", index=False)
    name = caption_runs(msrc_build)[0]
    run = pd.read_csv(msrc_build / "runs" / f"{name}.csv", dtype=str, keep_default_na=False)
    run[run["image_id"].isin(set(references["image_id"]))].to_csv(tmp_path / "run.csv", index=False)
    done = subprocess.run([sys.executable, "-m", "annobench.cli", "evaluate-captions", "--refs",
                           str(tmp_path / "refs.csv"), "--run", str(tmp_path / "run.csv"), "--json",
                           str(tmp_path / "result.json")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    by_command = json.loads((tmp_path / "result.json").read_text())
    in_build = json.loads((msrc_build / "evaluations" / f"{name}.json").read_text())
    for key in ("mean", "std", "median", "corpus"):
        assert by_command["meteor"][key] == pytest.approx(in_build["meteor"][key], abs=1e-9)
    assert by_command["cider"] == pytest.approx(in_build["cider"], abs=1e-9)


def test_illustration_queries_runs_and_recall(build, tmp_path):
    queries = pd.read_parquet(build / "tables" / "queries")
    rejects = pd.read_parquet(build / "tables" / "query_rejects")
    test = split_of(build, "test")
    assert set(queries["image_id"]) <= test and len(queries) > 0
    assert not queries.duplicated(["page_id", "image_id"]).any()
    assert [query_id(p, i) for p, i in zip(queries["page_id"], queries["image_id"])] == list(queries["query_id"])
    assert not (set(zip(rejects["page_id"], rejects["image_id"])) & set(zip(queries["page_id"], queries["image_id"])))
    results = {}
    for name in ("random", "tfidf"):
        result = json.loads((build / "evaluations" / f"illustration_{name}.json").read_text())
        assert result["queries"] == len(queries) and result["candidates"] == queries["image_id"].nunique()
        done = subprocess.run([sys.executable, "-m", "annobench.cli", "evaluate-illustration", "--truth",
                               str(build / "exports" / "illustration_truth.csv"), "--run",
                               str(build / "runs" / f"illustration_{name}.csv"), "--json",
                               str(tmp_path / f"{name}.json")], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        again = json.loads((tmp_path / f"{name}.json").read_text())
        assert {k: again[k] for k in again if k.startswith("R@")} == {k: result[k] for k in result if k.startswith("R@")}
        results[name] = result
    if len(queries) >= 50:  # the real pages: tf-idf on near-image text finds the image far above chance
        assert results["tfidf"]["R@10"] > 3 * results["tfidf"]["chance"]["R@10"]
    board = pd.read_parquet(build / "tables" / "illustration_leaderboard")
    assert sorted(board["run"]) == ["illustration_random", "illustration_tfidf"]
    assert "## Text illustration (the ImageCLEF 2016 teaser)" in (build / "reports" / "leaderboard.md").read_text()


def test_release_card_croissant_and_browser_show_them(build):
    release = build / "release" / "data"
    croissant = json.loads((release / "croissant.json").read_text())
    record_sets = {record["name"] for record in croissant["recordSet"]}
    card = (release / "README.md").read_text()
    assert {"queries", "page_captions"} <= record_sets
    assert "## Descriptions and text illustration" in card and "illustration_tfidf" in card
    if java_available():
        assert {"captions", "caption_scores"} <= record_sets and "| `caption_" in card
        captioned = pd.read_parquet(build / "tables" / "caption_scores")["image_id"].iloc[0]
        page = next((build / "browse" / "images").glob(f"*/{captioned}.html")).read_text()
        assert 'id="captions"' in page and "<h3>Caption runs</h3>" in page and "<h3>References</h3>" in page


def test_demo_is_the_same_bytes_on_one_core(demo_build, demo_workdir_elsewhere):
    """demo_workdir_elsewhere: the same config, built in another folder on one core."""
    before, after = tree_bytes(demo_build), tree_bytes(demo_workdir_elsewhere / "out")
    assert any(k.startswith(ILLUSTRATION_OUTPUTS) for k in before)
    assert sorted(before) == sorted(after)
    assert [k for k in before if before[k] != after[k]] == []


def test_meteor_in_blocks_of_shards_gives_the_same_evaluation_as_one_block(demo_build, demo_workdir_in_shards):
    """The demo in two shards, each shard a Meteor block (demo_workdir_in_shards): every run's evaluation,
    the human bound and caption_scores are the one-block build's bytes."""
    needs_captions(demo_build)
    out = demo_workdir_in_shards / "out"
    blocks = sorted((out / "work" / "caption_meteor").glob("segments-*.parquet"))
    shards = list((out / "tables" / "images").glob("shard-*.parquet"))
    assert len(blocks) == len(shards) > 1  # a block a shard
    assert len(list((demo_build / "work" / "caption_meteor").glob("segments-*"))) == 1
    wanted = ("evaluations/caption_", "tables/caption_scores", "tables/captions")
    before = {k: v for k, v in tree_bytes(demo_build).items() if k.startswith(wanted)}
    after = {k: v for k, v in tree_bytes(out).items() if k.startswith(wanted)}
    assert len(before) >= 16 and sorted(after) == sorted(before)
    assert [k for k in before if before[k] != after[k]] == []


def test_illustration_in_blocks_of_pages_gives_the_one_block_bytes(demo_build, demo_workdir_in_shards):
    """The demo's pages read and their queries ranked in three blocks (demo_workdir_in_shards), one
    without a query: the queries, truth, runs, evaluations and leaderboard are the bytes of the
    one-block build."""
    out = demo_workdir_in_shards / "out"
    parts = sorted((out / "work" / "illustration").glob("tfidf-*.parquet"))
    assert [p.name for p in parts] == ["tfidf-000.parquet", "tfidf-001.parquet", "tfidf-002.parquet"]
    ranked = [pq.read_metadata(p).num_rows for p in parts]
    assert ranked.count(0) == 1 and sum(ranked) > 0
    assert len(list((demo_build / "work" / "illustration").glob("tfidf-*.parquet"))) == 1
    assert (out / "provenance" / "jobs" / "illustration_rank-002.json").is_file()
    wanted = (*ILLUSTRATION_OUTPUTS, "runs/illustration_", "evaluations/illustration_")
    before = {k: v for k, v in tree_bytes(demo_build).items() if k.startswith(wanted)}
    after = {k: v for k, v in tree_bytes(out).items() if k.startswith(wanted)}
    assert len(before) >= 8 and sorted(after) == sorted(before)
    assert [k for k in before if before[k] != after[k]] == []


def test_msrc_caption_and_illustration_outputs_are_the_same_bytes_on_one_core(msrc_build, tmp_path):
    """A copy of the two-core build remakes its caption and illustration outputs on one core."""
    copy = copy_build(msrc_build.parent, tmp_path / "copy")
    out = copy / "out"
    wanted = (*CAPTION_OUTPUTS, *ILLUSTRATION_OUTPUTS, "runs/caption_", "runs/illustration_",
              "evaluations/caption_", "evaluations/illustration_", "reports/leaderboard.md")
    before = {k: v for k, v in tree_bytes(out).items() if k.startswith(wanted)}
    assert len(before) >= 8
    for key in before:
        (out / key).unlink()
    run_snakemake(copy, "benchmark_all", "--cores", "1", "--configfile", str(copy / "config.yaml"))
    after = {k: v for k, v in tree_bytes(out).items() if k.startswith(wanted)}
    assert sorted(after) == sorted(before)
    assert [k for k in before if before[k] != after[k]] == []


CONSENSUS_RUN = """
import hashlib, sys
from pathlib import Path
from annobench.benchmark.captions.baselines import NgramSpace, consensus_captions
from annobench.benchmark.captions.stage import neighbour_lists, references_from_table
from annobench.benchmark.splits import split_ids
out = Path(sys.argv[1])
train = set(split_ids(str(out / "tables/splits/all.parquet"), "train"))
references = references_from_table(str(out / "tables/captions/all.parquet"), train)
texts = {image_id: references.texts(image_id) for image_id in references.images}
space, digest = NgramSpace(texts), hashlib.sha256()
for path in sorted((out / "work/neighbours").glob("*.parquet")):
    run = consensus_captions(neighbour_lists(str(path)), texts, 10, space)
    digest.update("".join(f"{i} {run[i].source_image} {run[i].reference}\\n" for i in sorted(run)).encode())
print(digest.hexdigest())
"""


def test_consensus_runs_are_the_same_under_other_blas_kernels(msrc_build):
    """Consensus candidates often tie; BLAS's sums (its kernel is the CPU's) once chose between them.
    Every feature's consensus run of the MSRC-v2 build, under three kernels: one answer."""
    needs_captions(msrc_build)
    can_play_other_cpus()
    digests = {kernel: python_as_cpu(CONSENSUS_RUN, str(msrc_build), OPENBLAS_CORETYPE=kernel)
               for kernel in ("Haswell", "Sandybridge", "Prescott")}
    assert len(set(digests.values())) == 1, digests
