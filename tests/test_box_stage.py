"""The box baselines' pieces (annobench.benchmark.boxes.baselines and .stage) without the workflow."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from annobench.benchmark.boxes.baselines import knn_transfer_run, transfer_box, transfer_boxes, whole_image_run
from annobench.benchmark.boxes.stage import BoxConfigError, check_config
from annobench.benchmark.runs.model import Run


def test_transfer_box_scales_the_pixels_a_box_covers():
    assert transfer_box((0, 0, 99, 49), (100, 50), (200, 100)) == (0, 0, 199, 99)  # whole image stays whole
    assert transfer_box((10, 10, 19, 19), (100, 100), (50, 50)) == (5, 5, 9, 9)
    assert transfer_box((3, 3, 3, 3), (10, 10), (5, 5)) == (1, 1, 1, 1)  # a pixel stays at least a pixel
    assert transfer_box((1, 1, 100, 100), (100, 100), (50, 50))[2] == 50  # VOC's pixels from 1 stay within


def test_transfer_boxes_gives_transfer_box_on_every_box():
    rng = np.random.default_rng(5)
    sources = rng.integers(1, 400, size=(2000, 2))
    targets = rng.integers(1, 400, size=(2000, 2))
    low = rng.integers(0, sources)
    high = np.minimum(low + rng.integers(0, sources), sources)  # up to the width: VOC's pixels from 1
    boxes = np.column_stack([low, high])
    moved = transfer_boxes(boxes, sources, targets)

    def by_the_rule(box, source, target):  # transfer_box's docstring, in exact fractions
        corners = []
        for low, high, before, after in ((box[0], box[2], source[0], target[0]),
                                         (box[1], box[3], source[1], target[1])):
            first = math.floor(Fraction(low * after, before))
            last = math.ceil(Fraction((high + 1) * after, before)) - 1
            corners.append((first, min(max(last, first), after)))
        (xmin, xmax), (ymin, ymax) = corners
        return [xmin, ymin, xmax, ymax]

    assert moved.tolist() == [by_the_rule(b, s, t) for b, s, t in zip(boxes.tolist(), sources.tolist(),
                                                                        targets.tolist())]


def test_whole_image_run_boxes_each_decided_concept_with_its_score():
    run = Run(["a", "b"], ["cat", "dog"], np.array([[0.9, 0.2], [0.4, 0.6]]),
              np.array([[True, False], [True, True]]))
    boxes = whole_image_run(run, {"a": (10, 20), "b": (30, 40)})
    assert boxes[["image_id", "concept"]].values.tolist() == [["a", "cat"], ["b", "cat"], ["b", "dog"]]
    assert boxes["score"].tolist() == [0.9, 0.4, 0.6]
    assert boxes[["xmin", "ymin", "xmax", "ymax"]].values.tolist() == [[0, 0, 9, 19], [0, 0, 29, 39], [0, 0, 29, 39]]


def test_knn_transfer_run_weighs_boxes_by_neighbour_rank():
    truth = pd.DataFrame({"image_id": ["n1", "n2", "n2"], "instance": [1, 2, 1], "concept": ["cat", "dog", "cat"],
                          "xmin": [0, 5, 0], "ymin": [0, 5, 0], "xmax": [9, 9, 4], "ymax": [9, 9, 4]})
    sizes = {"t": (20, 20), "n1": (10, 10), "n2": (10, 10)}
    run = knn_transfer_run(["t"], [["n2", "n1"]], truth, sizes, k=2)
    assert run[["concept", "score"]].values.tolist() == [["cat", 1.0], ["dog", 1.0], ["cat", 0.5]]
    assert run[["xmin", "ymin", "xmax", "ymax"]].values.tolist() == [[0, 0, 9, 9], [10, 10, 19, 19], [0, 0, 19, 19]]


def _config(**benchmark) -> dict:
    base = {"ground_truth": {"source": "csv"}, "baselines": ["knn"],
            "boxes": {"source": "", "path": "", "baselines": ["whole_image"]},
            "selection": {"truth": "", "instances": ""}}
    return {"input": {"segmentations": ""}, "benchmark": {**base, **benchmark}}


@pytest.mark.parametrize("section, message", [
    ({"boxes": {"source": "segmentations", "path": "", "baselines": []}}, "input.segmentations is empty"),
    ({"boxes": {"source": "voc", "path": "", "baselines": []}}, "benchmark.boxes.path is empty"),
    ({"baselines": ["random"], "boxes": {"source": "voc", "path": "x", "baselines": ["whole_image"]}},
     "add knn to benchmark.baselines"),
    ({"ground_truth": {"source": ""}, "boxes": {"source": "voc", "path": "x", "baselines": []}},
     "set benchmark.ground_truth.source"),
])
def test_bad_combinations_are_refused(section, message):
    with pytest.raises(BoxConfigError, match=message):
        check_config(_config(**section))
