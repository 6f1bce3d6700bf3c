"""The whole release at N images on C cores: plan, cost, simulate, print (annobench bench)."""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from annobench.projection.costs import (CNN_STATED, PAIR_RULES, QUERY_GATHER_RULE, TIMED_VALUE_RATES, Calibration,
                                        RuleCost, cost_rule, feature_dimension, memory_size)
from annobench.projection.dag import (SHAPES, planned_jobs, shape_config, shape_sizes, synthetic_config,
                                      synthetic_shard_sizes)
from annobench.projection.schedule import Schedule, SimJob, simulate


@dataclass
class Projection:
    shape: str
    n_images: int
    cores: int
    jobs: dict[str, SimJob]
    schedule: Schedule
    shard_jobs: frozenset[str] = frozenset()
    stated: dict[str, RuleCost] = field(default_factory=dict)  # rules costed from a stated figure, not a record
    refused: dict[str, int] = field(default_factory=dict)  # rules no calibration build ran -> their jobs
    networks: tuple[str, ...] = ()  # features.cnn planned too
    peaks: dict[str, tuple[float, float]] = field(default_factory=dict)  # rule -> (projected peak MiB, job size)

    @property
    def title(self) -> str:
        return SHAPES[self.shape].title

    @property
    def hours(self) -> float:
        return self.schedule.makespan / 3600

    @property
    def lower_bound_hours(self) -> float:
        """Today's figure: all work spread evenly over the cores, no dependencies."""
        return self.work_hours(lambda job: True)

    @property
    def shard_hours(self) -> float:
        """The share of the lower bound in the per-shard jobs (ingest, features, text, regions, browser pages)."""
        return self.work_hours(lambda job: job.name in self.shard_jobs)

    def work_hours(self, which) -> float:
        return sum(j.seconds * min(j.threads, self.cores) for j in self.jobs.values() if which(j)) / self.cores / 3600


def project(shape: str, n_images: int | None, cores: int, calibration: Calibration, mem_mb: float,
            images_per_shard: int = 2000, workdir: Path | None = None, cnn: dict | None = None) -> Projection:
    """`n_images`: None for the shape's own size. `cnn`: features.cnn of the networks to plan too
    (checked paths, absolute), their tables in benchmark.features. A rule no calibration build ran
    is refused: the projection then has no schedule (Projection.refused names the rules)."""
    n_images = n_images or SHAPES[shape].images
    with tempfile.TemporaryDirectory(prefix="annobench-plan-") as scratch:
        folder = Path(workdir or scratch)
        config = synthetic_config(folder / f"plan-{shape}", n_images, shape, images_per_shard, cnn)
        planned = planned_jobs(config, folder / f"dag-{shape}", cores)
        networks = network_dimensions(cnn or {}, folder / f"dag-{shape}" / "out")
    sizes = planned_sizes(shape, n_images, images_per_shard)
    sizes["networks"] = networks
    jobs, stated, refused, peaks = costed_jobs(planned, calibration, sizes)
    shard_jobs = frozenset(job["name"] for job in planned if "shard" in job["wildcards"])
    schedule = Schedule(0.0, {}, {}, {}) if refused else simulate(list(jobs.values()), cores, mem_mb)
    return Projection(shape, n_images, cores, jobs, schedule, shard_jobs, stated, refused, tuple(sorted(cnn or {})),
                      peaks)


def network_dimensions(cnn: dict, out_dir: Path) -> dict[str, int]:
    """Each planned network's table -> its vector's dimension, from the check planning cached in
    `out_dir` (a network that failed an optional check is not planned)."""
    from annobench.core.fingerprint import code_fingerprint
    from annobench.visual import cnn as networks

    code, found = code_fingerprint(networks.__file__), {}
    for name, settings in cnn.items():
        try:
            found[networks.table_name(name)] = networks.checked_dimension(name, settings, out_dir, code)
        except networks.CnnError:
            continue
    return found


