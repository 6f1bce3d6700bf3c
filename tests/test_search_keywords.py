"""The search keywords (annobench.text.search_log): a search log read within its limits and joined to
the build's images by image_id or by address, every other line a rejects row with the reason; and,
on the shared demo build, the table, its rejects, the browser's image page, Croissant, the dataset
card, the export and the integrity check."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annobench.core.config import deep_merge, load_config
from annobench.plan import PlanError, make_plan
from annobench.release.integrity import check_keys
from annobench.text import search_log
from annobench.text.search_log import (
    MAX_LINE_BYTES,
    RAW_CHARS,
    BuildImages,
    read_search_log,
    search_keywords_job,
)
from helpers import REPO, demo_sections

HEADER = "query,engine,rank,url,image_id\n"


def images() -> BuildImages:
    """Three ingested images, one rejected, two addresses as image_urls holds them (normalise_url's form)."""
    found = BuildImages(ingested={"astronaut", "rocket", "coffee"}, rejected={"truncated": "cannot decode: truncated"})
    found.add_address("https://example.org/img/rocket.jpg", "rocket")
    found.add_address("file:///demo/images/coffee.jpg", "coffee")
    found.add_address("https://example.org/img/shared.jpg", "astronaut")
    found.add_address("https://example.org/img/shared.jpg", "coffee")  # two images: the address names neither
    return found


def read(tmp_path: Path, content: bytes, name: str = "log.csv"):
    path = tmp_path / name
    path.write_bytes(content)
    rows, rejects = read_search_log(path, images())
    return rows.to_pylist(), {row["line"]: row for row in rejects.to_pylist()}


def test_csv_lines_are_joined_by_id_or_by_normalised_address_and_every_other_line_says_why(tmp_path):
    rows, rejects = read(tmp_path, (
        "\ufeff" + HEADER
        + "nasa  astronaut ,Google,3,,astronaut\n"                         # 2: by id; whitespace made tidy
        + "rocket launch,bing,1,https://example.org/img/rocket.jpg#top,\n"  # 3: by address, fragment dropped
        + '"espresso, cup",bing,05,file:///demo/images/coffee%2Ejpg,\n'     # 4: quoted comma, %2E decoded
        + "rocket launch,bing,1,https://example.org/img/rocket.jpg,\n"      # 5: the row of line 3 again
        + "\n"                                                              # 6: blank, skipped
        + "x,bing,0,,astronaut\n"
        + "x,bing,-2,,astronaut\n"
        + "x,bing,2.5,,astronaut\n"
        + "x,bing,99999999999,,astronaut\n"
        + " ,bing,1,,astronaut\n"
        + "x, ,1,,astronaut\n"
        + "x,bing,1,,truncated\n"
        + "x,bing,1,,no_such_image\n"
        + "x,bing,1,https://example.org/img/elsewhere.jpg,\n"
        + "x,bing,1,https://example.org/img/shared.jpg,\n"
        + "x,bing,1,,\n"
        + "x,bing,1,,astronaut,extra\n"
        + '"x,bing,1,,astronaut\n'
        + "last,yahoo,12,,astronaut\r\n"                                    # 20: a CRLF line
    ).encode())
    assert rows == [
        {"image_id": "astronaut", "query": "last", "engine": "yahoo", "rank": 12},
        {"image_id": "astronaut", "query": "nasa astronaut", "engine": "Google", "rank": 3},
        {"image_id": "coffee", "query": "espresso, cup", "engine": "bing", "rank": 5},
        {"image_id": "rocket", "query": "rocket launch", "engine": "bing", "rank": 1},
    ]
    reasons = {line: row["reason"] for line, row in rejects.items()}
    assert reasons == {
        5: "the same image, query, engine and rank as line 3",
        7: "rank below 1 (0)",
        8: "rank below 1 (-2)",
        9: "rank is not a whole number ('2.5')",
        10: "rank out of range (99999999999; at most 2,147,483,647)",
        11: "empty query",
        12: "empty engine",
        13: "image rejected at ingest (truncated: cannot decode: truncated)",
        14: "no image with this image_id",
        15: "no image of the build at this address",
        16: "the address leads to several images (astronaut, coffee)",
        17: "neither url nor image_id given",
        18: "more fields than the header (6, not 5)",
        19: "not a CSV line (unexpected end of data)",
    }
    assert rejects[14]["raw"] == "x,bing,1,,no_such_image"
    assert rejects[5]["raw"] == "rocket,rocket launch,bing,1"  # the row it would have given


def test_json_lines_take_the_same_keys_and_refuse_what_is_not_an_object_of_them(tmp_path):
    lines = [
        {"query": "nasa astronaut", "engine": "google", "rank": 3, "image_id": "astronaut"},
        {"query": "rocket", "engine": "bing", "rank": "1", "url": "https://example.org/img/rocket.jpg"},
        {"query": "x", "engine": "bing", "rank": 1, "image_id": "astronaut", "clicks": 4},
        {"query": "x", "engine": "bing", "image_id": "astronaut"},
        {"query": "x", "engine": "bing", "rank": True, "image_id": "astronaut"},
        {"query": "x", "engine": "bing", "rank": 1.0, "image_id": "astronaut"},
        {"query": 7, "engine": "bing", "rank": 1, "image_id": "astronaut"},
        {"query": "x", "engine": None, "rank": 1, "image_id": "astronaut"},
        ["x", "bing", 1],
    ]
    text = "\n".join(json.dumps(line) for line in lines) + "\n"
    text += '{"query": "x\\ud800", "engine": "bing", "rank": 1, "image_id": "astronaut"}\n'  # 10: a lone surrogate
    text += "[" * 50_000 + "\n"                                                             # 11: deep nesting
    text += '{"query": "x", "engine": "bing", "rank": ' + "9" * 5000 + ', "image_id": "astronaut"}\n'
    text += "{not json\n"
    rows, rejects = read(tmp_path, text.encode(), "log.jsonl")
    assert rows == [{"image_id": "astronaut", "query": "nasa astronaut", "engine": "google", "rank": 3},
                    {"image_id": "rocket", "query": "rocket", "engine": "bing", "rank": 1}]
    reasons = {line: row["reason"] for line, row in rejects.items()}
    assert reasons[3] == "unknown field(s) ('clicks'); a search log has query, engine, rank, url, image_id"
    assert reasons[4] == "missing field(s) (rank)"
    assert reasons[5] == "rank is not a whole number (true)" and reasons[6] == "rank is not a whole number (1.0)"
    assert reasons[7] == "query is not text (7)" and reasons[8] == "empty engine"
    assert reasons[9] == "not a JSON object (a list)" and reasons[10].startswith("query is not text")
    assert reasons[11] == "JSON nested too deeply" and reasons[12].startswith("not valid JSON (Exceeds the limit")
    assert reasons[13].startswith("not valid JSON (Expecting property name") and len(rejects) == 11


@pytest.mark.parametrize("header, reason", [
    ("query,engine,rank,url,image_id,clicks", "unknown column(s) ('clicks'); a search log has query, engine, rank, "
                                              "url, image_id; no line of the file is read"),
    ("query,engine,url", "missing column(s) (rank); no line of the file is read"),
    ("query,engine,rank", "neither a url nor an image_id column; no line of the file is read"),
    ("query,engine,rank,image_id,image_id", "repeated column(s) (image_id); no line of the file is read"),
])
def test_a_header_that_is_not_a_search_logs_refuses_the_file_in_one_row(tmp_path, header, reason):
    rows, rejects = read(tmp_path, f"\n{header}\nx,bing,1,astronaut,astronaut,1\n".encode())
    assert rows == [] and list(rejects) == [2] and rejects[2]["reason"] == reason


def test_an_empty_log_is_one_row_for_the_whole_file(tmp_path):
    rows, rejects = read(tmp_path, b"\n \n")
    assert rows == [] and rejects[0]["reason"].startswith("no lines: expected a CSV header")


def test_huge_lines_and_bad_bytes_are_rows_of_their_own_and_the_other_lines_are_read(tmp_path):
    huge = b"q" * (3 * MAX_LINE_BYTES) + b",bing,1,,astronaut"
    at_limit = b"a" * (MAX_LINE_BYTES - len(b",bing,1,,astronaut")) + b",bing,1,,astronaut"
    endless = b"z" * (5 << 20)  # 5 MiB with no line end: read past a block at a time
    content = (HEADER.encode() + huge + b"\n" + b"caf\xe9,bing,1,,astronaut\n" + at_limit + b"\r\n"
               + b"ok,bing,2,,rocket\n" + endless)
    rows, rejects = read(tmp_path, content)
    assert [(row["image_id"], row["rank"]) for row in rows] == [("astronaut", 1), ("rocket", 2)]
    assert len(rows[0]["query"]) == MAX_LINE_BYTES - len(",bing,1,,astronaut")  # exactly at the limit: read
    assert rejects[2]["reason"] == f"line too long ({len(huge):,} bytes; at most {MAX_LINE_BYTES:,})"
    assert rejects[2]["raw"] == "q" * RAW_CHARS + "…"
    assert rejects[3]["reason"] == "not UTF-8 text (invalid continuation byte at byte 3 of the line)"
    assert rejects[3]["raw"] == "caf\\xe9,bing,1,,astronaut"
    assert rejects[6]["reason"] == f"line too long ({len(endless):,} bytes; at most {MAX_LINE_BYTES:,})"


def test_rejected_lines_past_the_listed_ones_are_counted_by_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(search_log, "MAX_LISTED_REJECTS", 10)  # 100,000 in a build
    content = HEADER + "ok,bing,1,,astronaut\n" * 4 + "x,bing,0,,astronaut\n" * 12 + "ok,bing,1,,rocket\n"
    path = tmp_path / "log.csv"
    path.write_text(content, encoding="utf-8")
    rows, rejects = read_search_log(path, images())
    assert rows.num_rows == 2
    listed = rejects.to_pylist()
    # The first ten rejected lines by number, of both kinds (repeats are found after the others).
    assert [row["line"] for row in listed[:10]] == list(range(3, 13))
    assert [row["reason"] for row in listed[:4]] == ["the same image, query, engine and rank as line 2"] * 3 + [
        "rank below 1 (0)"]
    assert listed[10:] == [
        {"line": None, "raw": None, "reason": "5 more lines rejected, not listed (only the first 10 are): rank below 1"}]


# The reader on a million lines, in a process of its own so its peak memory is its own.
MILLION = """
import json, sys, time
import pyarrow.compute as pc
from annobench.text.search_log import BuildImages, read_search_log
ids = {f"img{i:04d}" for i in range(1000)}
started = time.process_time()
rows, rejects = read_search_log(sys.argv[1], BuildImages(ingested=ids))
cpu = time.process_time() - started
# VmHWM: this program's peak. ru_maxrss would keep the peak of the parent it was forked from.
peak = next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM')) / 1024
print(json.dumps({"rows": rows.num_rows, "rejects": rejects.num_rows, "cpu": cpu, "peak_mib": peak,
                  "images": pc.count_distinct(rows.column("image_id")).as_py(), "first": rows.slice(0, 2).to_pylist()}))
"""


def test_a_million_line_log_streams_in_seconds_and_bounded_memory(tmp_path):
    path = tmp_path / "million.csv"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(HEADER)
        handle.writelines(f"query {k % 997},engine{k % 3},{k % 100 + 1},,img{k % 1000:04d}\n" for k in range(10**6))
    done = subprocess.run([sys.executable, "-c", MILLION, str(path)], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    print(figures)
    # Line k gives (img k % 1000, query k % 997, engine k % 3, rank k % 100 + 1): no two lines the same;
    # img0000 has query 0 on lines k = 0 and 997,000 (engine1, rank 1).
    assert figures["rows"] == 10**6 and figures["rejects"] == 0 and figures["images"] == 1000
    assert figures["first"] == [{"image_id": "img0000", "query": "query 0", "engine": "engine0", "rank": 1},
                                {"image_id": "img0000", "query": "query 0", "engine": "engine1", "rank": 1}]
    # Measured 287 MiB peak on the 2-core development machine (Python and pyarrow on their own:
    # 85 MiB); the same rows held as Python tuples take 300 MB on their own. Its time is a figure
    # for the docs, not a test.
    assert figures["peak_mib"] < 400


def test_a_search_log_that_is_no_file_stops_the_plan():
    config = deep_merge(load_config(), deep_merge({"output": "out", **demo_sections(REPO / "demo")},
                                                  {"input": {"search_log": "/nonexistent/log.csv"}}))
    with pytest.raises(PlanError, match=r"^input\.search_log: /nonexistent/log\.csv is not a file"):
        make_plan(config, log=lambda line: None)


def test_a_dangling_search_keywords_row_fails_the_integrity_check(tmp_path):
    for table, rows in (("images", {"image_id": ["astronaut"]}),
                        ("search_keywords", {"image_id": ["astronaut", "nowhere"], "query": ["a", "b"],
                                             "engine": ["e", "e"], "rank": [1, 1]}),
                        ("search_keyword_rejects", {"line": [3], "reason": ["no image with this image_id"],
                                                    "raw": ["x"]})):
        (tmp_path / "tables" / table).mkdir(parents=True)
        pq.write_table(pa.table(rows), tmp_path / "tables" / table / "all.parquet")
    assert [str(problem) for problem in check_keys(tmp_path)] == [
        "search_keywords: image_id names no row of images.image_id: nowhere"]


# ---------------------------------------------------------------- on the demo build


def test_the_demo_has_search_keywords_with_their_ranks_and_a_rejects_row(demo_build):
    rows = pq.read_table(demo_build / "tables" / "search_keywords").to_pylist()
    ranks = {(row["image_id"], row["engine"]): row["rank"] for row in rows}
    assert ranks == {("astronaut", "google"): 3, ("astronaut", "bing"): 1, ("astronaut_copy", "yahoo"): 7,
                     ("chelsea", "google"): 2, ("coffee", "bing"): 5, ("rocket", "google"): 1, ("rocket", "yahoo"): 4,
                     ("camera", "yahoo"): 4, ("coins", "google"): 12, ("logo", "bing"): 9}
    assert len({row["image_id"] for row in rows}) == 8 == len(rows) - 2  # every image of the demo
    assert rows == sorted(rows, key=lambda row: (row["image_id"], row["query"], row["engine"], row["rank"]))
    rejects = pq.read_table(demo_build / "tables" / "search_keyword_rejects").to_pylist()
    assert rejects == [{"line": 12, "reason": "no image of the build at this address",
                        "raw": "golden gate bridge at night,google,2,https://example.org/images/bridge.jpg,"}]
    with open(demo_build / "exports" / "search_keywords.csv", newline="", encoding="utf-8") as handle:
        exported = list(csv.DictReader(handle))
    assert exported == [{**row, "rank": str(row["rank"])} for row in rows]
    assert check_keys(demo_build) == [] and check_keys(demo_build / "release" / "data") == []
    report = (demo_build / "reports" / "integrity.md").read_text(encoding="utf-8")
    assert "search_keywords" in report and "Every key resolves." in report


def test_the_demo_browser_shows_each_images_queries_with_engine_and_rank(demo_build):
    page = (demo_build / "browse" / "images" / "shard-00000" / "rocket.html").read_text(encoding="utf-8")
    section = page[page.index('<section id="search">'):]
    section = section[:section.index("</section>")]
    assert "<h2>Search keywords</h2>" in section
    assert ("<tr><td>rocket launch pad</td><td>google</td><td>1</td></tr>\n"
            "<tr><td>rocket launch pad</td><td>yahoo</td><td>4</td></tr>") in section
    index = (demo_build / "browse" / "index.html").read_text(encoding="utf-8")
    assert "search log" in index and "line 12" in index  # the rejects by reason, with the line


def test_the_demo_release_describes_the_search_keywords(demo_build):
    release = demo_build / "release" / "data"
    croissant = json.loads((release / "croissant.json").read_text(encoding="utf-8"))
    sets = {node["@id"]: node for node in croissant["recordSet"]}
    fields = {field["name"]: field for field in sets["search_keywords"]["field"]}
    assert list(fields) == ["image_id", "query", "engine", "rank"]
    assert fields["image_id"]["references"] == {"field": {"@id": "images/image_id"}}
    assert fields["rank"]["dataType"] == "sc:Integer"
    assert sets["search_keywords"]["description"].startswith("search keywords: the queries that found each image")
    assert {field["name"] for field in sets["search_keyword_rejects"]["field"]} == {"line", "reason", "raw"}
    card = (release / "README.md").read_text(encoding="utf-8")
    assert "## Search keywords" in card and "config_name: search_keywords" in card
    assert "`exports/search_keywords.csv`" in card
    assert (release / "exports" / "search_keywords.csv").read_bytes() == \
        (demo_build / "exports" / "search_keywords.csv").read_bytes()


def test_the_demo_search_keywords_job_recomputes_from_its_record(demo_build, tmp_path):
    from annobench.core.jobs import Job
    from annobench.release.audit import read_jobs

    entry = read_jobs(demo_build / "release" / "data")["search_keywords"]
    assert [raw["role"] for raw in entry["raw_inputs"]] == ["search_log"]
    config = json.loads((demo_build / "release" / "data" / "RELEASE.json").read_text(encoding="utf-8"))["config"]
    for source in entry["inputs"]:
        if not Path(source["path"]).is_absolute():
            target = tmp_path / source["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((demo_build / source["path"]).read_bytes())
    search_keywords_job(Job.from_record(entry, config, tmp_path))
    for name in ("tables/search_keywords/all.parquet", "tables/search_keyword_rejects/all.parquet",
                 "exports/search_keywords.csv"):
        assert (tmp_path / name).read_bytes() == (demo_build / name).read_bytes(), name
