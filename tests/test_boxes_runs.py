"""Box runs (ImageCLEF 2016 subtask 1, Gilbert et al. 2016; PASCAL VOC devkit conventions,
Everingham et al. 2010): the three forms round-trip, and the checker names the line of every fault,
on a real run made from the shared detections."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annobench.benchmark.boxes.checker import check_box_run, check_box_run_main, run_form
from annobench.benchmark.boxes.forms import read_box_run, write_box_run
from annobench.benchmark.image_list import read_image_list
from annobench.benchmark.problems import RunFormatError
from helpers import REAL, require_shared

DETECTIONS = [REAL / "boxes" / "padilla_odm" / "detections", REAL / "boxes" / "voc_toyexample" / "dets_classname_abs_xywh"]
COCO = REAL / "boxes" / "voc_toyexample" / "gts_coco_format" / "toy_example_coco.JSON"


def real_run() -> pd.DataFrame:
    """Padilla's 24 person detections (7 images), then the 12 cat detections of the VOC toy example."""
    return pd.concat([read_box_run(require_shared(folder), geometry="xywh") for folder in DETECTIONS],
                     ignore_index=True)


@pytest.fixture
def names(tmp_path: Path) -> tuple[Path, Path]:
    """The vocabulary and the image list of the real run."""
    run = real_run()
    (tmp_path / "concepts.txt").write_text("person\ncat\ndog\n")
    (tmp_path / "images.txt").write_text("\n".join(dict.fromkeys(run.image_id)) + "\n")
    return tmp_path / "concepts.txt", tmp_path / "images.txt"


def text_lines(tmp_path: Path) -> list[bytes]:
    write_box_run(real_run(), tmp_path / "real.txt", "text")
    data = (tmp_path / "real.txt").read_bytes()
    assert data.endswith(b"\n")
    return data.split(b"\n")[:-1]


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def checked(run: Path, names: tuple[Path, Path]) -> tuple[int, list[str]]:
    out = io.StringIO()
    code = check_box_run_main(run, *names, out=out, geometry="xywh")
    return code, out.getvalue().splitlines()


def lines_named(run: Path, output: list[str]) -> list[int]:
    assert all(line.startswith(f"{run}:") for line in output), output
    return [int(line[len(f"{run}:"):].split(":")[0]) for line in output]


# ---------------------------------------------------------------- the real run is valid


def test_the_real_run_is_valid_in_every_form(tmp_path, names):
    run = real_run()
    assert len(run) == 36 and run.score.between(0, 1).all()
    for form, name, lines in [("text", "r.txt", 17), ("csv", "r.csv", 37), ("parquet", "r.parquet", 36)]:
        write_box_run(run, tmp_path / name, form)
        assert run_form(tmp_path / name) == form
        assert checked(tmp_path / name, names) == (0, [f"{tmp_path / name}: valid, {lines} lines, 36 boxes"])
    assert checked(DETECTIONS[0], names)[0] == 0


def test_a_real_detection_leaving_its_image_is_found_when_sizes_are_known(tmp_path):
    coco = json.loads(require_shared(COCO).read_text())
    run = real_run()
    sizes = {image["file_name"].rsplit(".", 1)[0]: (image["width"], image["height"]) for image in coco["images"]}
    rows = [f"{i},{sizes[i][0]},{sizes[i][1]}" if i in sizes else f"{i},," for i in dict.fromkeys(run.image_id)]
    (tmp_path / "images.csv").write_text("image_id,width,height\n" + "\n".join(rows) + "\n")
    write_box_run(run, tmp_path / "real.txt", "text")
    problems = check_box_run(tmp_path / "real.txt", images=read_image_list(tmp_path / "images.csv"))
    # 2008_002045: "cat 0.82 151 123 352 252" reaches column 151 + 352 = 503 of a 500-pixel-wide image;
    # 2008_006599: "cat 0.99 29 0 239 287" reaches row 287 of a 283-pixel-high one.
    assert [(p.line, p.message) for p in problems] == [(15, "field 4: the box leaves its image (500x366)"),
                                                       (16, "field 3: the box leaves its image (300x283)")]


# ---------------------------------------------------------------- every fault, at its line


def edit(lines: list[bytes], number: int, change) -> list[bytes]:
    """The lines with line `number` (1-based) split into fields, changed, and joined again."""
    fields = lines[number - 1].split(b" ")
    return lines[: number - 1] + [b" ".join(change(fields))] + lines[number:]


def set_field(fields: list[bytes], number: int, value: bytes) -> list[bytes]:
    return fields[: number - 1] + [value] + fields[number:]


