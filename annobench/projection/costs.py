"""Per-rule costs from the job records of real builds, and each planned job's cost from them.

A job's cost is a fixed part (its process's start-up, measured inside it, plus Snakemake's
own per-job overhead) and work proportional to one size (its driver):

- shard rules: the images of the shard (bow_sample: the share of them it samples);
- benchmark_neighbours searching alone, and each part of a search split into blocks
  (benchmark_neighbour_block): query x reference x dimension products (NEIGHBOUR_RATE), plus
  the vector values it reads (VECTOR_READ_RATE; a part: its test block's gathered test vectors
  and its training block); gathering a test block's test vectors (QUERY_GATHER_RULE): the
  values of the test block read (VECTOR_READ_RATE) and its test values written
  (VECTOR_WRITE_RATE); the merge of a split search (MERGE_RULE): the query images;
- codebooks: sample descriptors x words x iterations of k-means;
- the annotation and box baselines: the images a run covers (queries); the captions, boxes and
  selection jobs: the images with ground truth (Meteor's block jobs: those of their block);
- the text illustration's ranking blocks: their queries x the candidate images
  (ILLUSTRATION_PAIR_RATE), plus their queries read; its page blocks: their queries and rejected
  pairs; the illustration job that gathers them: the queries;
- every other job (one for the whole build): the images of the build.

Work is CPU time from the job records, less start-up. The jobs of rules that run a child
process (CHILD_PROCESS_RULES: Meteor's JVM, outside the record's CPU) and the release (no
record) are costed from their wall time (Snakemake's metadata) instead; any other job's wall
time beyond its CPU is Snakemake starting it or other work on the machine, not its own. Wall
times are first deflated by how slow the machine ran during the build (`Slowdown`), fitted
over the jobs.
A build of small photos (SMALL_PHOTOS_MARK: the bench's wide build) costs only the rules
whose work does not follow the pixels: its many images resolve the whole-build rules' rates.
A rule no build ran has no cost: the projection refuses it by name rather than guess (a search
in one part takes its parts' costs, SAME_WORK; a network no build ran, a stated figure).
"""

from __future__ import annotations

import base64
import json
import statistics
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import pyarrow.parquet as pq

from annobench.core import layout
from annobench.core.fingerprint import params_hash
from annobench.core.jobs import USAGE_LINE
from annobench.core.provenance import read_job_records
from annobench.core.tables import image_ids
from annobench.visual.stage import FEATURES

# perf/bench_baselines.py (docs/performance.md, The benchmark): 837 s for 10,000 x 500,000 x
# 5,000-d on one core of this machine. A small build's search is all reading and start-up, so
# its products are timed there.
NEIGHBOUR_RATE = 837 / (10_000 * 500_000 * 5_000)
# perf/bench_illustration_ranking.py (docs/performance.md, The benchmark): the text illustration's
# tf-idf scores and ranking, core-seconds per (query, candidate image) pair on one core of the
# development machine (500 queries x 50,000 candidates of the bench's kiwix texts). A small build's
# ranking is all start-up and reading the queries, so its pairs are timed there.
ILLUSTRATION_PAIR_RATE = 4.8e-8
# perf/bench_vector_read.py (docs/performance.md, The benchmark): core-seconds per vector value a
# search reads from its Parquet tables, decoded and filtered to the images it wants (7.6-13.4 ns
# by feature on one core of the development machine, 8.4 over the seven features' values), and
# per value a test block's gathering writes again with zstd (15-57 ns, 18.2 over all). A small
# build's search reads a few dozen vectors a file, so its time there is opening files: these are
# timed on shards of 500 images.
VECTOR_READ_RATE = 8.4e-9
VECTOR_WRITE_RATE = 1.82e-8
# Jobs over the images a run covers (2016: every image; WEBUPV 2014: its 9,231 test images), a
# baseline run's statistics among them.
QUERY_RULES = ("baseline", "box_baseline", "campaign_run_statistics")
# Jobs over the images with ground truth (2016: the development and test sets).
TRUTH_RULES = ("selection_baselines", "caption_baselines", "caption_evaluation", "caption_run_evaluation",
               "caption_human_bound", "benchmark_boxes", "caption_references")
