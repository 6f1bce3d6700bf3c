"""A round on the real MSRC-v2 + kiwix build (annotation, captions, text illustration): three
groups' runs, made here from the build's own baselines in the forms a participant submits, one of
them corrupt; and, on the demo, a run added later reruns only its own job and those that gather
every run. The kit is searched for the test truth, and shown not to depend on it."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from annobench.benchmark.campaign.kit import build_kit
from annobench.release.audit import main_audit
from helpers import copy_build, java_available, run_snakemake, shared_build


def metadata(group: str, run: str, subtask: str, modality: str, external: str = "") -> str:
    lines = [f"group: {group}", f"run: {run}", f"subtask: {subtask}", f"modality: {modality}",
             f"external_data: {'yes' if external else 'no'}"]
    if external:
        lines.append(f"external_data_description: {external}")
    return "\n".join(lines) + "\n"


def submit(folder: Path, group: str, name: str, data: bytes | str, meta: str | None) -> Path:
    path = folder / group / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    if meta is not None:
        path.with_suffix(".yaml").write_text(meta, encoding="utf-8")
    return path


def corrupt(run_text: str) -> str:
    """The random baseline run with four faults: a score above 1 (line 2), a pair missing (line 4), a
    decision of 2 (line 6) and a line too many at the end."""
    lines = run_text.splitlines()
    fields = lines[1].split(" ")
    fields[1] = "1.5"
    lines[1] = " ".join(fields)
    lines[3] = " ".join(lines[3].split(" ")[:-2])
    fields = lines[5].split(" ")
    fields[2] = "2"
    lines[5] = " ".join(fields)
    return "\n".join(lines + [lines[-1]]) + "\n"


def make_submissions(out: Path, folder: Path) -> None:
    """Three groups' runs, converted from the build's baselines to the submission forms."""
    runs = out / "runs"
    # alpha: two annotation runs, the ImageCLEF text form and the Parquet form
    submit(folder, "alpha", "knn.txt", (runs / "knn_gist.txt").read_bytes(),
           metadata("alpha", "knn", "annotation", "visual"))
    submit(folder, "alpha", "knn_colorhist.parquet", (runs / "knn_colorhist.parquet").read_bytes(),
           metadata("alpha", "knn_colorhist", "annotation", "visual"))
    # beta: captions as COCO results JSON, and a ranking under the kit's query ids
    captions = pd.read_csv(runs / "caption_consensus_gist.csv", keep_default_na=False)
    records = [{"image_id": i, "caption": c} for i, c in zip(captions["image_id"], captions["caption"])]
    submit(folder, "beta", "consensus.json", json.dumps(records),
           metadata("beta", "consensus", "captions", "visual", "the references of the training images"))
    kit_id = dict(pq.read_table(out / "truth/illustration/queries.parquet", columns=["build_query_id", "query_id"])
                  .to_pandas().itertuples(index=False))
    ranking = pd.read_csv(runs / "illustration_tfidf.csv", keep_default_na=False)
    ranking["query_id"] = ranking["query_id"].map(kit_id)
    submit(folder, "beta", "tfidf.csv", ranking.to_csv(index=False), metadata("beta", "tfidf", "illustration",
                                                                                "textual"))
    # gamma: a corrupt run, and a run without its metadata
    random_run = (runs / "random.txt").read_text(encoding="utf-8")
    submit(folder, "gamma", "broken.txt", corrupt(random_run), metadata("gamma", "broken", "annotation", "both"))
    submit(folder, "gamma", "nometa.txt", random_run, None)


@pytest.fixture(scope="session")
def round_build(msrc_workdir, tmp_path_factory) -> Path:
    """The MSRC-v2 build copied, the submissions added, the build finished again."""
    if not java_available():
        pytest.skip("the round's caption runs are scored by Meteor 1.5, which needs Java")

    def add_round(workdir: Path) -> None:
        copy_build(msrc_workdir, workdir)
        make_submissions(workdir / "out", workdir / "submissions")
        config = yaml.safe_load((workdir / "config.yaml").read_text(encoding="utf-8"))
        config["input"]["submissions"] = str(workdir / "submissions")
        (workdir / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        run_snakemake(workdir, "--cores", "2", "--configfile", str(workdir / "config.yaml"))

    return shared_build(tmp_path_factory, "round_build", add_round) / "out"


def table(out: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(out / "tables" / name)


ACCEPTED = ["alpha/knn", "alpha/knn_colorhist", "beta/consensus", "beta/tfidf"]


def test_every_run_is_checked_and_the_corrupt_one_rejected_line_by_line(round_build):
    submissions = table(round_build, "submissions").set_index("name")
    assert submissions["status"].to_dict() == {**dict.fromkeys(ACCEPTED, "accepted"), "gamma/broken": "rejected",
                                               "gamma/nometa": "rejected"}
    assert submissions.loc["beta/consensus", "external_data"] and not submissions.loc["alpha/knn", "external_data"]
    assert submissions.loc["beta/tfidf", "modality"] == "textual"
    problems = table(round_build, "submission_problems")
    broken = problems[problems["run"] == "broken"]
    lines = len((round_build / "runs/random.txt").read_text().splitlines())
    assert broken["line"].tolist() == [2, 4, 6, lines + 1]
    messages = broken["message"].tolist()
    assert "1.5" in messages[0] and "[0, 1]" in messages[0]
    assert "fields" in messages[1] or "pairs" in messages[1]
    assert "decision" in messages[2] and "'2'" in messages[2]
    assert submissions.loc["gamma/broken", "reasons"] == 4
    nometa = problems[problems["run"] == "nometa"]
    assert nometa[["line", "message"]].values.tolist() == [[0, "no metadata file nometa.yaml beside the run"]]


def test_accepted_runs_are_on_the_leaderboards_with_their_baselines_figures(round_build):
    board = table(round_build, "leaderboard").set_index("run")
    assert "gamma/broken" not in board.index and "gamma/nometa" not in board.index
    # A submitted copy of a baseline scores exactly what the baseline scores.
    for submitted, baseline in (("alpha/knn", "knn_gist"), ("alpha/knn_colorhist", "knn_colorhist")):
        pd.testing.assert_series_equal(board.loc[submitted], board.loc[baseline], check_names=False)
    captions = table(round_build, "caption_leaderboard").set_index("run")
    assert captions.loc["beta/consensus", "meteor_mean"] == pytest.approx(
        captions.loc["caption_consensus_gist", "meteor_mean"], abs=1e-9)
    illustration = table(round_build, "illustration_leaderboard").set_index("run")
    pd.testing.assert_series_equal(illustration.loc["beta/tfidf"], illustration.loc["illustration_tfidf"],
                                   check_names=False)
    report = (round_build / "reports/leaderboard.md").read_text(encoding="utf-8")
    assert all(name in report for name in ACCEPTED) and "gamma/" not in report


def test_results_have_intervals_and_the_average_rank_order(round_build):
    results = table(round_build, "results")
    assert not results["run"].str.startswith("gamma/").any()
    assert set(ACCEPTED) <= set(results["run"])
    with_interval = results.dropna(subset=["ci_low"])
    assert len(with_interval) and (with_interval["ci_low"] <= with_interval["value"] + 1e-12).all()
    assert (with_interval["value"] <= with_interval["ci_high"] + 1e-12).all()
    knn = results[(results["run"] == "alpha/knn") & (results["subset"] == "all")].set_index("measure")
    assert set(knn.index) == {"MAP-samples", "MF1-samples", "MF1-concepts", "MF1-concepts (unseen)"}
    assert knn.loc["MAP-samples", "value"] == pytest.approx(table(round_build, "leaderboard").set_index("run")
                                                             .loc["alpha/knn", "MAP-samples"], abs=1e-12)
    order = table(round_build, "results_order")
    annotation = order[order["subtask"] == "annotation"]
    assert annotation["position"].tolist() == list(range(1, len(annotation) + 1))
    assert annotation["origin"].tolist() == sorted(annotation["origin"])  # baselines, then submissions
    for _, block in annotation.groupby("origin"):
        keys = list(zip(block["average_rank"], -block["mean"]))
        assert keys == sorted(keys)
    assert set(annotation.loc[annotation["origin"] == "submission", "run"]) == {"alpha/knn", "alpha/knn_colorhist"}
    assert {"beta/consensus", "caption_human"} <= set(order.loc[order["subtask"] == "captions", "run"])
    assert order.loc[(order["subtask"] == "illustration") & (order["origin"] == "bound"), "run"].tolist() == ["chance"]
    markdown = (round_build / "reports/results.md").read_text(encoding="utf-8")
    assert "6 submitted run(s), 4 accepted, 2 rejected" in markdown
    assert all(name in markdown for name in ACCEPTED) and "gamma/broken" not in markdown
    for name in ("map_samples", "mf1_samples", "mf1_concepts", "mf1_concepts_unseen"):
        svg = (round_build / f"reports/results_{name}.svg").read_bytes()
        texts = [element.text for element in ET.fromstring(svg).iter() if element.text]
        assert any(text.startswith("alpha/knn") for text in texts) and "gamma/broken" not in svg.decode()


def test_browser_and_card_show_the_submitted_runs(round_build):
    release = round_build / "release" / "data"
    card = (release / "README.md").read_text(encoding="utf-8")
    assert "## The round: submissions and results" in card
    assert re.search(r"`gamma/broken` \| annotation \| both \| no \| rejected \| 4 \|", card)
    assert all(f"`{name}`" in card for name in ACCEPTED)
    decided = pq.read_table(round_build / "work/submissions/alpha/knn.parquet").to_pandas()
    test_image = decided.loc[decided["decision"].fillna(False).astype(bool), "image_id"].iloc[0]
    pages = list((release / "browse/images").glob(f"*/{test_image}.html"))
    assert pages, f"no browser page of {test_image}"
    page = pages[0].read_text(encoding="utf-8")
    assert "alpha/knn" in page and "gamma/broken" not in page
    assert "<td>alpha/knn</td><td>submitted</td>" in page and "<td>submitted</td>" in page
    assert re.search(r"<td>knn_gist</td><td>baseline</td>", page)
    index = (release / "browse/index.html").read_text(encoding="utf-8")
    baselines = len(list((round_build / "runs").glob("*.txt")))
    assert "<dt>submitted runs</dt><dd>2</dd>" in index  # alpha's two annotation runs
    assert f"<dt>baseline runs</dt><dd>{baselines}</dd>" in index
    caption = pq.read_table(round_build / "work/submissions/beta/consensus.parquet").to_pylist()
    shown = next(row for row in caption if row["caption"])
    described = next(iter(release.glob(f"browse/images/*/{shown['image_id']}.html"))).read_text(encoding="utf-8")
    assert "beta/consensus" in described
    leaderboard = (release / "browse/leaderboard.html").read_text(encoding="utf-8")
    assert "alpha/knn" in leaderboard


def test_the_release_with_its_kit_passes_its_audit(round_build):
    out = io.StringIO()
    assert main_audit(str(round_build / "release"), 0, out=out) == 0, out.getvalue()
    kit = round_build / "release/data/kit"
    gist = kit / "data/tables/gist/shard-00000.parquet"
    assert gist.stat().st_ino == (round_build / "release/data/tables/gist/shard-00000.parquet").stat().st_ino
    assert not (round_build / "release/data/truth").exists() and (round_build / "truth/annotation").is_dir()


# -- the kit holds no test truth ------------------------------------------------------------

def truth_records(out: Path) -> dict[tuple[str, ...], set[tuple[str, ...]]]:
    """Every record of the test truth, as the truth files write it: by the columns that hold it."""
    truth = out / "truth"

    def rows(path: Path, columns: list[str]) -> set[tuple[str, ...]]:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        return set(frame[columns].itertuples(index=False, name=None))

    records = {("image_id", "concept"): rows(truth / "annotation/ground_truth.csv", ["image_id", "concept"])}
    references = rows(truth / "captions/references.csv", ["image_id", "caption"])
    records[("image_id", "caption")] = references
    records[("image_id", "text")] = references
    answers = pq.read_table(truth / "illustration/queries.parquet").to_pandas()
    records[("query_id", "image_id")] = (set(answers[["query_id", "image_id"]].itertuples(index=False, name=None))
                                         | set(answers[["build_query_id", "image_id"]].itertuples(index=False,
                                                                                                  name=None)))
    return records


def kit_rows(path: Path):
    """(columns or None, row) of every row of a kit file: a Parquet file's rows by column, a text
    file's lines as CSV fields, as space-separated tokens, and (file name, line) pairs."""
    if path.suffix == ".parquet":
        frame = pq.read_table(path).to_pandas()
        for row in frame.astype(str).itertuples(index=False, name=None):
            yield list(frame.columns), row
        return
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    parsed = list(csv.reader(io.StringIO(text, newline="")))
    header = parsed[0] if parsed else []
    for row in parsed[1:]:
        yield header, tuple(row)
    for line in lines:
        yield None, tuple(next(csv.reader([line]), []))
        yield None, tuple(line.split(" "))
        yield None, (path.stem, line)
        yield None, (line, path.stem)