def with_score(fields: list[bytes], number: int, score: bytes) -> list[bytes]:
    return set_field(fields, number, score + b":" + fields[number - 1].split(b":")[1])


def with_geometry(fields: list[bytes], number: int, geometry: bytes) -> list[bytes]:
    return set_field(fields, number, fields[number - 1].split(b":")[0] + b":" + geometry)


CORRUPTIONS = {
    # name: (edit of the 17 real lines, the lines every problem must be on, words of the first message)
    "NaN score": (lambda ls: edit(ls, 2, lambda f: with_score(f, 3, b"nan")), [2],
                  "field 3 (box 1): score 'nan' is NaN"),
    "non-numeric score": (lambda ls: edit(ls, 3, lambda f: with_score(f, 4, b"abc")), [3],
                          "field 4 (box 2): score 'abc' is not a number"),
    "score 1.5": (lambda ls: edit(ls, 4, lambda f: with_score(f, 3, b"1.5")), [4], "score '1.5' is outside [0, 1]"),
    "negative score": (lambda ls: edit(ls, 5, lambda f: with_score(f, 5, b"-0.2")), [5],
                       "field 5 (box 3): score '-0.2' is outside [0, 1]"),
    "infinite score": (lambda ls: edit(ls, 6, lambda f: with_score(f, 3, b"inf")), [6], "'inf' is infinite"),
    "empty file": (lambda ls: [], [0], "empty run: no boxes"),
    "unknown image": (lambda ls: edit(ls, 7, lambda f: set_field(f, 1, b"NoSuchImage")), [7],
                      "unknown image 'NoSuchImage' (not in the image list)"),
    "unknown concept": (lambda ls: edit(ls, 8, lambda f: set_field(f, 2, b"lion")), [8],
                        "unknown concept 'lion' (not in the vocabulary)"),
    "blank line": (lambda ls: ls[:9] + [b""] + ls[9:], [10], "blank line"),
    "line repeated": (lambda ls: ls[:11] + [ls[10]] + ls[11:], [12], "(first on line 11): one line per image"),
    "trailing extra line": (lambda ls: ls + [ls[0]], [18], "repeated line for image '00001' and concept 'person'"),
    "non-UTF-8 byte": (lambda ls: edit(ls, 12, lambda f: set_field(f, 1, f[0] + b"\xff")), [12],
                       "not valid UTF-8: byte 0xff"),
    "tab separator": (lambda ls: ls[:12] + [ls[12].replace(b" ", b"\t", 1)] + ls[13:], [13],
                      "fields must be separated by single spaces: a tab at column 12"),
    "byte-order mark": (lambda ls: [b"\xef\xbb\xbf" + ls[0]] + ls[1:], [1], "byte-order mark"),
    "line cut inside a box": (lambda ls: edit(ls, 14, lambda f: set_field(f, 3, f[2][:-4])), [14],
                              "field 3 (box 1): geometry"),
    "line without boxes": (lambda ls: edit(ls, 15, lambda f: f[:2]), [15], "truncated line: 2 field(s), no boxes"),
    "line with only an id": (lambda ls: edit(ls, 16, lambda f: f[:1]), [16], "no a concept and boxes"),
    "bad geometry syntax": (lambda ls: edit(ls, 17, lambda f: set_field(f, 3, f[2].replace(b"x", b"by"))), [17],
                            "is not WxH+X+Y"),
    "zero width": (lambda ls: edit(ls, 2, lambda f: with_geometry(f, 4, b"0x49+5+67")), [2],
                   "field 4 (box 2): geometry '0x49+5+67': width and height must be at least 1 pixel"),
    "negative width": (lambda ls: edit(ls, 3, lambda f: with_geometry(f, 3, b"-32x49+5+67")), [3],
                       "width W '-32' in '-32x49+5+67' has a sign"),
    "fractional height": (lambda ls: edit(ls, 4, lambda f: with_geometry(f, 3, b"32x49.5+5+67")), [4],
                          "height H '49.5' in '32x49.5+5+67' is not a whole number"),
    "empty image id": (lambda ls: edit(ls, 5, lambda f: [b""] + f), [5], "the line starts with a space"),
    "score on some boxes only": (lambda ls: edit(ls, 6, lambda f: set_field(f, 4, f[3].split(b":")[1])), [6],
                                 "field 4: a box with no score, but line 1 field 3 gives scores"),
    "box given twice": (lambda ls: edit(ls, 7, lambda f: f + [f[2]]), [7],
                        "repeats the box and score of line 7 field 3"),
}


