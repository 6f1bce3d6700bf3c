"""The numpy-only MATLAB v5 reader/writer, on the real MSRC-v2 and BSDS500 files."""

from __future__ import annotations

import numpy as np
import pytest

from annobench.regions.matfile import MatFileError, only_2d_array, read_mat, write_mat
from helpers import REAL, require_shared

MSRC = REAL / "segmentations" / "msrc_v2"
BSDS = REAL / "segmentations" / "bsds500" / "groundTruth" / "train"


def test_msrc_file_holds_region_map_and_labels():
    variables = read_mat(require_shared(MSRC) / "newsegmentations_mats" / "10_10_s_GT.mat")
    assert set(variables) == {"newseg", "newlabels"}
    newseg, newlabels = variables["newseg"], variables["newlabels"]
    assert newseg.dtype == np.float64 and newseg.shape == (213, 320)  # rows x columns of the photo
    assert newlabels.shape == (1, 2)
    # 1-based regions; the one past the last label is void.
    assert set(np.unique(newseg).tolist()) == {1.0, 2.0, 3.0}
    assert newlabels.ravel().tolist() == [14.0, 14.0]


def test_every_msrc_map_is_one_based_with_at_most_one_void_region():
    for path in sorted(require_shared(MSRC).joinpath("newsegmentations_mats").glob("*_GT.mat")):
        variables = read_mat(path)
        ids = np.unique(variables["newseg"])
        n_labels = variables["newlabels"].size
        assert ids[0] == 1 and ids[-1] in (n_labels, n_labels + 1), path.name
        assert np.array_equal(ids, np.arange(1, ids[-1] + 1)), path.name


def test_bsds_file_cell_array_of_structs():
    variables = read_mat(require_shared(BSDS) / "105053.mat")
    ground_truth = variables["groundTruth"]
    assert ground_truth.dtype == object and ground_truth.shape == (1, 5)
    first = ground_truth[0, 0][0, 0]
    assert set(first) == {"Segmentation", "Boundaries"}
    assert first["Segmentation"].dtype == np.uint16 and first["Segmentation"].shape == (321, 481)
    assert first["Boundaries"].dtype == bool
    assert first["Segmentation"].min() == 1


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("byte_order", ["<", ">"])
def test_round_trip(tmp_path, compress, byte_order):
    variables = {
        "double": np.arange(12.0).reshape(3, 4) - 5.5,
        "int16": np.arange(-6, 6, dtype=np.int16).reshape(4, 3),
        "uint8_3d": np.arange(24, dtype=np.uint8).reshape(2, 3, 4),
        "logical": np.array([[True, False, True]]),
        "complex": np.arange(6.0).reshape(2, 3) * (1 - 2j),
        "empty": np.zeros((0, 0)),
        "text": "void region",
    }
    path = tmp_path / "x.mat"
    write_mat(path, variables, compress=compress, byte_order=byte_order)
    back = read_mat(path)
    assert list(back) == list(variables)
    assert back["text"] == "void region"
    for name, value in variables.items():
        if name != "text":
            assert back[name].dtype == value.dtype and np.array_equal(back[name], value), name


def test_only_2d_array_picks_the_single_mask(tmp_path):
    path = tmp_path / "mask.mat"
    write_mat(path, {"segimg_t": -np.ones((4, 5)), "note": "x"})
    assert only_2d_array(read_mat(path)).shape == (4, 5)
    write_mat(path, {"a": np.zeros((2, 2)), "b": np.zeros((2, 2))})
    with pytest.raises(MatFileError, match="one 2-D"):
        only_2d_array(read_mat(path))


def test_bad_files_raise_matfile_error(tmp_path):
    with pytest.raises(MatFileError, match="not a MATLAB"):
        read_mat(b"hello")
    hdf5_header = b"MATLAB 7.3 MAT-file".ljust(124, b" ") + b"\x00\x02IM"
    with pytest.raises(MatFileError, match="v7.3"):
        read_mat(hdf5_header + b"\0" * 64)
    path = tmp_path / "x.mat"
    write_mat(path, {"a": np.arange(100.0)}, compress=True)
    data = path.read_bytes()
    with pytest.raises(MatFileError):
        read_mat(data[:-20])  # compressed element cut short
    write_mat(path, {"a": np.arange(100.0)}, compress=False)
    with pytest.raises(MatFileError):
        read_mat(path.read_bytes()[:-100])


def test_first_cells_reads_only_what_is_asked():
    path = require_shared(BSDS) / "105053.mat"
    whole = read_mat(path)["groundTruth"]
    first = read_mat(path, first_cells=2)["groundTruth"]
    assert first.shape == whole.shape == (1, 5)
    for k in range(2):
        for name in ("Segmentation", "Boundaries"):
            assert np.array_equal(first[0, k][0, 0][name], whole[0, k][0, 0][name])
    assert all(cell is None for cell in first.ravel()[2:])
    data = path.read_bytes()
    cut = data[:128] + np.array([15, 1000], "<u4").tobytes() + data[136:1136]  # a compressed element of 1000 bytes
    with pytest.raises(MatFileError, match="ends early"):
        read_mat(cut, first_cells=1)  # the first cell is cut short
