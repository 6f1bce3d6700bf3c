"""Caption baselines by nearest-neighbour transfer (after Devlin et al. 2015, "Exploring
nearest neighbor approaches for image captioning"), on one global visual feature.

Both read a test image's nearest training images on the feature, nearest
first (the benchmark's neighbour lists), and the training images' reference
descriptions (the `captions` table); the candidates are the references of
those of its `depth` nearest training images that have any:

- nearest: the first reference (in file order) of the nearest of them;
- consensus: among every reference of those neighbours, the one most
  similar on average to the others, similarity being the CIDEr-style
  n-gram agreement below; ties go to the nearer neighbour, then the lower
  reference number. With a single candidate, that one.

Similarity of two descriptions: for n = 1..4, the cosine of their tf-idf
weighted n-gram count vectors, averaged over n. Tokens are the lower-cased
`\\w+` runs of the text. The idf of an n-gram g is ln(N / df(g)), N the
number of training images with references and df(g) those whose references
contain g (an image is a document, as in CIDEr).

A test image none of whose `depth` nearest neighbours has a reference
gets no caption (it scores 0 in the evaluation).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import scipy.sparse as sp

MAX_N = 4
TOKEN = re.compile(r"\w+")


@dataclass(frozen=True)
class TransferredCaption:
    caption: str
    source_image: str  # the training image it comes from
    reference: int  # its number among that image's references, from 1


def ngrams(text: str, n: int) -> list[tuple[str, ...]]:
    tokens = TOKEN.findall(text.lower())
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


class NgramSpace:
    """The training references as rows of unit tf-idf n-gram vectors, one block per n."""

    def __init__(self, references: Mapping[str, Sequence[str]]):
        self.images = sorted(references)
        self.rows: dict[tuple[str, int], int] = {}
        texts = []
        for image_id in self.images:
            for number, text in enumerate(references[image_id], start=1):
                self.rows[(image_id, number)] = len(texts)
                texts.append(text)
        owners = [image_id for image_id in self.images for _ in references[image_id]]
        self.vectors = sp.hstack([self._block(texts, owners, n) for n in range(1, MAX_N + 1)], format="csr")

    def _block(self, texts: list[str], owners: list[str], n: int) -> sp.csr_matrix:
        counts = [Counter(ngrams(text, n)) for text in texts]
        documents: dict[tuple[str, ...], set[str]] = {}
        for owner, count in zip(owners, counts):
            for gram in count:
                documents.setdefault(gram, set()).add(owner)
        vocabulary = {gram: column for column, gram in enumerate(sorted(documents))}
        total = len(self.images)
        idf = np.array([math.log(total / len(documents[gram])) for gram in sorted(documents)], dtype=np.float64)
        indptr, indices, values = [0], [], []
        for count in counts:
            items = sorted((vocabulary[gram], times) for gram, times in count.items())
            columns = [column for column, _ in items]
            weights = np.array([times for _, times in items], dtype=np.float64) * idf[columns]
            norm = math.sqrt(math.fsum(weights * weights))  # not a BLAS dot: its sum's order is the CPU's
            indices.extend(columns)
            values.extend((weights / norm).tolist() if norm > 0 else [0.0] * len(columns))
            indptr.append(len(indices))
        return sp.csr_matrix((values, indices, indptr), shape=(len(texts), len(vocabulary)))

    def similarities(self, candidates: list[tuple[str, int]]) -> np.ndarray:
        """The mean over n of the n-gram cosines between every two candidates."""
        block = self.vectors[[self.rows[c] for c in candidates]]
        return (block @ block.T).toarray() / MAX_N


def candidates_of(neighbours: Sequence[str], references: Mapping[str, Sequence[str]],
                  depth: int) -> list[tuple[str, int]]:
    """(training image, reference number) of the references of the `depth` nearest neighbours, nearest first."""
    found = [image_id for image_id in neighbours[:depth] if references.get(image_id)]
    return [(image_id, number) for image_id in found for number in range(1, len(references[image_id]) + 1)]


def nearest_captions(neighbour_lists: Mapping[str, Sequence[str]], references: Mapping[str, Sequence[str]],
                     depth: int) -> dict[str, TransferredCaption]:
    run = {}
    for image_id, neighbours in neighbour_lists.items():
        candidates = candidates_of(neighbours, references, depth)
        if candidates:
            source, number = candidates[0]
            run[image_id] = TransferredCaption(references[source][number - 1], source, number)
    return run


def consensus_captions(neighbour_lists: Mapping[str, Sequence[str]], references: Mapping[str, Sequence[str]],
                       depth: int, space: NgramSpace | None = None) -> dict[str, TransferredCaption]:
    """space: the references' NgramSpace, when the caller already built it (one per set of references)."""
    space = space or NgramSpace(references)
    run = {}
    for image_id, neighbours in neighbour_lists.items():
        candidates = candidates_of(neighbours, references, depth)
        if not candidates:
            continue
        similarity = space.similarities(candidates)
        # Exactly rounded sums, the same on every CPU: candidates often tie (the same reference
        # twice, or two that agree with the rest alike), and a last bit must not choose between them.
        agreement = np.array([math.fsum(row) - row[k] for k, row in enumerate(similarity)]) / max(len(candidates) - 1, 1)
        best = int(np.argmax(agreement))  # the first maximum: the nearer neighbour, the lower number
        source, number = candidates[best]
        run[image_id] = TransferredCaption(references[source][number - 1], source, number)
    return run