@pytest.mark.parametrize("fault", sorted(CORRUPTIONS))
def test_each_fault_is_reported_at_its_line(fault, tmp_path, names):
    corrupt, fault_lines, words = CORRUPTIONS[fault]
    run = write_lines(tmp_path / "corrupt.txt", corrupt(text_lines(tmp_path)))
    code, output = checked(run, names)
    assert code == 2
    assert lines_named(run, output) == fault_lines
    assert words in output[0]
    concepts, images = names
    found = check_box_run(run, concepts.read_text().split(), read_image_list(images))
    assert [p.line for p in found] == fault_lines
    with pytest.raises(RunFormatError) as raised:
        read_box_run(run, concepts.read_text().split(), read_image_list(images))
    assert [p.line for p in raised.value.problems] == fault_lines


def test_what_is_harmless_is_tolerated(tmp_path):
    """Windows line ends, spaces before the line end, no final newline, scores with an exponent."""
    lines = text_lines(tmp_path)
    expected = read_box_run(tmp_path / "real.txt")
    loose = [line + b"\r" for line in lines[:5]] + [line + b"  " for line in lines[5:10]] + lines[10:]
    loose = edit(loose, 12, lambda f: with_score(f, 3, b"%.3e" % float(f[2].split(b":")[0])))
    path = tmp_path / "loose.txt"
    path.write_bytes(b"\n".join(loose))
    assert check_box_run(path) == []
    pd.testing.assert_frame_equal(read_box_run(path), expected)


def test_problems_are_listed_up_to_the_limit_then_counted(tmp_path):
    lines = text_lines(tmp_path)
    broken = [b" ".join(with_score(line.split(b" "), 3, b"2")) for line in lines]  # one bad score a line
    problems = check_box_run(write_lines(tmp_path / "broken.txt", broken), max_problems=5)
    assert [p.line for p in problems] == [1, 2, 3, 4, 5, 0]
    assert problems[-1].message.startswith("12 more problem(s) not listed")


CSV_CORRUPTIONS = {
    "header": (lambda ls: [b"image,label,score,x0,y0,x1,y1"] + ls[1:], [1], "the header must be"),
    "field count": (lambda ls: ls[:4] + [ls[4] + b",7"] + ls[5:], [5], "wrong number of fields: 8"),
    "xmax < xmin": (lambda ls: ls[:5] + [b"00002,person,0.5,30,10,20,40"] + ls[6:], [6], "xmax 20 < xmin 30"),
    "fractional corner": (lambda ls: ls[:6] + [b"00002,person,0.5,3.5,10,20,40"] + ls[7:], [7],
                          "field 4: xmin '3.5' is not a whole number"),
    "empty image id": (lambda ls: ls[:7] + [b"," + ls[7].split(b",", 1)[1]] + ls[8:], [8], "empty image id"),
    "NaN score": (lambda ls: ls[:8] + [b"00003,person,NaN,1,1,5,5"] + ls[9:], [9], "score 'NaN' is NaN"),
    "row given twice": (lambda ls: ls[:10] + [ls[9]] + ls[10:], [11], "repeats the box and score of line 10"),
    "score missing": (lambda ls: ls[:11] + [b"00003,person,,1,1,5,5"] + ls[12:], [12], "a box with no score"),
}


@pytest.mark.parametrize("fault", sorted(CSV_CORRUPTIONS))
def test_csv_faults_are_reported_at_their_line(fault, tmp_path, names):
    write_box_run(real_run(), tmp_path / "real.csv", "csv")
    corrupt, fault_lines, words = CSV_CORRUPTIONS[fault]
    run = write_lines(tmp_path / "corrupt.csv", corrupt((tmp_path / "real.csv").read_bytes().split(b"\n")[:-1]))
    code, output = checked(run, names)
    assert code == 2 and lines_named(run, output) == fault_lines and words in output[0], output


def test_parquet_faults_are_reported_at_their_row(tmp_path, names):
    path = tmp_path / "run.parquet"
    write_box_run(real_run(), path, "parquet")
    table = pq.read_table(path)
    score = table.column("score").to_numpy().copy()
    score[4] = 1.5
    concept = table.column("concept").to_pylist()
    concept[6] = None
    xmax = table.column("xmax").to_numpy().copy()
    xmax[8] = 0
    broken = table.set_column(2, "score", pa.array(score)).set_column(1, "concept", pa.array(concept))
    broken = broken.set_column(5, "xmax", pa.array(xmax))
    pq.write_table(broken, path)
    code, output = checked(path, names)
    assert code == 2 and lines_named(path, output) == [5, 7, 9]
    assert output[0].endswith("score 1.5 is outside [0, 1]; a score is a number in [0, 1] (or null)")
    assert "concept is missing (null)" in output[1] and "xmax 0 < xmin" in output[2]
    pq.write_table(table.drop_columns(["score"]), path)
    assert checked(path, names)[1] == [f"{path}:0: no column 'score' (a Parquet box run has columns image_id, "
                                       "concept, score, xmin, ymin, xmax, ymax)"]


