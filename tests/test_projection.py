"""The projection of a whole build from Snakemake's DAG: the scheduler on DAGs worked out by
hand, the DAG as Snakemake plans it, costs from job records, and `annobench bench --records`."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from annobench.projection.costs import RuleCost, calibrate, merged
from annobench.projection.dag import planned_jobs, shape_sizes
from annobench.projection.schedule import SimJob, remaining_paths, simulate
from helpers import REPO, demo_sections, require_shared, run_snakemake, workflow_rules


def diamond() -> list[SimJob]:
    """a (2 s) -> b (3 s, two threads) and c (4 s) -> d (1 s)."""
    return [SimJob("a", "r", 2.0), SimJob("b", "r", 3.0, threads=2, after=("a",)),
            SimJob("c", "r", 4.0, after=("a",)), SimJob("d", "r", 1.0, after=("b", "c"))]


def test_two_cores_make_the_two_thread_job_wait_for_the_longer_branch():
    # At 2 s, c (remaining path 5 s) goes before b (4 s) and takes one core; b needs both, so it
    # starts when c ends at 6 s, ends at 9 s; d ends at 10 s. b waited for c's core: c is on the path.
    schedule = simulate(diamond(), cores=2)
    assert schedule.makespan == pytest.approx(10.0)
    assert (schedule.start["b"], schedule.start["c"]) == (6.0, 2.0)
    assert schedule.critical_path == ["a", "c", "b", "d"]


def test_three_cores_run_both_branches_at_once():
    schedule = simulate(diamond(), cores=3)
    assert schedule.makespan == pytest.approx(7.0)  # a 0-2, b 2-5 beside c 2-6, d 6-7
    assert schedule.critical_path == ["a", "c", "d"]
    assert schedule.busy_cores([1.0, 3.0, 5.5, 6.5]) == [1, 3, 1, 1]
    assert schedule.utilisation(3) == pytest.approx((2 + 6 + 4 + 1) / 21)


def test_one_core_runs_a_two_thread_job_on_it_alone():
    assert simulate(diamond(), cores=1).makespan == pytest.approx(10.0)


def test_memory_keeps_jobs_apart_that_cores_would_run_together():
    jobs = [SimJob("x", "r", 5.0, mem_mb=600), SimJob("y", "r", 5.0, mem_mb=600)]
    assert simulate(jobs, cores=2, mem_mb=1200).makespan == pytest.approx(5.0)
    assert simulate(jobs, cores=2, mem_mb=1000).makespan == pytest.approx(10.0)
    # A job declaring more than the machine has runs with nothing else in memory.
    big = [SimJob("x", "r", 5.0, mem_mb=5000), SimJob("y", "r", 5.0, mem_mb=10)]
    assert simulate(big, cores=2, mem_mb=1000).makespan == pytest.approx(10.0)


def test_a_rules_priority_goes_before_the_longest_path_as_in_snakemake():
    jobs = [SimJob("long", "r", 10.0), SimJob("urgent", "s", 1.0, priority=1)]
    assert simulate(jobs, cores=1).start == {"urgent": 0.0, "long": 1.0}
    assert simulate(jobs, cores=1, order=remaining_paths).start == {"long": 0.0, "urgent": 10.0}


def test_a_cycle_or_a_missing_dependency_is_refused():
    with pytest.raises(ValueError, match="cycle"):
        simulate([SimJob("a", "r", 1.0, after=("b",)), SimJob("b", "r", 1.0, after=("a",))], cores=1)
    with pytest.raises(ValueError, match="not given"):
        simulate([SimJob("a", "r", 1.0, after=("z",))], cores=1)


def test_two_build_sizes_split_a_rules_work_into_fixed_and_rate():
    small = RuleCost("browse", "images", 1.0, 0.0, units=100, work=3.0, build="s")  # 1 + 2 + 0.01 x 100
    large = RuleCost("browse", "images", 1.0, 0.0, units=1000, work=12.0, build="l")  # 1 + 2 + 0.01 x 1000
    cost = merged([small, large])
    assert cost.fixed == pytest.approx(3.0)
    assert cost.rate == pytest.approx(0.01)
    assert merged([large]) is large
    # Work that does not grow with the size (a JVM's start-up) is fixed, not a rate.
    flat = merged([RuleCost("x", "queries", 0.5, 0.0, units=128, work=5.2, build="s"),
                   RuleCost("x", "queries", 0.6, 0.0, units=1566, work=5.1, build="l")])
    assert flat.rate == 0 and flat.fixed == pytest.approx(0.6 + 5.2)
    # Builds whose jobs had other settings (one bag-of-words kind instead of four) are not fitted
    # with the largest: a unit's work differs.
    other = RuleCost("browse", "images", 1.0, 0.0, units=100, work=0.5, build="s", settings="one kind")
    assert merged([other, large]) is large


def test_sizes_that_barely_differ_are_not_fitted_a_line():
    # A codebook trained on a sample capped alike at 5,000 and 20,000 images (the 20,000-image
    # build's records): 0.01 % more rows and 2 s of noise once fitted a rate that projected the
    # codebook 554 min and its peak 675 GiB. The largest build's figures stand instead.
    quarter = RuleCost("bow_codebook_sift", "kmeans", 0.3, 0.0, units=2.49980e10, work=80.3, build="q",
                       peaks=((2.49980e10, 911.6),))
    whole = RuleCost("bow_codebook_sift", "kmeans", 0.3, 0.0, units=2.49998e10, work=85.2, build="w",
                     peaks=((2.49998e10, 966.8),))
    cost = merged([quarter, whole])
    assert cost.rate == 0.0 and cost.work == 85.2
    assert cost.peak_at(2.5e10) == 966.8
    # Sizes a factor apart are fitted as before.
    small = RuleCost("bow_codebook_sift", "kmeans", 0.3, 0.0, units=1e9, work=4.0, build="s",
                     peaks=((1e9, 400.0),))
    fitted = merged([small, quarter, whole])
    assert fitted.rate > 0 and 900 < fitted.peak_at(2.5e10) < 1000


def test_shape_sizes_are_the_real_releases_and_scale_with_the_images():
    assert shape_sizes("webupv2014", 510_123) == {"queries": 9_231, "references": 500_000, "truth_queries": 9_231}
    assert shape_sizes("imageclef2016", 510_123) == {
        "queries": 510_123, "references": 2_000, "truth_queries": 5_070,
        "illustration_queries": 180_000, "illustration_candidates": 200_000}
    assert shape_sizes("saiapr", 10_000) == {"queries": 4_000, "references": 6_000, "truth_queries": 4_000}
    with pytest.raises(ValueError, match="unknown shape '2014'"):
        shape_sizes("2014", 100)


@pytest.fixture(scope="module")
def demo_config(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("demo_plan")
    sections = demo_sections(REPO / "demo")
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump({"output": "out", **sections,
                                     # The large build's shape: per-shard and per-run jobs, not merged ones.
                                     "sharding": {"images_per_shard": 4, "merge_below_images": 0}}))
    return path


def dry_run_counts(workdir: Path, config: Path) -> Counter:
    """Jobs per rule from `snakemake -n`'s job stats table."""
    done = run_snakemake(workdir, "-n", "--forceall", "--configfile", str(config))
    table = done.stdout.split("Job stats:")[1].split("\n\n")[0]
    counts = Counter()
    for line in table.splitlines():
        match = re.fullmatch(r"(\w+)\s+(\d+)", line.strip())
        if match and match.group(1) != "total":
            counts[match.group(1)] = int(match.group(2))
    return counts


