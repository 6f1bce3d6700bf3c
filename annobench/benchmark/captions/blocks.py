"""Meteor's work split by blocks of test images, pooled exactly (the caption evaluation at scale).

Meteor 1.5 scores a segment (a caption against its image's references) in two steps: SCORE
aligns them and gives the segment's sufficient statistics, a line of numbers; EVAL turns
statistics into each segment's score and, pooling them, the corpus score. pycocoevalcap does
both in one process, and so did the single evaluation job. Here a block job (rule
caption_meteor_block) tokenises the references and captions of its images and runs SCORE on
every run's segments and the human bound's; each run's job (caption_run_evaluation,
caption_human_bound) reads the statistics of every block in the image order of one job and runs
one EVAL. Tokenising is line by line and SCORE segment by segment, so the figures and files are
the same bytes as one job's, whatever the blocks.
"""

from __future__ import annotations

from typing import Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from annobench.benchmark.captions.files import CaptionRun, References
from annobench.benchmark.captions.measure import human_segments, run_hypotheses, tokenized_references
from annobench.benchmark.captions.meteor import shared_meteor
from annobench.core.tables import field, rows_to_table

HUMAN_RUN = "caption_human"
NO_REFERENCE = -1

SEGMENT_SCHEMA = pa.schema([
    field("run", pa.string(), f"the caption run, or {HUMAN_RUN} for the leave-one-out references"),
    field("image_id", pa.string(), "a test image with reference descriptions"),
    field("reference", pa.int32(), f"{HUMAN_RUN}: the reference held out; else {NO_REFERENCE}"),
    field("hypothesis", pa.string(), "the caption as scored (tokenised; empty if the run gave none)"),
    field("captioned", pa.bool_(), "whether the run gave the image a caption"),
    field("statistics", pa.string(), "Meteor 1.5's sufficient statistics of the segment (its SCORE line)"),
])
REFERENCE_SCHEMA = pa.schema([
    field("image_id", pa.string(), "a test image with reference descriptions"),
    field("references", pa.list_(pa.string()), "its references as scored (tokenised), in the captions table's order"),
])


def block_segments(references: References, runs: Mapping[str, CaptionRun], method: str) -> tuple[pa.Table, pa.Table]:
    """(tokenised references, segment statistics) of a block's images: every run's segments,
    runs in name order, then the human bound's."""
    refs = tokenized_references(references, method)
    rows = []
    meteor = shared_meteor()
    for name in sorted(runs):
        hypotheses = run_hypotheses(references, runs[name], method)
        statistics = meteor.statistics([(hypotheses[image_id], texts) for image_id, texts in refs.items()])
        rows += [segment_row(name, image_id, NO_REFERENCE, hypotheses[image_id],
                             image_id in runs[name].captions, line) for image_id, line in zip(refs, statistics)]
    human = human_segments(refs)
    statistics = meteor.statistics([(held_out, others) for _, _, held_out, others in human])
    rows += [segment_row(HUMAN_RUN, image_id, j, held_out, True, line)
             for (image_id, j, held_out, _), line in zip(human, statistics)]
    segments = rows_to_table(rows, SEGMENT_SCHEMA)
    tokens = pa.Table.from_pydict({"image_id": list(refs), "references": list(refs.values())}, schema=REFERENCE_SCHEMA)
    return tokens, segments


def segment_row(run: str, image_id: str, reference: int, hypothesis: str, captioned: bool, statistics: str) -> dict:
    return {"run": run, "image_id": image_id, "reference": reference, "hypothesis": hypothesis,
            "captioned": captioned, "statistics": statistics}


def pooled_references(paths: list[str]) -> dict[str, list[str]]:
    """Every block's tokenised references, in image order (the order of one job's)."""
    merged = {}
    for path in paths:
        table = pq.read_table(path).to_pydict()
        merged.update(zip(table["image_id"], table["references"]))
    return {image_id: merged[image_id] for image_id in sorted(merged)}


def pooled_segments(paths: list[str], run: str) -> pa.Table:
    """One run's segments from every block, in image order (then reference order)."""
    parts = [pq.read_table(path, filters=[("run", "=", run)]) for path in paths]
    table = pa.concat_tables(parts) if parts else SEGMENT_SCHEMA.empty_table()
    return table.sort_by([("image_id", "ascending"), ("reference", "ascending")])


def evaluate_statistics(segments: pa.Table) -> tuple[float, list[float]]:
    """(corpus Meteor, each segment's Meteor) of segments in the given order, one EVAL."""
    return shared_meteor().evaluate(segments.column("statistics").to_pylist())
