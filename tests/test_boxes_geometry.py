"""The geometry of box text folders (`class [confidence] A B C D`): named, never guessed, and checked.

The shared VOC toy example and Padilla's boxes are converted here to corner folders
(`class [confidence] xmin ymin xmax ymax`, xmax = left + width: the reading that reproduces both
published examples, docs/measures.md). Read with the right geometry they give the published APs
(the VOC devkit's conventions, Everingham et al. 2010; Padilla et al. 2020); read with the wrong
one, evaluate-boxes and check-box-run fail and name the other, wherever the boxes show it: with the
image sizes always, without them when a box inverts. What cannot be seen without the sizes (corners
named xywh) is a note, and the measured APs show why it matters.
"""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from annobench.benchmark.boxes.checker import check_box_run_main
from annobench.benchmark.boxes.model import BoxInputError, corners_ambiguity, geometry_counts, geometry_problem
from annobench.benchmark.boxes.truth import read_box_truth
from annobench.cli import main
from helpers import REAL, require_shared

TOY = REAL / "boxes" / "voc_toyexample"
PADILLA = REAL / "boxes" / "padilla_odm"


def corner_folder(source: Path, target: Path, scored: bool) -> Path:
    """`class [confidence] left top width height` files rewritten as `... xmin ymin left+width top+height`."""
    target.mkdir(parents=True)
    skip = 2 if scored else 1
    for path in sorted(require_shared(source).glob("*.txt")):
        lines = []
        for text in path.read_text().splitlines():
            fields = text.split()
            if fields:
                x, y, w, h = (float(v) for v in fields[skip:skip + 4])
                lines.append(" ".join([*fields[:skip], *(f"{v:g}" for v in (x, y, x + w, y + h))]))
        (target / path.name).write_text("".join(line + "\n" for line in lines))
    return target


def voc_corner_folder(target: Path) -> Path:
    """The VOC XML boxes as `class xmin ymin xmax ymax` files, as written in the XML."""
    target.mkdir(parents=True)
    for path in sorted(require_shared(TOY / "gts_vocpascal_format").glob("*.xml")):
        objects = ElementTree.parse(path).getroot().findall("object")
        lines = [" ".join([item.findtext("name"), *(item.findtext(f"bndbox/{k}") for k in ("xmin", "ymin", "xmax", "ymax"))])
                 for item in objects]
        (target / f"{path.stem}.txt").write_text("".join(line + "\n" for line in lines))
    return target


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("geometry")
    sizes = ["image_id,width,height"] + [f"{p.stem},{','.join(map(str, Image.open(p).size))}"
                                         for p in sorted(require_shared(TOY / "images").glob("*.jpg"))]
    (root / "voc_images.csv").write_text("\n".join(sizes) + "\n")
    return {"voc_truth": voc_corner_folder(root / "voc_truth"),
            "voc_run": corner_folder(TOY / "dets_classname_abs_xywh", root / "voc_run", True),
            "padilla_truth": corner_folder(PADILLA / "groundtruths", root / "padilla_truth", False),
            "padilla_run": corner_folder(PADILLA / "detections", root / "padilla_run", True),
            "voc_images": root / "voc_images.csv"}


def evaluate(capsys, tmp_path, truth, run, *options) -> tuple[int, dict | None, str]:
    out = tmp_path / "result.json"
    out.unlink(missing_ok=True)
    code = main(["evaluate-boxes", "--truth", str(truth), "--run", str(run), "--json", str(out), *options])
    said = capsys.readouterr().err
    return code, (json.loads(out.read_text()) if out.exists() else None), said


def check(folder: Path, *, geometry: str | None, images: Path | None = None) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    code = check_box_run_main(folder, None, images, out=out, geometry=geometry, err=err)
    return code, out.getvalue().splitlines(), err.getvalue()


# ---------------------------------------------------------------- the right geometry: the published values