def test_the_planned_dag_has_snakemakes_jobs_per_rule_on_the_demo(demo_config, tmp_path):
    planned = planned_jobs(demo_config, tmp_path / "plan", cores=2)
    counts = Counter(job["rule"] for job in planned)
    assert counts == dry_run_counts(tmp_path / "dry", demo_config)
    assert counts["ingest_shard"] > 1  # several shards, so the per-shard rules repeat
    names = {job["name"] for job in planned}
    assert all(set(job["after"]) <= names for job in planned)
    release = next(job for job in planned if job["rule"] == "release")
    assert "browse" in release["after"] and release["mem_mb"] > 0
    # features.bow.codebook_threads is 4: Snakemake caps it at --cores.
    assert {job["threads"] for job in planned if job["rule"].startswith("bow_codebook_")} == {2}
    # Every rule of the workflow but those for inputs the demo has not (web archives, boxes,
    # selection truth), the neighbour search's blocks (a build larger than one block), the
    # merged jobs of small builds and the aggregate targets other rules stand for.
    listing = run_snakemake(tmp_path / "dry", "--list-rules", "--configfile", str(demo_config)).stdout
    listed = {line.strip() for line in listing.splitlines() if re.fullmatch(r"[a-z_0-9]+", line.strip())}
    unused = {"warc_tables", "benchmark_boxes", "box_baseline", "selection_baselines", "benchmark_neighbour_block",
              "benchmark_neighbour_queries", "campaign_run_statistics",
              "ingest_all", "baseline_merged", "benchmark_neighbours_merged", "caption_baselines_merged",
              "caption_run_evaluation_merged", "box_baseline_merged",
              "features_all", "bow_all", "text_all", "regions_all", "benchmark_all"}
    assert "release" in listed and listed - set(counts) <= unused


