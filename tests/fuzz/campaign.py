"""The long fuzz campaign: every reader of outside files, round-robin, on mutations of the shared real files.

    python3 tests/fuzz/campaign.py --minutes 30 [--out DIR] [--batch 60] [--seed S] [--targets a,b]

Each round gives every target a batch of cases (random mutators and seed
files, from a random campaign seed unless --seed is given), read in one
bounded child process per batch (tests/fuzz/harness.py: 4 GiB of address
space, 1 GB resident, 30 s a case). At the end it prints the cases tried
and the outcomes per class for each target, and writes every failing case
to DIR/failures/<target>-<k>/: the mutated file and case.json (target,
seed file, mutator, number, outcome, error, traceback), which
`harness.mutated` makes again from the same case. DIR/summary.json holds
the figures. Exit status 1 when any case failed. Needs ../shared.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from harness import FAILED, OUTCOMES, Bounds, Result, build_seeds, mutated, random_cases, run_batch
from targets import REAL, TARGETS


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, required=True)
    parser.add_argument("--out", type=Path, default=Path("fuzz-out"))
    parser.add_argument("--batch", type=int, default=60, help="cases per target per round (one child each)")
    parser.add_argument("--seed", type=int, default=None, help="the campaign's seed (default: random)")
    parser.add_argument("--targets", default=",".join(TARGETS))
    return parser.parse_args()


def save_failure(result: Result, data: bytes, out: Path, k: int) -> Path:
    folder = out / "failures" / f"{result.case.target}-{k}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / result.case.seed_name).write_bytes(data)
    record = {"target": result.case.target, "seed_file": result.case.seed_name, "mutator": result.case.mutator,
              "number": result.case.number, "key": result.case.key, "outcome": result.outcome,
              "seconds": result.seconds, "peak_mb": result.peak_mb, "error": result.error,
              "traceback": result.traceback}
    (folder / "case.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    return folder


def table(counts: dict[str, Counter], slowest: dict[str, float], peaks: dict[str, float]) -> str:
    head = f"{'target':24} {'cases':>6} " + " ".join(f"{o:>11}" for o in OUTCOMES) + f" {'max s':>7} {'max MB':>7}"
    rows = [head]
    for target, outcomes in counts.items():
        rows.append(f"{target:24} {sum(outcomes.values()):6d} " + " ".join(f"{outcomes[o]:11d}" for o in OUTCOMES)
                    + f" {slowest[target]:7.2f} {peaks[target]:7.0f}")
    total = sum(counts.values(), Counter())
    rows.append(f"{'all':24} {sum(total.values()):6d} " + " ".join(f"{total[o]:11d}" for o in OUTCOMES))
    return "\n".join(rows)


def main() -> int:
    args = arguments()
    if not REAL.is_dir():
        sys.exit(f"needs the real files at {REAL} (../shared next to the checkout)")
    campaign_seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    rng = random.Random(campaign_seed)
    names = args.targets.split(",")
    work = Path(tempfile.mkdtemp(prefix="annobench-fuzz-"))
    started = time.monotonic()
    deadline = started + args.minutes * 60
    seeds = {name: build_seeds(name, work / name / "aux") for name in names}
    counts: dict[str, Counter] = {name: Counter() for name in names}
    slowest, peaks = defaultdict(float), defaultdict(float)
    failures, rounds = 0, 0
    print(f"campaign seed {campaign_seed}; seeds made in {time.monotonic() - started:.0f} s", flush=True)
    while time.monotonic() < deadline:
        rounds += 1
        for name in names:
            if time.monotonic() >= deadline:
                break
            cases = random_cases(name, seeds[name], args.batch, rng)
            folder = work / name / f"round{rounds}"
            for result in run_batch(name, cases, seeds[name], work / name / "aux", folder, Bounds()):
                counts[name][result.outcome] += 1
                slowest[name] = max(slowest[name], result.seconds)
                peaks[name] = max(peaks[name], result.peak_mb)
                if result.outcome in FAILED:
                    failures += 1
                    saved = save_failure(result, mutated(result.case, seeds[name][result.case.seed_name]),
                                         args.out, failures)
                    print(f"FAILED {result.case.key}: {result.outcome}: {result.error[:200]} -> {saved}", flush=True)
            shutil.rmtree(folder)
        print(f"round {rounds} done at {(time.monotonic() - started) / 60:.1f} min, "
              f"{sum(sum(c.values()) for c in counts.values())} cases", flush=True)
    minutes = (time.monotonic() - started) / 60
    print(f"\n{sum(sum(c.values()) for c in counts.values())} cases in {minutes:.1f} min "
          f"({rounds} rounds, campaign seed {campaign_seed}); failing cases in {args.out / 'failures'}")
    print(table(counts, slowest, peaks))
    args.out.mkdir(parents=True, exist_ok=True)
    summary = {"campaign_seed": campaign_seed, "minutes": round(minutes, 1), "rounds": rounds,
               "targets": {n: {"cases": sum(c.values()), **c, "max_seconds": slowest[n], "max_peak_mb": peaks[n]}
                           for n, c in counts.items()}}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
