"""Image-level ground truth, in every form its sources use (the ImageCLEF 2012 task page's concept
and annotation files, a CSV, region labels as in Escalante et al. 2008; the concept vocabularies
it is checked against are in annobench.benchmark.vocabulary).

Sources: a CSV `image_id,concept`; ImageCLEF 2012 concept files (one per
concept) and annotation files (one per image), clean or raw; and the region
labels of a segmentation (an image has every label one of its regions has,
optionally with the label's ancestors). Raw judgments become clean ones by
majority vote; the agreement (the share of annotators who saw the concept)
is kept beside each clean row.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from annobench.benchmark.vocabulary import Concept, GroundTruthError
from annobench.core.fsutil import atomic_path, read_user_text
from annobench.core.tables import field

GROUND_TRUTH_SCHEMA = pa.schema(
    [
        field("image_id", pa.string(), "key of the image"),
        field("concept", pa.string(), "a concept present in the image"),
        field("agreement", pa.float32(), "share of annotators who saw it (1 for clean sources)"),
        field("derived", pa.bool_(), "added as an ancestor of a labelled concept, not given directly"),
    ]
)

GROUND_TRUTH_SOURCES = ("csv", "imageclef2012_concepts", "imageclef2012_annotations", "regions")


@dataclass
class GroundTruth:
    """Rows (image_id, concept, agreement, derived), one per present concept."""

    rows: pd.DataFrame
    notes: list[str] = dataclass_field(default_factory=list)  # what was dropped or resolved, for the log

    def label_sets(self) -> dict[str, frozenset[str]]:
        grouped = self.rows.groupby("image_id", sort=True)["concept"]
        return {image_id: frozenset(concepts) for image_id, concepts in grouped}


# -- ground truth sources ----------------------------------------------------

def read_truth_csv(path: Path | str) -> GroundTruth:
    """CSV with header `image_id,concept` (further columns ignored), one row per present concept."""
    path = Path(path)
    reader = csv.reader(io.StringIO(read_user_text(path, GroundTruthError)))
    try:
        image_ids, concepts = _truth_columns(reader, path)
    except csv.Error as error:  # e.g. a field past the csv module's size limit
        raise GroundTruthError(f"{path}:{reader.line_num}: {error}") from None
    frame = pd.DataFrame({"image_id": image_ids, "concept": concepts})
    return _deduplicated(frame.assign(agreement=np.float32(1.0), derived=False), [])


def _truth_columns(reader, path: Path) -> tuple[list[str], list[str]]:
    """The image_id and concept of each row under the header (blank rows skipped), kept as two columns of
    shared strings: a row's dict and tuple cost more than the row's bytes many times over. No rows is an
    error, as a ground truth where no image has any concept cannot be meant (every measure would be 0 or
    undefined)."""
    header = next(reader, None)
    if header is None:
        raise GroundTruthError(f"{path}: empty file; expected the header image_id,concept and a row per "
                               "concept present in an image")
    if not {"image_id", "concept"} <= set(header):
        raise GroundTruthError(f"{path}: needs the header image_id,concept")
    at_id, at_concept = header.index("image_id"), header.index("concept")
    image_ids, concepts, shared = [], [], {}
    for line, fields in enumerate(filter(None, reader), 2):
        image_id = fields[at_id].strip() if at_id < len(fields) else ""
        concept = fields[at_concept].strip() if at_concept < len(fields) else ""
        if not image_id or not concept:
            raise GroundTruthError(f"{path}:{line}: empty image_id or concept")
        image_ids.append(shared.setdefault(image_id, image_id))
        concepts.append(shared.setdefault(concept, concept))
    if not image_ids:
        raise GroundTruthError(f"{path}: a header and no rows; expected a row image_id,concept per concept present "
                               "in an image")
    return image_ids, concepts


def _require_pairs(pairs: list, where: Path, expected: str) -> list:
    if not pairs:
        raise GroundTruthError(f"{where}: no image has any concept; expected {expected}")
    return pairs


def read_concept_files(folder: Path | str, concepts: list[Concept], raw: bool) -> GroundTruth:
    """ImageCLEF 2012 concept files `FOLDER/CONCEPT.txt`. Clean: one image id a line.
    Raw: `id j1 j2 j3 ...` (0/1 judgments, at least three): present by majority vote."""
    folder = Path(folder)
    pairs, notes = [], []
    for concept in concepts:
        path = folder / f"{concept.name}.txt"
        if not path.is_file():
            notes.append(f"no concept file for {concept.name!r} ({path}): no image has it")
            continue
        for line, fields in _lines(path):
            if raw:
                agreement = _judgment_agreement(fields, path, line)
                if agreement > 0.5:
                    pairs.append((fields[0], concept.name, agreement))
            elif len(fields) != 1:
                raise GroundTruthError(f"{path}:{line}: a clean concept file has one image id a line "
                                       f"(got {len(fields)} fields; set raw for judgments)")
            else:
                pairs.append((fields[0], concept.name, 1.0))
    return _truth(_require_pairs(pairs, folder, "CONCEPT.txt files listing the images that have the concept"), notes)


def read_annotation_files(folder: Path | str, concepts: list[Concept], raw: bool) -> GroundTruth:
    """ImageCLEF 2012 annotation files `FOLDER/IMAGE_ID.txt`. Clean: one concept a line.
    Raw: `concept agreement`: present when the agreement is over one half (majority vote)."""
    folder = Path(folder)
    known = {c.name for c in concepts}
    files = sorted(p for p in folder.glob("*.txt") if p.is_file())
    if not files:
        raise GroundTruthError(f"{folder}: no annotation files (IMAGE_ID.txt)")
    pairs = []
    for path in files:
        for line, fields in _lines(path):
            if fields[0] not in known:
                raise GroundTruthError(f"{path}:{line}: unknown concept {fields[0]!r}")
            if raw:
                agreement = _agreement_value(fields, path, line)
                if agreement > 0.5:
                    pairs.append((path.stem, fields[0], agreement))
            elif len(fields) != 1:
                raise GroundTruthError(f"{path}:{line}: a clean annotation file has one concept a line")
            else:
                pairs.append((path.stem, fields[0], 1.0))
    return _truth(_require_pairs(pairs, folder, "IMAGE_ID.txt files listing the concepts of the image"))


def truth_from_regions(regions: pd.DataFrame, lift_to_ancestors: bool) -> GroundTruth:
    """Every label one of an image's regions has (any annotator); with `lift_to_ancestors`, also the
    label's ancestors (from the regions' `label_path`, root first), marked `derived`."""
    labelled = regions[regions["label"].notna()]
    pairs = {(i, label): False for i, label in zip(labelled["image_id"], labelled["label"])}
    if lift_to_ancestors and "label_path" in labelled:
        for image_id, path in zip(labelled["image_id"], labelled["label_path"]):
            for ancestor in list(path if path is not None else [])[:-1]:
                pairs.setdefault((image_id, ancestor), True)
    rows = [(i, c, 1.0, derived) for (i, c), derived in pairs.items()]
    return _truth(rows)


def truth_from_boxes(boxes: pd.DataFrame) -> GroundTruth:
    """Every concept one of an image's boxes has (the boxes table: kept boxes only, its rejects never
    reach it), in the table's order."""
    return _truth((i, c, 1.0) for i, c in dict.fromkeys(zip(boxes["image_id"], boxes["concept"])))