# The text illustration's ranking: a block's queries scored against every candidate image.
PAIR_RULES = ("illustration_rank",)
# The illustration's queries, truth and runs, gathered: the queries.
ILLUSTRATION_QUERY_RULES = ("illustration",)
# Jobs of one block of test images (whole shards): the block's test images.
BLOCK_QUERY_RULES = ("caption_meteor_block",)
# Jobs of one block of pages (by page id hash): the (page, image) pairs they make queries of.
PAGE_BLOCK_RULES = ("illustration_queries",)
FIXED_RULES = ("getlf_projection", "all")
PAIR_RATES = {"pair_dims": NEIGHBOUR_RATE, "query_candidates": ILLUSTRATION_PAIR_RATE,
              "test_block_values": VECTOR_READ_RATE}
SEARCH_RULES = ("benchmark_neighbours", "benchmark_neighbour_block")
# A split search's test vectors, gathered once a test block for its parts: the block's values read.
QUERY_GATHER_RULE = "benchmark_neighbour_queries"
# Rules whose reading (or writing), besides their driver, is costed at a timed rate a value: what
# their jobs' records show beyond the driver and that is per job (opening files), not per value.
TIMED_VALUE_RATES = {"benchmark_neighbours": VECTOR_READ_RATE, "benchmark_neighbour_block": VECTOR_READ_RATE,
                     QUERY_GATHER_RULE: VECTOR_WRITE_RATE}
# Rules whose jobs run Meteor 1.5's JVM (benchmark.captions.meteor) as a child process: its CPU
# is not in the job's record, so these are costed from their wall time.
CHILD_PROCESS_RULES = ("caption_meteor_block", "caption_run_evaluation", "caption_run_evaluation_merged",
                       "caption_human_bound")
# A build whose folder holds this file stored its photos small (annobench bench's wide build):
# the rules driven by these sizes, whose work follows the pixels, are not costed from it.
SMALL_PHOTOS_MARK = "small-photos.yaml"
PIXEL_DRIVERS = ("shard_images", "sampled_images", "kmeans")
MIN_SIZE_SPAN = 1.5  # sizes_span: the least ratio of largest to smallest size a line is fitted over
# Jobs' CPU seconds spread less than this: the build cannot fit a slowdown factor (fit_slowdown).
MIN_CPU_SPREAD = 20.0
# A rule that runs the same code as another on other sizes: costed by the other's records when a
# build ran only that one (a search in one part is a part of all test against all training images).
SAME_WORK = {"benchmark_neighbours": "benchmark_neighbour_block"}
# Rules that keep no job record (the release is the record), costed from the CPU and peak memory
# their log's last line gives (logged_usage), else from Snakemake's wall time of the first of these
# outputs it has metadata on (release/MANIFEST.jsonl before releases were bags).
RECORDLESS = {"release": ("release/bagit.txt", "release/MANIFEST.jsonl")}
# benchmark_neighbours when it only merges the parts of a split search: a cost of its own.
MERGE_RULE = "benchmark_neighbours_merge"
# A network's rule (features.cnn) that no calibration build ran: its cost as perf/bench_cnn.py
# measured it (docs/performance.md, CNN features; 2026-11-27) for a network of VGG16's shape (the
# 2016 configuration) on one core of the development machine: 334-338 ms an image (the recipe and
# the forward pass, ONNX or Caffe) and 3.8-4.1 s to load the network in a job. A network of
# ResNet-50's shape took 105 ms and 0.7 s: the stated figure is for the larger one. Marked as
# stated where printed, never taken for a measurement of the user's network.
CNN_RULE_PREFIX = "feature_cnn_"
CNN_STATED_SECONDS_PER_IMAGE = 0.34
CNN_STATED_LOAD_SECONDS = 4.1
CNN_STATED = "stated: perf/bench_cnn.py, VGG16 shape, 1 core (no build record)"