def test_a_rule_no_calibration_build_ran_is_refused_by_name(demo_build):
    """The demo merges its per-run jobs and has no boxes: a release planned unmerged is not projected."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from annobench.cli import main; sys.exit(main())", "bench",
         "--records", str(demo_build.parent), "--project-images", "300", "--project-cores", "4"],
        cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    refused = dict(re.findall(r"whole release, (.+?) shape, 300 images, 4 cores: not projected: no calibration "
                              r"build ran (.+); give --records", done.stdout))
    assert set(refused) == {"WEBUPV 2014", "ImageCLEF 2016", "SAIAPR TC-12"}
    assert re.search(r"\bbaseline \(\d+ jobs\)", refused["WEBUPV 2014"])
    assert "benchmark_boxes (1 jobs)" in refused["ImageCLEF 2016"]
    assert " h\n" not in done.stdout.split("rate (core-s per unit)")[1]  # no figure made up


def test_projection_prints_the_critical_path_and_the_bound(demo_build, tmp_path):
    from annobench.projection.project import print_projection, project, utilisation_png

    calibration = calibrate([demo_build.parent])
    assert "browse_shard" not in calibration.rules  # the demo has one shard: no browser by shard
    # This test checks the schedule as printed, not the figures: the rules the demo did not run (its
    # per-run jobs merged, one shard) cost what its merged baselines cost.
    missing = workflow_rules() - set(calibration.rules)
    calibration.rules.update(dict.fromkeys(missing, calibration.rules["baseline_merged"]))
    projection = project("webupv2014", 300, 4, calibration, 16_000, images_per_shard=50)
    assert not projection.refused and projection.hours > 0
    out = io.StringIO()
    print_projection(projection, out)
    text = out.getvalue()
    steps = re.findall(r"^\s+([\d.]+) - +([\d.]+)  (\w+)", text, re.MULTILINE)
    # A chain from a job that waits for nothing (which one depends on the records' timings) to the release.
    assert float(steps[0][0]) == 0 and steps[-1][2] in ("release", "all") and "release" in text
    assert all(float(end) <= float(next_start) + 1e-3 for (_, end, _), (next_start, _, _) in zip(steps, steps[1:]))
    # The makespan against the work-over-cores bound, and the longest single job's share of it.
    ratio = re.search(r"makespan ([\d.]+)x the lower bound; longest job \S+ [\d.]+ min, [\d.]+ % of the makespan; "
                      r"on the critical path \S+ [\d.]+ min, [\d.]+ %", text)
    assert ratio and float(ratio.group(1)) >= 0.99
    assert utilisation_png([projection])[:8] == b"\x89PNG\r\n\x1a\n"


def test_calibration_gives_every_recorded_rule_a_cost(demo_build):
    calibration = calibrate([demo_build.parent])
    recorded = {p.stem.split("-")[0] for p in (demo_build / "provenance" / "jobs").glob("*.json")}
    assert recorded <= set(calibration.rules)
    shard = calibration.rules["feature_gist"]
    assert shard.driver == "shard_images" and shard.rate > 0 and shard.fixed > 0
    # The release keeps no record; its log's last line gives its CPU and peak memory.
    release = calibration.rules["release"]
    assert release.work > 0 and len(release.peaks) == 1 and release.peaks[0][1] > 50


def test_a_build_of_small_photos_costs_only_the_rules_whose_work_does_not_follow_the_pixels(demo_build, tmp_path):
    """The bench's wide build: many images resolve a whole-build rule's rate, but its per-shard
    work (features of photos stored small) is not that of real photos."""
    from annobench.projection.costs import PIXEL_DRIVERS, SMALL_PHOTOS_MARK

    marked = tmp_path / "wide"
    marked.mkdir()
    for name in ("config.yaml", "out", ".snakemake"):
        if (demo_build.parent / name).exists():
            (marked / name).symlink_to(demo_build.parent / name)
    plain = calibrate([demo_build.parent])
    (marked / SMALL_PHOTOS_MARK).write_text("photos_max_side: 120\n")
    small = calibrate([marked])
    pixel_rules = {rule for rule, cost in plain.rules.items() if cost.driver in PIXEL_DRIVERS}
    assert {"feature_gist", "ingest_shard"} <= pixel_rules
    assert pixel_rules.isdisjoint(small.rules)
    assert set(small.rules) == set(plain.rules) - pixel_rules
    assert small.rules["integrity"].rate == plain.rules["integrity"].rate


def test_only_a_job_with_a_child_process_or_no_record_is_costed_from_its_wall_time():
    """Wall time beyond a job's CPU is Snakemake starting it (0.1-0.3 s, more than a whole-build
    job's work at a few hundred images) or other work on the machine (a 20,000-image build's page
    blocks: 132 s against 31 s of CPU); only Meteor's JVM and the release's time are its own."""
    from annobench.projection.costs import CHILD_PROCESS_RULES, Slowdown, job_work

    quiet, loaded = Slowdown(1.0, 0.1), Slowdown(1.48, 1.48)
    started = {"rule": "campaign_kit", "cpu": 0.81, "startup": 0.37, "wall": 1.14}
    assert job_work(started, quiet) == pytest.approx(0.81 - 0.37)
    shared = {"rule": "illustration_queries", "cpu": 31.39, "startup": 0.5, "wall": 132.71}
    assert job_work(shared, loaded) == pytest.approx(31.39 - 0.5)
    meteor = {"rule": "caption_meteor_block", "cpu": 0.46, "startup": 0.32, "wall": 6.51}
    assert job_work(meteor, quiet) == pytest.approx(6.51 - 0.1 - 0.32)
    threads = {"rule": "caption_human_bound", "cpu": 8.0, "startup": 0.4, "wall": 4.5}  # CPU beyond wall
    assert job_work(threads, quiet) == pytest.approx(7.6)
    release = {"rule": "release", "cpu": 0.0, "startup": 0.0, "wall": 1.12, "recordless": True}
    assert job_work(release, quiet) == pytest.approx(1.02)
    assert set(CHILD_PROCESS_RULES) <= workflow_rules()


def test_the_parts_of_a_split_search_cost_the_products_of_one_search():
    from annobench.projection.costs import MERGE_RULE, cost_rule
    from annobench.projection.project import images_read, planned_sizes, units_of

    sizes = planned_sizes("imageclef2016", 510_123, 2000)
    tests, trainings = len(sizes["block_shares"]["test"]), len(sizes["block_shares"]["training"])
    assert (tests, trainings) == (27, 6)  # blocks of whole shards up to 20,000 / 100,000 images
    whole = units_of({"rule": "benchmark_neighbours", "wildcards": {"feature": "gist"}}, "pair_dims", sizes)
    assert whole == 510_123 * 2_000 * 960
    parts = [{"rule": "benchmark_neighbour_block", "wildcards": {"feature": "gist", "test_block": f"{t:03d}",
                                                                 "training_block": f"{r:03d}"}}
             for t in range(tests) for r in range(trainings)]
    assert sum(units_of(part, "pair_dims", sizes) for part in parts) == pytest.approx(whole)
    # A part reads its two blocks' vectors, not the build's (whole shards of about 1,993 images).
    assert 110_000 * 960 < images_read(parts[0], sizes) <= (20_000 + 100_000) * 960
    # The neighbours job that only merges parts is costed apart, per query image.
    assert cost_rule("benchmark_neighbours", ["benchmark_neighbour_block-gist-000-000"]) == MERGE_RULE
    assert cost_rule("benchmark_neighbours", ["tables/gist/shard-00000.parquet"]) == "benchmark_neighbours"


def test_a_split_search_part_reads_and_holds_its_test_blocks_test_images_only():
    """WEBUPV 2014: 9,231 queries in one test block of every shard, searched a training block a part."""
    from annobench.benchmark.neighbours.blocks import part_memory_mb
    from annobench.projection.costs import driver_of
    from annobench.projection.project import declared_memory, images_read, planned_sizes, units_of

    sizes = planned_sizes("webupv2014", 510_123, 2000)
    assert len(sizes["block_shares"]["test"]) == 1
    part = {"rule": "benchmark_neighbour_block", "mem_mb": 13_267,
            "wildcards": {"feature": "bow_sift", "test_block": "000", "training_block": "000"}}
    training = sizes["block_shares"]["training"][0] * 510_123
    assert images_read(part, sizes) == pytest.approx((9_231 + training) * 5_000)  # vector values
    assert declared_memory(part, sizes) == part_memory_mb(9_231, 5_000) < 13_267 / 5
    gather = {"rule": "benchmark_neighbour_queries", "wildcards": {"feature": "bow_sift", "test_block": "000"}}
    assert driver_of(gather["rule"], gather["wildcards"]) == "test_block_values"
    assert units_of(gather, "test_block_values", sizes) == pytest.approx(510_123 * 5_000)  # values read
    assert images_read(gather, sizes) == pytest.approx(9_231 * 5_000)  # values written
    # A baseline run's statistics cover the run's test images, not the collection.
    statistics = {"rule": "campaign_run_statistics", "wildcards": {"run": "knn_gist"}}
    assert units_of(statistics, driver_of("campaign_run_statistics", {"run": "knn_gist"}), sizes) == 9_231


def test_the_illustrations_ranking_blocks_cost_the_pairs_of_one_ranking():
    """The teaser's 180,000 queries x 200,000 candidates, ranked by a job per block of pages."""
    from annobench.projection.costs import driver_of
    from annobench.projection.project import images_read, planned_sizes, units_of

    sizes = planned_sizes("imageclef2016", 510_123, 2000)
    blocks = [{"rule": "illustration_rank", "wildcards": {"block": f"{b:03d}"}} for b in range(26)]
    assert sizes["illustration_blocks"] == len(blocks)  # blocks of 20,000 images' pages
    assert driver_of("illustration_rank", {"block": "000"}) == "query_candidates"
    assert sum(units_of(block, "query_candidates", sizes) for block in blocks) == pytest.approx(180_000 * 200_000)
    assert sum(images_read(block, sizes) for block in blocks) == pytest.approx(180_000)  # each its queries
    assert driver_of("illustration", {}) == "illustration_queries"  # gathering the blocks: per query
    assert units_of({"rule": "illustration", "wildcards": {}}, "illustration_queries", sizes) == 180_000