def planned_sizes(shape: str, n_images: int, images_per_shard: int) -> dict:
    """The sizes the jobs of a shape are costed by: queries, references, images, each shard's
    images, the neighbour and Meteor blocks' shares of the images, k-means' work."""
    from annobench.benchmark.illustration.stage import query_blocks
    from annobench.benchmark.neighbours.blocks import block_plan, shard_blocks
    config = shape_config(shape)
    bow = config["features"]["bow"]
    shard_sizes = synthetic_shard_sizes(n_images, images_per_shard)

    def shares(blocks: list[list[int]]) -> list[float]:  # each block's share of the images
        return [sum(shard_sizes[shard] for shard in block) / n_images for block in blocks]

    blocks = {side: shares(side_blocks)
              for side, side_blocks in block_plan(config["benchmark"]["neighbours"], shard_sizes).items()}
    blocks["captions"] = shares(shard_blocks(shard_sizes, config["benchmark"]["captions"]["block_images"]))
    return {**shape_sizes(shape, n_images), "images": n_images, "shard_sizes": shard_sizes,
            "kmeans": bow["sample_descriptors"] * bow["words"] * bow["iterations"], "features": config["features"],
            "sampled_share": min(1.0, bow["sample_images"] / n_images),
            "illustration_blocks": query_blocks(config, n_images),
            "block_shares": blocks}


def search_shares(job: dict, sizes: dict) -> tuple[float, float]:
    """The shares of the test and of the training images a neighbour search job compares: a
    part's two blocks (the test and training images spread evenly over the shards), else all of them."""
    if job["rule"] not in ("benchmark_neighbour_block", QUERY_GATHER_RULE):
        return 1.0, 1.0
    shares = sizes["block_shares"]
    test = shares["test"][int(job["wildcards"]["test_block"])]
    if job["rule"] == QUERY_GATHER_RULE:
        return test, 0.0
    return test, shares["training"][int(job["wildcards"]["training_block"])]


def block_queries(sizes: dict) -> float:
    """The queries of one block of the illustration's pages (the same blocks rank them)."""
    return sizes["illustration_queries"] / sizes["illustration_blocks"]


def units_of(job: dict, driver: str, sizes: dict) -> float:
    if driver == "test_block_values":
        return sizes["images"] * search_shares(job, sizes)[0] * dimension_of(job, sizes)
    if driver == "pair_dims":
        test, training = search_shares(job, sizes)
        return sizes["queries"] * test * sizes["references"] * training * dimension_of(job, sizes)
    if driver in ("shard_images", "sampled_images"):
        share = sizes["sampled_share"] if driver == "sampled_images" else 1.0
        return sizes["shard_sizes"][int(job["wildcards"]["shard"])] * share
    if driver == "page_block_queries":
        return block_queries(sizes)
    if driver == "block_queries":
        return sizes["truth_queries"] * sizes["block_shares"]["captions"][int(job["wildcards"]["block"])]
    if driver == "query_candidates":
        return block_queries(sizes) * sizes["illustration_candidates"]
    return {"fixed": 0}.get(driver, sizes.get(driver, 0))


def images_read(job: dict, sizes: dict) -> float:
    """What a job reads besides its driver: an illustration ranking block its queries; a search
    the vector values of its test and training images (a part: its test block's gathered test
    vectors and its training block); gathering a test block, the test values it writes; any
    other job the build's images."""
    if job["rule"] in PAIR_RULES:
        return block_queries(sizes)
    test, training = search_shares(job, sizes)
    if job["rule"] == QUERY_GATHER_RULE:
        return sizes["queries"] * test * dimension_of(job, sizes)
    if job["rule"] == "benchmark_neighbours":  # one search: it reads every image once
        return sizes["images"] * dimension_of(job, sizes)
    if job["rule"] != "benchmark_neighbour_block":
        return sizes["images"]
    return (sizes["queries"] * test + sizes["images"] * training) * dimension_of(job, sizes)


def dimension_of(job: dict, sizes: dict) -> int:
    """The vector width of a search job's feature."""
    return feature_dimension(job["wildcards"]["feature"], sizes["features"], sizes.get("networks"))


def declared_memory(job: dict, sizes: dict) -> float:
    """A job's mem_mb as Snakemake decides it when the job is ready: a search part's from the
    test vectors it will hold (planning, before they are gathered, declares every image of its
    test block a test image), any other job's as planned."""
    if job["rule"] != "benchmark_neighbour_block":
        return job["mem_mb"]
    from annobench.benchmark.neighbours.blocks import part_memory_mb

    test, _ = search_shares(job, sizes)
    return part_memory_mb(round(sizes["queries"] * test), dimension_of(job, sizes))


