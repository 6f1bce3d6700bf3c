from __future__ import annotations

import pytest

from annobench.core.fsutil import atomic_path, partial_name, write_bytes_atomic


def test_failure_leaves_neither_final_nor_partial(tmp_path):
    final = tmp_path / "table.parquet"
    with pytest.raises(RuntimeError):
        with atomic_path(final) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_success_replaces_the_final_file(tmp_path):
    final = tmp_path / "x.bin"
    write_bytes_atomic(final, b"one")
    write_bytes_atomic(final, b"two")
    assert final.read_bytes() == b"two"
    assert list(tmp_path.iterdir()) == [final]


def test_folders_are_swapped_whole(tmp_path):
    final = tmp_path / "resized"
    for content in (b"old", b"new"):
        with atomic_path(final) as tmp:
            tmp.mkdir()
            (tmp / "a.jpg").write_bytes(content)
    assert (final / "a.jpg").read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["resized"]


def test_stale_partials_of_a_killed_run_are_removed(tmp_path):
    final = tmp_path / "x.parquet"
    stale = final.with_name(f".x.parquet.partial-99999")
    stale.write_bytes(b"left by SIGKILL")
    assert partial_name(final).name.startswith(".x.parquet.partial-")
    write_bytes_atomic(final, b"done")
    assert not stale.exists()
