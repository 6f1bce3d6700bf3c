"""The participant's kit and the organisers' test truth (rule campaign_kit).

An ImageCLEF round releases the development data with its truth and the test inputs without
theirs, receives runs, and scores them against the test truth it kept (Villegas and Paredes
2014, sections 2.1-2.2; Gilbert et al. 2016, sections 2.3-2.5). The job writes two folders:

- ``kit/``, what a participant downloads: the vocabulary; the DEVELOPMENT truth (the images of
  the train and dev splits) in every form the build writes it; each subtask's TEST inputs (the
  test images, with each one's concept list for the annotation runs and its size for the box
  runs; the test images' box instances for content selection; the queries, under ids of their
  own, and the candidate images for text illustration); one example run of each subtask in the
  form a participant submits, with its metadata file; a README saying how to check a run. The
  release adds ``kit/data/``: links to its images, features and text (release.assemble).
- ``truth/``, what the organisers keep: the TEST truth of every subtask in the same forms, the
  map from the kit's query ids to the build's, and the unseen concepts (those of the test truth
  that the development truth lacks).

Nothing the kit holds is computed from the test truth. The example runs are drawn at random
(seeded) or fixed: a transferred caption or box could be a test image's own, so the examples are
no baselines that read the training truth. A test image's concept list is the whole vocabulary:
the build defines no per-image lists. The kit's query ids come from the page, never the image:
`P` + 12 hex digits of SHA-256(seed NUL page) + `-k`, the page's k-th test query in the order of
SHA-256(seed NUL query id); keep `benchmark.campaign.seed` private in a real round.
"""

from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from annobench.benchmark.annotation.ground_truth import (
    GroundTruth,
    export_imageclef2012,
    ground_truth_table,
    read_ground_truth_table,
)
from annobench.benchmark.vocabulary import read_concepts_table
from annobench.core.fsutil import atomic_path
from annobench.core.jobs import Job
from annobench.core.tables import field, rows_to_table, write_table

# Where each file is, relative to kit/ or truth/: the run jobs and the README read these names.
CONCEPTS = "concepts.txt"
DEVELOPMENT_IMAGES = "development/images.csv"
TEST_FILES = {
    "annotation": {"images": "test/annotation/test_images.txt", "lists": "test/annotation/concept_lists.txt"},
    "boxes": {"images": "test/boxes/test_images.csv"},
    "captions": {"images": "test/captions/test_images.txt"},
    "selection": {"instances": "test/selection/instances.csv"},
    "illustration": {"queries": "test/illustration/queries.parquet", "query_ids": "test/illustration/query_ids.txt",
                     "candidates": "test/illustration/candidates.txt"},
}
TRUTH_FILES = {
    "annotation": {"csv": "annotation/ground_truth.csv", "table": "annotation/ground_truth.parquet",
                   "unseen": "annotation/unseen_concepts.txt"},
    "boxes": {"table": "boxes/boxes.parquet", "csv": "boxes/boxes.csv"},
    "captions": {"table": "captions/captions.parquet", "csv": "captions/references.csv"},
    "selection": {"descriptions": "selection/descriptions.csv", "instances": "selection/instances.csv"},
    "illustration": {"truth": "illustration/truth.csv", "queries": "illustration/queries.parquet"},
}
EXAMPLE_RUNS = {"annotation": "example.txt", "boxes": "example.txt", "captions": "example.csv",
                "selection": "example.csv", "illustration": "example.csv"}
EXAMPLE_CAPTION = "A photograph."
KIT_QUERIES_SCHEMA = pa.schema([
    field("query_id", pa.string(), "the query's id in the kit (from its page, never its image)"),
    field("text", pa.string(), "the query document: the page's text"),
])
TRUTH_QUERIES_SCHEMA = pa.schema([
    field("query_id", pa.string(), "the query's id in the kit"),
    field("build_query_id", pa.string(), "its id in the build's queries table, PAGE#IMAGE"),
    field("page_id", pa.string(), "the page the text comes from"),
    field("image_id", pa.string(), "the query's one ground-truth image"),
    field("text", pa.string(), "the query document"),
])


