"""The content-selection model (subtask 3 of ImageCLEF 2016, Gilbert et al. 2016): each test
image's box instances and gold descriptions (the instances each mentions), and a run's selection."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from annobench.core.errors import AnnobenchError

Selection = Mapping[str, frozenset]  # image_id -> the selected instance ids


class SelectionError(AnnobenchError):
    """Content-selection inputs that cannot be used (what and where in the message)."""


@dataclass(frozen=True)
class Box:
    """Inclusive integer pixel coordinates (the PASCAL VOC devkit's "+1" convention, Everingham et
    al. 2010)."""

    xmin: int
    ymin: int
    xmax: int
    ymax: int

    @property
    def area(self) -> int:
        return (self.xmax - self.xmin + 1) * (self.ymax - self.ymin + 1)


@dataclass(frozen=True)
class ImageTruth:
    """One test image: its box instances (id -> box, None when the coordinates are not
    given) and its gold descriptions (id -> the instances it mentions, never empty)."""

    boxes: Mapping[str, Box | None]
    descriptions: Mapping[str, frozenset]


@dataclass(frozen=True)
class SelectionTruth:
    """The images evaluated (each with at least one description), and what reading left out."""

    images: Mapping[str, ImageTruth]
    notes: dict = field(default_factory=dict)  # counts of what the reader skipped, for the JSON

    def summary(self) -> dict:
        return {
            "images": len(self.images),
            "descriptions": sum(len(image.descriptions) for image in self.images.values()),
            "box_instances": sum(len(image.boxes) for image in self.images.values()),
            **self.notes,
        }