def costed_jobs(planned: list[dict], calibration: Calibration, sizes: dict):
    """Each planned job as a simulated one with its cost; the rules costed from a stated figure;
    the rules without a cost (no calibration build ran them) and their jobs; each rule's largest
    projected peak memory (MiB) and the job size it is at."""
    jobs, stated, refused, peaks = {}, {}, {}, {}
    for job in planned:
        if job["rule"] == "all":  # the target: no work
            jobs[job["name"]] = SimJob(job["name"], "all", 0.0, 1, 0, tuple(job["after"]))
            continue
        rule = cost_rule(job["rule"], job["after"])
        cost = calibration.cost_of(rule)
        if cost is None:
            refused[rule] = refused.get(rule, 0) + 1
            continue
        if cost.build == CNN_STATED:
            stated[cost.rule] = cost
        units, read = units_of(job, cost.driver, sizes), images_read({**job, "rule": rule}, sizes)
        jobs[job["name"]] = SimJob(job["name"], job["rule"], cost.seconds(units, read, job["threads"]), job["threads"],
                                   declared_memory(job, sizes), tuple(job["after"]), job.get("priority", 0))
        size = memory_size(cost.driver, units, read)
        peaks[rule] = max(peaks.get(rule, (0.0, 0.0)), (cost.peak_at(size), size))
    return jobs, stated, refused, peaks


# A calibration build whose jobs ran this much slower than their CPU time says was loaded.
LOADED_FACTOR = 1.15


def print_calibration(calibration: Calibration, out=sys.stdout) -> None:
    for build, fit in calibration.slowdown.items():
        print(f"calibration build {build}: wall = {fit.factor:.2f} x (CPU + {fit.overhead:.2f} s) a job "
              f"(machine load during it; Snakemake's per-job overhead)", file=out)
        if fit.factor > LOADED_FACTOR:
            print(f"warning: the jobs of {build} ran {fit.factor:.2f}x slower than their CPU time: other work "
                  "shared the machine; the projection deflates their wall times by it, but a quiet build is surer",
                  file=out)
    print(f"{'rule':28s} {'size driver':13s} {'fixed s':>8s} {'rate (core-s per unit)':>23s}", file=out)
    for rule, cost in sorted(calibration.rules.items()):
        unit = "value" if rule in TIMED_VALUE_RATES else "image"
        extra = f" + {cost.per_image:.3g}/{unit}" if cost.per_image else ""
        print(f"{rule:28s} {cost.driver:13s} {cost.fixed:8.2f} {cost.rate:23.3g}{extra}", file=out)


def print_peak_table(projections: list[Projection], out=sys.stdout) -> None:
    """Every rule's projected peak memory a job (MiB) in each projected release, and the line fitted."""
    shown = [p for p in projections if not p.refused]
    rules = sorted({rule for p in shown for rule in p.peaks})
    print("projected peak memory a job, MiB (the size it is at): " + " | ".join(p.title for p in shown), file=out)
    for rule in rules:
        cells = [f"{p.peaks[rule][0]:,.0f} ({p.peaks[rule][1]:,.0f})" if rule in p.peaks else "-" for p in shown]
        print(f"  {rule:32s} " + " | ".join(cells), file=out)


