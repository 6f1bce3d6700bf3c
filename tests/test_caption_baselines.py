"""Caption baselines by nearest-neighbour transfer (captions.baselines): which reference each takes,
and the n-gram agreement consensus is decided by."""

from __future__ import annotations

import math

import numpy as np
import pytest

from annobench.benchmark.captions.baselines import NgramSpace, candidates_of, consensus_captions, nearest_captions

REFERENCES = {
    "train_a": ["A dog runs on the grass.", "A brown dog."],
    "train_b": ["A cat sleeps on a sofa."],
    "train_c": ["A dog on the grass", "Two dogs play outside."],
}


def test_nearest_takes_the_first_reference_of_the_nearest_described_neighbour():
    lists = {"t1": ["undescribed", "train_b", "train_a"], "t2": ["train_c", "train_a"], "t3": ["undescribed"]}
    run = nearest_captions(lists, REFERENCES, depth=10)
    assert (run["t1"].caption, run["t1"].source_image, run["t1"].reference) == ("A cat sleeps on a sofa.", "train_b", 1)
    assert run["t2"].source_image == "train_c" and run["t2"].reference == 1
    assert "t3" not in run  # no neighbour with a reference: no caption (scored 0)


def test_depth_counts_neighbours_not_described_neighbours():
    lists = {"t": ["undescribed", "other", "train_a"]}
    assert nearest_captions(lists, REFERENCES, depth=2) == {}
    assert nearest_captions(lists, REFERENCES, depth=3)["t"].source_image == "train_a"
    assert candidates_of(lists["t"], REFERENCES, 3) == [("train_a", 1), ("train_a", 2)]


def test_similarity_is_the_mean_of_the_four_ngram_cosines():
    space = NgramSpace(REFERENCES)
    candidates = [("train_a", 1), ("train_c", 1), ("train_b", 1)]
    similarity = space.similarities(candidates)
    assert np.allclose(np.diag(similarity), 1.0)  # every text shares each of its n-gram orders
    # By hand, as CIDEr weighs n-grams: tf times ln(N / df), df counted over the N = 3 described images.
    def cosine(first: dict, second: dict) -> float:
        dot = sum(first[g] * second.get(g, 0.0) for g in first)
        norm = math.sqrt(sum(v * v for v in first.values())) * math.sqrt(sum(v * v for v in second.values()))
        return dot / norm if norm else 0.0

    def weights(tokens: list[str], n: int, df: dict) -> dict:
        grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
        return {g: grams.count(g) * math.log(3 / df[g]) for g in set(grams)}

    texts = {key: [t.lower().strip(".").split() for t in refs] for key, refs in REFERENCES.items()}
    documents = {}
    for image, refs in texts.items():
        for n in range(1, 5):
            for tokens in refs:
                for i in range(len(tokens) - n + 1):
                    documents.setdefault(tuple(tokens[i:i + n]), set()).add(image)
    df = {g: len(images) for g, images in documents.items()}
    first, second = texts["train_a"][0], texts["train_c"][0]
    expected = sum(cosine(weights(first, n, df), weights(second, n, df)) for n in range(1, 5)) / 4
    assert similarity[0, 1] == pytest.approx(expected, abs=1e-12)
    # The dog and the cat share only "a" and "on", which every described image has (idf 0).
    assert similarity[0, 2] == 0.0 and expected > 0.1


def test_consensus_picks_the_reference_most_like_the_others():
    # The neighbours agree on dogs on grass; the nearest neighbour's cat is the odd one out.
    lists = {"t": ["train_b", "train_a", "train_c"]}
    nearest = nearest_captions(lists, REFERENCES, depth=3)["t"]
    consensus = consensus_captions(lists, REFERENCES, depth=3)["t"]
    assert nearest.caption == "A cat sleeps on a sofa."
    assert consensus.caption in ("A dog runs on the grass.", "A dog on the grass")


def test_consensus_ties_go_to_the_nearer_neighbour():
    references = {"near": ["a red kite"], "far": ["a red kite"]}
    assert consensus_captions({"t": ["far", "near"]}, references, depth=5)["t"].source_image == "far"
    assert consensus_captions({"t": ["near", "far"]}, references, depth=5)["t"].source_image == "near"
    single = consensus_captions({"t": ["x", "near"]}, references, depth=5)["t"]
    assert (single.source_image, single.reference) == ("near", 1)
