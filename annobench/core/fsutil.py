"""Files: atomic writes (no output is ever visible under its final name half-written), and a user's
text or JSON file read with an error that names it and says what is wrong."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

# Partial files are hidden (leading dot) and carry this marker, so neither a
# user nor a glob for "*.parquet" mistakes them for finished outputs.
PARTIAL_MARKER = ".partial-"


def partial_name(final: Path) -> Path:
    return final.with_name(f".{final.name}{PARTIAL_MARKER}{os.getpid()}")


def remove_stale_partials(final: Path) -> None:
    """Delete partial files left next to `final` by a killed earlier attempt."""
    prefix = f".{final.name}{PARTIAL_MARKER}"
    if not final.parent.is_dir():
        return
    for entry in final.parent.iterdir():
        if entry.name.startswith(prefix):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()


@contextlib.contextmanager
def atomic_path(final: Path | str):
    """Yield a temporary sibling path; rename it to `final` only on success.

    Works for files and folders alike. On any exception the partial output
    is removed and `final` is left untouched.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(final)
    tmp = partial_name(final)
    try:
        yield tmp
        if tmp.is_file():
            _fsync_file(tmp)
        if final.is_dir() and not final.is_symlink():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            tmp.unlink()
        raise


def write_bytes_atomic(final: Path | str, data: bytes) -> None:
    with atomic_path(final) as tmp:
        tmp.write_bytes(data)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_user_text(path: Path | str, error: type[Exception]) -> str:
    """A UTF-8 text file the user gave (a byte-order mark dropped); `error` names the file and what is
    wrong with it when it is missing, a folder or not UTF-8."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a file") from None
    except UnicodeDecodeError as failure:
        raise error(f"{path}: not UTF-8 text ({failure.reason} at byte {failure.start})") from None


def read_user_json(path: Path | str, error: type[Exception]):
    """A JSON document the user gave, parsed; `error` names the file when it is missing, not UTF-8,
    empty, malformed (with line and column) or nested too deeply to parse."""
    return parse_user_json(read_user_text(path, error), str(path), error)


def parse_user_json(text: str, where: str, error: type[Exception]):
    """JSON text from `where` (a file, or a file's field), parsed, with `error` as read_user_json gives it."""
    if not text.strip():
        raise error(f"{where}: empty, expected a JSON document")
    try:
        return json.loads(text)
    except json.JSONDecodeError as failure:
        raise error(f"{where}: not valid JSON: {failure.msg} at line {failure.lineno}, column {failure.colno}"
                    ) from None
    except RecursionError:  # json's parser recurses per level; it stops cleanly at Python's recursion limit
        raise error(f"{where}: JSON nested too deeply (more levels than the parser's limit)") from None