def test_detections_folder_faults_name_their_file_and_line(tmp_path, names):
    folder = tmp_path / "detections"
    shutil.copytree(require_shared(DETECTIONS[0]), folder)
    lines = (folder / "00003.txt").read_text().splitlines()
    lines[1] = lines[1].replace(lines[1].split()[1], "1.2", 1)
    lines[3] = " ".join(lines[3].split()[:5])
    (folder / "00003.txt").write_text("\n".join(lines) + "\n")
    (folder / "00009.txt").write_text("person 0.5 1 1 4 4\n")
    code, output = checked(folder, names)
    assert code == 2
    # The file, then its line (docs/command-line.md, check-box-run): FOLDER/FILE:LINE: message.
    assert output == [f"{folder / '00003.txt'}:2: field 2: score '1.2' is outside [0, 1]",
                      f"{folder / '00003.txt'}:4: wrong number of fields: 5; expected 6 "
                      "(class confidence left top width height, --geometry xywh)",
                      f"{folder / '00009.txt'}:0: unknown image '00009' (not in the image list)"]


# ---------------------------------------------------------------- the forms round-trip


@pytest.mark.parametrize("scored", [True, False])
def test_every_form_round_trips_byte_identically(tmp_path, scored):
    run = real_run() if scored else real_run().assign(score=np.nan)
    for form, name in [("text", "r.txt"), ("csv", "r.csv"), ("parquet", "r.parquet")]:
        write_box_run(run, tmp_path / name, form)
        back = read_box_run(tmp_path / name)
        pd.testing.assert_frame_equal(back, run)
        write_box_run(back, tmp_path / f"again_{name}", form)
        assert (tmp_path / f"again_{name}").read_bytes() == (tmp_path / name).read_bytes()
    first = (tmp_path / "r.txt").read_text().splitlines()[0]
    if scored:  # 00001.txt: "person .88 5 67 31 48": 32 columns from 5 (Padilla's xmax = left + width)
        assert first.startswith("00001 person 0.88:32x49+5+67 0.7:41x68+119+111")
    else:
        assert first.startswith("00001 person 32x49+5+67 41x68+119+111")


def test_the_text_form_puts_an_image_and_concept_on_one_line(tmp_path):
    run = pd.DataFrame({"image_id": ["a", "b", "a"], "concept": ["cat", "cat", "cat"], "score": [0.9, 0.8, 0.7],
                        "xmin": [0, -3, 2], "ymin": [0, 0, -1], "xmax": [3, 4, 5], "ymax": [3, 3, 3]})
    write_box_run(run, tmp_path / "r.txt", "text")
    # A box may start left of or above its image: the offset carries its sign, as in X11 geometry.
    assert (tmp_path / "r.txt").read_text() == "a cat 0.9:4x4+0+0 0.7:4x5+2-1\nb cat 0.8:8x4-3+0\n"
    pd.testing.assert_frame_equal(read_box_run(tmp_path / "r.txt"), run.iloc[[0, 2, 1]].reset_index(drop=True))


@pytest.mark.parametrize("change, words", [
    ({"score": [0.9, np.nan, 0.7]}, "some boxes have a score"),
    ({"score": [0.9, 1.2, 0.7]}, "outside [0, 1]"),
    ({"image_id": ["a", "b c", "a"]}, "holds whitespace"),
    ({"xmax": [3, 0, 5]}, "xmax < xmin"),
])
def test_writing_refuses_what_no_form_can_hold(tmp_path, change, words):
    run = pd.DataFrame({"image_id": ["a", "b", "a"], "concept": ["cat"] * 3, "score": [0.9, 0.8, 0.7],
                        "xmin": [0, 1, 2], "ymin": [0, 0, 0], "xmax": [3, 4, 5], "ymax": [3, 3, 3]})
    with pytest.raises(ValueError, match=re.escape(words)):
        write_box_run(run.assign(**change), tmp_path / "r.txt", "text")
    assert not (tmp_path / "r.txt").exists()
