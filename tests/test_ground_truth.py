"""Concept vocabularies and ground truth in every form (the ImageCLEF 2012 task page's forms), on
the real MSRC-v2 labels."""

from __future__ import annotations

import pandas as pd
import pytest

from annobench.benchmark import vocabulary as vocab
from annobench.benchmark.annotation import ground_truth as gt
from annobench.regions.importers import import_segmentations
from annobench.regions.segmentation import Segmentation
from helpers import REAL, require_shared

MSRC = REAL / "segmentations" / "msrc_v2"


@pytest.fixture(scope="module")
def msrc_regions() -> pd.DataFrame:
    """The regions of the real MSRC-v2 segmentations, read by the project's own importer."""
    items = import_segmentations("msrc_v2", require_shared(MSRC))
    rows = [row for item in items if isinstance(item, Segmentation) for row in item.region_rows()]
    return pd.DataFrame(rows)


def test_image_labels_from_regions_are_every_label_of_its_regions(msrc_regions):
    truth = gt.truth_from_regions(msrc_regions, lift_to_ancestors=False)
    sets = truth.label_sets()
    assert len(sets) > 250
    for image_id, group in list(msrc_regions.groupby("image_id"))[:40]:
        assert sets.get(image_id, frozenset()) == frozenset(group["label"].dropna())
    # About 3 labels an image on average, as MSRC-v2's README says.
    assert 2.0 < truth.rows.groupby("image_id").size().mean() < 4.0
    assert truth.rows["agreement"].eq(1.0).all() and not truth.rows["derived"].any()


def test_lifting_to_ancestors_adds_derived_rows_once(msrc_regions):
    parents = {"cow": "animal", "sheep": "animal", "horse": "animal", "animal": "living", "tree": "plant",
               "grass": "plant", "flower": "plant", "plant": "living"}
    vocabulary = vocab.vocabulary_from_labels(msrc_regions["label"].dropna().unique(), parents)
    assert {"animal", "plant", "living"} <= {c.name for c in vocabulary}
    from annobench.regions.stage import label_path

    regions = msrc_regions.assign(label_path=[label_path(label, parents) for label in msrc_regions["label"]])
    lifted = gt.truth_from_regions(regions, lift_to_ancestors=True).label_sets()
    plain = gt.truth_from_regions(msrc_regions, lift_to_ancestors=False).label_sets()
    for image_id, labels in plain.items():
        expected = set(labels)
        for label in labels:
            while label in parents:
                label = parents[label]
                expected.add(label)
        assert lifted[image_id] == expected
    cows = [i for i, labels in plain.items() if "cow" in labels]
    assert cows and all({"animal", "living"} <= lifted[i] for i in cows)


def test_2012_exports_read_back_as_the_same_ground_truth(msrc_regions, tmp_path):
    truth = gt.truth_from_regions(msrc_regions, lift_to_ancestors=False)
    concepts = vocab.vocabulary_from_labels(truth.rows["concept"].unique())
    written = gt.export_imageclef2012(truth, concepts, tmp_path / "export", annotation_files=True)
    assert written == 1 + len(concepts) + len(truth.label_sets())
    assert (tmp_path / "export" / "concepts.txt").read_text().split() == [c.name for c in concepts]
    from_concepts = gt.read_concept_files(tmp_path / "export" / "concepts", concepts, raw=False)
    from_annotations = gt.read_annotation_files(tmp_path / "export" / "annotations", concepts, raw=False)
    assert from_concepts.label_sets() == truth.label_sets() == from_annotations.label_sets()


def test_raw_judgments_become_clean_by_majority_vote(msrc_regions, tmp_path):
    """Three annotators: two agree with the real label, one dissents; a 1-of-3 false alarm stays out."""
    truth = gt.truth_from_regions(msrc_regions, lift_to_ancestors=False)
    concepts = vocab.vocabulary_from_labels(truth.rows["concept"].unique())
    sets = truth.label_sets()
    raw_concepts, raw_annotations = tmp_path / "raw_concepts", tmp_path / "raw_annotations"
    raw_concepts.mkdir(), raw_annotations.mkdir()
    for c in concepts:
        lines = []
        for k, (image_id, labels) in enumerate(sorted(sets.items())):
            present = c.name in labels
            judgments = ["1", "1", "0"] if present else (["0", "1", "0"] if k % 3 == 0 else ["0", "0", "0"])
            lines.append(" ".join([image_id, *judgments[k % 3:], *judgments[: k % 3]]))
        (raw_concepts / f"{c.name}.txt").write_text("\n".join(lines) + "\n")
    for image_id, labels in sets.items():
        text = "".join(f"{c.name} {0.75 if c.name in labels else 0.25}\n" for c in concepts)
        (raw_annotations / f"{image_id}.txt").write_text(text)
    clean = gt.read_concept_files(raw_concepts, concepts, raw=True)
    assert clean.label_sets() == sets
    assert clean.rows["agreement"].round(4).eq(0.6667).all()
    assert gt.read_annotation_files(raw_annotations, concepts, raw=True).label_sets() == sets


def test_vocabulary_forms_and_errors(tmp_path):
    csv_file = tmp_path / "concepts.csv"
    csv_file.write_text("concept,keywords,parent\nanimal,,\ncat,kitten;Tabby,animal\ndrink,coffee,\n")
    concepts = vocab.read_vocabulary(csv_file)
    assert [c.name for c in concepts] == ["animal", "cat", "drink"]
    assert concepts[1].keywords == ("cat", "kitten", "tabby") and concepts[1].parent == "animal"
    plain = tmp_path / "concepts.txt"
    plain.write_text("sky\n\ntree\n")
    assert [c.name for c in vocab.read_vocabulary(plain)] == ["sky", "tree"]
    table = vocab.concepts_table(concepts)
    assert table.column("index").to_pylist() == [0, 1, 2]
    for text, message in (("sky\nsky\n", "listed twice"), ("concept,parent\ncat,animal\n", "not a concept"),
                          ("", "empty"), ("red sky\n", "spaces")):
        plain.write_text(text)
        with pytest.raises(vocab.GroundTruthError, match=message):
            vocab.read_vocabulary(plain)


def test_truth_csv_errors_name_the_line(tmp_path):
    path = tmp_path / "truth.csv"
    path.write_text("image_id,concept\na,cat\nb,\n")
    with pytest.raises(vocab.GroundTruthError, match=r"truth.csv:3: empty"):
        gt.read_truth_csv(path)
    path.write_text("id,label\na,cat\n")
    with pytest.raises(vocab.GroundTruthError, match="header image_id,concept"):
        gt.read_truth_csv(path)
    path.write_bytes(b"image_id,concept\na,caf\xe9\n")
    with pytest.raises(vocab.GroundTruthError, match="not UTF-8"):
        gt.read_truth_csv(path)
    path.write_text("image_id,concept\na,cat\na,cat\nb,dog\n")
    truth = gt.read_truth_csv(path)
    assert truth.label_sets() == {"a": {"cat"}, "b": {"dog"}}
    restricted = gt.restrict_to_vocabulary(truth, [vocab.Concept("cat")])
    assert restricted.label_sets() == {"a": {"cat"}} and "dog" in restricted.notes[0]
