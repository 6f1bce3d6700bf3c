"""Image labels made from box ground truth (benchmark.ground_truth.source: boxes), end to end on real
photos: the first MSRC-v2 photos, boxes from their segmentations (as tests/test_box_workflow.py
builds them), a vocabulary without `grass` so that some boxes are rejected. The labels are the
concepts of the kept boxes, the consistency report finds nothing, and the build's console output
ends with the rejects summary, box rejects included."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers import MSRC, REAL, require_shared, run_snakemake, shared_build

PHOTOS = 40
CONCEPTS = ["building", "tree", "cow", "horse", "sheep", "sky", "mountain", "aeroplane", "water", "face", "car",
            "bicycle", "flower", "sign", "bird", "book", "chair", "road", "cat", "dog", "body", "boat"]  # no grass


def labels_config(workdir: Path) -> Path:
    require_shared(MSRC)
    photos = sorted(p for p in (MSRC / "Images").iterdir() if p.is_file())[:PHOTOS]
    (workdir / "images.csv").write_text("image_id,path\n" + "".join(f"{p.stem},{p}\n" for p in photos))
    (workdir / "concepts.txt").write_text("\n".join(CONCEPTS) + "\n")
    benchmark = {"baselines": ["random", "knn"], "features": ["colorhist", "gist"],
                 "overlap": {"feature": "gist", "neighbours": 5}, "knn": {"neighbours": 3},
                 "vocabulary": str(workdir / "concepts.txt"), "ground_truth": {"source": "boxes", "path": ""},
                 "region_split": {"subset_sizes": [5]}, "boxes": {"source": "segmentations"}}
    config = {"output": "out", "features": {"bow": {"kinds": ["sift"], "words": 20, "iterations": 10}},
              "release": {"browse": {"enabled": False}},
              "input": {"images": "", "image_list": str(workdir / "images.csv"), "page_map": "",
                        "segmentations": str(MSRC)},
              "segmentations": {"kind": "msrc"}, "benchmark": benchmark}
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def build(tmp_path_factory) -> tuple[Path, str]:
    """The build and its console output, made once per run whatever the workers."""
    def make(workdir: Path) -> None:
        result = run_snakemake(workdir, "--cores", "2", "--configfile", str(labels_config(workdir)))
        (workdir / "console.txt").write_text(result.stdout, encoding="utf-8")

    workdir = shared_build(tmp_path_factory, "labels_from_boxes", make)
    return workdir / "out", (workdir / "console.txt").read_text(encoding="utf-8")


def test_labels_are_the_concepts_of_the_kept_boxes(build):
    out, _ = build
    boxes = pd.read_parquet(out / "tables" / "boxes")
    rejects = pd.read_parquet(out / "tables" / "box_rejects")
    truth = pd.read_parquet(out / "tables" / "ground_truth")
    assert len(boxes) > PHOTOS and "grass" not in set(boxes["concept"])
    assert (rejects["concept"] == "grass").sum() > 0  # grass boxes are rejected, so grass is no label
    assert (truth.groupby("image_id")["concept"].apply(frozenset).to_dict()
            == boxes.groupby("image_id")["concept"].apply(frozenset).to_dict())
    assert pd.read_parquet(out / "tables" / "concepts")["concept"].tolist() == CONCEPTS  # benchmark.vocabulary
    consistency = (out / "reports" / "box_label_consistency.csv").read_text().splitlines()
    assert consistency == ["image_id,concept,labelled,boxes,rejected_boxes,finding"]


def test_the_build_ends_with_the_rejects_summary(build):
    out, console = build
    lines = console.rstrip("\n").splitlines()
    done = max(i for i, line in enumerate(lines) if "steps (100%) done" in line)
    summary = lines[done + 1:]
    assert summary[0].startswith("annobench: rejects of this build, by table and reason")
    grass = (pd.read_parquet(out / "tables" / "box_rejects")["concept"] == "grass").sum()
    assert any(line.startswith("  box_rejects: ") for line in summary), summary
    assert any(line.strip() == f"{grass}  unknown concept '…'" for line in summary), summary
    assert any("image labels and kept boxes agree on every image" in line for line in summary), summary
    # Nothing but Snakemake's own closing lines after it: the summary is the last thing a user reads.
    assert all(line.startswith(("annobench: ", "  ", "Complete log", "Elapsed time")) for line in summary), summary


# ---------------------------------------------------------------- a box text folder in a build

VOC = REAL / "boxes" / "voc_toyexample"


def text_config(workdir: Path, geometry: str) -> Path:
    """The VOC toy example's photos, its XML boxes as a corner text folder (`cat xmin ymin xmax ymax`),
    labels from the boxes; one box moved a pixel past its image, clipped."""
    folder = workdir / "boxes"
    folder.mkdir(exist_ok=True)
    for path in sorted(require_shared(VOC / "gts_vocpascal_format").glob("*.xml")):
        objects = ElementTree.parse(path).getroot().findall("object")
        lines = [" ".join([item.findtext("name"), *(item.findtext(f"bndbox/{k}") for k in ("xmin", "ymin", "xmax", "ymax"))])
                 for item in objects]
        if path.stem == "2007_000549":  # 375x500, its cat ends at row 499: now 501
            lines = [line.rsplit(" ", 1)[0] + " 501" for line in lines]
        (folder / f"{path.stem}.txt").write_text("".join(line + "\n" for line in lines))
    benchmark = {"baselines": ["random"], "features": ["colorhist"], "overlap": {"feature": "colorhist", "neighbours": 3},
                 "ground_truth": {"source": "boxes", "path": ""},
                 "boxes": {"source": "text", "path": str(folder), "geometry": geometry, "outside": "clip",
                           "baselines": []}}
    config = {"output": "out", "release": {"browse": {"enabled": False}},
              "input": {"images": str(VOC / "images"), "page_map": "", "segmentations": ""}, "benchmark": benchmark}
    path = workdir / f"config_{geometry}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_a_text_folder_builds_with_its_geometry_and_fails_with_the_other(tmp_path):
    """Only the box and label tables are asked for: with labels from boxes they need the images alone."""
    targets = ["out/tables/ground_truth/all.parquet", "out/reports/box_label_consistency.csv"]
    wrong = run_snakemake(tmp_path, *targets, "--cores", "2", "--configfile", str(text_config(tmp_path, "xywh")),
                          check=False)
    assert wrong.returncode != 0
    # One line, in the job's log and on the console, naming the key and the geometry that fits.
    assert (f"annobench: {tmp_path / 'boxes'}: read as xywh, 10 boxes leave their image; read as xyxy, 1 box "
            "leaves its image: benchmark.boxes.geometry: xyxy") in wrong.stdout, wrong.stdout[-3000:]
    assert "Traceback" not in wrong.stdout
    assert (tmp_path / "out" / "logs" / "benchmark_boxes.log").read_text().startswith("annobench: ")
    run_snakemake(tmp_path, *targets, "--cores", "2", "--configfile", str(text_config(tmp_path, "xyxy")))
    out = tmp_path / "out"
    boxes = pd.read_parquet(out / "tables" / "boxes")
    assert len(boxes) == 12 and boxes.loc[boxes["image_id"] == "2007_000549", "ymax"].tolist() == [500]
    notes = pd.read_parquet(out / "tables" / "box_notes")
    assert notes["note"].tolist() == ["clipped to the image (375x500): ymax 501 -> 500"]
    truth = pd.read_parquet(out / "tables" / "ground_truth")
    assert sorted(set(truth["image_id"])) == sorted(set(boxes["image_id"])) and set(truth["concept"]) == {"cat"}
