"""annobench's MATLAB v5 reader (`read_mat`) against `scipy.io.loadmat`: speed, memory, hostile files.

    python3 perf/bench_matfile.py [--shared ../shared] [--repeat 5] [--variants 200]

Answers the question "keep annobench/regions/matfile.py, or read the .mat
files with scipy (already a dependency)?" on what the importers read:

1. Real files (../shared/data/real/segmentations): every MSRC-v2
   `*_GT.mat` (`newseg`, `newlabels`), every BSDS500 `groundTruth/*/*.mat`
   (the `Segmentation` of each `groundTruth{k}` struct) and SAIAPR masks
   when present. Both readers must give bitwise-equal arrays of the same
   dtype; then each file is read `--repeat` times per reader (best per file
   kept), in a fresh process per reader and corpus, with peak memory
   (tracemalloc peak of one read; ru_maxrss of the process).
2. Hostile copies in a temporary directory: truncations, seeded random bit
   flips (in the file's bytes, and in the headers of the inflated elements,
   recompressed so zlib's checksum still holds), and hand-made files: a
   struct array declaring 10000 x 10000 elements and no fields, huge cell
   arrays, a matrix declaring 10^10 elements, a data element declaring 4 GiB,
   a zlib bomb (a compressed element that inflates to 3 GiB past the small
   matrix it declares), a consistent but huge compressed matrix, cells nested
   20,000 deep, a v7.3 (HDF5) header. Each reader reads each file in a child
   process limited to `--memory-gib` of address space (RLIMIT_AS) and
   `--timeout` seconds; outcomes are counted per reader.
3. The import cost of scipy.io in a fresh interpreter, and a verdict.

One process at a time (the figures are per core). Needs ../shared next to
the checkout, or --shared PATH.
"""

from __future__ import annotations

import os

# One core: the figures are per core. Must be set before numpy loads BLAS.
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import mmap  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import selectors  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import zlib  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

from common import REPO, SHARED  # noqa: E402

SCRIPT = Path(__file__).resolve()

# --- what each reader gives the importers ----------------------------------------
# A "mode" is (reader, corpus): how the importer would call the reader on that
# corpus's files, and which arrays it takes from the result.

MODES = {
    # MSRC-v2: import_msrc_v2 takes newseg (the map) and newlabels (raveled).
    ("read_mat", "msrc_v2"): "read_mat(path)",
    ("loadmat", "msrc_v2"): "loadmat(path, variable_names=('newseg', 'newlabels'), mat_dtype=True)",
    # BSDS500: import_bsds500 takes groundTruth{k}.Segmentation for every k
    # (annotator="all"), or only the k asked for (read_mat's first_cells).
    ("read_mat", "bsds500"): "read_mat(path)",
    ("read_mat_first", "bsds500"): "read_mat(path, first_cells=1)",
    ("loadmat", "bsds500"): "loadmat(path, variable_names=('groundTruth',), mat_dtype=True)",
    ("loadmat_simplify", "bsds500"): "loadmat(path, variable_names=('groundTruth',), simplify_cells=True)",
    # SAIAPR: the file's one 2-D numeric variable (segimg_t).
    ("read_mat", "saiapr"): "only_2d_array(read_mat(path))",
    ("loadmat", "saiapr"): "the one 2-D array of loadmat(path, mat_dtype=True)",
}
# The errors each reader documents (anything else counts as "other exception").
CLEAN_ERRORS = {
    "read_mat": ("MatFileError",),
    "read_mat_first": ("MatFileError",),
    # scipy.io.matlab.MatReadError, ValueError (scipy raises it for unknown
    # versions and inconsistent sizes) and NotImplementedError (loadmat's
    # documented answer to a v7.3 file).
    "loadmat": ("MatReadError", "ValueError", "NotImplementedError"),
    "loadmat_simplify": ("MatReadError", "ValueError", "NotImplementedError"),
}