def restrict_to_vocabulary(truth: GroundTruth, concepts: list[Concept]) -> GroundTruth:
    """Drop rows whose concept is not in the vocabulary, saying how many in the notes."""
    known = {c.name for c in concepts}
    keep = truth.rows["concept"].isin(known)
    notes = list(truth.notes)
    if not keep.all():
        unknown = sorted(set(truth.rows.loc[~keep, "concept"]))
        notes.append(f"{int((~keep).sum())} ground-truth row(s) with {len(unknown)} concept(s) outside the "
                     f"vocabulary dropped: {', '.join(unknown[:10])}")
    return GroundTruth(truth.rows[keep].reset_index(drop=True), notes)


def _truth(pairs, notes: list[str] | None = None) -> GroundTruth:
    records = [(p[0], p[1], p[2], p[3] if len(p) > 3 else False) for p in pairs]
    return _deduplicated(pd.DataFrame(records, columns=["image_id", "concept", "agreement", "derived"]), notes)


def _deduplicated(frame: pd.DataFrame, notes: list[str] | None) -> GroundTruth:
    frame = frame.astype({"image_id": str, "concept": str, "agreement": "float32", "derived": bool})
    # A pair given twice counts once (the highest agreement, a direct label over a derived one).
    frame = frame.sort_values(["image_id", "concept", "derived", "agreement"], ascending=[True, True, True, False])
    frame = frame.drop_duplicates(["image_id", "concept"]).reset_index(drop=True)
    return GroundTruth(frame, notes or [])


