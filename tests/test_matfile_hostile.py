"""The MAT reader on hostile files: every declared size is checked against the bytes present.

The issue's files (a few hundred bytes declaring 10^8 elements, a 1 MB zlib
bomb, cells nested 20,000 deep) are each read in a child process limited to
1.5 GiB of address space and 30 s: each must end in a one-line MatFileError,
under 1 GB peak. The rules behind them (cells and struct fields need 8 bytes
each, inflation bounded by the file's size and the ceiling, nesting depth,
casts within the budget) are tested on small files in-process, either side
of each limit, so that a reader breaking a rule fails here and not on
someone's machine.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annobench.regions import matfile
from annobench.regions.matfile import MatFileError, MatLimits, read_mat, write_mat
from helpers import REAL, REPO, require_shared

BSDS = REAL / "segmentations" / "bsds500" / "groundTruth" / "train"
BSDS_IMAGES = REAL / "images" / "bsds500" / "train"
MEMORY_LIMIT = 3 * 2**29  # 1.5 GiB of address space for each child
PEAK_LIMIT_MB = 1024
SECONDS = 30
MX_DOUBLE, MX_CELL, MX_STRUCT, MX_CHAR = 6, 1, 2, 4
MI_INT8, MI_UINT8, MI_INT32, MI_DOUBLE, MI_MATRIX, MI_COMPRESSED = 1, 2, 5, 9, 14, 15


# --- building files, byte by byte (little-endian v5) ------------------------------------

def header() -> bytes:
    return b"MATLAB 5.0 MAT-file, hostile test".ljust(116, b" ") + bytes(8) + struct.pack("<H", 0x0100) + b"IM"


def element(mi_type: int, payload: bytes) -> bytes:
    return struct.pack("<II", mi_type, len(payload)) + payload + bytes(-len(payload) % 8)


def small(mi_type: int, payload: bytes) -> bytes:
    return struct.pack("<HH", mi_type, len(payload)) + payload.ljust(4, b"\0")


def matrix_head(mx_class: int, dims: tuple[int, ...], name: str) -> bytes:
    return (element(6, struct.pack("<II", mx_class, 0)) + element(MI_INT32, struct.pack(f"<{len(dims)}i", *dims))
            + element(MI_INT8, name.encode()))


def matrix(mx_class: int, dims: tuple[int, ...], name: str, *parts: bytes) -> bytes:
    return element(MI_MATRIX, matrix_head(mx_class, dims, name) + b"".join(parts))


def struct_fields(*names: str) -> bytes:
    return small(MI_INT32, struct.pack("<i", 32)) + element(MI_INT8, b"".join(n.encode().ljust(32, b"\0") for n in names))


def compressed(plain: bytes) -> bytes:
    data = zlib.compress(plain)
    return struct.pack("<II", MI_COMPRESSED, len(data)) + data


def zeros_stream(prefix: bytes, zeros: int) -> bytes:
    """A zlib stream of prefix then `zeros` zero bytes, made in a second for gigabytes:
    one flushed deflate block of 16 MiB of zeros, repeated, and the checksum worked out."""
    chunk = 1 << 24
    raw = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = raw.compress(prefix) + raw.flush(zlib.Z_FULL_FLUSH)
    block = raw.compress(bytes(chunk)) + raw.flush(zlib.Z_FULL_FLUSH)
    rest = raw.compress(bytes(zeros % chunk)) + raw.flush(zlib.Z_FINISH)
    checksum = zlib.adler32(prefix)
    a, b = checksum & 0xFFFF, ((checksum >> 16) + zeros * (checksum & 0xFFFF)) % 65521
    return b"\x78\xda" + head + block * (zeros // chunk) + rest + struct.pack(">I", (b << 16) | a)


def compressed_stream(stream: bytes) -> bytes:
    return struct.pack("<II", MI_COMPRESSED, len(stream)) + stream


def double_map(name: str, rows: int, columns: int) -> bytes:
    """A consistent double matrix stored as uint8 zeros (MATLAB's way with small integers)."""
    return matrix(MX_DOUBLE, (rows, columns), name, element(MI_UINT8, bytes(rows * columns)))


def zlib_bomb(inflated: int) -> bytes:
    """A consistent compressed double map whose uint8 values inflate to `inflated` bytes."""
    side = int(inflated ** 0.5)
    head = matrix_head(MX_DOUBLE, (side, side), "newseg") + struct.pack("<II", MI_UINT8, side * side)
    padded = side * side + (-(side * side) % 8)
    prefix = struct.pack("<II", MI_MATRIX, len(head) + padded) + head
    return header() + compressed_stream(zeros_stream(prefix, padded))


def empty_double() -> bytes:
    return matrix(MX_DOUBLE, (0, 0), "", element(MI_DOUBLE, b""))


def nested_cells(depth: int) -> bytes:
    """A cell holding a cell ... `depth` cell arrays in all, the innermost holding a 0x0 double."""
    inner = empty_double()
    for _ in range(depth - 1):
        inner = matrix(MX_CELL, (1, 1), "", inner)
    return header() + compressed(matrix(MX_CELL, (1, 1), "groundTruth", inner))


# The issue's files and the kinds of damage around them: name -> (bytes, what the error says).
def hostile_files() -> dict[str, tuple[bytes, str]]:
    return {
        "struct 10000x10000, no fields": (
            header() + matrix(MX_STRUCT, (10_000, 10_000), "groundTruth", struct_fields()), "100,000,000 elements"),
        "2e8 cells, none present": (header() + matrix(MX_CELL, (20_000, 10_000), "groundTruth"), "bytes are left"),
        "9 million empty struct elements": (
            header() + matrix(MX_STRUCT, (3000, 3000), "groundTruth", struct_fields()), "9,000,000 elements"),
        "zlib bomb, 1 MB inflating to 1.2 GB": (zlib_bomb(1_200_000_000), "bytes inflated"),
        "zlib bomb, 2 GB past a 2x2 map": (
            header() + compressed_stream(zeros_stream(double_map("newseg", 2, 2), 2 << 30)),
            "past the size its tag declares"),
        "cells nested 20,000 deep": (nested_cells(20_000), "nested deeper than 16"),
        "data element declaring 4 GiB": (
            header() + element(MI_MATRIX, matrix_head(MX_DOUBLE, (1000, 1000), "newseg")
                               + struct.pack("<II", MI_DOUBLE, 0xFFFFFFF8) + bytes(64)), "4,294,967,288 bytes"),
        "matrix declaring 1e10 doubles, holding one": (
            header() + matrix(MX_DOUBLE, (100_000, 100_000), "newseg", element(MI_DOUBLE, struct.pack("<d", 1))),
            "1 values for an array of shape"),
        "char array of 2e9 empty rows": (
            header() + matrix(MX_CHAR, (2_000_000_000, 0), "name", element(4, b"")), "2,000,000,000 elements"),
    }


CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {repo!r})
from annobench.regions.matfile import MatFileError, read_mat
first = None if sys.argv[2] == "all" else int(sys.argv[2])
started = time.perf_counter()
try:
    read_mat(sys.argv[1], first_cells=first)
    outcome, message = "read", ""