def driver_of(rule: str, wildcards: dict) -> str:
    if rule == "bow_sample":
        return "sampled_images"
    if "shard" in wildcards:
        return "shard_images"
    if rule in SEARCH_RULES:
        return "pair_dims"
    if rule == QUERY_GATHER_RULE:
        return "test_block_values"
    if rule == MERGE_RULE:
        return "queries"
    if rule in BLOCK_QUERY_RULES:
        return "block_queries"
    if rule in PAGE_BLOCK_RULES:
        return "page_block_queries"
    if rule.startswith("bow_codebook_"):
        return "kmeans"
    if rule in QUERY_RULES:
        return "queries"
    if rule in TRUTH_RULES:
        return "truth_queries"
    if rule in PAIR_RULES:
        return "query_candidates"
    if rule in ILLUSTRATION_QUERY_RULES:
        return "illustration_queries"
    return "fixed" if rule in FIXED_RULES else "images"


@dataclass
class RuleCost:
    rule: str
    driver: str
    fixed: float  # seconds a job, whatever its size
    rate: float  # core-seconds per unit of the driver
    # core-seconds per image read besides the driver (the illustration's ranking); per vector value
    # read or written for the rules of TIMED_VALUE_RATES
    per_image: float = 0.0
    units: float = 0.0  # the driver's size in the calibration, summed over its jobs
    build: str = ""
    work: float = 0.0  # core-seconds of work (start-up aside), summed over its jobs
    jobs: int = 1
    settings: str | None = None  # hash of the jobs' `settings` param: the work a unit costs depends on it
    peaks: tuple[tuple[float, float], ...] = ()  # (memory_size, peak MiB) of each job measured

    def seconds(self, units: float, n_images: int, threads: int = 1) -> float:
        return self.fixed + (self.rate * units + self.per_image * n_images) / max(1, threads)

    def peak_at(self, size: float) -> float:
        """Peak memory (MiB) at a job size (memory_size), from a least-squares line through the
        measured jobs' peaks; never below the least a job took (the interpreter and its imports)."""
        if not self.peaks:
            return 0.0
        if not sizes_span(self.peaks):
            return max(p for _, p in self.peaks)
        base, slope = line_fit(self.peaks)
        return max(base + max(slope, 0.0) * size, min(p for _, p in self.peaks))


def memory_size(driver: str, units: float, read: float) -> float:
    """What a job's memory grows with: the images (queries) a search reads; else its driver's units."""
    return read if driver in PAIR_RATES else units


def sizes_span(points) -> bool:
    """Whether (size, value) points span sizes enough to fit a line: the largest at least
    MIN_SIZE_SPAN times the smallest. Two builds whose sizes barely differ (a bag-of-words sample
    capped alike at 5,000 and 20,000 images) differ in run-to-run noise more than in work, and a line
    through them projects that noise a thousandfold."""
    sizes = [size for size, _ in points]
    return bool(sizes) and max(sizes) > 0 and max(sizes) >= MIN_SIZE_SPAN * max(min(sizes), 0.0)


def line_fit(points) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line through (x, y) points (two x values at least)."""
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points)
    return mean_y - slope * mean_x, slope


@dataclass
class Slowdown:
    """wall = factor x (CPU + overhead), fitted over a build's jobs: how much slower than its
    own CPU time a job ran (a loaded machine), and Snakemake's per-job overhead in CPU seconds."""
    factor: float = 1.0
    overhead: float = 0.0