def read(reader: str, corpus: str, path: str):
    """The arrays the importer of `corpus` takes from the file, read with `reader`
    (a list of numpy arrays). Raises whatever the reader raises, wrapped in
    _Unusable when the reader succeeded but the importer's arrays are not there."""
    import numpy as np

    if reader.startswith("read_mat"):
        from annobench.regions.matfile import only_2d_array, read_mat

        first = 1 if reader == "read_mat_first" else None
        variables = read_mat(path, first_cells=first)
        try:
            if corpus == "msrc_v2":
                return [variables["newseg"], np.asarray(variables["newlabels"]).ravel()]
            if corpus == "saiapr":
                return [only_2d_array(variables)]
            cells = []
            for cell in np.asarray(variables["groundTruth"], dtype=object).ravel(order="F"):
                if cell is None:
                    break  # first_cells left the later cells unread
                record = cell.ravel()[0] if isinstance(cell, np.ndarray) and cell.dtype == object else cell
                cells.append(np.asarray(record["Segmentation"]))
            return cells
        except Exception as exc:
            raise _Unusable(exc) from None

    import scipy.io

    if corpus == "msrc_v2":
        variables = scipy.io.loadmat(path, variable_names=("newseg", "newlabels"), mat_dtype=True)
        try:
            return [variables["newseg"], np.asarray(variables["newlabels"]).ravel()]
        except Exception as exc:
            raise _Unusable(exc) from None
    if corpus == "saiapr":
        variables = scipy.io.loadmat(path, mat_dtype=True)
        arrays = [v for k, v in variables.items()
                  if not k.startswith("__") and isinstance(v, np.ndarray) and v.ndim == 2 and v.dtype != object]
        if len(arrays) != 1:
            raise _Unusable(ValueError(f"{len(arrays)} 2-D numeric variables"))
        return arrays
    if reader == "loadmat_simplify":
        variables = scipy.io.loadmat(path, variable_names=("groundTruth",), simplify_cells=True)
        try:
            cells = variables["groundTruth"]
            cells = [cells] if isinstance(cells, dict) else list(np.asarray(cells, dtype=object).ravel(order="F"))
            return [np.asarray(cell["Segmentation"]) for cell in cells]
        except Exception as exc:
            raise _Unusable(exc) from None
    variables = scipy.io.loadmat(path, variable_names=("groundTruth",), mat_dtype=True)
    try:
        return [np.asarray(cell.ravel()[0]["Segmentation"])
                for cell in np.asarray(variables["groundTruth"], dtype=object).ravel(order="F")]
    except Exception as exc:
        raise _Unusable(exc) from None


class _Unusable(Exception):
    """The reader returned, but not the arrays the importer looks for (the importer rejects the file)."""


def digest(arrays) -> str:
    hasher = hashlib.sha256()
    for array in arrays:
        hasher.update(f"{array.dtype.str}{array.shape}".encode())
        hasher.update(array.tobytes(order="F"))
    return hasher.hexdigest()


# --- the real files -----------------------------------------------------------------

def corpus_files(shared: Path) -> dict[str, list[Path]]:
    segmentations = shared / "data" / "real" / "segmentations"
    return {
        "msrc_v2": sorted((segmentations / "msrc_v2").rglob("*_GT.mat")),
        "bsds500": sorted((segmentations / "bsds500" / "groundTruth").rglob("*.mat")),
        "saiapr": sorted(segmentations.rglob("segmentation_masks/*.mat")),
    }


def child_check(shared: Path) -> None:
    """Both readers on every real file: same arrays (dtype, shape, bits)?"""
    import numpy as np

    out = {}
    for corpus, files in corpus_files(shared).items():
        same, differ, arrays = 0, [], 0
        for path in files:
            ours = read("read_mat", corpus, str(path))
            theirs = read("loadmat", corpus, str(path))
            simplified = read("loadmat_simplify", corpus, str(path)) if corpus == "bsds500" else theirs
            first = read("read_mat_first", corpus, str(path)) if corpus == "bsds500" else ours[:1]
            equal = (len(ours) == len(theirs) == len(simplified)
                     and all(a.dtype == b.dtype == c.dtype and a.shape == b.shape == c.shape
                             and np.array_equal(a, b) and np.array_equal(a, c)
                             for a, b, c in zip(ours, theirs, simplified))
                     and first[0].dtype == ours[0].dtype and np.array_equal(first[0], ours[0]))
            arrays += len(ours)
            if equal:
                same += 1
            else:
                differ.append(path.name)
        out[corpus] = {"files": len(files), "same": same, "differ": differ[:5], "arrays": arrays}
    print(json.dumps(out))


def child_speed(shared: Path, reader: str, corpus: str, repeat: int) -> None:
    """One reader on one corpus, in a fresh process: best-of-repeat seconds per file,
    then the tracemalloc peak of one read per file, and the process's peak RSS."""
    import tracemalloc

    import numpy  # noqa: F401  (the baseline every reader pays)

    files = [str(p) for p in corpus_files(shared)[corpus]]
    started = time.perf_counter()
    if reader.startswith("read_mat"):
        import annobench.regions.matfile  # noqa: F401
    else:
        import scipy.io  # noqa: F401
    import_seconds = time.perf_counter() - started
    rss_after_import = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    best = [float("inf")] * len(files)
    for _ in range(repeat):
        for k, path in enumerate(files):
            started = time.perf_counter()
            read(reader, corpus, path)
            best[k] = min(best[k], time.perf_counter() - started)
    tracemalloc.start()
    peaks = []
    for path in files:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = read(reader, corpus, path)
        peaks.append(tracemalloc.get_traced_memory()[1] - before)
        del result
    tracemalloc.stop()
    print(json.dumps({
        "files": len(files), "bytes": sum(os.path.getsize(p) for p in files), "median": statistics.median(best),
        "total": sum(best), "max": max(best), "peak_read": max(peaks), "median_peak_read": statistics.median(peaks),
        "rss_import": rss_after_import, "rss_end": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "import_seconds": import_seconds,
    }))