except MatFileError as error:
    outcome, message = "MatFileError", str(error)
# VmHWM: this process's peak (ru_maxrss would carry the parent's over the exec).
peak = [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")]
peak_kib = peak[0] if peak else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"outcome": outcome, "message": message, "seconds": time.perf_counter() - started,
                  "peak_mb": peak_kib / 1024}}))
"""


def limited(command: list[str], memory: int = MEMORY_LIMIT, **kwargs) -> subprocess.CompletedProcess:
    """Run command in a child with `memory` bytes of address space, SECONDS at most, one BLAS thread."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.run(command, capture_output=True, text=True, timeout=SECONDS, preexec_fn=limit, env=env,
                          **kwargs)


def read_in_child(path: Path, first_cells: str = "all") -> dict:
    done = limited([sys.executable, "-c", CHILD.format(repo=str(REPO)), str(path), first_cells])
    assert done.returncode == 0 and not done.stderr, done.stderr[-2000:]  # no traceback, no kill
    return json.loads(done.stdout)


@pytest.mark.parametrize("first_cells", ["all", "1"])
@pytest.mark.parametrize("name", list(hostile_files()))
def test_hostile_file_is_a_one_line_error_within_time_and_memory(tmp_path, name, first_cells):
    data, expected = hostile_files()[name]
    path = tmp_path / "hostile.mat"
    path.write_bytes(data)
    if name == "zlib bomb, 2 GB past a 2x2 map" and first_cells == "1":
        expected = None  # reading the first cells stops inflating where they end, so the rest is never seen
    answer = read_in_child(path, first_cells)
    assert answer["seconds"] < SECONDS and answer["peak_mb"] < PEAK_LIMIT_MB, answer
    if expected is None:
        assert answer["outcome"] in ("read", "MatFileError"), answer
        return
    assert answer["outcome"] == "MatFileError", answer
    assert answer["message"].startswith("hostile.mat: ") and "\n" not in answer["message"], answer
    assert expected in answer["message"], answer


