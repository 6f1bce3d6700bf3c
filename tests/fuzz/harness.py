"""The fuzz harness: mutators, and a runner that reads a batch of mutated files in one bounded child process.

Used by tests/test_fuzz.py (seeded, short) and tests/fuzz/campaign.py (the long
campaign). A case is (target, seed file, mutator, number); the same case
always gives the same bytes. The parent writes a batch of cases to disk and
starts ONE child per batch (a Python per case would cost more than the
cases); the child limits its address space (RLIMIT_AS), reads each file
with the target's reader and reports one JSON line per case: its outcome,
wall time and resident peak (VmHWM, reset before each case). The parent
watches the clock: a case past the time bound is killed with its child, and
a new child takes the cases left.

Outcomes: ok, documented (the target's documented error), rejects (a
rejects row), and the failures: traceback (any other exception), over_time,
over_memory (MemoryError or a resident peak past the bound) and crash (the
child died, e.g. a segfault).
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import selectors
import struct
import subprocess
import sys
import time
import traceback
import zlib
from dataclasses import dataclass, field
from pathlib import Path

SCRIPT = Path(__file__).resolve()
REPO = SCRIPT.parents[2]  # the checkout, above tests/fuzz/
PASSED = ("ok", "documented", "rejects")
FAILED = ("traceback", "over_time", "over_memory", "crash")
OUTCOMES = PASSED + FAILED


@dataclass(frozen=True)
class Bounds:
    address_space: int = 4 << 30  # OpenCV and pyarrow reserve 2-4 GB of address space on import alone
    resident_mb: int = 1024
    seconds: float = 30.0

    @property
    def grace(self) -> float:
        """How long past the bound the parent waits before killing: a case that ends in it is over_time too."""
        return min(5.0, self.seconds)


@dataclass(frozen=True)
class Case:
    target: str
    seed_name: str
    mutator: str
    number: int

    @property
    def key(self) -> str:
        return f"{self.target}:{self.seed_name}:{self.mutator}:{self.number}"


@dataclass
class Result:
    case: Case
    outcome: str
    seconds: float = 0.0
    peak_mb: float = 0.0
    error: str = ""
    traceback: str = ""
    extra: dict = field(default_factory=dict)


# --- mutators: (bytes, rng) -> bytes ------------------------------------------------

BIG_WORDS = (0xFFFFFFFF, 0xFFFFFFF8, 0x7FFFFFFF, 0x80000000, 0x10000000, 0x00FFFFFF)
BIG_NUMBERS = (b"99999999999999999999", b"4294967295", b"-1", b"2147483648", b"1e308", b"nan", b"-0", b"0")
INVALID_UTF8 = (b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x00", b"\xe2\x82")
NESTINGS = (b"[", b"{\"a\":", b"<div>", b"- ", b"((")
BOMB_BYTES = 1 << 30


def bit_flips(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(rng.randint(1, 16)):
        position = rng.randrange(len(out))
        out[position] ^= 1 << rng.randrange(8)
    return bytes(out)


def interesting_bytes(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        out[rng.randrange(len(out))] = rng.choice((0x00, 0xFF, 0x7F, 0x80, 0x0A, 0x22, 0x2C, rng.randrange(256)))
    return bytes(out)


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data))] if data else data


def empty(data: bytes, rng: random.Random) -> bytes:
    return rng.choice((b"", b"\n", b" \r\n\t", b"\xef\xbb\xbf"))


def garbage_appended(data: bytes, rng: random.Random) -> bytes:
    return data + rng.randbytes(rng.choice((1, 7, 100, 5000)))


def looks_like_text(data: bytes) -> bool:
    return b"\0" not in data[:4096]


def huge_declared_size(data: bytes, rng: random.Random) -> bytes:
    """A size, count or dimension the file declares made huge: a number in text, a word in binary
    (PNG's width and height with their checksum put right)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 33:
        ihdr = bytearray(data[12:29])
        struct.pack_into(">II", ihdr, 4, rng.choice((0x7FFFFFFF, 100_000, 1)), rng.choice((0x7FFFFFFF, 100_000)))
        return data[:12] + bytes(ihdr) + struct.pack(">I", zlib.crc32(bytes(ihdr))) + data[33:]
    if looks_like_text(data):
        numbers = list(re.finditer(rb"\d+(\.\d+)?", data))
        if numbers:
            match = rng.choice(numbers)
            return data[: match.start()] + rng.choice(BIG_NUMBERS) + data[match.end():]
    if len(data) < 8:
        return data + struct.pack("<I", rng.choice(BIG_WORDS))
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        position = rng.randrange(0, len(out) - 3) & ~3
        struct.pack_into(rng.choice(("<I", ">I")), out, position, rng.choice(BIG_WORDS))
    return bytes(out)


def zeros_deflate(prefix: bytes, zeros: int, wbits: int) -> bytes:
    """A zlib (wbits 15) or gzip (wbits 31) stream of prefix then `zeros` zero bytes, made in a second for
    a gigabyte: one flushed deflate block of 16 MiB of zeros, repeated. The checksum is worked out for
    zlib, left wrong for gzip (a reader must have inflated it all before it can tell)."""
    chunk = 1 << 24
    raw = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = raw.compress(prefix) + raw.flush(zlib.Z_FULL_FLUSH)
    block = raw.compress(bytes(chunk)) + raw.flush(zlib.Z_FULL_FLUSH)
    rest = raw.compress(bytes(zeros % chunk)) + raw.flush(zlib.Z_FINISH)
    body = head + block * (zeros // chunk) + rest
    if wbits == 31:
        return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + body + struct.pack("<II", 0, (len(prefix) + zeros) & 0xFFFFFFFF)
    checksum = zlib.adler32(prefix)
    a, b = checksum & 0xFFFF, ((checksum >> 16) + zeros * (checksum & 0xFFFF)) % 65521
    return b"\x78\xda" + body + struct.pack(">I", (b << 16) | a)


def png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def compression_bomb(data: bytes, rng: random.Random) -> bytes:
    """Something small that inflates to a gigabyte, where the format compresses: a gzip member
    (gzip files), a compressed MAT element, a PNG profile or text chunk; in other files a line
    repeated into 8 MB."""
    if data.startswith(b"\x1f\x8b"):
        member = zeros_deflate(rng.choice((b"", b"WARC/1.0\r\n")), BOMB_BYTES, 31)
        return data + member if rng.random() < 0.5 else member
    if data.startswith(b"MATLAB"):
        return data[:128] + struct.pack("<II", 15, 0) + zeros_deflate(b"\x0e\x00\x00\x00" + struct.pack("<I", 64),
                                                                       BOMB_BYTES, 15)
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        kind, payload = rng.choice(((b"iCCP", b"icc\0\0"), (b"zTXt", b"Comment\0\0"), (b"iTXt", b"Comment\0\1\0\0\0")))
        return data[:33] + png_chunk(kind, payload + zeros_deflate(b"", BOMB_BYTES, 15)) + data[33:]
    lines = data.splitlines(keepends=True) or [data]
    line = rng.choice(lines) or b"x\n"
    copies = min(1_000_000, (8 << 20) // max(1, len(line)))  # 8 MB: the cost must grow with the bytes, no faster
    return data + line * copies


def bad_encoding(data: bytes, rng: random.Random) -> bytes:
    choice = rng.randrange(3)
    if choice == 0:
        position = rng.randrange(len(data) + 1)
        return data[:position] + rng.choice(INVALID_UTF8) + data[position:]
    text = data.decode("utf-8", "replace")
    if choice == 1:
        return text.encode(rng.choice(("utf-16", "utf-16-le", "utf-32")))
    return text.encode("latin-1", "replace").replace(b"e", b"\xe9")


def deep_nesting(data: bytes, rng: random.Random) -> bytes:
    opener = rng.choice(NESTINGS)
    depth = rng.choice((1000, 100_000))
    position = rng.choice((0, rng.randrange(len(data) + 1)))
    return data[:position] + opener * depth + data[position:]


def splice(data: bytes, rng: random.Random) -> bytes:
    """A slice of the file copied elsewhere in it, once or many times (repeated records, ids, chunks)."""
    if len(data) < 2:
        return data
    start = rng.randrange(len(data))
    piece = data[start: start + rng.randint(1, 512)]
    position = rng.randrange(len(data) + 1)
    return data[:position] + piece * rng.choice((1, 2, 1000)) + data[position:]


def line_edits(data: bytes, rng: random.Random) -> bytes:
    """Lines dropped, repeated or swapped, fields split or joined: what a participant's script gets wrong."""
    lines = data.splitlines(keepends=True)
    if not lines:
        return data
    for _ in range(rng.randint(1, 4)):
        k = rng.randrange(len(lines))
        edit = rng.randrange(5)
        if edit == 0:
            del lines[k]
        elif edit == 1:
            lines.insert(k, lines[k])
        elif edit == 2:
            j = rng.randrange(len(lines))
            lines[k], lines[j] = lines[j], lines[k]
        elif edit == 3:
            lines[k] = lines[k].replace(b",", b" ", 1).replace(b" ", b",", 2)
        else:
            lines[k] = lines[k].rstrip(b"\r\n") + rng.choice((b"\r\n", b"\r", b"", b",,\n", b" \n"))
        if not lines:
            break
    return b"".join(lines)


MUTATORS = {f.__name__: f for f in (bit_flips, interesting_bytes, truncate, empty, garbage_appended,
                                     huge_declared_size, compression_bomb, bad_encoding, deep_nesting, splice,
                                     line_edits)}


def mutated(case: Case, seed: bytes) -> bytes:
    """The case's bytes: the same for the same case, on any machine (random.Random of a string is)."""
    if case.mutator == "none":
        return seed
    return MUTATORS[case.mutator](seed, random.Random(case.key))


# --- the parent: write a batch, run it in a child, watch the clock -----------------------

def write_cases(cases: list[Case], seeds: dict[str, bytes], folder: Path) -> list[dict]:
    """Each case's file at folder/<n>/<seed name> (its own folder: importers read folders)."""
    entries = []
    for n, case in enumerate(cases):
        path = folder / str(n) / case.seed_name
        path.parent.mkdir(parents=True)
        path.write_bytes(mutated(case, seeds[case.seed_name]))
        entries.append({"n": n, "path": str(path)})
    return entries


def run_batch(target: str, cases: list[Case], seeds: dict[str, bytes], aux: Path, folder: Path,
              bounds: Bounds = Bounds()) -> list[Result]:
    """Every case of the batch read in bounded children (a new one after each one killed or dead)."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = write_cases(cases, seeds, folder)
    results: dict[int, Result] = {}
    while len(results) < len(cases):
        left = [e for e in entries if e["n"] not in results]
        got = run_child(target, left, aux, folder, bounds)
        if not got:  # a child that never reached a case (a start-up past 120 s): no retry would do better
            raise RuntimeError(f"fuzz child of {target} read no case: {tail(folder / 'child.log')}")
        for n, result in got.items():
            results[n] = Result(cases[n], **result)
    return [results[n] for n in range(len(cases))]


def run_child(target: str, entries: list[dict], aux: Path, folder: Path, bounds: Bounds) -> dict[int, dict]:
    """Results of the cases one child got through; the case it was on when killed or dead, as such."""
    manifest = folder / "manifest.json"
    manifest.write_text(json.dumps(entries), encoding="utf-8")
    command = [sys.executable, str(SCRIPT), "child", target, str(aux), str(manifest), str(bounds.address_space),
               str(bounds.resident_mb), str(bounds.seconds)]
    log = folder / "child.log"  # a file, not a pipe: a reader that writes much to stderr must not block on it
    with open(log, "wb") as stderr:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, cwd=folder)
    results, current, started = {}, None, time.monotonic()
    selector = selectors.DefaultSelector()
    selector.register(child.stdout, selectors.EVENT_READ)
    buffer = b""
    while True:
        allowed = bounds.seconds + bounds.grace if current is not None else 120  # start-up: the imports
        if not selector.select(timeout=max(0.0, started + allowed - time.monotonic())):
            if time.monotonic() - started < allowed:
                continue
            child.kill()
            child.wait()
            if current is not None:
                results[current] = {"outcome": "over_time", "seconds": time.monotonic() - started,
                                    "error": f"killed after {bounds.seconds + bounds.grace:g} s"}
            break
        chunk = os.read(child.stdout.fileno(), 65536)
        if not chunk:
            code = child.wait()
            if current is not None:
                results[current] = {"outcome": "crash", "seconds": time.monotonic() - started,
                                    "error": f"child died (exit {code}): {tail(log)}"}
            elif not results and code != 0:
                raise RuntimeError(f"fuzz child of {target} failed: {tail(log)}")
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            message = json.loads(line)
            if "start" in message:
                current, started = message["start"], time.monotonic()
            else:
                results[message.pop("n")] = message
                current = None
    selector.close()
    child.stdout.close()
    return results


def tail(log: Path, size: int = 2000) -> str:
    return log.read_bytes()[-size:].decode(errors="replace")


# --- the child ------------------------------------------------------------------------

def resident_peak_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def reset_resident_peak() -> None:
    """Linux resets VmHWM to the current resident size on "5" (since 4.0); elsewhere the peak stays the process's."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
    except OSError:
        pass


def classify(call, documented: tuple[type[BaseException], ...]) -> tuple[str, str, str]:
    """(outcome, error line, traceback) of one reader call."""
    try:
        return call(), "", ""
    except documented as error:
        return "documented", f"{type(error).__name__}: {error}"[:2000], ""
    except MemoryError:
        return "over_memory", "MemoryError", traceback.format_exc()[-8000:]
    except Exception as error:  # noqa: BLE001 - the harness's job: anything undocumented is the finding
        return "traceback", f"{type(error).__name__}: {error}"[:2000], traceback.format_exc()[-8000:]


def child_main(target_name: str, aux: str, manifest: str, address_space: str, resident_mb: str,
               time_bound: str) -> None:
    """Read each case; one JSON line before ("start") and after each, on a private copy of stdout
    (a reader that prints must not garble the protocol)."""
    resource.setrlimit(resource.RLIMIT_AS, (int(address_space), int(address_space)))
    sys.path.insert(0, str(REPO))
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    report = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    from targets import HARNESS_CHECK, TARGETS

    target = TARGETS.get(target_name) or {HARNESS_CHECK.name: HARNESS_CHECK}[target_name]
    documented = target.documented()
    for entry in json.loads(Path(manifest).read_text(encoding="utf-8")):
        report.write(json.dumps({"start": entry["n"]}) + "\n")
        reset_resident_peak()
        started = time.perf_counter()
        outcome, error, trace = classify(lambda: target.read(Path(entry["path"]), Path(aux)), documented)
        seconds, peak = time.perf_counter() - started, resident_peak_mb()
        if outcome in PASSED and peak > int(resident_mb):
            outcome, error = "over_memory", f"resident peak {peak:.0f} MB > {resident_mb} MB"
        elif outcome in PASSED and seconds > float(time_bound):
            outcome, error = "over_time", f"{seconds:.1f} s > {time_bound} s"
        report.write(json.dumps({"n": entry["n"], "outcome": outcome, "seconds": round(seconds, 4),
                                 "peak_mb": round(peak, 1), "error": error, "traceback": trace}) + "\n")


# --- seeds and cases ------------------------------------------------------------------

def build_seeds(target: str, aux: Path) -> dict[str, bytes]:
    """The target's seeds; its companion files written to aux (in a child: the readers' imports stay there)."""
    aux.mkdir(parents=True, exist_ok=True)
    script = ("import json, sys; sys.path[:0] = [{b!r}, {r!r}]; from targets import TARGETS; "
              "from pathlib import Path; seeds = TARGETS[{t!r}].seeds(Path({a!r})); "
              "sys.stdout.write(json.dumps({{k: v.hex() for k, v in seeds.items()}}))").format(
        b=str(SCRIPT.parent), r=str(REPO), t=target, a=str(aux))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"seeds of {target} not made: {done.stderr[-3000:]}")
    return {name: bytes.fromhex(data) for name, data in json.loads(done.stdout).items()}


def seeded_cases(target: str, seeds: dict[str, bytes], per_mutator: int, rng: random.Random,
                 mutators: tuple[str, ...] = tuple(MUTATORS)) -> list[Case]:
    """The unmutated seeds (they must read "ok": a harness whose reader fails on real files tests nothing),
    then per_mutator cases of each mutator on seeds drawn by rng."""
    cases = [Case(target, name, "none", 0) for name in sorted(seeds)]
    for mutator in mutators:
        for _ in range(per_mutator):
            cases.append(Case(target, rng.choice(sorted(seeds)), mutator, rng.randrange(1 << 30)))
    return cases


def random_cases(target: str, seeds: dict[str, bytes], n: int, rng: random.Random) -> list[Case]:
    """n cases of mutators and seed files drawn by rng (the long campaign's)."""
    return [Case(target, rng.choice(sorted(seeds)), rng.choice(sorted(MUTATORS)), rng.randrange(1 << 30))
            for _ in range(n)]


if __name__ == "__main__" and sys.argv[1:2] == ["child"]:
    sys.path.insert(0, str(SCRIPT.parent))
    child_main(*sys.argv[2:])