def example_path(subtask: str) -> str:
    return f"runs/{subtask}/{EXAMPLE_RUNS[subtask]}"


def kit_query_ids(queries: list[tuple[str, str]], seed: int) -> dict[str, str]:
    """(build query id, page id) of the test queries -> the kit's query id: P + hash(seed, page) + -k,
    k numbering the page's queries in the order of hash(seed, query id)."""
    def digest(text: str) -> str:
        return hashlib.sha256(f"{seed}\x00{text}".encode("utf-8")).hexdigest()

    by_page: dict[str, list[str]] = {}
    for query, page in queries:
        by_page.setdefault(page, []).append(query)
    ids = {}
    for page, members in by_page.items():
        prefix = f"P{digest(page)[:12]}"
        for k, query in enumerate(sorted(members, key=lambda q: (digest(q), q)), start=1):
            ids[query] = f"{prefix}-{k}"
    return ids


# -- writing helpers ---------------------------------------------------------------

def _csv_bytes(header: list[str], rows) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")


def _write(root: Path, relative: str, data: bytes | str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


def _lines(values) -> str:
    return "".join(f"{value}\n" for value in values)


def _metadata_text(subtask: str, modality: str) -> str:
    return (f"group: example\nrun: example\nsubtask: {subtask}\nmodality: {modality}\n"
            "external_data: no\nexternal_data_description: \"\"\n")


# -- the job ---------------------------------------------------------------------------

class KitWriter:
    """Writes kit/ and truth/ into their (temporary) folders, subtask by subtask."""

    def __init__(self, config: dict, inputs: dict, kit: Path, truth: Path, log):
        self.config, self.inputs, self.kit, self.truth, self.log = config, inputs, kit, truth, log
        self.benchmark = config["benchmark"]
        self.concepts = read_concepts_table(inputs["concepts"])
        self.names = [c.name for c in self.concepts]
        splits = pq.read_table(inputs["splits"]).to_pandas()
        self.split_of = dict(zip(splits["image_id"], splits["split"]))
        self.test_ids = sorted(i for i, s in self.split_of.items() if s == "test")
        self.development_ids = sorted(i for i, s in self.split_of.items() if s in ("train", "dev"))
        self.test_set, self.development_set = set(self.test_ids), set(self.development_ids)
        self.subtasks: list[str] = []
        self.counts: dict[str, str] = {}
        self.raw: list[dict] = []

    def write(self) -> None:
        _write(self.kit, CONCEPTS, _lines(self.names))
        _write(self.kit, DEVELOPMENT_IMAGES,
               _csv_bytes(["image_id", "split"], [(i, self.split_of[i]) for i in self.development_ids]))
        self.annotation()
        if self.inputs.get("boxes"):
            self.boxes()
        if self.inputs.get("captions"):
            self.captions()
        if self.benchmark["selection"]["truth"]:
            self.selection()
        if self.inputs.get("queries"):
            self.illustration()
        _write(self.kit, "README.md", readme(self.subtasks, self.counts, len(self.development_ids),
                                             len(self.test_ids), self.benchmark["campaign"]["max_runs"]))
        _write(self.truth, "README.md", truth_readme(self.subtasks))

    def _split_rows(self, frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
        development = frame[frame["image_id"].isin(self.development_set)].reset_index(drop=True)
        test = frame[frame["image_id"].isin(self.test_set)].reset_index(drop=True)
        return development, test

    # -- image-level annotation
    def annotation(self) -> None:
        from annobench.benchmark.annotation.baselines import random_scores
        from annobench.benchmark.runs.files import write_run
        from annobench.benchmark.runs.model import Run

        truth = read_ground_truth_table(self.inputs["ground_truth"])
        development, test = self._split_rows(truth.rows)
        annotation_files = self.benchmark["exports"]["annotation_files"]
        for root, rows in ((self.kit / "development", development), (self.truth, test)):
            _write(root, "annotation/ground_truth.csv",
                   _csv_bytes(["image_id", "concept"], rows[["image_id", "concept"]].itertuples(index=False)))
            write_table(ground_truth_table(GroundTruth(rows)), root / "annotation/ground_truth.parquet",
                        "ground_truth", params={"images": "test" if root == self.truth else "development"})
            export_imageclef2012(GroundTruth(rows), self.concepts, root / "annotation/imageclef2012",
                                 annotation_files)
        unseen = sorted(set(test["concept"]) - set(development["concept"]), key=self.names.index)
        _write(self.truth, TRUTH_FILES["annotation"]["unseen"], _lines(unseen))
        files = TEST_FILES["annotation"]
        _write(self.kit, files["images"], _lines(self.test_ids))
        listing = " ".join(self.names)
        with open(self.kit / files["lists"], "w", encoding="utf-8", newline="\n") as handle:  # streamed: large
            handle.writelines(f"{image_id} {listing}\n" for image_id in self.test_ids)
        scores, decisions = random_scores(len(self.test_ids), len(self.names), self.benchmark["seed"],
                                          k=self.benchmark["k"], varying=True)
        self.example_scores = (scores, decisions)
        path = self.kit / example_path("annotation")
        path.parent.mkdir(parents=True, exist_ok=True)
        write_run(Run(image_ids=self.test_ids, concepts=self.names, scores=scores, decisions=decisions, listed=None),
                  path, "imageclef2012")
        _write(self.kit, "runs/annotation/example.yaml", _metadata_text("annotation", "visual"))
        self.subtasks.append("annotation")
        self.counts["annotation"] = (f"{len(self.test_ids)} test images, {len(self.names)} concepts; "
                                     f"{len(development)} development labels")

    # -- localisation
    def boxes(self) -> None:
        from annobench.benchmark.boxes.forms import write_box_run
        from annobench.benchmark.boxes.model import BOXES_SCHEMA
        from annobench.benchmark.boxes.stage import image_sizes

        boxes = pq.read_table(self.inputs["boxes"]).to_pandas()
        development, test = self._split_rows(boxes)
        columns = ["image_id", "instance", "concept", "xmin", "ymin", "xmax", "ymax"]
        for root, rows, relative in ((self.kit / "development", development, "boxes"), (self.truth, test, "boxes")):
            table = pa.Table.from_pandas(rows, schema=BOXES_SCHEMA, preserve_index=False)
            write_table(table, root / relative / "boxes.parquet", "boxes",
                        params={"images": "test" if root == self.truth else "development"})
            _write(root, f"{relative}/boxes.csv", _csv_bytes(columns, rows[columns].itertuples(index=False)))
        sizes = image_sizes(self.inputs["images"])
        _write(self.kit, TEST_FILES["boxes"]["images"],
               _csv_bytes(["image_id", "width", "height"], [(i, *sizes[i]) for i in self.test_ids]))
        write_box_run(self._example_boxes(sizes), self.kit / example_path("boxes"), "text")
        _write(self.kit, "runs/boxes/example.yaml", _metadata_text("boxes", "visual"))
        self.subtasks.append("boxes")
        self.counts["boxes"] = f"{len(self.test_ids)} test images; {len(development)} development boxes"

    def _example_boxes(self, sizes: dict) -> pd.DataFrame:
        """A box at random (seeded) for each concept the example annotation run decides on each image."""
        scores, decisions = self.example_scores
        rng = np.random.default_rng(self.benchmark["seed"])
        rows = []
        for i, image_id in enumerate(self.test_ids):
            width, height = sizes[image_id]
            for j in np.flatnonzero(decisions[i]):
                xs = np.sort(rng.integers(0, width, size=2))
                ys = np.sort(rng.integers(0, height, size=2))
                rows.append((image_id, self.names[j], round(float(scores[i, j]), 6), int(xs[0]), int(ys[0]),
                             int(xs[1]), int(ys[1])))
        return pd.DataFrame(rows, columns=["image_id", "concept", "score", "xmin", "ymin", "xmax", "ymax"])

    # -- captions
    def captions(self) -> None:
        captions = pq.read_table(self.inputs["captions"]).to_pandas()
        development, test = self._split_rows(captions)
        from annobench.benchmark.captions.files import CAPTIONS_SCHEMA

        for root, rows in ((self.kit / "development", development), (self.truth, test)):
            write_table(pa.Table.from_pandas(rows, schema=CAPTIONS_SCHEMA, preserve_index=False),
                        root / "captions/captions.parquet", "captions",
                        params={"images": "test" if root == self.truth else "development"})
            _write(root, "captions/references.csv",
                   _csv_bytes(["image_id", "caption"], rows[["image_id", "text"]].itertuples(index=False)))
        _write(self.kit, TEST_FILES["captions"]["images"], _lines(self.test_ids))
        _write(self.kit, example_path("captions"),
               _csv_bytes(["image_id", "caption"], [(i, EXAMPLE_CAPTION) for i in self.test_ids]))
        _write(self.kit, "runs/captions/example.yaml", _metadata_text("captions", "visual"))
        self.subtasks.append("captions")
        self.counts["captions"] = f"{len(self.test_ids)} test images; {len(development)} development references"

    # -- content selection
    def selection(self) -> None:
        from annobench.benchmark.selection.baselines import random_selection
        from annobench.benchmark.selection.files import read_description_csv, read_selection_truth, truth_format
        from annobench.benchmark.selection.model import ImageTruth, SelectionTruth
        from annobench.benchmark.selection.stage import instances_from_boxes
        from annobench.core.provenance import raw_file

        selection = self.benchmark["selection"]
        if selection["instances"] or truth_format(selection["truth"]) == "flickr30k_entities":
            truth = read_selection_truth(selection["truth"], selection["instances"] or None)
        else:
            boxes = instances_from_boxes(pd.read_parquet(self.inputs["boxes"]))
            truth = read_description_csv(selection["truth"], boxes)
        self.raw.append(raw_file(selection["truth"], Path(selection["truth"]).name, role="selection_truth"))
        if selection["instances"]:
            self.raw.append(raw_file(selection["instances"], Path(selection["instances"]).name,
                                     role="selection_instances"))
        development = {i: image for i, image in truth.images.items() if i in self.development_set}
        test = {i: image for i, image in truth.images.items() if i in self.test_set}
        for root, images in ((self.kit / "development", development), (self.truth, test)):
            _write(root, "selection/descriptions.csv", _csv_bytes(
                ["image_id", "description", "instance"],
                [(i, d, instance) for i, image in sorted(images.items()) for d, members in image.descriptions.items()
                 for instance in sorted(members)]))
            _write(root, "selection/instances.csv", instances_csv(images))
        _write(self.kit, TEST_FILES["selection"]["instances"], instances_csv(test))
        inputs = SelectionTruth({i: ImageTruth(image.boxes, {}) for i, image in test.items()})
        chosen = random_selection(inputs, selection["seed"], selection["k"]) if test else {}
        _write(self.kit, example_path("selection"), _csv_bytes(
            ["image_id", "instance"], [(i, instance) for i in sorted(chosen) for instance in sorted(chosen[i])]))
        _write(self.kit, "runs/selection/example.yaml", _metadata_text("selection", "visual"))
        self.subtasks.append("selection")
        self.counts["selection"] = (f"{len(test)} test images with their box instances; {len(development)} "
                                    "development images with descriptions")

    # -- text illustration
    def illustration(self) -> None:
        from annobench.benchmark.illustration.baselines import random_run
        from annobench.benchmark.illustration.runs import write_ranking_run

        queries = pq.read_table(self.inputs["queries"]).to_pandas()
        development, test = self._split_rows(queries)
        seed = self.config["benchmark"]["campaign"]["seed"]
        ids = kit_query_ids(list(zip(test["query_id"], test["page_id"])), seed)
        test = test.assign(kit_id=test["query_id"].map(ids)).sort_values("kit_id", kind="stable")
        columns = ["kit_id", "query_id", "page_id", "image_id", "text"]
        rows = [{"query_id": k, "build_query_id": q, "page_id": p, "image_id": i, "text": t}
                for k, q, p, i, t in test[columns].itertuples(index=False)]
        write_table(rows_to_table(rows, TRUTH_QUERIES_SCHEMA), self.truth / TRUTH_FILES["illustration"]["queries"],
                    "campaign_queries", params={"seed": seed})
        _write(self.truth, TRUTH_FILES["illustration"]["truth"],
               _csv_bytes(["query_id", "image_id"], [(r["query_id"], r["image_id"]) for r in rows]))
        files = TEST_FILES["illustration"]
        kit_rows = [{"query_id": r["query_id"], "text": r["text"]} for r in rows]
        write_table(rows_to_table(kit_rows, KIT_QUERIES_SCHEMA), self.kit / files["queries"], "kit_queries",
                    params={"seed": seed})
        _write(self.kit, files["query_ids"], _lines(r["query_id"] for r in rows))
        candidates = sorted(set(test["image_id"]))
        _write(self.kit, files["candidates"], _lines(candidates))
        if len(development):
            from annobench.benchmark.illustration.queries import QUERIES_SCHEMA

            write_table(pa.Table.from_pandas(development, schema=QUERIES_SCHEMA, preserve_index=False),
                        self.kit / "development/illustration/queries.parquet", "queries", params={})
            _write(self.kit, "development/illustration/truth.csv",
                   _csv_bytes(["query_id", "image_id"], development[["query_id", "image_id"]].itertuples(index=False)))
        run = random_run([r["query_id"] for r in rows], candidates, self.benchmark["illustration"]["seed"])
        path = self.kit / example_path("illustration")
        path.parent.mkdir(parents=True, exist_ok=True)
        write_ranking_run(run, path)
        _write(self.kit, "runs/illustration/example.yaml", _metadata_text("illustration", "textual"))
        self.subtasks.append("illustration")
        self.counts["illustration"] = f"{len(rows)} test queries, {len(candidates)} candidate images"


def instances_csv(images: dict) -> bytes:
    """The instances CSV of the images (ImageTruth): with coordinates when every box has them."""
    boxes = [(i, instance, box) for i, image in sorted(images.items()) for instance, box in sorted(image.boxes.items())]
    if boxes and all(box is not None for _, _, box in boxes):
        return _csv_bytes(["image_id", "instance", "xmin", "ymin", "xmax", "ymax"],
                          [(i, instance, box.xmin, box.ymin, box.xmax, box.ymax) for i, instance, box in boxes])
    return _csv_bytes(["image_id", "instance"], [(i, instance) for i, instance, _ in boxes])


CHECKS = {
    "annotation": "annobench check-run --concepts concepts.txt --concept-lists test/annotation/concept_lists.txt "
                  "runs/annotation/example.txt",
    "boxes": "annobench check-box-run --concepts concepts.txt --images test/boxes/test_images.csv "
             "runs/boxes/example.txt",
    "captions": "annobench check-caption-run --images test/captions/test_images.txt runs/captions/example.csv",
    "selection": "annobench check-selection-run --instances test/selection/instances.csv runs/selection/example.csv",
    "illustration": "annobench check-illustration-run --queries test/illustration/query_ids.txt "
                    "--candidates test/illustration/candidates.txt runs/illustration/example.csv",
}
FORMS = {
    "annotation": "one line per test image, in the order of `test/annotation/test_images.txt`: the image id, "
                  "then a score in [0, 1] and a decision 0/1 for each concept of its line of "
                  "`test/annotation/concept_lists.txt` (ImageCLEF 2013-2016 form; here every list is the whole "
                  "vocabulary, so it is also the ImageCLEF 2012 form), single spaces; or the Parquet form",
    "boxes": "`image_id concept [score:]WxH+X+Y ...`, one line per image and concept (or the CSV "
             "`image_id,concept,score,xmin,ymin,xmax,ymax`, or Parquet), inclusive pixels of the original image",
    "captions": "CSV `image_id,caption` with a header, one caption per test image (or COCO results JSON)",
    "selection": "CSV `image_id,instance` with a header: the box instances of `test/selection/instances.csv` you "
                 "expect the descriptions to mention",
    "illustration": "CSV `query_id,rank,image_id` with a header: for each query of `test/illustration/`, up to 100 "
                    "candidate images at ranks 1, 2, ...",
}


def readme(subtasks: list[str], counts: dict[str, str], development: int, test: int, max_runs: int) -> str:
    lines = [
        "# Participant's kit",
        "",
        f"The development data with its truth ({development} images of the train and dev splits) and, for each "
        f"subtask, the test inputs without their truth ({test} test images). The release's copy also holds "
        "`data/`: the stored images (`data/resized/`), the `images` table, the visual features, the near-image "
        "text features (`data/tables/text_terms/`, `data/exports/text.scofeat`), the vocabulary and the splits.",
        "",
        "- `concepts.txt`: the vocabulary, one concept a line, in run column order;",
        "- `development/`: `images.csv` (the development images and their split) and each subtask's truth of "
        "them: `annotation/` (`ground_truth.csv`, `ground_truth.parquet`, `imageclef2012/`)"
        + (", `boxes/`" if "boxes" in subtasks else "") + (", `captions/`" if "captions" in subtasks else "")
        + (", `selection/`" if "selection" in subtasks else "") + ";",
        "- `test/`: each subtask's test inputs;",
        "- `runs/`: one example run of each subtask, with its metadata file.",
        "",
        "## Submitting",
        "",
        f"Up to {max_runs} runs a group, of any subtasks, each a file `GROUP/RUN.EXT` with a metadata file "
        "`GROUP/RUN.yaml` beside it, as `runs/*/example.yaml`: `group`, `run`, `subtask` (annotation, boxes, "
        "captions, selection, illustration), `modality` (visual, textual, both), `external_data` (yes, no) and "
        "`external_data_description` (what, when yes).",
        "",
        "## The subtasks",
        "",
    ]
    for subtask in subtasks:
        lines += [f"### {subtask}", "", f"{counts[subtask]}. A run: {FORMS[subtask]}.", "",
                  "Check a run (exit status 0 and `valid` or `OK`, or one line per problem) before submitting it; "
                  "the organisers check it the same way:", "", "```sh", CHECKS[subtask], "```", ""]
    return "\n".join(lines)


def truth_readme(subtasks: list[str]) -> str:
    lines = ["# Test truth (organisers only)", "",
             "The test truth of each subtask, which the participant's kit does not hold; the build checks and "
             "scores the submitted runs against it.", ""]
    lines += [f"- `{subtask}/`" for subtask in subtasks]
    return "\n".join(lines) + "\n"


def build_kit(config: dict, inputs: dict, kit_dir: str | Path, truth_dir: str | Path, log) -> list[dict]:
    """Write kit/ and truth/ whole (each renamed into place); returns the raw files read."""
    with atomic_path(kit_dir) as kit, atomic_path(truth_dir) as truth:
        kit.mkdir(parents=True)
        truth.mkdir(parents=True)
        writer = KitWriter(config, inputs, kit, truth, log)
        writer.write()
    log(f"kit of {', '.join(writer.subtasks)}: {len(writer.development_ids)} development and {len(writer.test_ids)} "
        f"test images")
    return writer.raw


def kit_job(job: Job) -> list[dict]:
    """Rule campaign_kit. Returns the content-selection files read, if any."""
    return build_kit(job.config, job.inputs, job.output("kit"), job.output("truth"), job.log)