@dataclass
class Calibration:
    rules: dict[str, RuleCost]
    slowdown: dict[str, Slowdown] = field(default_factory=dict)  # build -> its fit

    def cost_of(self, rule: str) -> RuleCost | None:
        """The rule's cost; None when no calibration build ran it (the projection refuses it by name)."""
        if rule in self.rules:
            return self.rules[rule]
        if SAME_WORK.get(rule) in self.rules:
            return self.rules[SAME_WORK[rule]]
        if rule.startswith(CNN_RULE_PREFIX):  # no record: the benchmark's figure, marked as stated
            start_up = statistics.median(c.fixed for c in self.rules.values()) if self.rules else 0.0
            return RuleCost(rule, "shard_images", start_up + CNN_STATED_LOAD_SECONDS,
                            CNN_STATED_SECONDS_PER_IMAGE, build=CNN_STATED)
        return None


def calibrate(workdirs: list[Path]) -> Calibration:
    """Rules' costs from the builds in `workdirs` (each with out/ and .snakemake/); a rule measured
    in several builds takes its figures from the build where its size was largest. A build marked
    as of small photos (SMALL_PHOTOS_MARK) costs no rule of PIXEL_DRIVERS."""
    measured: dict[str, list[RuleCost]] = {}
    slowdowns = {}
    for workdir in workdirs:
        build = BuildSizes(workdir)
        jobs = build.jobs()
        slowdowns[str(workdir)] = fit_slowdown(jobs)
        small_photos = (workdir / SMALL_PHOTOS_MARK).is_file()
        for rule, cost in rule_costs(jobs, build, slowdowns[str(workdir)]).items():
            if not (small_photos and cost.driver in PIXEL_DRIVERS):
                measured.setdefault(rule, []).append(cost)
    return Calibration({rule: merged(costs) for rule, costs in measured.items()}, slowdowns)


def merged(costs: list[RuleCost]) -> RuleCost:
    """One rule measured in several builds: with two sizes or more, a line through the jobs'
    (size, work) splits the work into a fixed part and a rate (one size cannot tell them
    apart: all its work counts as rate, an upper bound at larger sizes); else the largest build.
    Work that does not grow from the smaller size to the larger (the Meteor JVM's start-up
    dominating) is all fixed: the most a job took in any build. Only builds whose jobs had the
    largest's settings are fitted together: a unit's work depends on them (four bag-of-words kinds
    of 4,096 words a shard, or one of 1,000)."""
    largest = max(costs, key=lambda c: c.units)
    costs = [c for c in costs if c.settings == largest.settings]
    peaks = tuple(point for c in costs for point in c.peaks)
    points = [(c.units / c.jobs, c.work / c.jobs) for c in costs if c.driver not in ("fixed", *PAIR_RATES)]
    if not sizes_span(points):
        return largest if peaks == largest.peaks else replace(largest, peaks=peaks)
    intercept, slope = line_fit(points)
    if slope <= 0:
        fixed, slope = max(w for _, w in points), 0.0
    else:
        fixed = max(0.0, intercept)
    return RuleCost(largest.rule, largest.driver, largest.fixed + fixed, slope, units=largest.units,
                    build=" + ".join(sorted({c.build for c in costs})), work=largest.work, jobs=largest.jobs,
                    settings=largest.settings, peaks=peaks)


