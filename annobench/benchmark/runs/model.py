"""A run as matrices (the run formats of the ImageCLEF 2012 task page and of Villegas and Paredes
2014, section 2.2): what every run form reads into and writes from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(eq=False)
class Run:
    """A run as matrices: row = run line (test image), column = vocabulary concept.

    Outside the listed concepts read_run leaves scores NaN and decisions
    False; listed is None when every image lists every concept (the 2012 form).
    """

    image_ids: list[str]
    concepts: list[str]
    scores: np.ndarray
    decisions: np.ndarray
    listed: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.image_ids = list(self.image_ids)
        self.concepts = list(self.concepts)
        if len(set(self.concepts)) != len(self.concepts):
            raise ValueError("Run.concepts names a concept twice")
        self.scores = np.asarray(self.scores, dtype=np.float64)
        self.decisions = _as_bool(self.decisions, "decisions")
        if self.listed is not None:
            self.listed = _as_bool(self.listed, "listed")
        shape = (len(self.image_ids), len(self.concepts))
        for name in ("scores", "decisions", "listed"):
            value = getattr(self, name)
            if value is not None and value.shape != shape:
                raise ValueError(f"Run.{name} has shape {value.shape}; expected {shape} (images x concepts)")

    def listed_mask(self) -> np.ndarray:
        """Which (image, concept) cells the run speaks for."""
        if self.listed is None:
            return np.ones(self.scores.shape, dtype=bool)
        return self.listed

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Run):
            return NotImplemented
        same_listed = (self.listed is None and other.listed is None) or (
            self.listed is not None and other.listed is not None and np.array_equal(self.listed, other.listed)
        )
        return (
            self.image_ids == other.image_ids
            and self.concepts == other.concepts
            and np.array_equal(self.scores, other.scores, equal_nan=True)
            and np.array_equal(self.decisions, other.decisions)
            and same_listed
        )


def _as_bool(values: object, name: str) -> np.ndarray:
    values = np.asarray(values)
    if values.dtype == bool:
        return values
    if not np.isin(values, (0, 1)).all():
        raise ValueError(f"Run.{name} must be bool (or 0/1)")
    return values.astype(bool)


def check_ids_writable(run: Run) -> None:
    """Refuse ids a run or list file cannot hold: their fields are separated by spaces."""
    for line, image_id in enumerate(run.image_ids, 1):
        if not image_id or any(char.isspace() for char in image_id):
            raise ValueError(f"image id {image_id!r} (line {line}) is empty or holds whitespace; "
                             "runs and lists separate fields by spaces")
