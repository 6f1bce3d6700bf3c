"""A small reader for MATLAB level-5 .mat files, in numpy only.

The segmentation sources (SAIAPR TC-12 masks, MSRC-v2 cleaned maps, BSDS500
ground truth) ship as MATLAB v5 files. This module reads the subset of the
format they use: zlib-compressed elements,
numeric and logical arrays (real or complex), char arrays, cell arrays and
structs. Sparse matrices, objects and function handles raise `MatFileError`,
as does a v7.3 file (HDF5, which starts with the same text header).

A compressed variable is decompressed as far as it is read: with
`first_cells`, a cell array's later cells are never inflated.

No declared size is trusted (annobench.regions.matlimits): element lengths,
cell and struct counts, inflated sizes, casts and nesting are checked
against the bytes present and a budget before anything is allocated, so a
hostile file ends in MatFileError (one line, naming the file) in
milliseconds and under 40 MB resident, whatever it declares: the issue-30
files (a 208-byte 10000 x 10000 field-less struct, 2e8 cells in 192 bytes,
a 1.2 MB compressed map inflating to 1.2 GB, cells nested 20,000 deep)
took 0.3-37 ms and peaked at 28-33 MB, where they took 20 s and 6.6 GB,
1.6 GB or 3.5 GB before.

`write_mat` writes numeric, logical and char variables (the legacy SAIAPR
exports, and test inputs), compressed like MATLAB's own v7 files.

Values come back as MATLAB shapes them (2-D at least, column-major order
kept): numeric and logical arrays as numpy arrays of the stored class, char
arrays as `str` (one row) or an array of row strings, cell arrays as object
arrays, struct arrays as object arrays of `dict` (field -> value).

Why not `scipy.io.loadmat` (scipy 1.17.1, measured by perf/bench_matfile.py):
- the same arrays: bitwise equal label maps on all 296 MSRC-v2 and 200 BSDS500
  files of the shared data;
- the same speed: loadmat took 0.81-1.09x this reader's time on BSDS500
  (0.8-1.0 s for the 200 files) and about 1.1x on MSRC-v2 (0.04 s for 296),
  within the noise of three runs; `first_cells=1` (one annotator, which
  loadmat cannot do) reads BSDS500 about 3x faster. The bounds cost
  MSRC-v2 3.6 % (0.0455 s against 0.0439, best of 10 in six alternating
  runs), and reading payloads as views, not copies, made BSDS500 about a
  third faster (0.63-0.89 s against 1.01-1.38; first_cells=1 0.22 against
  0.28-0.30);
- no crash: on 841 hostile copies (bit flips, truncations, hand-made
  headers), loadmat killed its process with SIGSEGV or SIGBUS on 11 (an
  out-of-range data type code after one flipped bit; cells nested 20,000
  deep), which no `except` in an importer can catch; every failure here was
  a Python exception;
- no scipy import in the region jobs (about 0.2 s per fresh process).
What the benchmark found unbounded here (declared sizes trusted before
allocating, a compressed element inflated past its declared size) was
bounded by the checks above, not by switching readers.
"""

from __future__ import annotations

import math
import struct
import time
import zlib
from pathlib import Path

import numpy as np

from annobench.regions.matlimits import Budget, MatFileError, MatLimits

__all__ = ["MatFileError", "MatLimits", "only_2d_array", "read_mat", "write_mat"]

HEADER_BYTES = 128

# Data element types (miXXX) and the numpy type each stores.
MI_MATRIX = 14
MI_COMPRESSED = 15
MI_DTYPES = {
    1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4",
    7: "f4", 9: "f8", 12: "i8", 13: "u8", 16: "u1", 17: "u2", 18: "u4",
}
MI_UTF8 = 16

# Array classes (mxXXX) and the numpy type of each numeric class.
MX_CELL, MX_STRUCT, MX_CHAR = 1, 2, 4
MX_DTYPES = {
    6: "f8", 7: "f4", 8: "i1", 9: "u1", 10: "i2", 11: "u2",
    12: "i4", 13: "u4", 14: "i8", 15: "u8",
}
FLAG_COMPLEX, FLAG_LOGICAL = 0x0800, 0x0200