@pytest.mark.parametrize("threshold, interpolation, expected", [
    ("0.5", "11", 88.64), ("0.5", "all", 89.58), ("0.75", "11", 49.24), ("0.75", "all", 50.97),
])
@pytest.mark.parametrize("with_images", [False, True])
def test_voc_corners_read_as_xyxy_give_the_published_cat_ap(folders, capsys, tmp_path, threshold, interpolation,
                                                              expected, with_images):
    images = ["--images", str(folders["voc_images"])] if with_images else []
    code, result, said = evaluate(capsys, tmp_path, folders["voc_truth"], folders["voc_run"], "--geometry", "xyxy",
                                  "--thresholds", threshold, "--interpolation", interpolation, *images)
    assert code == 0, said
    assert 100 * result["AP"][threshold]["cat"] == pytest.approx(expected, abs=0.005)
    assert said == ""  # corners named xyxy: nothing to note


@pytest.mark.parametrize("interpolation, expected", [("all", 24.57), ("11", 26.84)])
def test_padilla_corners_read_as_xyxy_give_the_published_person_ap(folders, capsys, tmp_path, interpolation,
                                                                   expected):
    code, result, said = evaluate(capsys, tmp_path, folders["padilla_truth"], folders["padilla_run"],
                                  "--geometry", "xyxy", "--thresholds", "0.3", "--interpolation", interpolation)
    assert code == 0, said
    assert 100 * result["AP"]["0.3"]["person"] == pytest.approx(expected, abs=0.005)


def test_the_corner_folders_check_as_valid_with_the_right_geometry(folders):
    for name in ("voc_run", "padilla_run"):
        code, output, said = check(folders[name], geometry="xyxy")
        assert code == 0 and output[-1].endswith("boxes") and "valid" in output[-1], output
        assert said == ""
    code, output, _ = check(PADILLA / "detections", geometry="xywh")
    assert code == 0, output


def test_inclusive_or_exclusive_corners_matter_to_the_iou(folders, capsys, tmp_path):
    """The maximum one past the box makes every box a pixel smaller: 22.54 % instead of 24.57 %."""
    code, result, _ = evaluate(capsys, tmp_path, folders["padilla_truth"], folders["padilla_run"],
                               "--geometry", "xyxy-exclusive", "--thresholds", "0.3")
    assert code == 0 and 100 * result["AP"]["0.3"]["person"] == pytest.approx(22.54, abs=0.005)


# ---------------------------------------------------------------- the wrong geometry fails and names the right one


def test_voc_corners_named_xywh_fail_with_the_image_sizes(folders, capsys, tmp_path):
    code, result, said = evaluate(capsys, tmp_path, folders["voc_truth"], folders["voc_run"], "--geometry", "xywh",
                                  "--images", str(folders["voc_images"]))
    assert code == 2 and result is None
    assert said.strip() == (f"annobench: {folders['voc_truth']}: read as xywh, 10 boxes leave their image; "
                            "read as xyxy, every box fits: --geometry xyxy")
    # The truth in its own form (VOC XML, with sizes) and the run named wrong: the run's error names xyxy.
    code, result, said = evaluate(capsys, tmp_path, TOY / "gts_vocpascal_format", folders["voc_run"],
                                  "--geometry", "xywh")
    first = said.splitlines()[0]
    assert code == 2 and first.startswith(f"{folders['voc_run']}:0: read as xywh, ") and \
        first.endswith("boxes leave their image; read as xyxy, 2 boxes leave their image: --geometry xyxy"), said
    code, output, _ = check(folders["voc_run"], geometry="xywh", images=folders["voc_images"])
    assert code == 2 and output[0].startswith(f"{folders['voc_run']}:0: read as xywh, ") and \
        output[0].endswith(": --geometry xyxy"), output


def test_xywh_named_xyxy_fails_without_images_when_a_box_inverts(folders, capsys, tmp_path):
    code, _, said = evaluate(capsys, tmp_path, PADILLA / "groundtruths", PADILLA / "detections",
                             "--geometry", "xyxy", "--thresholds", "0.3")
    assert code == 2
    assert said.strip() == (f"annobench: {PADILLA / 'groundtruths'}: read as xyxy, 12 boxes invert (max < min); "
                            "read as xywh, every box fits: --geometry xywh")
    code, output, _ = check(PADILLA / "detections", geometry="xyxy")
    assert code == 2 and output[0] == (f"{PADILLA / 'detections'}:0: read as xyxy, 22 boxes invert (max < min); "
                                       "read as xywh, every box fits: --geometry xywh")
    # The run is listed box by box after it, each line naming its file and line.
    assert output[1].startswith(f"{PADILLA / 'detections' / '00001.txt'}:1: ")
    code, output, _ = check(TOY / "dets_classname_abs_xywh", geometry="xyxy")
    assert code == 2 and output[0].endswith("read as xyxy, 2 boxes invert (max < min); read as xywh, every box "
                                            "fits: --geometry xywh")


