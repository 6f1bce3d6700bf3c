"""What the fuzz campaign found, each made again the way the mutator made it and read in a bounded child
(4 GiB of address space, 1 GB resident, 30 s): every one must now end in the reader's documented error or a
rejects row, saying what is wrong in one line, within the bounds.
"""

from __future__ import annotations

import io
import json
import struct
import sys
import zlib

import pytest

from helpers import REAL, REPO, require_shared

sys.path.insert(0, str(REPO / "tests" / "fuzz"))

from harness import Case, Result, build_seeds, run_batch, zeros_deflate  # noqa: E402


def bounded_read(target: str, name: str, data: bytes, tmp_path) -> Result:
    """The target's reader on `data` (named `name`), with the target's companions, in a bounded child."""
    build_seeds(target, tmp_path / "aux")
    [result] = run_batch(target, [Case(target, name, "none", 0)], {name: data}, tmp_path / "aux", tmp_path / "cases")
    assert result.seconds < 30 and result.peak_mb < 1024, result
    return result


def png_declaring(width: int, height: int) -> bytes:
    """A real 1x1 PNG whose header (checksum put right) declares width x height."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (1, 1)).save(buffer, "PNG")
    data = buffer.getvalue()
    ihdr = bytearray(data[12:29])
    struct.pack_into(">II", ihdr, 4, width, height)
    return data[:12] + bytes(ihdr) + struct.pack(">I", zlib.crc32(bytes(ihdr))) + data[33:]


def test_a_png_declaring_ten_billion_pixels_is_refused_before_its_exif_is_read(tmp_path):
    # Reading a PNG's EXIF makes Pillow decode the image: the size was checked after, at 2.8 GB.
    result = bounded_read("image", "huge.png", png_declaring(100_000, 100_000), tmp_path)
    assert result.outcome == "documented"
    assert "over pixel limit: 100000x100000 = 10000000000 pixels > 50000000" in result.error


def real_parquet_run(tmp_path) -> bytes:
    require_shared(REAL)
    seeds = build_seeds("run_parquet", tmp_path / "seeds")
    return seeds[sorted(seeds)[0]]


def test_a_parquet_run_with_a_damaged_page_is_a_run_problem(tmp_path):
    data = bytearray(real_parquet_run(tmp_path))
    data[8:400] = b"\xff" * 392  # the first data page, the footer intact: pyarrow's OSError comes page by page
    result = bounded_read("run_parquet", "run.parquet", bytes(data), tmp_path)
    assert result.outcome == "documented", result.error
    assert ":0: not a readable Parquet file: " in result.error and "\n" not in result.error.split(": ", 1)[1]


def test_a_selection_run_with_a_field_past_the_csv_limit_names_its_line(tmp_path):
    require_shared(REAL)
    result = bounded_read("selection_run", "run.csv", b"image_id,instance\n" + b"[" * 200_000 + b",x\n", tmp_path)
    assert result.outcome == "documented"
    assert "run.csv:2: field larger than field limit (131072)" in result.error


@pytest.mark.parametrize("data, message", [
    (b"query_id,image_id\nq0,caf\xe9.jpg\n", "run.csv:2: not UTF-8 (invalid continuation byte at byte 24)"),
    (b"query_id,image_id\nq0," + b"x" * 200_000 + b"\n", "run.csv:2: not a CSV line (field larger than field limit"),
], ids=["latin-1", "long field"])
def test_an_illustration_truth_not_utf8_or_past_the_csv_limit_is_a_run_problem(tmp_path, data, message):
    result = bounded_read("illustration_truth", "run.csv", data, tmp_path)
    assert result.outcome == "documented" and message in result.error


def test_an_illustration_run_whose_header_is_past_the_csv_limit_is_a_run_problem(tmp_path):
    result = bounded_read("illustration_run", "run.csv", b"[" * 200_000 + b"\nq0,1,a.jpg\n", tmp_path)
    assert result.outcome == "documented" and "run.csv:1: the header must be query_id,rank,image_id" in result.error


def test_a_ground_truth_of_two_million_rows_is_read_within_the_memory_bound(tmp_path):
    require_shared(REAL)
    # 28 MB of one row repeated: the rows as dicts took 2.1 GB.
    data = b"image_id,concept\n" + b"photo1,Beach\n" * 2_000_000
    result = bounded_read("ground_truth", "ground_truth.csv", data, tmp_path)
    assert result.outcome == "ok" and result.peak_mb < 700


@pytest.mark.parametrize("prefix", [b"", b"WARC/1.0\r\n"])
def test_a_gzip_member_inflating_to_a_gigabyte_line_is_a_damaged_archive(tmp_path, prefix):
    require_shared(REAL)
    # warcio read the line whole, by concatenation: over 35 s.
    result = bounded_read("warc", "crawl.warc.gz", zeros_deflate(prefix, 1 << 30, 31), tmp_path)
    assert result.outcome in ("rejects", "ok") and result.seconds < 15


def coco_document(categories) -> bytes:
    document = {"annotations": [{"file_name": "img.png", "segments_info": [{"id": 1, "category_id": 1}]}]}
    return json.dumps(document if categories is None else {**document, "categories": categories}).encode()


def test_a_coco_panoptic_json_without_categories_rejects_each_segment(tmp_path):
    require_shared(REAL)
    assert bounded_read("regions_coco", "panoptic.json", coco_document(None), tmp_path).outcome == "rejects"


def test_a_coco_category_id_that_is_not_an_integer_is_a_documented_error(tmp_path):
    require_shared(REAL)
    result = bounded_read("regions_coco", "panoptic.json", coco_document([{"id": [1], "name": "cow"}]), tmp_path)
    assert result.outcome == "documented" and "an annotation or category is not an object with its fields" in result.error


@pytest.mark.parametrize("name, data", [
    ("run.txt", b"img person 10x10+99999999999999999999+0 0.5\n"),
    ("run.csv", b"image_id,concept,score,xmin,ymin,xmax,ymax\nimg,person,0.5,0,0,99999999999999999999,5\n"),
])
def test_a_box_coordinate_past_int64_is_a_run_problem(tmp_path, name, data):
    require_shared(REAL)
    result = bounded_read("box_run_text", name, data, tmp_path)
    assert result.outcome == "documented" and "coordinate 99999999999999999999 is beyond +-2147483647" in result.error


def test_a_config_of_megabytes_is_refused_unread(tmp_path):
    # 30 MB of one line repeated: PyYAML ran past 35 s on it.
    config = (REPO / "config" / "config.yaml").read_bytes()
    result = bounded_read("config", "config.yaml", config + b"# a comment line\n" * 2_000_000, tmp_path)
    assert result.outcome == "documented" and result.seconds < 5
    assert "config.yaml: 34,0" in result.error and "bytes; a config is a few kilobytes (the limit is 1,048,576)" in result.error


def test_caption_references_with_a_field_past_the_csv_limit_name_their_line(tmp_path):
    require_shared(REAL)
    result = bounded_read("caption_references", "refs.csv", b"image_id,caption\nimage1," + b"[" * 200_000 + b"\n",
                          tmp_path)
    assert result.outcome == "documented" and "refs.csv: line 2: field larger than field limit (131072)" in result.error