NUMPY_TO_CLASS = {np.dtype(v): k for k, v in MX_DTYPES.items()}
NUMPY_TO_MI = {np.dtype(v): k for k, v in MI_DTYPES.items() if k < MI_UTF8}


def read_mat(source: Path | str | bytes, first_cells: int | None = None,
             limits: MatLimits = MatLimits()) -> dict[str, object]:
    """All named variables of a v5 .mat file (path or its bytes).

    first_cells: read only the first cells (column-major order) of each
    cell-array variable, leaving None in the others, and decompress no
    further than they end (a BSDS500 file holds 4-9 segmentations; a build
    usually wants one); zlib's checksum, at the stream's end, goes unchecked.
    limits: what the file may make the reader allocate (see matlimits);
    a file over them raises MatFileError, as a malformed one does, with
    the file's name (for a path) and what was wrong on one line.
    """
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    try:
        return _variables(data, first_cells, limits)
    except MatFileError as error:
        where = "" if isinstance(source, bytes) else f"{Path(source).name}: "
        raise MatFileError(where + " ".join(str(error).split())) from None


def _variables(data: bytes, first_cells: int | None, limits: MatLimits) -> dict[str, object]:
    read = _Read(_byte_order(data), Budget(limits, len(data)))
    variables: dict[str, object] = {}
    for mi_type, payload in _Parts(memoryview(data), HEADER_BYTES, len(data), read.order):
        try:
            parts = _variable_parts(mi_type, payload, read, whole=first_cells is None)
            if parts is None:
                continue  # e.g. the subsystem data of a file that stores objects
            name, value = _matrix_of(parts, read, 0, first_cells)
        except MatFileError:
            raise
        except (ValueError, IndexError, TypeError, OverflowError, struct.error) as exc:
            # A truncated or inconsistent element (numpy and struct say what);
            # MemoryError and RecursionError are not the file's fault: they go out as they are.
            raise MatFileError(f"malformed variable: {type(exc).__name__}: {exc}") from None
        variables[name] = value
    return variables


class _Read:
    """What every step of one read_mat call needs: the byte order and what is left to allocate."""

    def __init__(self, order: str, budget: Budget):
        self.order, self.budget = order, budget


def _variable_parts(mi_type: int, payload: memoryview, read: _Read, whole: bool):
    """The data elements of a top-level miMATRIX (None for other elements), read lazily
    from a compressed one unless the whole variable is wanted."""
    if mi_type == MI_COMPRESSED and whole:
        return _inflated_parts(payload, read)
    if mi_type == MI_COMPRESSED:
        stream = _Inflater(payload)
        mi_type, size, small = _read_tag(stream.read(8), 0, read.order)
        if mi_type != MI_MATRIX or small or not size:
            return None
        read.budget.inflate(size)  # the declared size, checked before any of it is inflated
        return _StreamParts(stream, size, read.order)
    if mi_type != MI_MATRIX or not payload:
        return None
    return _Parts(payload, 0, len(payload), read.order)


def _inflated_parts(compressed: memoryview, read: _Read):
    """The data elements of a compressed miMATRIX, inflated whole but no further than its
    inner tag declares (and the budget allows); zlib's checksum is checked."""
    stream = zlib.decompressobj()
    try:
        tag = stream.decompress(compressed, 8)
        if len(tag) < 8:
            raise MatFileError("compressed element ends early")
        mi_type, size, small = _read_tag(tag, 0, read.order)
        if mi_type != MI_MATRIX or small or not size:
            return None
        read.budget.inflate(size)
        body = stream.decompress(stream.unconsumed_tail, size)
        if len(body) < size:
            raise MatFileError("compressed element ends early")
        _check_stream_end(stream)
    except zlib.error as exc:
        raise MatFileError(f"corrupt compressed element: {exc}") from None
    return _Parts(memoryview(body), 0, size, read.order)


def _check_stream_end(stream) -> None:
    """The stream must end (and zlib check its checksum) within a padding's worth of bytes."""
    extra = stream.decompress(stream.unconsumed_tail, 8)
    if stream.eof:
        return
    if len(extra) == 8:
        raise MatFileError("compressed element inflates past the size its tag declares")
    raise MatFileError("compressed element ends early")