def test_the_issue_files_are_as_small_as_the_issue_says():
    files = hostile_files()
    assert len(files["struct 10000x10000, no fields"][0]) <= 216
    assert len(files["2e8 cells, none present"][0]) <= 192
    assert len(files["9 million empty struct elements"][0]) <= 216
    assert len(files["zlib bomb, 1 MB inflating to 1.2 GB"][0]) < 1_300_000


def test_truncations_of_a_real_file_end_in_the_error_or_a_read(tmp_path):
    """Every cut of a real BSDS500 file (and of one written here): MatFileError in one line, or a read."""
    real = require_shared(BSDS) / "105053.mat"
    script = tmp_path / "cuts.py"
    script.write_text(f"""
import json, sys
sys.path.insert(0, {str(REPO)!r})
from annobench.regions.matfile import MatFileError, read_mat
data = open(sys.argv[1], "rb").read()
cuts = sorted(set(range(0, 300)) | set(range(0, len(data), 997)) | set(range(len(data) - 64, len(data))))
outcomes = {{}}
for first in (None, 1):
    for cut in cuts:
        try:
            read_mat(data[:cut], first_cells=first)
            kind = "read"
        except MatFileError as error:
            kind = "error" if "\\n" not in str(error) else "multi-line error"
        outcomes[kind] = outcomes.get(kind, 0) + 1
print(json.dumps(outcomes))
""")
    for source in (real, tmp_path / "written.mat"):
        if source.name == "written.mat":
            write_mat(source, {"newseg": np.arange(600.0).reshape(20, 30), "newlabels": np.ones((1, 3))})
        done = limited([sys.executable, str(script), str(source)])
        assert done.returncode == 0 and not done.stderr, done.stderr[-2000:]
        outcomes = json.loads(done.stdout)
        assert set(outcomes) <= {"read", "error"} and outcomes["error"] > 0, outcomes


# --- the rules, either side of each limit (in-process, small numbers) -------------------

@settings(max_examples=60, deadline=None)
@given(declared=st.integers(1, 5000), present=st.integers(0, 40))
def test_cell_count_is_bounded_by_the_bytes_left(declared, present):
    """A cell array declaring n cells needs 8 bytes (a tag) for each: refused before allocating when
    the bytes left cannot hold them, read when they can."""
    cells = [matrix(MX_DOUBLE, (1, 1), "", element(MI_DOUBLE, struct.pack("<d", k))) for k in range(present)]
    data = header() + matrix(MX_CELL, (declared, 1), "c", *cells)
    left = sum(len(c) for c in cells)
    if declared * 8 > left:
        with pytest.raises(MatFileError, match=f"declares {declared:,} elements"):
            read_mat(data)
    elif declared > present:
        with pytest.raises(MatFileError, match="ends before its cells"):
            read_mat(data)
    else:
        assert read_mat(data)["c"].shape == (declared, 1)