def print_projection(projection: Projection, out=sys.stdout) -> None:
    s, p = projection.schedule, projection
    what = f"whole release, {p.title} shape" + (f" with CNN features {', '.join(p.networks)}" if p.networks else "")
    if p.refused:
        print(f"{what}, {p.n_images} images, {p.cores} cores: not projected: no "
              "calibration build ran " + ", ".join(f"{rule} ({jobs} jobs)" for rule, jobs in sorted(p.refused.items()))
              + "; give --records of a build that did (annobench bench builds every rule)", file=out)
        return
    print(f"{what}, {p.n_images} images, {p.cores} cores: {p.hours:.2f} h", file=out)
    for rule, cost in sorted(p.stated.items()):
        print(f"  {rule}: {cost.rate:.3g} core-s per image + {cost.fixed:.1f} s a job, {cost.build}", file=out)
    print(f"  {len(p.jobs)} jobs; lower bound (all work spread over the cores): {p.lower_bound_hours:.2f} h, "
          f"{p.shard_hours:.2f} h of it in the per-shard jobs; cores busy {100 * s.utilisation(p.cores):.0f} % of "
          "the makespan", file=out)
    longest = max(p.jobs.values(), key=lambda job: (job.seconds, job.name))
    on_path = max((p.jobs[n] for n in s.critical_path), key=lambda job: (job.seconds, job.name))
    print(f"  makespan {p.hours / p.lower_bound_hours:.2f}x the lower bound; longest job {longest.name} "
          f"{longest.seconds / 60:.1f} min, {100 * longest.seconds / 3600 / p.hours:.1f} % of the makespan; "
          f"on the critical path {on_path.name} {on_path.seconds / 60:.1f} min, "
          f"{100 * on_path.seconds / 3600 / p.hours:.1f} %", file=out)
    print_peaks(p, out)
    print("  critical path (start - end in h; shard jobs of one rule in a row shown together):", file=out)
    for rule, names in path_runs(s.critical_path, p.jobs):
        first, last = names[0], names[-1]
        what = f"{rule} x{len(names)} shards" if len(names) > 1 else first
        minutes = sum(p.jobs[n].seconds for n in names) / 60
        print(f"    {s.start[first] / 3600:6.3f} - {s.end[last] / 3600:6.3f}  {what} ({minutes:.1f} min, "
              f"{s.threads[first]} thread(s))", file=out)


# A job projected above this much memory is named (a node of the target machines holds 16 GB a job).
MEMORY_LIMIT_MIB = 16 * 1024


def print_peaks(p: Projection, out=sys.stdout, shown: int = 4) -> None:
    """The largest projected peaks (a line through each rule's measured jobs), and any above the limit."""
    largest = sorted(p.peaks.items(), key=lambda item: -item[1][0])
    over = [rule for rule, (mib, _) in largest if mib > MEMORY_LIMIT_MIB]
    print("  projected peak memory a job (fitted to the measured jobs' peaks): " + ", ".join(
        f"{rule} {mib / 1024:.1f} GiB" for rule, (mib, _) in largest[:shown])
        + f"; above {MEMORY_LIMIT_MIB // 1024} GiB: {', '.join(over) or 'none'}", file=out)


def path_runs(path: list[str], jobs: dict[str, SimJob]) -> list[tuple[str, list[str]]]:
    """The critical path as runs of consecutive jobs of one rule."""
    runs: list[tuple[str, list[str]]] = []
    for name in path:
        rule = jobs[name].rule
        if runs and runs[-1][0] == rule:
            runs[-1][1].append(name)
        else:
            runs.append((rule, [name]))
    return runs


def utilisation_png(projections: list[Projection], width: int = 900, panel: int = 260) -> bytes:
    """Busy cores over time, one panel a projection (OpenCV: the project's figures need no matplotlib)."""
    import cv2
    import numpy as np

    canvas = np.full((panel * len(projections) + 20, width, 3), 255, np.uint8)
    for k, p in enumerate(projections):
        top, left, right = k * panel + 40, 70, width - 20
        bottom = top + panel - 80
        cv2.rectangle(canvas, (left, top), (right, bottom), (0, 0, 0), 1)
        _text(canvas, f"{p.title} shape, {p.n_images} images, {p.cores} cores: {p.hours:.2f} h "
                      f"(busy {100 * p.schedule.utilisation(p.cores):.0f} %)", (left, top - 12), 0.55)
        span = p.schedule.makespan or 1.0
        times = [span * i / (right - left) for i in range(right - left)]
        for x, busy in enumerate(p.schedule.busy_cores(times)):
            y = bottom - int((bottom - top) * busy / p.cores)
            cv2.line(canvas, (left + x, bottom), (left + x, y), (180, 110, 40), 1)
        _text(canvas, f"{p.cores} cores", (5, top + 12), 0.45)
        _text(canvas, "0", (left - 15, bottom), 0.45)
        _text(canvas, f"time (0 .. {span / 3600:.2f} h)", (left + (right - left) // 3, bottom + 22), 0.5)
    ok, png = cv2.imencode(".png", canvas)
    if not ok:
        raise RuntimeError("OpenCV could not encode the figure as PNG")
    return png.tobytes()


def _text(canvas, text: str, origin: tuple[int, int], scale: float) -> None:
    import cv2

    cv2.putText(canvas, text, origin, cv2.FONT_HERSHEY_SIMPLEX, scale, (0, 0, 0), 1, cv2.LINE_AA)