class _Inflater:
    """A zlib stream decompressed only as far as it is read."""

    def __init__(self, compressed: bytes):
        self._stream = zlib.decompressobj()
        self._pending = compressed
        self._buffer = b""

    def read(self, size: int) -> bytes:
        chunks, have = [self._buffer], len(self._buffer)
        while have < size:
            try:
                chunk = self._stream.decompress(self._pending, size - have)
            except zlib.error as exc:
                raise MatFileError(f"corrupt compressed element: {exc}") from None
            self._pending = self._stream.unconsumed_tail
            if not chunk:
                raise MatFileError("compressed element ends early")
            chunks.append(chunk)
            have += len(chunk)
        data = b"".join(chunks)
        self._buffer = data[size:]
        return data[:size]


def only_2d_array(variables: dict[str, object]) -> np.ndarray:
    """The one 2-D numeric array among a file's variables (what a mask file holds)."""
    arrays = [v for v in variables.values() if isinstance(v, np.ndarray) and v.ndim == 2 and v.dtype != object]
    if len(arrays) != 1:
        raise MatFileError(f"expected one 2-D numeric variable, found {len(arrays)} among {sorted(variables)}")
    return arrays[0]


def _byte_order(data: bytes) -> str:
    if len(data) < HEADER_BYTES or not data.startswith(b"MATLAB"):
        raise MatFileError("not a MATLAB .mat file")
    indicator = data[126:128]
    if indicator == b"IM":
        order = "<"
    elif indicator == b"MI":
        order = ">"
    else:
        raise MatFileError("unknown byte-order indicator")
    version = int.from_bytes(data[124:126], "little" if order == "<" else "big")
    if version != 0x0100:
        raise MatFileError(f"unsupported .mat version 0x{version:04x} (v7.3 files are HDF5)")
    return order


def _read_tag(data: bytes, pos: int, order: str) -> tuple[int, int, bool]:
    """(type, size, small) of the 8-byte tag at pos: a small element packs its type, size
    and up to 4 bytes of data in those 8."""
    first, second = struct.unpack_from(f"{order}II", data, pos)
    if first >> 16:
        if first >> 16 > 4:
            raise MatFileError(f"small data element declares {first >> 16} bytes; it holds at most 4")
        return first & 0xFFFF, first >> 16, True
    return first, second, False


class _Parts:
    """The data elements of data[start:end], one (type, payload view) at a time;
    each declared size is checked against the bytes left before it is taken."""

    def __init__(self, data: memoryview, start: int, end: int, order: str):
        self.data, self.pos, self.end, self.order = data, start, end, order

    @property
    def left(self) -> int:
        return self.end - self.pos

    def __iter__(self):
        return self

    def __next__(self) -> tuple[int, memoryview]:
        if self.pos + 8 > self.end:
            raise StopIteration
        mi_type, size, small = _read_tag(self.data, self.pos, self.order)
        if small:
            self.pos += 8
            return mi_type, self.data[self.pos - 4:self.pos - 4 + size]
        _check_fits(size, self.end - self.pos - 8)
        start = self.pos + 8
        self.pos = start + _padded(mi_type, size)
        return mi_type, self.data[start:start + size]

    def take(self, what: str):
        """The next element, which the variable must have."""
        element = next(self, None)
        if element is None:
            raise MatFileError(f"variable ends before its {what}")
        return element


class _StreamParts(_Parts):
    """As _Parts, over the next `end` bytes of an _Inflater, each element inflated when taken."""

    def __init__(self, stream: _Inflater, end: int, order: str):
        self.stream, self.pos, self.end, self.order = stream, 0, end, order

    def __next__(self) -> tuple[int, bytes]:
        if self.pos + 8 > self.end:
            raise StopIteration
        tag = self.stream.read(8)
        mi_type, size, small = _read_tag(tag, 0, self.order)
        if small:
            self.pos += 8
            return mi_type, tag[4:4 + size]
        _check_fits(size, self.end - self.pos - 8)
        data = self.stream.read(_padded(mi_type, size))
        self.pos += 8 + len(data)
        return mi_type, data[:size]