@settings(max_examples=40, deadline=None)
@given(declared=st.integers(0, 3000), fields=st.integers(0, 3), budget=st.integers(1, 2000))
def test_struct_elements_are_bounded_by_bytes_and_by_the_element_budget(declared, fields, budget):
    """Struct elements need 8 bytes per field; a struct without fields needs none, so the file's
    element budget (max_elements) bounds it."""
    names = [f"f{k}" for k in range(fields)]
    values = [empty_double() for _ in range(declared * fields)] if declared * fields <= 40 else []
    data = header() + matrix(MX_STRUCT, (1, declared), "s", struct_fields(*names), *values)
    limits = MatLimits(max_elements=budget)
    left = sum(len(v) for v in values)
    if declared * fields * 8 > left or declared > budget:
        with pytest.raises(MatFileError, match="elements"):
            read_mat(data, limits=limits)
    else:
        records = read_mat(data, limits=limits)["s"]
        assert records.shape == (1, declared) and all(set(r) == set(names) for r in records.ravel())


@settings(max_examples=30, deadline=None)
@given(inflated_kib=st.integers(1, 2048), ratio=st.integers(2, 600), ceiling_kib=st.integers(1024, 4096))
def test_inflation_is_bounded_by_the_file_size_and_the_ceiling(inflated_kib, ratio, ceiling_kib):
    """A compressed element is inflated only when its declared size fits `ratio` x the file's size
    (or the floor) and the ceiling; otherwise refused before inflating."""
    side = int((inflated_kib * 1024) ** 0.5)
    data = header() + compressed(double_map("m", side, side))
    limits = MatLimits(max_bytes=ceiling_kib * 1024, inflation_ratio=ratio, inflation_floor=64 * 1024)
    inner = len(zlib.decompress(data[136:])) - 8
    allowed = min(limits.max_bytes, max(limits.inflation_floor, ratio * len(data)))
    if inner > allowed:
        with pytest.raises(MatFileError, match="bytes inflated"):
            read_mat(data, limits=limits)
    elif inner + side * side * 8 > limits.max_bytes:  # the double array decoded from the uint8 values
        with pytest.raises(MatFileError, match="over the"):
            read_mat(data, limits=limits)
    else:
        assert read_mat(data, limits=limits)["m"].shape == (side, side)


def test_a_cast_past_the_budget_is_refused_before_it_is_made():
    """1 MB of uint8 values is 8 MB as doubles: refused under a 4 MiB ceiling, read under 16 MiB."""
    data = header() + double_map("m", 1000, 1000)
    with pytest.raises(MatFileError, match="array \\(1000, 1000\\) of float64 of 8,000,000 bytes"):
        read_mat(data, limits=MatLimits(max_bytes=4 * 2**20))
    assert read_mat(data, limits=MatLimits(max_bytes=16 * 2**20))["m"].dtype == np.float64


def test_nesting_is_bounded():
    assert read_mat(nested_cells(16))["groundTruth"].shape == (1, 1)
    with pytest.raises(MatFileError, match="nested deeper than 16 levels"):
        read_mat(nested_cells(17))
    with pytest.raises(MatFileError, match="nested deeper than 3 levels"):
        read_mat(nested_cells(4), limits=MatLimits(max_depth=3))


def test_declared_sizes_past_the_end_and_inconsistent_headers_are_errors():
    cases = {
        "declares 1,000 bytes; 8 are left": header() + struct.pack("<II", MI_MATRIX, 1000) + bytes(8),
        "small data element declares 9 bytes": header() + element(MI_MATRIX, struct.pack("<HH", 6, 9) + bytes(4)),
        "negative dimension": header() + matrix(MX_DOUBLE, (-1, 4), "m", element(MI_DOUBLE, b"")),
        "field names of length 0": header() + matrix(MX_STRUCT, (1, 1), "s", small(MI_INT32, struct.pack("<i", 0))
                                                      + element(MI_INT8, b"")),
        "ends before its dimensions": header() + element(MI_MATRIX, element(6, struct.pack("<II", MX_DOUBLE, 0))),
        "compressed element ends early": header() + compressed_stream(zlib.compress(double_map("m", 10, 10))[:-30]),
    }
    for expected, data in cases.items():
        with pytest.raises(MatFileError, match=expected):
            read_mat(data)


def test_the_checksum_is_checked_when_the_whole_variable_is_read():
    data = bytearray(header() + compressed(double_map("m", 10, 10)))
    data[-1] ^= 0xFF  # the last byte of zlib's checksum
    with pytest.raises(MatFileError, match="corrupt compressed element"):
        read_mat(bytes(data))


