"""The caption measure (subtask 2 of ImageCLEF 2016, Gilbert et al. 2016, sections 2.2, 2.5 and 3.3,
Table 3; Meteor 1.5, Denkowski and Lavie 2014).

Each image's Meteor 1.5 score of the run's caption against the image's references, by
the reference jar (meteor.MeteorProcess); over the images of the references their mean,
population standard deviation (divide by N), median, min and max, as in Table 3, with the
corpus-level Meteor pycocoevalcap computes (the segments' statistics pooled) beside them.
Secondary: BLEU-1..4, ROUGE-L and CIDEr as pycocoevalcap computes them over the corpus.

An image the run does not caption scores 0 and counts in every statistic; for the corpus
scores it is sent with an empty caption, so its references count against the run.

Human upper bound: each reference in turn is the hypothesis against the image's other
references (leave-one-out); an image's score is the mean over its references, and the
statistics go over the images with at least two references.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from annobench.benchmark.captions.files import CaptionRun, References
from annobench.benchmark.captions.meteor import shared_meteor, tokenize

BLEU_KEYS = ("bleu_1", "bleu_2", "bleu_3", "bleu_4")


def statistics(scores: Sequence[float], corpus: float) -> dict:
    """{"mean", "std" (population), "median", "min", "max", "corpus"}; NaN over no image."""
    if not len(scores):
        return {key: math.nan for key in ("mean", "std", "median", "min", "max")} | {"corpus": corpus}
    values = np.asarray(scores, dtype=np.float64)
    return {"mean": float(values.mean()), "std": float(values.std(ddof=0)), "median": float(np.median(values)),
            "min": float(values.min()), "max": float(values.max()), "corpus": float(corpus)}


def tokenized_references(references: References, method: str) -> dict[str, list[str]]:
    """Each image's references tokenised (one tokenizer run for all of them, as pycocoevalcap does)."""
    flat = [text for image_id in references.images for text in references.texts(image_id)]
    tokens = iter(tokenize(flat, method))
    return {image_id: [next(tokens) for _ in refs] for image_id, refs in references.images.items()}


def run_hypotheses(references: References, run: CaptionRun, method: str) -> dict[str, str]:
    """The run's caption of each image of the references, tokenised; "" where it has none."""
    present = [image_id for image_id in references.images if image_id in run.captions]
    tokens = dict(zip(present, tokenize([run.captions[image_id] for image_id in present], method)))
    return {image_id: tokens.get(image_id, "") for image_id in references.images}


def evaluate_run(references: References, run: CaptionRun, method: str = "ptb") -> dict:
    """Meteor statistics and the secondary measures of a run, with `images_not_in_run`."""
    return score_runs(references, {run.path: run}, method)[run.path][0]


def score_runs(references: References, runs: Mapping[str, CaptionRun],
               method: str = "ptb") -> dict[str, tuple[dict, dict[str, float]]]:
    """Each run's evaluate_run result and each image's Meteor (0 where the run has no caption); the
    references are tokenised once and one Meteor process (shared_meteor) scores every run."""
    refs = tokenized_references(references, method)
    scored = {}
    meteor = shared_meteor()
    for name, run in runs.items():
        hypotheses = run_hypotheses(references, run, method)
        corpus, scores = meteor.score(run_segments(refs, hypotheses))
        scored[name] = run_result(refs, hypotheses, set(run.captions), corpus, scores)
    return scored


def run_segments(refs: Mapping[str, list[str]], hypotheses: Mapping[str, str]) -> list[tuple[str, list[str]]]:
    """A run's Meteor segments, (caption, the image's references), in the references' image order."""
    return [(hypotheses[image_id], refs[image_id]) for image_id in refs]


def run_result(refs: Mapping[str, list[str]], hypotheses: Mapping[str, str], captioned: set[str], corpus: float,
               scores: Sequence[float]) -> tuple[dict, dict[str, float]]:
    """A run's evaluation from its segments' Meteor (in the references' image order) and the
    tokenised texts: the statistics, the secondary measures and each image's Meteor."""
    image_ids = list(refs)
    per_image = {image_id: score if image_id in captioned else 0.0 for image_id, score in zip(image_ids, scores)}
    result = {"meteor": statistics(list(per_image.values()), corpus), **secondary_measures(refs, hypotheses),
              "images": len(image_ids), "images_not_in_run": sum(i not in captioned for i in image_ids)}
    return result, per_image


def secondary_measures(refs: Mapping[str, list[str]], hypotheses: Mapping[str, str]) -> dict:
    """BLEU-1..4 (corpus, 'closest' reference length), ROUGE-L and CIDEr (means over images)
    exactly as pycocoevalcap's scorers compute them on tokenised text."""
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    gts = {image_id: list(texts) for image_id, texts in refs.items()}
    res = {image_id: [hypotheses[image_id]] for image_id in refs}
    bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
    rouge, _ = Rouge().compute_score(gts, res)
    cider, _ = Cider().compute_score(gts, res)
    return {**dict(zip(BLEU_KEYS, map(float, bleu))), "rouge_l": float(rouge), "cider": float(cider)}


def human_bound(references: References, method: str = "ptb") -> dict:
    """Leave-one-out Meteor of the references: statistics over the images with two or more
    references (`images`), and `images_left_out`. `corpus` pools every leave-one-out segment."""
    refs = tokenized_references(references, method)
    segments = human_segments(refs)
    corpus, scores = shared_meteor().score([(held_out, others) for _, _, held_out, others in segments])
    return human_result(refs, [image_id for image_id, *_ in segments], corpus, scores)


def human_segments(refs: Mapping[str, list[str]]) -> list[tuple[str, int, str, list[str]]]:
    """(image, reference number, that reference, the image's other references) for each reference
    of the images with two or more, in image order."""
    segments = []
    for image_id, texts in refs.items():
        if len(texts) >= 2:
            segments += [(image_id, j, held_out, texts[:j] + texts[j + 1:]) for j, held_out in enumerate(texts)]
    return segments


def human_result(refs: Mapping[str, list[str]], owners: Sequence[str], corpus: float,
                 scores: Sequence[float]) -> dict:
    """The human bound from the leave-one-out segments' Meteor (`owners`: each segment's image)."""
    per_image: dict[str, list[float]] = {}
    for image_id, score in zip(owners, scores):
        per_image.setdefault(image_id, []).append(score)
    means = [float(np.mean(values)) for values in per_image.values()]
    return {"meteor": statistics(means, corpus), "images": len(per_image),
            "images_left_out": len(refs) - len(per_image)}