class BuildSizes:
    """What a real build held: its images, shards, splits and feature widths, and its jobs."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.config = _build_config(workdir)
        self.out = workdir / self.config["output"]
        self.shard_images = {path.stem.split("-")[-1]: pq.read_metadata(path).num_rows
                             for path in sorted((self.out / "tables" / "images").glob("shard-*.parquet"))}
        self.n_images = sum(self.shard_images.values())
        self.split_of = self._splits()
        self.references = sum(split == "train" for split in self.split_of.values())
        self.queries = len(self.split_of) - self.references
        self._split_counts: dict[str, tuple[int, int]] = {}

    def _splits(self) -> dict[str, str]:
        path = self.out / "tables" / "splits" / "all.parquet"
        if not path.exists():
            return {}
        table = pq.read_table(path, columns=["image_id", "split"]).to_pydict()
        return dict(zip(table["image_id"], table["split"]))

    def search_pairs(self, record: dict) -> int:
        """(test, training) pairs a neighbour search compared: all of them, or a part's block x block."""
        inputs = record["files"]["input"]
        if "queries" not in inputs:
            return self.queries * self.references
        test = sum(self.split_counts(path)[0] for path in named_paths(inputs, "queries"))
        return test * sum(self.split_counts(path)[1] for path in named_paths(inputs, "reference"))

    def costed(self, record: dict) -> tuple[str, float, int]:
        """(the rule a job is costed as, its driver's units, the images it read) from its record."""
        costed = {**record, "rule": cost_rule(record["rule"], record["files"]["input_files"])}
        return costed["rule"], self.units(costed), self.images_read(costed)

    def images_read(self, record: dict) -> int:
        """Images whose vectors a neighbour search read (a part's two blocks), the queries an
        illustration block ranked; the build's for any other job."""
        inputs = record["files"]["input"]
        if record["rule"] in PAIR_RULES:
            return self.block_queries(record)
        if record["rule"] == QUERY_GATHER_RULE:  # the test values it writes
            return self.dimension(record["wildcards"]["feature"]) * sum(
                pq.read_metadata(self.out / path).num_rows for path in record["files"]["output_files"])
        if record["rule"] not in SEARCH_RULES:
            return self.n_images
        tables = ([*named_paths(inputs, "queries"), *named_paths(inputs, "reference")] if "queries" in inputs
                  else named_paths(inputs, "features"))
        return self.dimension(record["wildcards"]["feature"]) * sum(map(self.vectors_read, tables))

    def vectors_read(self, table: str) -> int:
        """The vectors of a table a search part reads: a shard's images, or the test images a
        gathered test block holds."""
        if QUERY_GATHER_RULE.removeprefix("benchmark_") in table:
            return pq.read_metadata(self.out / table).num_rows
        return self.shard_images.get(Path(table).stem.split("-")[-1], 0)

    def split_counts(self, table: str) -> tuple[int, int]:
        """(query, training) images of a shard table, read once: every part of every feature's
        search names the same shards."""
        if table not in self._split_counts:
            splits = [self.split_of[i] for i in image_ids([self.out / table]) if i in self.split_of]
            self._split_counts[table] = (len(splits) - splits.count("train"), splits.count("train"))
        return self._split_counts[table]

    def dimension(self, feature: str) -> int:
        first = next((self.out / "tables" / feature).glob("shard-*.parquet"))
        return pq.read_schema(first).field("vector").type.list_size

    def units(self, record: dict) -> float:
        driver = driver_of(record["rule"], record["wildcards"])
        if driver == "shard_images":
            return self.shard_images.get(record["wildcards"]["shard"], 0)
        if driver == "sampled_images":
            return self.shard_images.get(record["wildcards"]["shard"], 0) * record["params"]["sampling"]["fraction"]
        if driver == "pair_dims":
            return self.search_pairs(record) * self.dimension(record["wildcards"]["feature"])
        if driver == "kmeans":
            return kmeans_units(record, self.out)
        if driver == "page_block_queries":
            return sum(pq.read_metadata(self.out / path).num_rows for path in record["files"]["output_files"])
        if driver == "block_queries":
            return sum(self.split_counts(path)[0] for path in named_paths(record["files"]["input"], "images"))
        if driver == "test_block_values":
            return self.dimension(record["wildcards"]["feature"]) * sum(
                self.vectors_read(path) for path in named_paths(record["files"]["input"], "queries"))
        if driver == "query_candidates":
            return self.block_queries(record) * self.illustration_candidates
        return {"queries": self.queries, "truth_queries": self.queries, "images": self.n_images, "fixed": 0,
                "illustration_queries": self.illustration_queries}[driver]

    def block_queries(self, record: dict) -> int:
        """The queries of an illustration ranking block."""
        return pq.read_metadata(self.out / record["files"]["input"]["queries"]).num_rows

    @cached_property
    def illustration_queries(self) -> int:
        path = self.out / "tables" / "queries" / "all.parquet"
        return pq.read_metadata(path).num_rows if path.exists() else 0

    @cached_property
    def illustration_candidates(self) -> int:
        """The images the illustration ranks: the test split's, or every image (`images: all`)."""
        everything = self.config.get("benchmark", {}).get("illustration", {}).get("images") == "all"
        return self.n_images if everything else sum(split == "test" for split in self.split_of.values())

    def jobs(self) -> list[dict]:
        """Each job's rule, CPU, start-up CPU and wall time (None if Snakemake kept none)."""
        walls = metadata_walls(self.workdir)
        jobs = []
        for _, record in read_job_records(self.out):
            usage = record.get("usage") or {}
            outputs = record["files"]["output_files"]
            wall = walls.get(f"{self.config['output']}/{outputs[0]}") if outputs else None
            rule, units, read = self.costed(record)
            jobs.append({"rule": rule, "wildcards": record["wildcards"], "units": units, "read": read,
                         "cpu": usage.get("cpu_seconds", 0.0), "startup": usage.get("startup_cpu_seconds") or 0.0,
                         "wall": wall, "settings": params_hash(record["params"].get("settings")),
                         "peak": usage.get("peak_rss_mib")})
        for rule, outputs in RECORDLESS.items():
            wall = next((walls[key] for key in (f"{self.config['output']}/{o}" for o in outputs) if key in walls), None)
            if wall is not None:  # its work: its CPU (the log's usage line) or else its wall time, an image
                usage = logged_usage(self.out / "logs" / f"{rule}.log")
                jobs.append({"rule": rule, "wildcards": {}, "units": self.n_images, "read": self.n_images,
                             "cpu": usage.get("cpu_seconds", 0.0), "startup": usage.get("startup_cpu_seconds") or 0.0,
                             "wall": wall, "recordless": not usage, "peak": usage.get("peak_rss_mib")})
        return jobs