def test_error_names_the_file_on_one_line(tmp_path):
    path = tmp_path / "100075.mat"
    path.write_bytes(hostile_files()["2e8 cells, none present"][0])
    with pytest.raises(MatFileError) as caught:
        read_mat(path)
    assert str(caught.value).startswith("100075.mat: cell array (20000, 10000) declares 200,000,000 elements")
    assert "\n" not in str(caught.value)


def test_memory_error_is_not_called_a_malformed_file(monkeypatch):
    def out_of_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(matfile, "_numeric", out_of_memory)
    with pytest.raises(MemoryError):
        read_mat(header() + double_map("m", 2, 2))


# --- inside a build: a rejects row ------------------------------------------------------

def test_regions_command_rejects_a_hostile_file_and_reads_the_good_one(tmp_path):
    """A BSDS-style folder with one good file (the shared data's) and the issue's 216-byte file:
    `annobench regions` exits 0 without a traceback, within the bounds; the hostile file is a
    rejects row saying why, the good one gives its regions."""
    truth = require_shared(BSDS)
    good, bad = "100075", "100080"
    masks, images, out = tmp_path / "groundTruth", tmp_path / "images", tmp_path / "out"
    masks.mkdir()
    images.mkdir()
    (masks / f"{good}.mat").symlink_to(truth / f"{good}.mat")
    (masks / f"{bad}.mat").write_bytes(hostile_files()["struct 10000x10000, no fields"][0])
    for image_id in (good, bad):
        (images / f"{image_id}.jpg").symlink_to(require_shared(BSDS_IMAGES) / f"{image_id}.jpg")
    arguments = ["regions", "--kind", "bsds", "--annotator", "1", "--images", str(images), "--masks", str(masks),
                 "--out", str(out)]
    command = ("import sys; from annobench.cli import main; code = main(sys.argv[1:]); "
               "print([int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')][0] / 1024); "
               "sys.exit(code)")
    # OpenCV (the statistics figure) maps more address space than 1.5 GiB, not resident: 4 GiB here.
    done = limited([sys.executable, "-c", command, *arguments], memory=4 * 2**30, cwd=REPO)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert float(done.stdout.split()[-1]) < PEAK_LIMIT_MB
    rejects = pd.read_parquet(out / "tables" / "segmentation_rejects")
    assert rejects.image_id.tolist() == [bad]
    assert rejects.reason[0].startswith(f"unreadable BSDS500 file: {bad}.mat: struct array (10000, 10000) declares")
    assert rejects.source[0] == f"{bad}.mat"
    regions = pd.read_parquet(out / "tables" / "regions")
    assert set(regions.image_id) == {good}


def test_the_configured_ceiling_reaches_the_importers(tmp_path):
    """segmentations.mat_max_bytes, through RegionSettings, rejects a real BSDS500 file that needs more;
    the default reads it. The default stays out of the region tables' params hash."""
    from annobench.core.config import load_config
    from annobench.regions.importers import import_segmentations
    from annobench.regions.stage import RegionSettings, region_params

    masks = tmp_path / "groundTruth"
    masks.mkdir()
    (masks / "105053.mat").symlink_to(require_shared(BSDS) / "105053.mat")
    tight = load_config(overrides={"segmentations": {"kind": "bsds", "mat_max_bytes": 2**20}})
    settings = RegionSettings.from_config(tight)
    assert settings.mat_limits == MatLimits(max_bytes=2**20)
    [reject] = import_segmentations("bsds500", masks, mat_limits=settings.mat_limits)
    assert reject.reason.startswith("unreadable BSDS500 file: 105053.mat: ")
    assert "1,048,576" in reject.reason
    default = load_config(overrides={"segmentations": {"kind": "bsds"}})
    items = list(import_segmentations("bsds500", masks, mat_limits=RegionSettings.from_config(default).mat_limits))
    assert len(items) == 5 and all(item.label_map.shape == (321, 481) for item in items)
    assert "mat_max_bytes" not in region_params(default["segmentations"])
    assert region_params(tight["segmentations"])["mat_max_bytes"] == 2**20