# Rules no release shape plans: inputs the shapes never have (web archives, submitted runs), the merged
# jobs of builds under sharding.merge_below_images, and the targets that stand for other rules.
NOT_IN_A_SHAPE = {"warc_slices", "warc_tables", "submission", "submission_merged", "baseline_merged",
                  "benchmark_neighbours_merged", "caption_baselines_merged", "caption_run_evaluation_merged",
                  "box_baseline_merged", "ingest_all", "features_all", "bow_all", "text_all", "regions_all",
                  "benchmark_all", "search_keywords"}


def test_the_bench_build_runs_every_rule_a_release_shape_plans(tmp_path):
    """What makes `annobench bench` cost every rule of the projected DAG from its own records."""
    from annobench.bench import BSDS, KIWIX, bench_config, default_shard_size

    require_shared(BSDS)
    require_shared(KIWIX)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(bench_config(tmp_path, 200, default_shard_size(200))))
    planned = {job["rule"] for job in planned_jobs(config, tmp_path / "plan", cores=2)}
    rules = workflow_rules()
    assert {"benchmark_neighbour_block", "browse_shard", "caption_meteor_block", "illustration_queries",
            "illustration_rank", "selection_baselines", "box_baseline", "region_benchmark", "release"} <= planned
    assert rules - NOT_IN_A_SHAPE - planned == set()


