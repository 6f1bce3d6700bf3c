"""Captions (ImageCLEF 2016 subtask 2, Gilbert et al. 2016): the readers, the `captions` table, Meteor 1.5 through
pycocoevalcap on CLIPScore's example (published figures), the human bound and the command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from annobench.benchmark.captions import meteor as meteor_module
from annobench.benchmark.captions.files import (
    CAPTIONS_TABLE,
    CaptionError,
    captions_table,
    read_references,
    read_run,
    write_captions_table,
)
from annobench.benchmark.captions.measure import evaluate_run, human_bound, tokenized_references
from annobench.benchmark.captions.meteor import (MeteorProcess, end_shared_meteor, require_tools, shared_meteor,
                                                 tokenize)
from helpers import REAL, REPO, require_shared

EXAMPLE = REAL / "captions" / "clipscore_example"
# Published with pycocoevalcap after PTB tokenisation, corpus level (shared/README.md).
PUBLISHED = {
    "good": {"meteor": 0.3444, "bleu_4": 0.0, "rouge_l": 0.4280, "cider": 0.5637},
    "bad": {"meteor": 0.1861, "bleu_4": 0.0, "rouge_l": 0.3121, "cider": 0.2790},
}


def java_tools():
    try:
        require_tools()
    except CaptionError as error:
        pytest.skip(str(error))


@pytest.fixture
def example():
    require_shared(EXAMPLE)
    java_tools()
    return EXAMPLE


@pytest.fixture
def process_starts(monkeypatch):
    """Each Java process started, as (jar or class) names, counted by patching subprocess.Popen;
    the shared Meteor process of an earlier test is ended first, so the count starts at none."""
    end_shared_meteor()
    started = []

    class CountingPopen(subprocess.Popen):
        def __init__(self, args, *rest, **kwargs):
            started.append(" ".join(map(str, args)))
            super().__init__(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", CountingPopen)
    return started


def write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def run_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "annobench.cli", "evaluate-captions", *map(str, args)],
                          cwd=REPO, capture_output=True, text=True)


# --- readers and the table (no Java) ---------------------------------------------------

def test_references_read_alike_from_csv_coco_and_object(tmp_path):
    csv_refs = write(tmp_path / "refs.csv", 'image_id,caption\nb,"a dog, sitting"\na,one cat\na,"two\ncats"\nb,x\n')
    coco = write(tmp_path / "coco.json", json.dumps({"images": [], "annotations": [
        {"id": 9, "image_id": "b", "caption": "a dog, sitting"}, {"id": 3, "image_id": "a", "caption": "one cat"},
        {"id": 4, "image_id": "a", "caption": "two\ncats"}, {"id": 5, "image_id": "b", "caption": "x"}]}))
    obj = write(tmp_path / "refs.json", json.dumps({"b": ["a dog, sitting", "x"], "a": ["one cat", "two\ncats"]}))
    texts = {"a": ["one cat", "two\ncats"], "b": ["a dog, sitting", "x"]}
    for path, form in ((csv_refs, "csv"), (coco, "coco"), (obj, "json")):
        references = read_references(path)
        assert references.form == form
        assert {image_id: references.texts(image_id) for image_id in references.images} == texts
    sources = [r.source for r in read_references(csv_refs).images["a"]]
    assert sources == ["csv:refs.csv:line 3", "csv:refs.csv:line 4"]  # a quoted caption spans lines 4-5
    assert read_references(csv_refs).images["b"][1].source == "csv:refs.csv:line 6"
    assert read_references(coco).images["b"][0].source == "coco:coco.json:annotation 9"


def test_captions_table_numbers_references_in_file_order(tmp_path):
    references = read_references(write(tmp_path / "r.csv", "caption,image_id\nfirst,b\nonly,a\nsecond,b\n"))
    table = captions_table(references).to_pylist()
    assert [(row["image_id"], row["reference"], row["text"]) for row in table] == [
        ("a", 1, "only"), ("b", 1, "first"), ("b", 2, "second")]
    assert table[2]["source"] == "csv:r.csv:line 4"
    written = write_captions_table(references, tmp_path / "out")
    assert written == tmp_path / "out" / CAPTIONS_TABLE and CAPTIONS_TABLE.parts[:2] == ("tables", "captions")
    stored = pq.read_table(written)
    assert stored.to_pylist() == table
    assert stored.schema.metadata[b"annobench.artefact"] == b"captions"


@pytest.mark.parametrize("text, message", [
    ("", "empty file"),
    ("image,caption\na,x\n", "line 1: the header lacks column(s) image_id"),
    ("image_id,caption\na,x\nb,  \n", "line 3: empty caption"),
    ("image_id,caption\na,x\n,y\n", "line 3: empty image_id"),
    ("image_id,caption\na,x,extra\n", "line 2: 3 field(s), the header has 2"),
    ('{"annotations": [{"image_id": 1}]}', "annotation 0: needs \"image_id\" and \"caption\""),
    ('{"a": "not a list"}', "image 'a': expected a list of captions"),
    ('[{"image_id": 1, "caption": "x"}]', "JSON references must be an object"),
    ('{"a": [', "not valid JSON"),
])
def test_reference_errors_name_file_and_line(tmp_path, text, message):
    path = write(tmp_path / "refs.txt", text)
    with pytest.raises(CaptionError) as error:
        read_references(path)
    assert str(error.value).startswith(str(path)) and message in str(error.value)


@pytest.mark.parametrize("text, message", [
    ("image_id,caption\na,x\nb,y\na,z\n", "line 4: image 'a' again (first at line 2)"),
    ("image_id,caption\na,x\nzz,y\n", "line 3: image 'zz' is not an image of the references"),
    ('[{"image_id": "a", "caption": "x"}, {"image_id": "b"}]', "record 1: needs \"image_id\" and \"caption\""),
    ('[{"image_id": "a", "caption": "x"}, {"image_id": "a", "caption": "y"}]', "record 1: image 'a' again"),
    ('[{"image_id": 7, "caption": "x"}]', "record 0: image '7' is not an image of the references"),
    ('{"a": ""}', "image 'a': empty caption"),
])
def test_run_errors_name_file_and_line(tmp_path, text, message):
    references = read_references(write(tmp_path / "r.csv", "image_id,caption\na,one\nb,two\n"))
    path = write(tmp_path / "run.txt", text)
    with pytest.raises(CaptionError) as error:
        read_run(path, references)
    assert str(error.value).startswith(str(path)) and message in str(error.value)


def test_coco_results_with_integer_ids_match_the_references(tmp_path):
    references = read_references(write(tmp_path / "r.json", json.dumps(
        {"annotations": [{"image_id": 42, "caption": "a cat"}, {"image_id": 7, "caption": "a dog"}]})))
    run = read_run(write(tmp_path / "run.json", json.dumps([{"image_id": 7, "caption": "dog"}])), references)
    assert list(references.images) == ["42", "7"] and run.captions == {"7": "dog"} and run.form == "coco_results"


def test_missing_tools_are_named(monkeypatch):
    real_find_spec = meteor_module.importlib.util.find_spec
    monkeypatch.setattr(meteor_module.importlib.util, "find_spec",
                        lambda name: None if name == "pycocoevalcap" else real_find_spec(name))
    with pytest.raises(CaptionError, match=r"pip install 'annobench\[captions\]'"):
        require_tools()
    monkeypatch.setattr(meteor_module.importlib.util, "find_spec", real_find_spec)
    monkeypatch.setattr(meteor_module.shutil, "which", lambda name: None)
    if real_find_spec("pycocoevalcap") is not None:
        with pytest.raises(CaptionError, match="no `java` is on PATH.*default-jre-headless"):
            require_tools()


def test_tokenize_none_keeps_the_text_on_one_line():
    assert tokenize(["A  Cat,\nsitting.\u2028Here", " x "], "none") == ["A Cat, sitting. Here", "x"]
    with pytest.raises(CaptionError, match="unknown tokenisation 'nltk'"):
        tokenize(["x"], "nltk")


def test_bad_input_exits_2_with_one_line(tmp_path):
    refs = write(tmp_path / "r.csv", "image_id,caption\na,one\n")
    run = write(tmp_path / "run.csv", "image_id,caption\na,x\na,y\n")
    result = run_cli("--refs", refs, "--run", run, "--json", tmp_path / "out.json")
    assert result.returncode == 2 and not (tmp_path / "out.json").exists()
    assert result.stderr.strip().splitlines() == [f"annobench: {run}: line 3: image 'a' again (first at line 2); "
                                                  "a run gives one caption per image"]
    result = run_cli("--refs", refs, "--run", run, "--human", "--json", tmp_path / "out.json")
    assert result.returncode == 2 and "not allowed with argument" in result.stderr


# --- the measure on CLIPScore's example (Java) -------------------------------------------

@pytest.mark.parametrize("candidate, per_image", [
    # Each image's own Meteor (pycocoevalcap's per-image scores of the same jar).
    ("good", (0.3328299405, 0.3555576154)),
    ("bad", (0.1582472068, 0.2182547633)),
])
def test_published_values_and_one_meteor_process(example, candidate, per_image, process_starts):
    references = read_references(example / "refs.json")
    run = read_run(example / f"{candidate}_captions.json", references)
    result = evaluate_run(references, run, "ptb")
    published = PUBLISHED[candidate]
    assert result["meteor"]["corpus"] == pytest.approx(published["meteor"], abs=1e-4)
    for key in ("bleu_4", "rouge_l", "cider"):
        assert result[key] == pytest.approx(published[key], abs=1e-4), key
    assert result["images"] == 2 and result["images_not_in_run"] == 0
    meteors = [command for command in process_starts if "meteor-1.5.jar" in command]
    tokenizers = [command for command in process_starts if "PTBTokenizer" in command]
    assert len(meteors) == 1 and len(tokenizers) == 2 and len(process_starts) == 3, process_starts
    # The statistics over the two images.
    meteor, (low, high) = result["meteor"], per_image
    assert meteor["min"] == pytest.approx(low, abs=1e-9) and meteor["max"] == pytest.approx(high, abs=1e-9)
    assert meteor["mean"] == pytest.approx((low + high) / 2, abs=1e-9) == meteor["median"]
    assert meteor["std"] == pytest.approx((high - low) / 2, abs=1e-9)  # population std of two values


# Full precision, as the jar gave them through pycocoevalcap's own wrapper before annobench drove
# the jar itself (issue 40): corpus, then each image's Meteor, PTB tokenisation.
JAR_FIGURES = {
    "good": (0.3444057316763406, [0.3328299405496036, 0.3555576154297008]),
    "bad": (0.18607107044266782, [0.15824720679783144, 0.2182547633447838]),
}


def ptb_segments(example: Path, candidate: str) -> list[tuple[str, list[str]]]:
    references = read_references(example / "refs.json")
    run = read_run(example / f"{candidate}_captions.json", references)
    refs = tokenized_references(references, "ptb")
    ids = sorted(refs)
    captions = tokenize([run.captions[image_id] for image_id in ids], "ptb")
    return [(caption, refs[image_id]) for caption, image_id in zip(captions, ids)]


def test_the_jar_driven_directly_gives_the_figures_of_pycocoevalcaps_wrapper(example):
    from pycocoevalcap.meteor.meteor import Meteor

    scorer = Meteor()  # one process of each for both runs: the jar takes seconds to start
    for candidate in ("good", "bad"):
        segments = ptb_segments(example, candidate)
        corpus, scores = shared_meteor().score(segments)
        assert (corpus, scores) == JAR_FIGURES[candidate]  # the same bytes from the jar: exactly equal
        expected = scorer.compute_score({k: refs for k, (_, refs) in enumerate(segments)},
                                        {k: [caption] for k, (caption, _) in enumerate(segments)})
        assert (corpus, scores) == expected, candidate


def test_meteor_uses_no_attribute_of_pycocoevalcaps_wrapper():
    source = Path(meteor_module.__file__).read_text(encoding="utf-8")
    assert "pycocoevalcap.meteor.meteor" not in source and "Meteor()" not in source
    assert not [word for word in ("meteor_p", "_stat(", ".lock") if word in source]
    assert meteor_module.meteor_jar().name == "meteor-1.5.jar" and (meteor_module.meteor_jar().parent / "data").is_dir()


def test_field_separators_and_line_breaks_are_taken_out_of_every_text(example):
    segments = ptb_segments(example, "good")
    (caption, refs), other = segments
    hostile = [(caption.replace(" ", " |||\n", 1), [text.replace(" ", "\r\n", 1) + " |||" for text in refs]), other]
    assert shared_meteor().score(hostile) == JAR_FIGURES["good"]  # still two segments, each against its own
    assert meteor_module.score_line("a ||| b\nc", ["x|||y", "z\u2028w"]) == "SCORE ||| xy ||| z w ||| a b c"


def test_meteor_process_ends_with_its_block(example):
    with MeteorProcess() as meteor:
        process = meteor._process
        meteor.score(ptb_segments(example, "bad"))
    assert process.wait(timeout=1) == 0 and process.stdout.closed  # its input closed, the jar ended
    with pytest.raises(RuntimeError), MeteorProcess() as meteor:
        process = meteor._process
        raise RuntimeError("a failure inside the block")
    assert process.poll() is not None  # killed, not left running


def test_one_shared_meteor_process_a_program_and_another_when_it_died(example, process_starts):
    first = shared_meteor()
    assert shared_meteor() is first and first.running()
    first._process.kill()
    first._process.wait()
    again = shared_meteor()
    assert again is not first and again.score(ptb_segments(example, "good")) == JAR_FIGURES["good"]
    assert sum("meteor-1.5.jar" in command for command in process_starts) == 2


def test_a_dead_jar_or_no_java_is_one_line(example, monkeypatch, tmp_path):
    with MeteorProcess() as meteor:
        meteor._process.kill()
        meteor._process.wait()
        with pytest.raises(CaptionError, match=r"^Meteor failed \(java -jar -Xmx2G meteor-1.5.jar") as failed:
            meteor.score(ptb_segments(example, "good"))
    assert "\n" not in str(failed.value)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    with pytest.raises(CaptionError) as failed:
        with MeteorProcess():
            pass
    assert str(failed.value) == meteor_module.NO_JAVA and "\n" not in str(failed.value)


def test_an_image_missing_from_the_run_scores_zero(example, tmp_path):
    good = json.loads((example / "good_captions.json").read_text())
    run = write(tmp_path / "run.csv", f"image_id,caption\nimage2,\"{good['image2']}\"\n")
    out = tmp_path / "out.json"
    result = run_cli("--refs", example / "refs.json", "--run", run, "--json", out)
    assert result.returncode == 0, result.stderr
    scores = json.loads(out.read_text())
    assert scores["images"] == 2 and scores["images_not_in_run"] == 1 and scores["run_format"] == "csv"
    assert scores["meteor"]["min"] == 0.0
    assert scores["meteor"]["max"] == pytest.approx(0.3555576154, abs=1e-9)
    assert scores["meteor"]["mean"] == pytest.approx(0.3555576154 / 2, abs=1e-9)
    # Its references count against the run in the corpus scores.
    assert 0 < scores["meteor"]["corpus"] < PUBLISHED["good"]["meteor"]
    assert 0 < scores["cider"] < PUBLISHED["good"]["cider"]
    assert scores["settings"] == {"meteor": "java -jar -Xmx2G meteor-1.5.jar - - -stdio -l en -norm",
                                  "std": "population", "tokenize": "ptb"}


def test_human_bound_is_leave_one_out_per_image(example, tmp_path, process_starts):
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    refs = json.loads((example / "refs.json").read_text())
    # One more image with a single reference: left out, and counted.
    extended = write(tmp_path / "refs.json", json.dumps({**refs, "lonely": ["a single reference."]}))
    result = human_bound(read_references(extended), "ptb")
    assert result["images"] == 2 and result["images_left_out"] == 1
    assert sum("meteor-1.5.jar" in command for command in process_starts) == 1

    # Independently: each held-out reference scored on its own by pycocoevalcap.
    scorer, expected = Meteor(), []
    for image_id, texts in refs.items():
        tokens = PTBTokenizer().tokenize({image_id: [{"caption": text} for text in texts]})[image_id]
        scores = [scorer.compute_score({0: tokens[:j] + tokens[j + 1:]}, {0: [tokens[j]]})[1][0]
                  for j in range(len(tokens))]
        expected.append(sum(scores) / len(scores))
    assert result["meteor"]["min"] == pytest.approx(min(expected), abs=1e-9)
    assert result["meteor"]["max"] == pytest.approx(max(expected), abs=1e-9)
    assert result["meteor"]["mean"] == pytest.approx(sum(expected) / 2, abs=1e-9)
    assert 0 < result["meteor"]["mean"] < PUBLISHED["good"]["meteor"]


def test_ptb_tokenisation_keeps_captions_aligned(tmp_path):
    java_tools()
    refs = read_references(write(tmp_path / "r.csv",
                                 'image_id,caption\na,"A Cat,\nsitting."\na,...\nb,"The dog\u2028barks!"\n'))
    assert tokenized_references(refs, "ptb") == {"a": ["a cat sitting", ""], "b": ["the dog barks"]}


def test_command_writes_the_json(example, tmp_path):
    out = tmp_path / "good.json"
    result = run_cli("--refs", example / "refs.json", "--run", example / "good_captions.json", "--json", out)
    assert result.returncode == 0, result.stderr
    scores = json.loads(out.read_text())
    assert set(scores["meteor"]) == {"mean", "std", "median", "min", "max", "corpus"}
    assert {"bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider", "images", "run", "references"} <= set(scores)
    assert scores["meteor"]["corpus"] == pytest.approx(0.3444, abs=1e-4)
    assert scores["bleu_1"] > scores["bleu_2"] > scores["bleu_3"] > scores["bleu_4"] >= 0
    assert scores["references"] == {"path": str(example / "refs.json"), "format": "json", "images": 2,
                                    "references": 6}
    assert "Meteor 0.3442" in result.stdout
    human = tmp_path / "human.json"
    result = run_cli("--refs", example / "refs.json", "--human", "--tokenize", "none", "--json", human,
                     "--table", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    table = pq.read_table(tmp_path / "out" / "tables" / "captions" / "all.parquet").to_pylist()
    assert [(row["image_id"], row["reference"]) for row in table] == [
        (image_id, k) for image_id in ("image1", "image2") for k in (1, 2, 3)]
    scores = json.loads(human.read_text())
    assert scores["run"] == "human" and scores["cider"] is None and scores["settings"]["tokenize"] == "none"
    assert scores["images"] == 2 and scores["images_left_out"] == 0 and 0 < scores["meteor"]["mean"] < 1



# --- references of a build (captions.stage) ---------------------------------------------

def test_build_references_keep_the_benchmark_images_only(tmp_path):
    from annobench.benchmark.captions.stage import benchmark_references

    path = tmp_path / "refs.csv"
    path.write_text("image_id,caption\na,A dog.\nb,A cat.\na,Another dog.\nz,Not ours.\n", encoding="utf-8")
    references = benchmark_references(str(path), [], {"a", "b", "c"})
    assert {image: references.texts(image) for image in references.images} == {
        "a": ["A dog.", "Another dog."], "b": ["A cat."]}
    with pytest.raises(CaptionError, match="no reference description is for an image of the benchmark"):
        benchmark_references(str(path), [], {"x"})


def test_harvested_references_are_kept_page_captions_once_each(tmp_path):
    """Real kiwix pages through the text stage: the kept captions, in the table's order, each text once."""
    from annobench.benchmark.captions.stage import harvested_references
    from annobench.sources.pages import PageLimits
    from annobench.text.features import TextParams
    from annobench.text.page_map import derive_mapping
    from annobench.core.tables import rows_to_table, write_table
    from annobench.text.stage import SCHEMAS, MappingRow, extract_text

    folder = require_shared(REAL / "pages" / "kiwix_wikipedia")
    rows = sorted({MappingRow(*row) for row in derive_mapping(folder).mapping})
    result = extract_text(rows, folder, TextParams(), PageLimits(), log=lambda line: None)
    captions = result.page_captions()
    write_table(rows_to_table(captions, SCHEMAS["page_captions"]), tmp_path / "page_captions.parquet", "page_captions", "hash")
    references = harvested_references([str(tmp_path / "page_captions.parquet")])
    kept = [row for row in captions if row["keep"]]
    expected: dict[str, list[str]] = {}
    for row in kept:
        if row["text"] not in expected.setdefault(row["image_id"], []):
            expected[row["image_id"]].append(row["text"])
    assert {image: references.texts(image) for image in references.images} == expected
    assert len(expected) > 20  # the real pages give many captioned images
    source = references.images[next(iter(expected))][0].source
    assert source.startswith("page_captions:") and source.rsplit(":", 1)[1] in ("alt", "title", "caption", "filename")
