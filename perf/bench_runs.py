"""Speed and memory of the run checker/reader/writers on a 500,000-line 2014-style run.

The run cycles through the lines of the real ImageCLEF 2014 runs (17-96 pairs a
line) under fresh ids; each step runs in its own process so peak RSS is its own.
Usage: python3 perf/bench_runs.py WORKDIR [N_LINES]
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, SHARED, peak_rss_mb  # noqa: E402

REAL_RUN = SHARED / "data" / "real" / "runs" / "imageclef2014_devel" / "baseline_random_devel.res"
VOCABULARY = [f"concept{k:03d}" for k in range(100)]


def make_inputs(work: Path, n_lines: int) -> None:
    if not REAL_RUN.is_file():
        sys.exit(f"needs the real ImageCLEF 2014 runs at {REAL_RUN.parent} (../shared next to the checkout)")
    real = REAL_RUN.read_bytes().split(b"\n")[:-1]
    (work / "concepts.txt").write_text("\n".join(VOCABULARY) + "\n")
    with open(work / "run.res", "wb") as run, open(work / "lists.txt", "w") as lists:
        for k in range(n_lines):
            fields = real[k % len(real)].split(b" ")
            image_id = f"img{k:09d}"
            run.write(image_id.encode() + b" " + b" ".join(fields[1:]) + b"\n")
            lists.write(" ".join([image_id, *VOCABULARY[: (len(fields) - 1) // 2]]) + "\n")


def step(name: str, work: Path) -> None:
    from annobench.benchmark.runs.checker import check_run
    from annobench.benchmark.runs.files import read_run, write_run

    start = time.perf_counter()
    if name == "check":
        problems = check_run(work / "run.res", VOCABULARY, work / "lists.txt")
        assert not problems, problems[:3]
    elif name == "read":
        read_run(work / "run.res", VOCABULARY, work / "lists.txt")
    elif name == "write-text":
        run = read_run(work / "run.res", VOCABULARY, work / "lists.txt")
        start = time.perf_counter()
        write_run(run, work / "again.res", "imageclef2013")
    elif name == "write-parquet":
        run = read_run(work / "run.res", VOCABULARY, work / "lists.txt")
        start = time.perf_counter()
        write_run(run, work / "run.parquet", "parquet")
    elif name == "check-parquet":
        problems = check_run(work / "run.parquet", VOCABULARY, work / "lists.txt")
        assert not problems, problems[:3]
    elif name == "read-parquet":
        read_run(work / "run.parquet", VOCABULARY)
    print(f"{name:14s} {time.perf_counter() - start:7.1f} s   peak RSS {peak_rss_mb():7.0f} MiB")


def main() -> None:
    work = Path(sys.argv[1])
    n_lines = int(sys.argv[2]) if len(sys.argv) > 2 else 500_000
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "run.res").exists():
        make_inputs(work, n_lines)
    size = (work / "run.res").stat().st_size / 2**20
    print(f"{n_lines} lines, run {size:.0f} MiB")
    for name in ["check", "read", "write-text", "write-parquet", "check-parquet", "read-parquet"]:
        subprocess.run([sys.executable, __file__, "--step", name, str(work)], check=True, cwd=REPO)


if __name__ == "__main__":
    if sys.argv[1] == "--step":
        sys.path.insert(0, str(REPO))
        step(sys.argv[2], Path(sys.argv[3]))
    else:
        main()
