"""Content-selection baselines (ImageCLEF 2016 subtask 3, Gilbert et al. 2016, section 3.4): at most
k of each image's box instances, drawn at random (seeded per image) or the largest boxes first. The
human upper bound is measure.human_scores."""

from __future__ import annotations

from annobench.benchmark.selection.model import SelectionError, SelectionTruth
from annobench.benchmark.splits import unit_hash

DEFAULT_K = 3  # "at most three bounding boxes" (Gilbert et al. 2016, section 3.4)


def _check_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise SelectionError(f"k must be a positive integer, got {k!r}")
    return k


def random_selection(truth: SelectionTruth, seed: int, k: int = DEFAULT_K) -> dict[str, frozenset]:
    """min(k, n) of each image's n instances, a uniformly random subset: the instances with
    the smallest unit_hash(seed, image_id NUL instance). Each image's choice depends only on
    the seed and its own ids, not on the order or presence of other images."""
    k = _check_k(k)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SelectionError(f"seed must be an integer >= 0, got {seed!r}")
    chosen = {}
    for image_id, image in sorted(truth.images.items()):
        order = sorted(image.boxes, key=lambda instance: (unit_hash(seed, f"{image_id}\x00{instance}"), instance))
        chosen[image_id] = frozenset(order[:k])
    return chosen


def largest_selection(truth: SelectionTruth, k: int = DEFAULT_K) -> dict[str, frozenset]:
    """Each image's k largest boxes by area (all of them when it has fewer), ties towards the
    smaller instance id (string order)."""
    k = _check_k(k)
    chosen = {}
    for image_id, image in sorted(truth.images.items()):
        missing = sorted(instance for instance, box in image.boxes.items() if box is None)
        if missing:
            raise SelectionError(f"image {image_id!r}: instance {missing[0]!r} has no box coordinates; "
                                 "the largest-first baseline needs xmin,ymin,xmax,ymax")
        order = sorted(image.boxes, key=lambda instance: (-image.boxes[instance].area, instance))
        chosen[image_id] = frozenset(order[:k])
    return chosen
