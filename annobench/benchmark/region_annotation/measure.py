"""The region measures of SAIAPR TC-12 (Escalante et al. 2008, section 5): `e_hard`, `e_ontology` and
`region_measures` score the labels predicted for regions against their true labels."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from annobench.core.errors import AnnobenchError


class RegionMeasureError(AnnobenchError):
    """Labels (or an ontology) that the region measures cannot be computed on."""


def _label_vector(name: str, labels) -> np.ndarray:
    array = np.asarray(labels, dtype=object)
    if array.ndim != 1:
        raise RegionMeasureError(f"{name} must be a 1-D sequence of labels, got shape {array.shape}")
    return array


def _label_pair(true_labels, predicted_labels) -> tuple[np.ndarray, np.ndarray]:
    truth = _label_vector("true_labels", true_labels)
    predicted = _label_vector("predicted_labels", predicted_labels)
    if truth.shape != predicted.shape:
        raise RegionMeasureError(f"{truth.size} true labels but {predicted.size} predicted labels")
    return truth, predicted


def e_hard(true_labels, predicted_labels) -> np.ndarray:
    """1.0 per region whose predicted label differs from the true one, else 0.0."""
    truth, predicted = _label_pair(true_labels, predicted_labels)
    return (truth != predicted).astype(np.float64)


def _paths_to_root(parents: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Every label of the ontology -> (itself, its parent, ..., the root)."""
    if not isinstance(parents, Mapping):
        raise RegionMeasureError(f"parents must map child label -> parent label, got {type(parents).__name__}")
    paths: dict[str, tuple[str, ...]] = {}
    for label in {*parents, *parents.values()}:
        chain, seen = [label], {label}
        while chain[-1] in parents and chain[-1] not in paths:
            parent = parents[chain[-1]]
            if parent in seen:
                raise RegionMeasureError(f"the ontology has a cycle through {parent!r}")
            chain.append(parent)
            seen.add(parent)
        tail = paths.get(chain[-1], (chain[-1],))
        paths[label] = tuple(chain[:-1]) + tail
    return paths


def _ontology_error(t, p, paths: dict[str, tuple[str, ...]]) -> float:
    if t == p:
        return 0.0
    if t not in paths or p not in paths:
        return 1.0
    t_path, p_path = paths[t], paths[p]
    if p not in t_path and t not in p_path:
        return 1.0
    t_depth, p_depth = len(t_path) - 1, len(p_path) - 1
    return abs(t_depth - p_depth) / max(t_depth, p_depth)


def e_ontology(true_labels, predicted_labels, parents: Mapping[str, str]) -> np.ndarray:
    """Soft region error of Escalante et al. 2008, section 5, per region.

    0 when the labels are equal; |depth(t) - depth(p)| / max(depth(t),
    depth(p)) when one label lies on the other's path to the root; else 1.
    This is the reading the worked example (trees vs tree: 0.25) and Table 9
    (trees vs vegetation 0.33, road vs highway 0.25) fix; the printed
    equation 1 - [in_path x ratio] would give 0.75 for trees vs tree.

    parents maps child -> parent. The root is the label without parent and
    has depth 0, so its children have depth 1: name the root in `parents`
    (e.g. "landscape-nature" -> "object"), or the top categories become
    roots and every depth shifts by one. A label absent from the ontology
    lies on no path but its own: error 0 against itself, 1 against anything
    else (as if it hung directly under a root of its own).
    """
    truth, predicted = _label_pair(true_labels, predicted_labels)
    paths = _paths_to_root(parents)
    errors = np.empty(truth.size, dtype=np.float64)
    cache: dict[tuple, float] = {}
    for index, pair in enumerate(zip(truth.tolist(), predicted.tolist())):
        if pair not in cache:
            cache[pair] = _ontology_error(pair[0], pair[1], paths)
        errors[index] = cache[pair]
    return errors


def region_measures(true_labels, predicted_labels, parents: Mapping[str, str] | None = None) -> dict:
    """Mean e_hard and e_ontology over the regions, and how many regions.

    Without an ontology, e_ontology is computed against an empty one and so
    equals e_hard.
    """
    hard = e_hard(true_labels, predicted_labels)
    if hard.size == 0:
        raise RegionMeasureError("no regions to evaluate")
    soft = e_ontology(true_labels, predicted_labels, parents or {})
    return {"e_hard": float(hard.mean()), "e_ontology": float(soft.mean()), "regions": int(hard.size)}
