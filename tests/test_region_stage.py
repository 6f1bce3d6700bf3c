"""Region data end to end: the `annobench regions` command and the workflow's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annobench.cli import main
from annobench.regions.features import FEATURE_NAMES
from annobench.regions.stage import OntologyError, label_path, read_ontology
from helpers import REAL, REPO, SHARED, require_shared

MSRC = REAL / "segmentations" / "msrc_v2"


@pytest.fixture(scope="module")
def msrc_out(tmp_path_factory):
    require_shared(MSRC)
    out = tmp_path_factory.mktemp("msrc")
    assert main(["regions", "--kind", "msrc", "--images", str(MSRC / "Images"), "--masks", str(MSRC),
                 "--out", str(out)]) == 0
    return out


def test_msrc_command_reproduces_the_reference_features(msrc_out):
    ours = pd.read_parquet(msrc_out / "tables" / "region_features").set_index(["image_id", "region_id"])
    reference = pd.read_csv(require_shared(SHARED / "reference" / "region_features" / "msrc_v2_carbonetto27.tsv"),
                            sep="\t")
    key_columns = [c for c in reference.columns if not c.startswith("f")][:2]
    values = reference[[c for c in reference.columns if c not in key_columns]].select_dtypes("number").to_numpy()
    assert len(reference) == len(ours) == 937
    matched = ours.loc[list(zip(reference[key_columns[0]].astype(str), reference[key_columns[1]]))]
    np.testing.assert_allclose(matched[list(FEATURE_NAMES)].to_numpy(), values[:, -27:], rtol=1e-6, atol=1e-9)


def test_msrc_relations_cover_every_ordered_pair_and_exports_follow_saiapr(msrc_out):
    regions = pd.read_parquet(msrc_out / "tables" / "regions")
    relations = pd.read_parquet(msrc_out / "tables" / "spatial_relations")
    n = regions.groupby("image_id").size()
    pairs = relations.groupby("image_id").size().reindex(n.index, fill_value=0)
    assert (pairs == n * (n - 1)).all()
    lines = (msrc_out / "exports" / "saiapr" / "features.txt").read_text().splitlines()
    assert len(lines) == 937
    fields = lines[0].split("\t")
    assert len(fields) == 2 + 27 + 1 and fields[-1] in set(regions.label)
    frequencies = pd.read_parquet(msrc_out / "tables" / "relation_frequencies")
    assert frequencies.pairs.sum() == 3 * len(relations)
    assert (msrc_out / "reports" / "top_labels.png").read_bytes()[:4] == b"\x89PNG"


def test_bsds_one_annotator_gives_features_and_relations_for_every_region(tmp_path):
    truth = require_shared(REAL / "segmentations" / "bsds500" / "groundTruth" / "train")
    assert main(["regions", "--kind", "bsds", "--annotator", "1", "--images", str(REAL / "images" / "bsds500" / "train"),
                 "--masks", str(truth), "--out", str(tmp_path)]) == 0
    regions = pd.read_parquet(tmp_path / "tables" / "regions")
    features = pd.read_parquet(tmp_path / "tables" / "region_features")
    assert regions.image_id.nunique() == 200 and set(regions.annotator) == {1}
    assert len(features) == len(regions)
    assert regions.label.isna().all()


def test_ontology_gives_label_paths(tmp_path):
    ontology = tmp_path / "ontology.csv"
    ontology.write_text("child,parent\ncoin,object\nflag,object\nobject,entity\nbackground,entity\n")
    parents = read_ontology(ontology)
    assert label_path("coin", parents) == ["entity", "object", "coin"]
    assert label_path("person", parents) == ["person"]
    demo = REPO / "demo"
    assert main(["regions", "--kind", "canonical", "--images", str(demo / "images"), "--masks",
                 str(demo / "segmentations"), "--ontology", str(ontology), "--out", str(tmp_path / "out")]) == 0
    regions = pd.read_parquet(tmp_path / "out" / "tables" / "regions")
    paths = dict(zip(regions.label, regions.label_path.map(list)))
    assert paths["coin"] == ["entity", "object", "coin"] and paths["helmet"] == ["helmet"]
    cycle = tmp_path / "cycle.csv"
    cycle.write_text("child,parent\na,b\nb,a\n")
    with pytest.raises(OntologyError, match="cycle"):
        read_ontology(cycle)