def logged_usage(log: Path) -> dict:
    """The usage a record-less job wrote as its log's last line (jobs.USAGE_LINE); {} for a build
    from before it did."""
    try:
        last = log.read_text(encoding="utf-8").rstrip("\n").rsplit("\n", 1)[-1]
    except OSError:
        return {}
    return json.loads(last[len(USAGE_LINE):]) if last.startswith(USAGE_LINE) else {}


def named_paths(inputs: dict, name: str) -> list[str]:
    """A named input of a job record as a list (the record keeps a single file as a string)."""
    value = inputs[name]
    return [value] if isinstance(value, str) else list(value)


def cost_rule(rule: str, inputs: list[str]) -> str:
    """The rule a job is costed as: MERGE_RULE for a neighbours job that merges parts (its inputs,
    or the jobs it waits for, name neighbour blocks)."""
    if rule == "benchmark_neighbours" and any("neighbour_block" in name for name in inputs):
        return MERGE_RULE
    return rule


def kmeans_units(record: dict, out: Path) -> float:
    from annobench.visual.bow_stage import npy_shape

    settings = record["params"]["settings"]
    rows = sum(npy_shape(out / source["path"])[0] for source in record["inputs"] if source["path"].endswith(".npy"))
    return min(rows, settings["sample_descriptors"]) * settings["words"] * settings["iterations"]


def metadata_walls(workdir: Path) -> dict[str, float]:
    """Output path -> the wall time of the job that made it, from Snakemake's metadata."""
    walls = {}
    for path in (workdir / ".snakemake" / "metadata").glob("*"):
        try:
            meta = json.loads(path.read_text())
            walls[base64.b64decode(path.name).decode()] = meta["endtime"] - meta["starttime"]
        except (ValueError, KeyError, TypeError):
            continue
    return walls