def test_the_kit_holds_no_test_truth(round_build):
    records = truth_records(round_build)
    assert all(records.values())
    kit = round_build / "release/data/kit"
    files = [p for p in sorted(kit.rglob("*")) if p.is_file() and p.suffix in (".parquet", ".txt", ".csv", ".md",
                                                                               ".yaml", ".json", ".scofeat")]
    assert any("development" in p.parts for p in files) and any("data" in p.parts for p in files)
    found = []
    for path in files:
        if path.relative_to(kit).parts[:2] == ("runs", "illustration") and path.suffix == ".csv":
            # A ranking pairs each query with many candidates (here every one): it states no answer. That
            # the example rankings, like the whole kit, do not depend on the truth is the next test.
            continue
        for columns, row in kit_rows(path):
            for names, wanted in records.items():
                if columns is not None and set(names) <= set(columns):
                    record = tuple(row[columns.index(name)] for name in names)
                elif columns is None and len(row) == len(names):
                    record = tuple(value.strip() for value in row)
                else:
                    continue
                if record in wanted:
                    found.append(f"{path.relative_to(kit)}: {record}")
    assert not found, f"test truth in the kit: {found[:10]}"


def test_the_kit_does_not_depend_on_the_test_truth(round_build, tmp_path):
    """The kit made from the build's tables, and again from tables whose test truth is scrambled (other
    labels, other references, the queries' answers permuted): the same bytes; the truth differs."""
    from annobench.benchmark.illustration.queries import query_id

    out = round_build
    config = json.loads((out / "release/data/RELEASE.json").read_text(encoding="utf-8"))["config"]
    splits = table(out, "splits")
    test = set(splits.loc[splits["split"] == "test", "image_id"])
    inputs = {name: str(out / f"tables/{name}/all.parquet") for name in ("concepts", "ground_truth", "splits",
                                                                         "captions", "queries")}
    inputs["images"] = [str(p) for p in sorted((out / "tables/images").glob("*.parquet"))]
    rng = np.random.default_rng(0)
    scrambled = tmp_path / "scrambled"
    scrambled.mkdir()
    truth = table(out, "ground_truth")
    concepts = table(out, "concepts")["concept"].tolist()
    is_test = truth["image_id"].isin(test)
    truth.loc[is_test, "concept"] = rng.choice(concepts, size=int(is_test.sum()))
    truth = truth.drop_duplicates(["image_id", "concept"])
    captions = table(out, "captions")
    captions.loc[captions["image_id"].isin(test), "text"] = "a scrambled reference"
    queries = table(out, "queries")
    tested = queries["image_id"].isin(test).to_numpy()
    queries.loc[tested, "image_id"] = rng.permutation(queries.loc[tested, "image_id"].to_numpy())
    queries["query_id"] = [query_id(p, i) for p, i in zip(queries["page_id"], queries["image_id"])]
    queries = queries.sort_values("query_id").reset_index(drop=True)
    changed = dict(inputs)
    for name, frame in (("ground_truth", truth), ("captions", captions), ("queries", queries)):
        schema = pq.read_schema(inputs[name])
        pq.write_table(pa.Table.from_pandas(frame, schema=schema, preserve_index=False), scrambled / f"{name}.parquet")
        changed[name] = str(scrambled / f"{name}.parquet")
    trees = []
    for name, given in (("real", inputs), ("scrambled", changed)):
        build_kit(config, given, tmp_path / name / "kit", tmp_path / name / "truth", lambda line: None)
        trees.append({kind: {p.relative_to(tmp_path / name / kind).as_posix(): p.read_bytes()
                             for p in sorted((tmp_path / name / kind).rglob("*")) if p.is_file()}
                      for kind in ("kit", "truth")})
    assert trees[0]["kit"] == trees[1]["kit"]
    assert trees[0]["truth"] != trees[1]["truth"]
    built = {p.relative_to(out / "kit").as_posix(): p.read_bytes() for p in sorted((out / "kit").rglob("*"))
             if p.is_file() and not p.name.startswith(".")}
    assert built == trees[0]["kit"]