def _judgment_agreement(fields: list[str], path: Path, line: int) -> float:
    judgments = fields[1:]
    if len(judgments) < 3 or any(j not in ("0", "1") for j in judgments):
        raise GroundTruthError(f"{path}:{line}: a raw concept line is 'id j1 j2 j3 ...' with at least three "
                               f"0/1 judgments, got {' '.join(fields)!r}")
    return sum(j == "1" for j in judgments) / len(judgments)


def _agreement_value(fields: list[str], path: Path, line: int) -> float:
    try:
        value = float(fields[1]) if len(fields) == 2 else float("nan")
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:
        raise GroundTruthError(f"{path}:{line}: a raw annotation line is 'concept agreement' with an agreement "
                               f"in [0, 1], got {' '.join(fields)!r}")
    return value


def _lines(path: Path):
    for line, text in enumerate(read_user_text(path, GroundTruthError).splitlines(), 1):
        if text.strip():
            yield line, text.split()


# -- matrices and tables -----------------------------------------------------

def truth_matrix(label_sets: dict[str, frozenset[str]], image_ids: list[str], concepts: list[str]) -> np.ndarray:
    """Boolean (images, concepts): row i is image_ids[i]'s label set (empty for an unlabelled image)."""
    column = {name: j for j, name in enumerate(concepts)}
    matrix = np.zeros((len(image_ids), len(concepts)), dtype=bool)
    for i, image_id in enumerate(image_ids):
        for concept in label_sets.get(image_id, ()):
            if concept in column:
                matrix[i, column[concept]] = True
    return matrix


def ground_truth_table(truth: GroundTruth) -> pa.Table:
    return pa.Table.from_pandas(truth.rows, schema=GROUND_TRUTH_SCHEMA, preserve_index=False)


def read_ground_truth_table(path: Path | str) -> GroundTruth:
    return GroundTruth(pq.read_table(path).to_pandas())


# -- ImageCLEF 2012 exports --------------------------------------------------

def export_imageclef2012(truth: GroundTruth, concepts: list[Concept], folder: Path | str,
                         annotation_files: bool) -> int:
    """Write the clean concept files (`concepts/CONCEPT.txt`, image ids sorted), the vocabulary
    (`concepts.txt`) and, if asked, the clean annotation files (`annotations/IMAGE_ID.txt`,
    concepts in vocabulary order). One folder, renamed into place whole. Returns files written."""
    order = {c.name: j for j, c in enumerate(concepts)}
    by_concept = truth.rows.groupby("concept")["image_id"].apply(sorted).to_dict()
    written = 0
    with atomic_path(folder) as tmp:
        (tmp / "concepts").mkdir(parents=True)
        (tmp / "concepts.txt").write_text("".join(f"{c.name}\n" for c in concepts), encoding="utf-8")
        for concept in concepts:
            ids = by_concept.get(concept.name, [])
            (tmp / "concepts" / f"{concept.name}.txt").write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
            written += 1
        if annotation_files:
            (tmp / "annotations").mkdir()
            for image_id, names in sorted(truth.label_sets().items()):
                text = "".join(f"{n}\n" for n in sorted(names, key=order.__getitem__))
                (tmp / "annotations" / f"{image_id}.txt").write_text(text, encoding="utf-8")
                written += 1
    return written + 1