def _check_fits(size: int, left: int) -> None:
    if size > left:
        raise MatFileError(f"data element declares {size:,} bytes; {max(left, 0):,} are left")


def _padded(mi_type: int, size: int) -> int:
    # Compressed elements are not padded; everything else is to 8 bytes.
    return size if mi_type == MI_COMPRESSED else -(-size // 8) * 8


def _numbers(mi_type: int, payload: bytes, order: str) -> np.ndarray:
    if mi_type not in MI_DTYPES:
        raise MatFileError(f"unsupported data type {mi_type}")
    return np.frombuffer(payload, f"{order}{MI_DTYPES[mi_type]}")


def _matrix(payload: memoryview | bytes, read: _Read, depth: int) -> tuple[str, object]:
    """Decode one miMATRIX element's payload (nested `depth` deep) into (name, value)."""
    return _matrix_of(_Parts(memoryview(payload), 0, len(payload), read.order), read, depth)


def _matrix_of(parts: _Parts, read: _Read, depth: int, first_cells: int | None = None) -> tuple[str, object]:
    """(name, value) of a miMATRIX from its data elements; see read_mat for first_cells."""
    order = read.order
    flags = _numbers(*parts.take("array flags"), order)
    mx_class, flag_bits = int(flags[0]) & 0xFF, int(flags[0])
    shape = tuple(int(d) for d in _numbers(*parts.take("dimensions"), order))
    if any(d < 0 for d in shape):
        raise MatFileError(f"negative dimension in {shape}")
    name = bytes(_numbers(*parts.take("name"), order).astype(np.uint8)).decode("latin-1")
    if mx_class in MX_DTYPES:
        return name, _numeric(parts, shape, mx_class, flag_bits, read)
    if mx_class == MX_CHAR:
        return name, _chars(next(parts, (2, b"")), shape, read)
    if mx_class == MX_CELL:
        return name, _cells(parts, shape, read, read.budget.deeper(depth), first_cells)
    if mx_class == MX_STRUCT:
        return name, _structs(parts, shape, read, read.budget.deeper(depth))
    raise MatFileError(f"unsupported array class {mx_class} for variable {name!r}")


def _numeric(parts: _Parts, shape: tuple[int, ...], mx_class: int, flag_bits: int, read: _Read) -> np.ndarray:
    # Values may be stored in a smaller type than their class (a double
    # array of small integers is written as miUINT8): cast to the class,
    # once the count matches the shape and the cast fits the budget.
    dtype = np.dtype(MX_DTYPES[mx_class])
    stored = _numbers(*parts.take("values"), read.order)
    _check_count(stored.size, shape)
    complex_parts = 2 if flag_bits & FLAG_COMPLEX else 1
    read.budget.charge(stored.size * dtype.itemsize * complex_parts, f"array {shape} of {dtype}")
    values = stored.astype(dtype)
    if complex_parts == 2:
        imaginary = _numbers(*parts.take("imaginary values"), read.order)
        _check_count(imaginary.size, shape)
        values = values + 1j * imaginary.astype(dtype)
    if flag_bits & FLAG_LOGICAL:
        values = values.astype(bool)
    return values.reshape(shape, order="F")


def _check_count(count: int, shape: tuple[int, ...]) -> None:
    if count != math.prod(shape):
        raise MatFileError(f"{count} values for an array of shape {shape}")


def _chars(element: tuple[int, bytes], shape: tuple[int, ...], read: _Read) -> object:
    mi_type, payload = element
    if mi_type == MI_UTF8:
        text = bytes(payload).decode("utf-8")
        codes = np.array([ord(c) for c in text], dtype=np.uint32)
    else:
        codes = _numbers(mi_type, payload, read.order).astype(np.uint32)
    _check_count(codes.size, shape)
    grid = codes.reshape(shape, order="F")
    if grid.ndim != 2:
        return grid
    read.budget.elements(grid.shape[0], 0, 0, f"char array {shape}")  # a row of no characters is still a str
    rows = ["".join(map(chr, row)) for row in grid]
    return rows[0] if len(rows) == 1 else np.array(rows, dtype=object)


def _cells(parts: _Parts, shape: tuple[int, ...], read: _Read, depth: int,
           first_cells: int | None = None) -> np.ndarray:
    count = math.prod(shape)
    read.budget.elements(count, 1, parts.left, f"cell array {shape}")
    cells = np.empty(count, dtype=object)
    for k in range(count if first_cells is None else min(first_cells, count)):
        mi_type, payload = parts.take("cells")
        cells[k] = _matrix(payload, read, depth)[1] if payload else np.zeros((0, 0))
    return cells.reshape(shape, order="F")


def _structs(parts: _Parts, shape: tuple[int, ...], read: _Read, depth: int) -> np.ndarray:
    name_length = int(_numbers(*parts.take("field name length"), read.order)[0])
    if name_length < 1:
        raise MatFileError(f"struct field names of length {name_length}")
    raw_names = bytes(_numbers(*parts.take("field names"), read.order).astype(np.uint8))
    fields = [
        raw_names[k:k + name_length].split(b"\0", 1)[0].decode("latin-1")
        for k in range(0, len(raw_names), name_length)
    ]
    count = math.prod(shape)
    read.budget.elements(count, len(fields), parts.left, f"struct array {shape}")
    structs = np.empty(count, dtype=object)
    for k in range(count):
        record = {}
        for field_name in fields:
            mi_type, payload = parts.take("fields")
            record[field_name] = _matrix(payload, read, depth)[1] if payload else np.zeros((0, 0))
        structs[k] = record
    return structs.reshape(shape, order="F")


def write_mat(
    path: Path | str, variables: dict[str, object], compress: bool = True, byte_order: str = "<"
) -> None:
    """Write numeric/logical arrays (any ndim, stored column-major) and strings as a v5 file."""
    header = f"MATLAB 5.0 MAT-file, Platform: annobench, Created on: {time.asctime()}".encode()
    indicator = b"IM" if byte_order == "<" else b"MI"
    parts = [header.ljust(116, b" ")[:116], b"\0" * 8, np.array(0x0100, f"{byte_order}u2").tobytes(), indicator]
    for name, value in variables.items():
        element = _element(MI_MATRIX, _matrix_payload(name, value, byte_order), byte_order)
        if compress:
            data = zlib.compress(element)
            element = _tag(MI_COMPRESSED, len(data), byte_order) + data
        parts.append(element)
    Path(path).write_bytes(b"".join(parts))


def _tag(mi_type: int, size: int, order: str) -> bytes:
    return np.array([mi_type, size], f"{order}u4").tobytes()


def _element(mi_type: int, payload: bytes, order: str) -> bytes:
    return _tag(mi_type, len(payload), order) + payload + b"\0" * (-len(payload) % 8)


def _matrix_payload(name: str, value: object, order: str) -> bytes:
    if isinstance(value, str):
        array = np.array([[ord(c) for c in value]], dtype=np.uint16).reshape(1, len(value))
        mx_class, flags, data = MX_CHAR, 0, [(4, array)]  # miUINT16 characters
    else:
        array = np.asarray(value)
        if array.ndim < 2:
            array = array.reshape(1, -1)
        flags = FLAG_LOGICAL if array.dtype == bool else 0
        if array.dtype == bool:
            array = array.astype(np.uint8)
        if np.iscomplexobj(array):
            flags |= FLAG_COMPLEX
            real_dtype = array.real.dtype
            data = [(NUMPY_TO_MI[real_dtype], array.real), (NUMPY_TO_MI[real_dtype], array.imag)]
            array = array.real
        else:
            data = [(NUMPY_TO_MI[array.dtype], array)]
        if array.dtype not in NUMPY_TO_CLASS:
            raise MatFileError(f"cannot write arrays of type {array.dtype}")
        mx_class = NUMPY_TO_CLASS[array.dtype]
    payload = [
        _element(6, np.array([mx_class | flags, 0], f"{order}u4").tobytes(), order),
        _element(5, np.array(array.shape, f"{order}i4").tobytes(), order),
        _element(1, name.encode("latin-1"), order),
    ]
    for mi_type, values in data:
        column_major = np.asarray(values).astype(values.dtype.newbyteorder(order)).ravel(order="F")
        payload.append(_element(mi_type, column_major.tobytes(), order))
    return b"".join(payload)