# -- a run added later -------------------------------------------------------------------------

def planned_jobs(result) -> dict[str, int]:
    """Rule -> jobs of a dry run's job table."""
    jobs = {}
    for line in result.stdout.split("Job stats:", 1)[1].splitlines()[3:]:
        fields = line.split()
        if len(fields) != 2 or fields[0] == "total":
            break
        jobs[fields[0]] = int(fields[1])
    return jobs


def test_a_run_added_later_reruns_only_its_own_job_and_the_gathering_ones(demo_workdir_per_run, tmp_path):
    """On the demo with a job per run, as in a large build."""
    copy_build(demo_workdir_per_run, tmp_path)
    folder = tmp_path / "submissions"
    folder.mkdir()
    config = yaml.safe_load((tmp_path / "config.yaml").read_text(encoding="utf-8"))
    config["input"]["submissions"] = str(folder)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    out = tmp_path / "out"
    submit(folder, "alpha", "random.txt", (out / "runs/random.txt").read_bytes(),
           metadata("alpha", "random", "annotation", "visual"))
    run_snakemake(tmp_path, "--cores", "2", "--configfile", str(tmp_path / "config.yaml"))
    assert table(out, "submissions")["status"].tolist() == ["accepted"]
    first = (out / "work/submissions/alpha/random.json").read_bytes()
    submit(folder, "beta", "most_frequent.txt", (out / "runs/most_frequent.txt").read_bytes(),
           metadata("beta", "most_frequent", "annotation", "visual"))
    dry = run_snakemake(tmp_path, "-n", "--cores", "2", "--configfile", str(tmp_path / "config.yaml"))
    assert planned_jobs(dry) == {"submission": 1, "campaign_results": 1, "benchmark_report": 1, "integrity": 1,
                                 "browse": 1, "release": 1, "all": 1}, dry.stdout[-3000:]
    assert "work/submissions/beta/most_frequent.json" in dry.stdout
    run_snakemake(tmp_path, "--cores", "2", "--configfile", str(tmp_path / "config.yaml"))
    assert (out / "work/submissions/alpha/random.json").read_bytes() == first
    assert table(out, "submissions")["name"].tolist() == ["alpha/random", "beta/most_frequent"]
