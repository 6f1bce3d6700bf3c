"""Splits that depend only on an image's id and the seed, and the SAIAPR region protocol."""

from __future__ import annotations

import pandas as pd
import pytest

from annobench.benchmark.region_annotation.splits import region_subsets
from annobench.benchmark.splits import SplitError, assign_splits, split_ids, splits_from_lists, splits_table
from annobench.core.tables import write_table
from annobench.regions.importers import import_segmentations
from annobench.regions.segmentation import Segmentation
from helpers import REAL, bsds_photos, require_shared

FRACTIONS = {"train": 0.6, "dev": 0.1, "test": 0.3}


def test_an_images_split_does_not_depend_on_the_other_images_or_their_order():
    ids = [p.stem for p in bsds_photos()]
    full = dict(zip(ids, assign_splits(ids, FRACTIONS, seed=7)))
    half = ids[::-2]
    assert dict(zip(half, assign_splits(half, FRACTIONS, seed=7))) == {i: full[i] for i in half}
    assert assign_splits(ids, FRACTIONS, seed=8) != list(full.values())


def test_fractions_are_met_on_many_ids():
    ids = [f"img{k:06d}" for k in range(20000)]
    counts = pd.Series(assign_splits(ids, FRACTIONS, seed=1)).value_counts(normalize=True)
    for name, share in FRACTIONS.items():
        assert abs(counts[name] - share) < 0.015
    with pytest.raises(SplitError, match="add up to 1"):
        assign_splits(ids, {"train": 0.6, "test": 0.3}, seed=1)


def test_given_lists(tmp_path):
    (tmp_path / "train.txt").write_text("a\nb\n")
    (tmp_path / "test.txt").write_text("c\n")
    lists = {"train": tmp_path / "train.txt", "test": tmp_path / "test.txt"}
    splits = splits_from_lists(["a", "b", "c", "d"], lists)
    assert splits == ["train", "train", "test", None]
    assert splits_table(["a", "b", "c", "d"], splits).to_pydict() == {
        "image_id": ["a", "b", "c"], "split": ["train", "train", "test"]}
    (tmp_path / "test.txt").write_text("c\na\n")
    with pytest.raises(SplitError, match="both the train and the test list"):
        splits_from_lists(["a"], lists)


def test_split_ids_are_the_images_of_a_split_sorted(tmp_path):
    path = tmp_path / "splits.parquet"
    write_table(splits_table(["d", "a", "c", "b"], ["test", "train", "test", None]), path, "splits", params={})
    assert split_ids(path) == ["a", "c", "d"]
    assert split_ids(path, "test") == ["c", "d"]
    assert split_ids(path, "dev") == []


def test_saiapr_protocol_on_real_msrc_regions():
    items = import_segmentations("msrc_v2", require_shared(REAL / "segmentations" / "msrc_v2"))
    regions = pd.DataFrame([r for s in items if isinstance(s, Segmentation) for r in s.region_rows()])
    table = region_subsets(regions, [5, 10], train_fraction=0.7, seed=3).to_pandas()
    by_count = regions["label"].value_counts()
    for size, part in table.groupby("subset"):
        assert set(part["label"]) == set(by_count.index[:size])
        assert abs((part["split"] == "train").mean() - 0.7) < 0.06
    # A region keeps its split in every subset it belongs to.
    both = table.pivot_table(index=["image_id", "annotator", "region_id"], columns="subset", values="split",
                             aggfunc="first").dropna()
    assert len(both) > 100 and (both[5] == both[10]).all()
    again = region_subsets(regions.sample(frac=1.0, random_state=0), [5, 10], train_fraction=0.7, seed=3)
    assert again.to_pandas().reset_index(drop=True).equals(table.reset_index(drop=True))