def metadata_meta(workdir: Path, output: str) -> dict | None:
    """Snakemake's metadata record of an output (path as the job named it), if kept."""
    path = workdir / ".snakemake" / "metadata" / base64.b64encode(output.encode()).decode()
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def fit_slowdown(jobs: list[dict]) -> Slowdown:
    """Least squares of wall on CPU over the single-core jobs, leaving out jobs whose wall is
    far beyond their CPU (child processes) and multi-threaded ones (CPU above wall). A build
    whose jobs all take about the same CPU (a small one: start-up, seconds each) cannot tell a
    slower machine from Snakemake's overhead a job: there the factor is 1 and the overhead the
    median of wall less CPU."""
    points = [(j["cpu"], j["wall"]) for j in jobs
              if j["wall"] and j["cpu"] <= j["wall"] <= 5 * (j["cpu"] + 1) and not j.get("recordless")]
    if len(points) < 3:
        return Slowdown()
    if max(c for c, _ in points) - min(c for c, _ in points) < MIN_CPU_SPREAD:
        return Slowdown(1.0, max(0.0, statistics.median(w - c for c, w in points)))
    _, factor = line_fit(points)
    factor = max(factor, 1.0)
    mean_cpu = statistics.fmean(c for c, _ in points)
    mean_wall = statistics.fmean(w for _, w in points)
    return Slowdown(factor, max(0.0, (mean_wall - factor * mean_cpu) / factor))


def job_work(job: dict, slowdown: Slowdown) -> float:
    """Core-seconds of a job's own work, start-up aside (module docstring): its CPU, or for a job
    with a child process or without a record its wall time after the slowdown."""
    cpu = job["cpu"]
    if job["wall"] and (job.get("recordless") or job["rule"] in CHILD_PROCESS_RULES):
        cpu = max(cpu, job["wall"] / slowdown.factor - slowdown.overhead)
    return max(0.0, cpu - job["startup"])


def rule_costs(jobs: list[dict], build: BuildSizes, slowdown: Slowdown) -> dict[str, RuleCost]:
    by_rule: dict[str, list[dict]] = {}
    for job in jobs:
        by_rule.setdefault(job["rule"], []).append(job)
    costs = {}
    for rule, group in by_rule.items():
        driver = driver_of(rule, group[0]["wildcards"])
        fixed = statistics.fmean(j["startup"] for j in group) + slowdown.overhead
        work = sum(job_work(j, slowdown) for j in group)
        units = sum(j["units"] for j in group)
        settings = {j.get("settings") for j in group}
        cost = RuleCost(rule, driver, fixed, 0.0, units=units, build=str(build.workdir), work=work, jobs=len(group),
                        settings=settings.pop() if len(settings) == 1 else "mixed",
                        peaks=tuple((memory_size(driver, j["units"], j["read"]), j["peak"])
                                    for j in group if j.get("peak")))
        if driver in PAIR_RATES:  # products at the timed rate; the rest is reading, per image (query)
            cost.rate = PAIR_RATES[driver]
            read = sum(j["read"] for j in group)
            if rule in TIMED_VALUE_RATES:  # values at a timed rate too; what remains is a job's own
                cost.per_image = TIMED_VALUE_RATES[rule]
                cost.fixed += max(0.0, work - cost.rate * units - cost.per_image * read) / len(group)
            else:
                cost.per_image = max(0.0, work - cost.rate * units) / max(1, read)
        elif driver != "fixed" and units:
            cost.rate = work / units
        else:
            cost.fixed += work / len(group)
        costs[rule] = cost
    return costs


def _build_config(workdir: Path) -> dict:
    import yaml

    for name in ("config.yaml", "config.yml"):
        if (workdir / name).exists():
            return {"output": "out", **yaml.safe_load((workdir / name).read_text())}
    return {"output": "out"}


def feature_dimension(feature: str, features_config: dict, networks: dict[str, int] | None = None) -> int:
    """A feature's vector width under a config: the global features' own rule, the bags of words
    words x pyramid cells, a network's (cnn_NAME) as its check found it (`networks`)."""
    if networks and feature in networks:
        return networks[feature]
    if feature.startswith("bow_"):
        bow = features_config["bow"]
        return bow["words"] * sum(level * level for level in bow["pyramid"])
    return FEATURES[feature].dimension(features_config[feature])


def shard_label(shard: int) -> str:
    return layout.shard_ids(shard + 1)[-1]