def test_the_bench_wide_build_stores_small_photos_with_boxes_inside_them(tmp_path):
    import cv2

    from annobench.bench import BSDS, KIWIX, WIDE_SIDE, bench_config, default_shard_size

    require_shared(BSDS)
    require_shared(KIWIX)
    config = bench_config(tmp_path, 300, default_shard_size(300), photo_side=WIDE_SIDE)
    assert "segmentations" not in config["input"]
    listed = [line.split(",")[1] for line in Path(config["input"]["image_list"]).read_text().splitlines()[1:]]
    sizes = {path: cv2.imread(path).shape[:2] for path in set(listed)}
    assert len(sizes) == 200 and {max(size) for size in sizes.values()} == {WIDE_SIDE}
    boxes = [line.split(",") for line in (tmp_path / "boxes.csv").read_text().splitlines()[1:]]
    smallest_side = min(min(size) for size in sizes.values())
    assert len(boxes) == 600 and max(int(value) for box in boxes for value in box[2:]) < smallest_side


def test_the_bench_warns_when_the_machine_speed_moved_during_its_builds():
    from annobench.bench import speed_warnings

    steady = [{"gemm_gflops": 100.0, "fft_ms": 1.00}, {"gemm_gflops": 95.0, "fft_ms": 1.05}]
    assert speed_warnings(steady) == []
    moved = speed_warnings([{"gemm_gflops": 100.0, "fft_ms": 1.00}, {"gemm_gflops": 80.0, "fft_ms": 1.30}])
    assert len(moved) == 2
    assert moved[0].startswith("the float32 product ran 20 % slower") and moved[1].startswith("the FFT ran 23 % slower")


def test_a_build_stopped_and_resumed_is_measured_without_the_stop():
    from annobench.projection.replay import busy_span

    # Jobs overlapping or a second apart are one stretch of work; a 170 s pause with nothing running is not.
    assert busy_span([(0.0, 10.0), (5.0, 20.0), (21.0, 30.0), (200.0, 210.0)], idle=60.0) == 40.0
    assert busy_span([(0.0, 10.0), (50.0, 60.0)], idle=60.0) == 60.0
    assert busy_span([]) == 0.0


def test_the_critical_path_walks_back_over_jobs_of_no_time():
    """Jobs costed at zero seconds end when they start: the walk back must not circle between them."""
    jobs = [SimJob("a", "r", 5.0), SimJob("b", "r", 0.0, after=("a",)), SimJob("c", "r", 0.0, after=("a",)),
            SimJob("d", "r", 3.0, after=("b", "c"))]
    schedule = simulate(jobs, cores=2)
    assert schedule.makespan == 8.0 and schedule.critical_path[0] == "a" and schedule.critical_path[-1] == "d"
