"""Region-level splits following the SAIAPR protocol (Escalante et al. 2008, section 5): subsets of
the classes with the most regions, and a random 70/30 split of their regions, each region's split
decided by a hash of its key and the seed as the image splits are."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from annobench.benchmark.splits import unit_hash
from annobench.core.tables import field

REGION_SPLITS_SCHEMA = pa.schema(
    [
        field("subset", pa.int32(), "number of most frequent classes in the subset"),
        field("image_id", pa.string(), "key of the image"),
        field("annotator", pa.int16(), "which segmentation of the image"),
        field("region_id", pa.int32(), "region id in the label map"),
        field("label", pa.string(), "the region's label (one of the subset's classes)"),
        field("split", pa.string(), "train or test"),
    ]
)


def region_subsets(regions: pd.DataFrame, sizes: list[int], train_fraction: float, seed: int) -> pa.Table:
    """SAIAPR protocol: for each size n, the regions of the n classes with the most regions
    (ties by name), each region train or test by its hash: a region keeps its split in every subset."""
    labelled = regions[regions["label"].notna()]
    counts = labelled["label"].value_counts()
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    keys = [f"{i}/{a}/{r}" for i, a, r in zip(labelled["image_id"], labelled["annotator"], labelled["region_id"])]
    split = ["train" if unit_hash(seed, key) < train_fraction else "test" for key in keys]
    base = labelled[["image_id", "annotator", "region_id", "label"]].assign(split=split)
    parts = []
    for size in sorted(set(sizes)):
        classes = {label for label, _ in ranked[:size]}
        parts.append(base[base["label"].isin(classes)].assign(subset=size))
    frame = pd.concat(parts) if parts else base.iloc[:0].assign(subset=0)
    frame = frame.sort_values(["subset", "image_id", "annotator", "region_id"])
    return pa.Table.from_pandas(frame[[f.name for f in REGION_SPLITS_SCHEMA]], schema=REGION_SPLITS_SCHEMA,
                                preserve_index=False)