# --- hostile files --------------------------------------------------------------------

def _el(mi_type: int, payload: bytes) -> bytes:
    return struct.pack("<II", mi_type, len(payload)) + payload + b"\0" * (-len(payload) % 8)


def _small(mi_type: int, payload: bytes) -> bytes:
    return struct.pack("<HH", mi_type, len(payload)) + payload.ljust(4, b"\0")


def _header(text: bytes = b"MATLAB 5.0 MAT-file, Platform: hostile, made by bench_matfile.py",
            version: int = 0x0100) -> bytes:
    return text.ljust(116, b" ")[:116] + b"\0" * 8 + struct.pack("<H", version) + b"IM"


def _matrix_head(mx_class: int, dims: tuple[int, ...], name: str) -> bytes:
    """Array flags, dimensions and name of a miMATRIX (its payload's first three elements)."""
    return (_el(6, struct.pack("<II", mx_class, 0)) + _el(5, struct.pack(f"<{len(dims)}i", *dims))
            + _el(1, name.encode()))


def _compressed(element: bytes) -> bytes:
    data = zlib.compress(element)
    return struct.pack("<II", 15, len(data)) + data


def _deflate_with_zeros(prefix: bytes, zeros: int) -> bytes:
    """A zlib stream of prefix followed by `zeros` zero bytes, made in well under a second
    for gigabytes: one fully flushed deflate block of 16 MiB of zeros, repeated."""
    chunk_size = 1 << 24
    raw = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = raw.compress(prefix) + raw.flush(zlib.Z_FULL_FLUSH)
    block = raw.compress(bytes(chunk_size)) + raw.flush(zlib.Z_FULL_FLUSH)
    rest = raw.compress(bytes(zeros % chunk_size)) + raw.flush(zlib.Z_FINISH)
    checksum = zlib.adler32(prefix)  # then each zero byte leaves a as it is and adds a to b
    a, b = checksum & 0xFFFF, checksum >> 16
    b = (b + zeros * a) % 65521
    return b"\x78\xda" + head + block * (zeros // chunk_size) + rest + struct.pack(">I", (b << 16) | a)


def crafted_files() -> list[tuple[str, str, bytes]]:
    """(name, corpus whose importer reads it, bytes): hand-made hostile v5 files."""
    files = []
    # The file: a 10000 x 10000 struct array with no fields (a few hundred bytes).
    no_fields = _el(14, _matrix_head(2, (10000, 10000), "groundTruth") + _small(5, struct.pack("<i", 32)) + _el(1, b""))
    files.append(("struct 1e4x1e4, no fields", "bsds500", _header() + no_fields))
    files.append(("same, compressed", "bsds500", _header() + _compressed(no_fields)))
    # Cell arrays declaring 10^8 and 10^10 cells, holding none.
    for side in (10_000, 100_000):
        cells = _el(14, _matrix_head(1, (side, side), "groundTruth"))
        files.append((f"cell {side}x{side}, no cells", "bsds500", _header() + cells))
    # A numeric matrix declaring 10^10 doubles, holding one.
    huge = _el(14, _matrix_head(6, (100_000, 100_000), "newseg") + _el(9, struct.pack("<d", 1.0)))
    labels = _el(14, _matrix_head(6, (1, 1), "newlabels") + _el(9, struct.pack("<d", 1)))
    files.append(("double 1e5x1e5 dims, 8 B data", "msrc_v2", _header() + huge + labels))
    # A data element declaring 4 GiB - 8 bytes in a 256-byte file.
    payload = _matrix_head(6, (1000, 1000), "newseg") + struct.pack("<II", 9, 0xFFFFFFF8) + bytes(64)
    files.append(("data tag declares 4 GiB", "msrc_v2", _header() + _el(14, payload)))
    # zlib bomb: the compressed element declares (inside) a 2x2 newseg, then inflates 3 GiB of zeros past it.
    small = _el(14, _matrix_head(6, (2, 2), "newseg") + _el(9, struct.pack("<4d", 1, 1, 2, 2)))
    labels = _el(14, _matrix_head(6, (1, 1), "newlabels") + _el(9, struct.pack("<d", 1)))
    stream = _deflate_with_zeros(small, 3 << 30)
    files.append(("zlib bomb: 3 GiB past a 2x2", "msrc_v2",
                  _header() + struct.pack("<II", 15, len(stream)) + stream + _compressed(labels)))
    # Consistent but huge: a 30000 x 30000 double map stored as 900 MB of uint8 zeros (7.2 GB as doubles).
    side = 30_000
    head = _matrix_head(6, (side, side), "newseg") + struct.pack("<II", 2, side * side)
    element_head = struct.pack("<II", 14, len(head) + side * side + (-(side * side) % 8)) + head
    stream = _deflate_with_zeros(element_head, side * side + (-(side * side) % 8))
    files.append(("compressed 3e4x3e4 double (0.9 GB u8)", "msrc_v2",
                  _header() + struct.pack("<II", 15, len(stream)) + stream + _compressed(labels)))
    # Cells nested 20,000 deep (about 1 MB inflated).
    inner = _el(14, _matrix_head(6, (0, 0), ""))
    for _ in range(20_000):
        inner = _el(14, _matrix_head(1, (1, 1), "") + inner)
    nested = _el(14, _matrix_head(1, (1, 1), "groundTruth") + inner)
    files.append(("cells nested 20000 deep", "bsds500", _header() + _compressed(nested)))
    # A v7.3 file (HDF5 behind the same text header) and a 128-byte header alone.
    hdf5 = _header(b"MATLAB 7.3 MAT-file", 0x0200) + b"\x89HDF\r\n\x1a\n" + bytes(504)
    files.append(("v7.3 (HDF5) header", "bsds500", hdf5))
    files.append(("header only", "bsds500", _header()))
    return files


def _header_ranges(buffer: bytes, start: int, end: int, ranges: list[tuple[int, int]]) -> None:
    """Byte ranges of every tag and of the flags, dimensions, name and field-name elements
    of each miMATRIX in buffer[start:end] (a sequence of data elements, little-endian)."""
    pos, index = start, 0
    while pos + 8 <= end:
        first, size = struct.unpack_from("<II", buffer, pos)
        ranges.append((pos, pos + 8))
        if first >> 16:  # small element: type, size and data in these 8 bytes
            pos, index = pos + 8, index + 1
            continue
        if index < 5 and first != 14:  # flags, dims, name; a struct's name length and names
            ranges.append((pos + 8, min(pos + 8 + size, end)))
        if first == 14:
            _header_ranges(buffer, pos + 8, min(pos + 8 + size, end), ranges)
        pos, index = pos + 8 + size + (-size % 8), index + 1


def _elements(data: bytes) -> list[tuple[int, bytes]]:
    """The top-level (type, payload) of a v5 file after its header."""
    out, pos = [], 128
    while pos + 8 <= len(data):
        mi_type, size = struct.unpack_from("<II", data, pos)
        out.append((mi_type, data[pos + 8:pos + 8 + size]))
        pos += 8 + (size if mi_type == 15 else size + (-size % 8))
    return out


def hostile_variants(sample: bytes, variants: int, rng: random.Random) -> list[tuple[str, bytes]]:
    """Truncations, raw bit flips and header bit flips of one real file."""
    out = []
    n = len(sample)
    for length in sorted({0, 8, 64, 127, 128, 132, 136, 144, 200, n // 4, n // 2, 3 * n // 4, n - 64, n - 8, n - 1}):
        if 0 <= length < n:
            out.append(("truncated", sample[:length]))
    for _ in range(variants):
        data = bytearray(sample)
        for _ in range(rng.randint(1, 4)):
            bit = rng.randrange(8 * n)
            data[bit // 8] ^= 1 << (bit % 8)
        out.append(("bit flips (raw bytes)", bytes(data)))
    # Flips where the structure is: the tags, flags, dimensions and names of the
    # inflated elements, compressed again so that zlib's checksum still holds.
    elements = [(t, zlib.decompress(p) if t == 15 else struct.pack("<II", t, len(p)) + p) for t, p in _elements(sample)]
    for _ in range(variants):
        k = rng.randrange(len(elements))
        mi_type, plain = elements[k]
        ranges: list[tuple[int, int]] = []
        _header_ranges(plain, 0, len(plain), ranges)
        low, high = rng.choice([r for r in ranges if r[1] > r[0]])
        data = bytearray(plain)
        byte = rng.randrange(low, high)
        data[byte] ^= 1 << rng.randrange(8)
        parts = [_compressed(bytes(data)) if j == k and t == 15 else (bytes(data) if j == k else
                 (_compressed(p) if t == 15 else p)) for j, (t, p) in enumerate(elements)]
        out.append(("bit flip (inflated headers)", sample[:128] + b"".join(parts)))
    return out


# --- the hostile runs: one worker process per reader, restarted after any mishap ------

def child_worker() -> None:
    """Reads jobs (JSON lines: reader, corpus, path) from stdin, answers one JSON line each."""
    import warnings

    warnings.simplefilter("ignore")
    import numpy  # noqa: F401
    import scipy.io  # noqa: F401

    import annobench.regions.matfile  # noqa: F401

    def high_water() -> float:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    # Address space (not touched, so not resident) given back when a read runs out of
    # memory: the answer must still be written while the traceback holds the read's data.
    reserve = mmap.mmap(-1, 64 << 20)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        try:
            with open("/proc/self/clear_refs", "w") as handle:
                handle.write("5")  # reset the peak RSS (VmHWM) to the current RSS
        except OSError:
            pass
        started = time.perf_counter()
        try:
            arrays = read(job["reader"], job["corpus"], job["path"])
        except BaseException as exc:  # noqa: BLE001 (RecursionError, MemoryError and the like too)
            reserve.close()
            answer = classify(exc, job["reader"])
        else:
            answer = {"outcome": "result", "digest": digest(arrays)}
            del arrays
        answer.update(seconds=time.perf_counter() - started, peak_mb=high_water())
        print(json.dumps(answer), flush=True)
        if reserve.closed:
            reserve = mmap.mmap(-1, 64 << 20)


def _type_name(exc: BaseException) -> str:
    kind = type(exc)
    return kind.__name__ if kind.__module__ == "builtins" or kind.__name__ != "error" else f"{kind.__module__}.error"


def classify(exc: BaseException, reader: str) -> dict:
    """Outcome of a read that raised: a MemoryError or RecursionError anywhere in the
    chain (read_mat re-raises everything as MatFileError) is named with what carried it."""
    if isinstance(exc, _Unusable):
        return {"outcome": "unusable", "type": _type_name(exc.args[0])}
    outer, cause, seen = _type_name(exc), exc, 0
    while cause is not None and seen < 20:
        if isinstance(cause, (MemoryError, RecursionError)):
            inner = _type_name(cause)
            kind = inner if cause is exc else f"{inner} as {outer}"
            return {"outcome": "MemoryError" if isinstance(cause, MemoryError) else (
                "clean" if outer in CLEAN_ERRORS[reader] else "other"), "type": kind}
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    clean = any(base.__name__ in CLEAN_ERRORS[reader] for base in type(exc).__mro__)
    return {"outcome": "clean" if clean else "other", "type": outer, "message": str(exc)[:120]}


class Worker:
    """A child running child_worker under RLIMIT_AS, restarted when it dies or is killed."""

    def __init__(self, memory_bytes: int, timeout: float):
        self.memory_bytes, self.timeout, self.proc = memory_bytes, timeout, None

    def _start(self) -> None:
        limit = self.memory_bytes

        def limits() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        self.proc = subprocess.Popen(
            [sys.executable, str(SCRIPT), "--worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, preexec_fn=limits, cwd=REPO)
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the worker did not start (is the memory limit too small for numpy and scipy?)")

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None

    def run(self, job: dict) -> dict:
        if self.proc is None:
            self._start()
        started = time.perf_counter()
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        selector = selectors.DefaultSelector()
        selector.register(self.proc.stdout, selectors.EVENT_READ)
        ready = selector.select(self.timeout)
        selector.close()
        if not ready:
            self.stop()
            return {"outcome": "timeout", "type": f"> {self.timeout:g} s", "seconds": self.timeout}
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            self.proc = None
            name = signal.Signals(-code).name if code < 0 else f"exit {code}"
            return {"outcome": "killed", "type": name, "seconds": time.perf_counter() - started}
        answer = json.loads(line)
        if answer["outcome"] == "MemoryError":
            self.stop()  # start the next file in a fresh process
        return answer


OUTCOMES = ("same", "differs", "unusable", "clean", "other", "MemoryError", "timeout", "killed")


def run_hostile(cases: list[dict], readers: dict[str, tuple[str, ...]], memory_bytes: int, timeout: float):
    """cases: {group, corpus, path, sample}; readers: corpus -> readers that read it.
    Returns results[reader] = list of (case, answer)."""
    results: dict[str, list] = {}
    for reader in ("read_mat", "read_mat_first", "loadmat", "loadmat_simplify"):
        worker = Worker(memory_bytes, timeout)
        try:
            expected = {}
            for case in cases:
                if reader not in readers[case["corpus"]]:
                    continue
                if case["sample"] and case["sample"] not in expected:
                    answer = worker.run({"reader": reader, "corpus": case["corpus"], "path": case["sample"]})
                    expected[case["sample"]] = answer.get("digest")
                answer = worker.run({"reader": reader, "corpus": case["corpus"], "path": case["path"]})
                if answer["outcome"] == "result":
                    if case["sample"]:
                        answer["outcome"] = "same" if answer["digest"] == expected[case["sample"]] else "differs"
                    else:
                        answer["outcome"] = "differs"  # a crafted file has no intact original: any result is made up
                results.setdefault(reader, []).append((case, answer))
        finally:
            worker.stop()
    return results


def confirm_crashes(results: dict, memory_bytes: int, timeout: float) -> dict[str, list[int]]:
    """Each file that killed a reader's worker, read again by that reader alone in a fresh
    interpreter with a larger address space: is the crash the file's, not the limit's?"""
    codes: dict[str, list[int]] = {}

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    for reader, rows in results.items():
        for case, answer in rows:
            if answer["outcome"] != "killed":
                continue
            code = f"import bench_matfile as b; b.read({reader!r}, {case['corpus']!r}, {case['path']!r})"
            try:
                done = subprocess.run([sys.executable, "-c", code], cwd=SCRIPT.parent, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, preexec_fn=limits, timeout=timeout)
                codes.setdefault(reader, []).append(done.returncode)
            except subprocess.TimeoutExpired:
                codes.setdefault(reader, []).append(0)
    return codes


# --- import cost ------------------------------------------------------------------------

def import_cost(repeat: int) -> dict:
    def wall(code: str) -> float:
        best = float("inf")
        for _ in range(repeat):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
            best = min(best, time.perf_counter() - started)
        return best

    out = {
        "python": wall("pass"),
        "numpy": wall("import numpy"),
        "matfile": wall("import annobench.regions.matfile"),
        "scipy.io": wall("import numpy, scipy.io"),
    }
    timing = subprocess.run([sys.executable, "-X", "importtime", "-c", "import numpy; import scipy.io"],
                            capture_output=True, text=True, check=True, cwd=REPO).stderr
    for line in timing.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == "scipy.io":
            out["importtime_scipy.io_us"] = int(parts[1])
    stage = subprocess.run([sys.executable, "-c",
                            "import sys, annobench.regions.stage, annobench.regions.importers;"
                            "print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'skimage'}))"],
                           capture_output=True, text=True, check=True, cwd=REPO).stdout.strip()
    out["stage_imports"] = stage
    return out


# --- main --------------------------------------------------------------------------------

def child_json(*arguments: str) -> dict:
    done = subprocess.run([sys.executable, str(SCRIPT), *arguments], capture_output=True, text=True, cwd=REPO)
    if done.returncode:
        sys.exit(f"child {arguments} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=Path(os.environ.get("ANNOBENCH_SHARED", SHARED)),
                        help="the shared data folder (default ../shared next to the checkout, or $ANNOBENCH_SHARED)")
    parser.add_argument("--repeat", type=int, default=5, help="reads per file and reader; the best is kept")
    parser.add_argument("--variants", type=int, default=200, help="bit-flip variants of each kind per corpus sample")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per hostile read")
    parser.add_argument("--memory-gib", type=float, default=2.0, help="address-space limit per hostile read")
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="copy the hostile files that crashed, ran out of memory or timed out into DIR")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        child_worker()
        return
    if args.child:
        if args.child[0] == "check":
            child_check(args.shared)
        else:
            child_speed(args.shared, args.child[1], args.child[2], args.repeat)
        return

    files = corpus_files(args.shared)
    if not files["msrc_v2"] and not files["bsds500"]:
        sys.exit(f"needs the real segmentations under {args.shared}/data/real/segmentations (pass --shared PATH)")
    import numpy
    import scipy

    began = time.perf_counter()
    print(f"read_mat (annobench/regions/matfile.py) vs scipy.io.loadmat; python {sys.version.split()[0]}, "
          f"numpy {numpy.__version__}, scipy {scipy.__version__}; one process at a time")
    for corpus, paths in files.items():
        print(f"  {corpus}: {len(paths)} .mat files" + ("" if paths else " (none found, skipped)"))
    corpora = [c for c in files if files[c]]

    print("\n1. Same arrays? (dtype, shape and bits of what the importers take; BSDS: every Segmentation)")
    check = child_json("--shared", str(args.shared), "--child", "check")
    for corpus in corpora:
        row = check[corpus]
        print(f"  {corpus:8} {row['same']}/{row['files']} files identical ({row['arrays']} arrays)"
              + (f"; differ: {row['differ']}" if row["differ"] else ""))

    print(f"\n2. Speed and memory on the real files (best of {args.repeat} per file; a fresh process per row)")
    print(f"  {'corpus':8} {'call':74} {'files':>5} {'MB':>5} {'median ms':>9} {'total s':>7} {'max ms':>7}"
          f" {'read peak MB':>12} {'RSS MB imp/end':>14}")
    speed = {}
    for corpus in corpora:
        for reader in ("read_mat", "read_mat_first", "loadmat", "loadmat_simplify"):
            if (reader, corpus) not in MODES:
                continue
            row = child_json("--shared", str(args.shared), "--repeat", str(args.repeat),
                             "--child", "speed", reader, corpus)
            speed[reader, corpus] = row
            print(f"  {corpus:8} {MODES[reader, corpus]:74} {row['files']:5d} {row['bytes'] / 1e6:5.1f}"
                  f" {1000 * row['median']:9.3f} {row['total']:7.3f} {1000 * row['max']:7.2f}"
                  f" {row['peak_read'] / 2**20:12.1f} {row['rss_import']:6.0f}/{row['rss_end']:<6.0f}")

    print("\n3. Import cost in a fresh interpreter (wall time, best of 5)")
    cost = import_cost(5)
    print(f"  python -c pass {1000 * cost['python']:.0f} ms; import numpy {1000 * cost['numpy']:.0f} ms; "
          f"import annobench.regions.matfile {1000 * cost['matfile']:.0f} ms; "
          f"import numpy, scipy.io {1000 * cost['scipy.io']:.0f} ms "
          f"(scipy.io itself: {cost.get('importtime_scipy.io_us', 0) / 1000:.0f} ms by -X importtime)")
    print(f"  the regions stage and importers already import: {cost['stage_imports']}")

    memory_bytes = int(args.memory_gib * 2**30)
    rng = random.Random(args.seed)
    readers = {"msrc_v2": ("read_mat", "loadmat"),
               "bsds500": ("read_mat", "read_mat_first", "loadmat", "loadmat_simplify"),
               "saiapr": ("read_mat", "loadmat")}
    with tempfile.TemporaryDirectory(prefix="bench_matfile_") as tmp:
        cases = []
        for corpus in corpora:
            paths = files[corpus]
            sample = paths[len(paths) // 2]  # a middle file of the sorted list
            sample_copy = Path(tmp) / f"{corpus}_intact.mat"
            sample_copy.write_bytes(sample.read_bytes())
            for k, (group, data) in enumerate(hostile_variants(sample.read_bytes(), args.variants, rng)):
                path = Path(tmp) / f"{corpus}_{k:04d}.mat"
                path.write_bytes(data)
                cases.append({"group": f"{corpus}: {group}", "corpus": corpus, "path": str(path),
                              "sample": str(sample_copy), "name": sample.name})
        for k, (name, corpus, data) in enumerate(crafted_files()):
            path = Path(tmp) / f"crafted_{k:02d}.mat"
            path.write_bytes(data)
            cases.append({"group": "crafted", "corpus": corpus, "path": str(path), "sample": None,
                          "name": f"{name} ({len(data):,} B)"})
        print(f"\n4. Hostile files: {len(cases)} ({args.variants} raw and {args.variants} header bit-flip variants "
              f"and {sum(1 for c in cases if c['group'].endswith('truncated'))} truncations of one file per corpus "
              f"[{', '.join(sorted({c['name'] for c in cases if c['sample']}))}], seed {args.seed}; "
              f"{sum(1 for c in cases if c['group'] == 'crafted')} hand-made); each read in a child limited to "
              f"{args.memory_gib:g} GiB of address space and {args.timeout:g} s")
        started = time.perf_counter()
        results = run_hostile(cases, readers, memory_bytes, args.timeout)
        hostile_seconds = time.perf_counter() - started
        crashes_confirmed = confirm_crashes(results, 4 * memory_bytes, args.timeout)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for reader, rows in results.items():
                for case, answer in rows:
                    if answer["outcome"] in ("MemoryError", "timeout", "killed"):
                        target = args.keep / f"{reader}-{answer['outcome']}-{Path(case['path']).name}"
                        target.write_bytes(Path(case["path"]).read_bytes())

    print("  outcome: same = the intact file's arrays; differs = other arrays, silently (for a hand-made file:"
          " any result); unusable = read, but no\n  arrays where the importer looks (it rejects the file);"
          " clean = the reader's documented errors; other = any other exception")
    groups = sorted({case["group"] for reader in results for case, _ in results[reader]},
                    key=lambda g: (g == "crafted", g))
    print(f"  {'files':40} {'reader':16}" + "".join(f" {o:>8}" for o in OUTCOMES) + f" {'max s':>6} {'max MB':>7}")
    for group in groups:
        for reader in results:
            rows = [(case, answer) for case, answer in results[reader] if case["group"] == group]
            if not rows:
                continue
            counts = Counter(answer["outcome"] for _, answer in rows)
            peak = max((a.get("peak_mb", 0) for _, a in rows), default=0)
            slow = max(a.get("seconds", 0) for _, a in rows)
            print(f"  {group:40} {reader:16}" + "".join(f" {counts.get(o, 0) or '.':>8}" for o in OUTCOMES)
                  + f" {slow:6.2f} {peak:7.0f}")
    print("\n  exception types (reader: outcome type x count)")
    for reader in results:
        types = Counter((a["outcome"], a["type"]) for _, a in results[reader] if "type" in a)
        print(f"  {reader:16} " + ", ".join(f"{o} {t} x{n}" for (o, t), n in sorted(types.items())))
    print("\n  hand-made files, one by one (outcome, type, seconds, peak RSS MB)")
    crafted = [c for c in cases if c["group"] == "crafted"]
    for case in crafted:
        cells = []
        for reader in results:
            answer = next((a for c, a in results[reader] if c is case), None)
            if answer is not None:
                cells.append(f"{reader}: {answer['outcome']}{' ' + answer['type'] if 'type' in answer else ''}"
                             f" {answer.get('seconds', 0):.2f}s"
                             + (f" {answer['peak_mb']:.0f}MB" if "peak_mb" in answer else ""))
        print(f"  {case['name']}\n      " + "\n      ".join(cells))
    print(f"  (hostile runs took {hostile_seconds:.0f} s)")
    if crashes_confirmed:
        print("  crashes read again, one fresh interpreter each, 4x the memory limit: "
              + ", ".join(f"{reader} {sum(1 for r in codes if r < 0)}/{len(codes)} crash again "
                          f"({', '.join(sorted({signal.Signals(-r).name for r in codes if r < 0}))})"
                          for reader, codes in crashes_confirmed.items()))

    print("\n5. Verdict")
    print(verdict(speed, results, cost, check, corpora))
    print(f"\n(all of it took {time.perf_counter() - began:.0f} s)")


def verdict(speed: dict, results: dict, cost: dict, check: dict, corpora: list[str]) -> str:
    def count(readers: tuple[str, ...], outcomes: tuple[str, ...], group: str | None = None) -> Counter:
        return Counter(f"{a['outcome']} ({a['type']})" if a["outcome"] == "killed" else a["outcome"]
                       for reader in readers for c, a in results.get(reader, [])
                       if a["outcome"] in outcomes and (group is None or c["group"] == group))

    def crafted_names(readers: tuple[str, ...]) -> str:
        return "; ".join(sorted({c["name"].split(" (")[0] for reader in readers for c, a in results.get(reader, [])
                                 if c["group"] == "crafted" and a["outcome"] in unbounded})) or "none"

    unbounded = ("MemoryError", "timeout", "killed")
    ours, theirs = ("read_mat", "read_mat_first"), ("loadmat", "loadmat_simplify")
    identical = all(check[c]["same"] == check[c]["files"] for c in corpora)
    ratios = [f"{c} {speed['loadmat', c]['total'] / speed['read_mat', c]['total']:.2f}x"
              for c in corpora if ("read_mat", c) in speed and ("loadmat", c) in speed]
    text = (f"Both readers give {'identical' if identical else 'DIFFERENT'} arrays on every real file. "
            f"loadmat takes {', '.join(ratios)} read_mat's time (corpus totals, best of N)")
    if ("read_mat_first", "bsds500") in speed:
        text += (f"; read_mat with first_cells=1 (one annotator, what loadmat cannot do) takes "
                 f"{speed['read_mat_first', 'bsds500']['total'] / speed['loadmat', 'bsds500']['total']:.2f}x loadmat's")
    text += (f". A fresh process pays {1000 * (cost['scipy.io'] - cost['numpy']):.0f} ms more to import numpy and "
             f"scipy.io than numpy alone, and the regions stage imports "
             f"{'no scipy today' if 'scipy' not in cost['stage_imports'] else 'scipy anyway'}. "
             "Hostile files, unbounded outcomes: "
             + "; ".join(f"{reader} {dict(count((reader,), unbounded)) or 'none'} "
                         f"(hand-made: {crafted_names((reader,))})" for reader in (*ours, *theirs) if reader in results)
             + ". ")
    crashes = count(("loadmat",), ("killed",))
    where = sorted({c["group"] for c, a in results.get("loadmat", []) if a["outcome"] == "killed"})
    silent = count(("read_mat_first",), ("differs",), "bsds500: bit flips (raw bytes)")
    if crashes and not count(ours, ("killed",)):
        text += (f"loadmat crashed the process {sum(crashes.values())} times ({', '.join(crashes)}; files: "
                 f"{', '.join(where)}): no `except` in an importer can catch that, so it takes the whole shard job "
                 "down; every read_mat failure was a Python exception. Keep read_mat, and bound it: check each "
                 "declared element count against the bytes left before allocating (8 bytes per cell, 8 per field per "
                 "struct element, a cap for structs without fields), inflate a compressed element only up to the "
                 "size its inner tag declares (and refuse more than a byte budget), cap the nesting depth, and let "
                 "MemoryError out as itself rather than as 'malformed variable'. ")
    elif count(ours, unbounded) and not count(theirs, unbounded):
        text += "scipy.io.loadmat stayed bounded where read_mat did not: switch, or add the guards to read_mat. "
    else:
        text += "Neither reader is bounded on every file; whichever is kept needs guards before it allocates. "
    if silent:
        text += (f"read_mat's first_cells mode returned silently different arrays for {silent['differs']} raw "
                 "bit flips (it stops inflating before zlib's checksum), so a build that wants one annotator trades "
                 "that check for its speed. ")
    text += "Either way, read untrusted .mat files in a process with an address-space and a time limit."
    return text


if __name__ == "__main__":
    main()
