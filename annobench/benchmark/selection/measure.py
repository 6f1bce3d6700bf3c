"""The content-selection measure (subtask 3 of ImageCLEF 2016, Gilbert et al. 2016, sections 2.5 and
3.4).

Each test image has box instances and gold descriptions; description m
mentions the set G_m of the image's instances. A run selects a set S of the
image's instances. Per image, with M descriptions (eq. 3-5):

    P_I = (1/M) Σ_m |G_m ∩ S| / |S|     R_I = (1/M) Σ_m |G_m ∩ S| / |G_m|
    F_I = 2 P_I R_I / (P_I + R_I)

Every 0/0 counts as 0. P, R and F are the means over the images of the
truth, each with its population standard deviation (ddof=0; Table 4 of the
overview cannot tell ddof=0 from ddof=1). An image the run does not mention
has S = ∅ (P_I = R_I = F_I = 0).

Per-image values are exact fractions (fractions.Fraction), rounded to float
once at the end: results do not depend on the order of images, descriptions
or selections, and the leave-one-out P and R of the human upper bound, which
are equal by symmetry (see human_scores), come out bitwise equal.

Baselines: random_selection (at most k instances at random, seeded per
image) and largest_selection (the k largest boxes), in baselines; and
human_scores, the leave-one-out human upper bound, here. The model (Box,
ImageTruth, SelectionTruth) is in model, the readers in files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping, Sequence

from annobench.benchmark.selection.model import Selection, SelectionError, SelectionTruth


@dataclass(frozen=True)
class ImageScores:
    precision: Fraction
    recall: Fraction
    f: Fraction


# --- the measure --------------------------------------------------------------

def _ratio(numerator: int | Fraction, denominator: int | Fraction) -> Fraction:
    return Fraction(numerator) / denominator if denominator else Fraction(0)


def _harmonic(precision: Fraction, recall: Fraction) -> Fraction:
    return _ratio(2 * precision * recall, precision + recall)


def image_scores(descriptions: Sequence[frozenset], selected: frozenset) -> ImageScores:
    """Eq. 3-5 for one image: its descriptions' instance sets G_m against the selection S."""
    if not descriptions:
        raise SelectionError("an image needs at least one description to be scored")
    shared = [len(gold & selected) for gold in descriptions]
    count = len(descriptions)
    precision = sum((_ratio(n, len(selected)) for n in shared), Fraction(0)) / count
    recall = sum((_ratio(n, len(gold)) for n, gold in zip(shared, descriptions)), Fraction(0)) / count
    return ImageScores(precision, recall, _harmonic(precision, recall))


def check_selection(truth: SelectionTruth, selection: Selection) -> None:
    """Every selected image is evaluated and every selected instance is one of its boxes."""
    for image_id in sorted(selection):
        if image_id not in truth.images:
            raise SelectionError(f"image {image_id!r} of the run is not an image of the ground truth")
        unknown = sorted(set(selection[image_id]) - set(truth.images[image_id].boxes))
        if unknown:
            raise SelectionError(f"image {image_id!r}: instance(s) {', '.join(map(repr, unknown[:5]))} "
                                 "are not among its box instances")


def run_scores(truth: SelectionTruth, selection: Selection) -> dict[str, ImageScores]:
    """Per image of the truth (sorted by id); an image missing from the selection has S = ∅."""
    check_selection(truth, selection)
    return {
        image_id: image_scores(list(image.descriptions.values()), frozenset(selection.get(image_id, ())))
        for image_id, image in sorted(truth.images.items())
    }


def human_scores(truth: SelectionTruth) -> dict[str, ImageScores]:
    """The leave-one-out human upper bound, per image with at least two descriptions.

    Each description j in turn is the run (S = G_j) against the M - 1 others;
    its P_j, R_j and F_j follow eq. 3-5; the image's P, R and F are the means
    of P_j, R_j and F_j over j (F is computed per description, then averaged,
    so it is not 2PR/(P+R) of the image's means).

    Symmetry: P_I = (1/(M(M-1))) Σ_{j≠m} |G_j ∩ G_m| / |G_j| and R_I is the
    same sum with |G_m| below; swapping the names j and m turns one into the
    other, so P_I = R_I for every image (hence equal means and standard
    deviations, as Table 4's human row shows), while P_j ≠ R_j for a single
    description in general. And F_j ≤ (P_j + R_j) / 2, so F_I ≤ P_I.
    """
    scores = {}
    for image_id, image in sorted(truth.images.items()):
        descriptions = list(image.descriptions.values())
        if len(descriptions) < 2:
            continue
        held_out = [image_scores(descriptions[:j] + descriptions[j + 1:], run)
                    for j, run in enumerate(descriptions)]
        scores[image_id] = ImageScores(_mean([s.precision for s in held_out]), _mean([s.recall for s in held_out]),
                                       _mean([s.f for s in held_out]))
    return scores


def _mean(values: list[Fraction]) -> Fraction:
    return sum(values, Fraction(0)) / len(values)


def summarise(scores: Mapping[str, ImageScores]) -> dict:
    """{"P"|"R"|"F": {"mean", "std"}, "images"}: means over images and population standard
    deviations, as floats (NaN over no image)."""
    summary = {}
    for key, attribute in (("P", "precision"), ("R", "recall"), ("F", "f")):
        summary[key] = _mean_and_std([getattr(s, attribute) for s in scores.values()])
    summary["images"] = len(scores)
    return summary


def _mean_and_std(values: list[Fraction]) -> dict:
    if not values:
        return {"mean": math.nan, "std": math.nan}
    mean = _mean(values)
    variance = _mean([(v - mean) ** 2 for v in values])
    return {"mean": float(mean), "std": math.sqrt(variance)}