def test_a_folder_without_a_geometry_is_refused(folders, capsys, tmp_path):
    code, _, said = evaluate(capsys, tmp_path, folders["padilla_truth"], folders["padilla_run"])
    assert code == 2 and said.count("\n") == 1
    assert "a folder of box text files does not say its geometry: give --geometry xyxy (" in said
    code, output, _ = check(folders["padilla_run"], geometry=None)
    assert code == 2 and len(output) == 1 and "does not say its geometry: give --geometry" in output[0]
    with pytest.raises(BoxInputError, match="does not say its geometry"):
        read_box_truth(folders["padilla_truth"])


# ---------------------------------------------------------------- without image sizes


def test_without_sizes_corners_named_xywh_are_a_note_and_the_ap_is_wrong(folders, capsys, tmp_path):
    """Corners read as xywh never invert (the width is xmax >= 0) and nothing to leave: the reading
    is only noted. Padilla's person AP at 0.3 becomes 28.01 % instead of 24.57 % (30.25 % for
    26.84 %); the VOC toy's cat APs happen to stay the same."""
    code, result, said = evaluate(capsys, tmp_path, folders["padilla_truth"], folders["padilla_run"],
                                  "--geometry", "xywh", "--thresholds", "0.3")
    assert code == 0 and 100 * result["AP"]["0.3"]["person"] == pytest.approx(28.01, abs=0.005)
    notes = said.strip().splitlines()
    assert len(notes) == 2 and all(line.startswith("annobench: note: ") and "--geometry xyxy" in line
                                   for line in notes), said
    assert "every one of the 15 boxes read as xywh also reads as valid xyxy corners" in notes[0]
    code, output, said = check(folders["padilla_run"], geometry="xywh")
    assert code == 0 and "every one of the 24 boxes" in said
    # Named right, Padilla's xywh boxes are no valid corners (12 of 15 and 22 of 24 invert): no note.
    code, _, said = evaluate(capsys, tmp_path, PADILLA / "groundtruths", PADILLA / "detections",
                             "--geometry", "xywh", "--thresholds", "0.3")
    assert code == 0 and said == ""


def test_what_can_be_told_without_sizes_on_the_real_xywh_boxes():
    """xywh boxes named xyxy are caught when one box has width < left or height < top; the real
    xywh sets have such boxes, from 2 of 12 (the toy's large cats) to 22 of 24."""
    def numbers(folder: Path, skip: int) -> np.ndarray:
        return np.array([[float(v) for v in line.split()[skip:skip + 4]]
                         for path in sorted(require_shared(folder).glob("*.txt"))
                         for line in path.read_text().splitlines() if line.strip()])

    no_sizes = lambda values: np.full((len(values), 2), np.nan)  # noqa: E731
    for folder, skip, inverted in [(PADILLA / "groundtruths", 1, 12), (PADILLA / "detections", 2, 22),
                                   (TOY / "dets_classname_abs_xywh", 2, 2)]:
        values = numbers(folder, skip)
        assert geometry_counts(values, no_sizes(values), "xyxy") == (inverted, 0)
        assert geometry_problem(values, no_sizes(values), "xyxy").endswith(": --geometry xywh")
        assert corners_ambiguity(values, "xywh") is None
        corners = np.column_stack([values[:, :2], values[:, :2] + values[:, 2:]])
        assert geometry_counts(corners, no_sizes(values), "xywh") == (0, 0)  # corners named xywh: nothing shows
        assert geometry_problem(corners, no_sizes(values), "xywh") is None
        assert corners_ambiguity(corners, "xywh") is not None
