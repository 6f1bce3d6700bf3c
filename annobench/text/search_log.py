"""The search keywords: the queries that found each image in a search engine, with the engine and
the image's rank in that query's results, the first textual data set of the ImageCLEF web
collections (Gilbert et al. 2016, section 2.4).

`input.search_log` is a CSV file with a header (`query,engine,rank` and `url` and/or `image_id`)
or a JSON-lines file (one object a line with those keys); the first line that is not blank says
which (a JSON line starts with `{`). A line names its image by `image_id` or, when it gives none,
by its address `url`, which is joined to the build's images exactly as the page mapping is:
normalised by `page_images.normalise_url` and compared with the addresses of the build's images
(`image_urls.url`, resolved by the same function, and for web archives the image records'
addresses). Every line that gives no row has a rejects row with its line number, the reason and
its first characters.

The log is read as a stream, a line at a time, under limits (docs/reliability.md): a line at most
MAX_LINE_BYTES bytes (a longer one is skipped to its end, never held), each line decoded as UTF-8
on its own (a bad line is a rejects row, the others are read), one record a line (a quoted field
does not span lines). A row is held as Python values only until its batch of lines is made Arrow
columns; the rows are sorted and deduplicated by Arrow. Rejected lines past the first
MAX_LISTED_REJECTS are counted by reason, not listed.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from annobench.core.fsutil import atomic_path
from annobench.core.jobs import Job
from annobench.core.tables import field as column
from annobench.core.tables import image_ids, write_table
from annobench.sources.page_images import normalise_url

MAX_LINE_BYTES = 65_536  # a query, an engine, a rank and an address: a few hundred bytes
MAX_RANK = 2**31 - 1
RAW_CHARS = 200  # of a rejected line, kept in its rejects row
MAX_LISTED_REJECTS = 100_000  # rejected lines listed one a row; the rest are counted by reason
BATCH_ROWS = 65_536  # rows gathered as Python values before they become Arrow columns
BLOCK_BYTES = 1 << 20  # read at a time
COLUMNS = ("query", "engine", "rank", "url", "image_id")
REQUIRED = ("query", "engine", "rank")
KEY = ("image_id", "query", "engine", "rank")  # the table's order, and what makes two rows the same
TABLE, REJECTS = "search_keywords", "search_keyword_rejects"
EXPORT = "exports/search_keywords.csv"

SCHEMAS = {
    TABLE: pa.schema([
        column("image_id", pa.string(), "key of the image"),
        column("query", pa.string(), "the words of the query that found the image (whitespace collapsed)"),
        column("engine", pa.string(), "the search engine queried, as the log names it"),
        column("rank", pa.int32(), "the image's position in that query's results (1 = first)"),
    ], metadata={"annobench.description": "search keywords: the queries that found each image in a search "
                                          "engine, with the engine and the image's rank (input.search_log)"}),
    REJECTS: pa.schema([
        column("line", pa.int64(), "line of the search log (1 = the first line; 0 = the whole file; null: "
                                   "a count of the lines past the listed ones)", nullable=True),
        column("reason", pa.string(), "why the line gives no search_keywords row"),
        column("raw", pa.string(), f"the line as read, its first {RAW_CHARS} characters (a bad byte as "
                                   "\\xNN); for a repeated row, the row it would have given", nullable=True),
    ], metadata={"annobench.description": "lines of the search log (input.search_log) that give no "
                                          "search_keywords row, each with the reason"}),
}


# ---------------------------------------------------------------- the build's images


@dataclass
class BuildImages:
    """What a log line may name: the ingested images, the rejected ones, and the images' addresses."""

    ingested: set[str]
    rejected: dict[str, str] = field(default_factory=dict)  # image_id -> the ingest's reason
    addresses: dict[str, str] = field(default_factory=dict)  # normalised address -> image_id
    ambiguous: dict[str, list[str]] = field(default_factory=dict)  # address -> the images it leads to

    def add_address(self, address: str, image_id: str) -> None:
        """An address of an image, in normalise_url's form; one that leads to two images leads to none."""
        known = self.addresses.get(address)
        if address in self.ambiguous:
            self.ambiguous[address] = sorted({*self.ambiguous[address], image_id})
        elif known is not None and known != image_id:
            self.ambiguous[address] = sorted({known, image_id})
            del self.addresses[address]
        else:
            self.addresses[address] = image_id

    @classmethod
    def from_tables(cls, images: list[str], rejects: list[str], image_urls: list[str] = (),
                    warc_records: list[str] = ()) -> "BuildImages":
        """From the build's `images` and `rejects` tables, its `image_urls` (addresses already in
        normalise_url's form) and, for web archives, `warc_records` (the image records' addresses)."""
        found = cls(ingested=image_ids(images))
        for path in rejects:
            table = pq.read_table(path, columns=["image_id", "reason"]).to_pydict()
            found.rejected.update(zip(table["image_id"], table["reason"]))
        for path in image_urls:
            table = pq.read_table(path, columns=["image_id", "url"]).to_pydict()
            for image_id, url in zip(table["image_id"], table["url"]):
                if url is not None:
                    found.add_address(url, image_id)
        for path in warc_records:
            table = pq.read_table(path, columns=["key", "kind", "address"]).to_pydict()
            for key, kind, address in zip(table["key"], table["kind"], table["address"]):
                if kind == "image":
                    try:
                        found.add_address(normalise_url(address, ""), key)
                    except ValueError:  # an address urllib cannot parse names no image of a log either
                        continue
        return found

    def image_of(self, image_id: str, url: str) -> tuple[str | None, str]:
        """The ingested image a line names (by image_id, else by url), or None and why not."""
        if not image_id:
            if not url:
                return None, "neither url nor image_id given"
            try:
                address = normalise_url(url, "")
            except ValueError as error:
                return None, f"not a valid address ({error})"
            image_id = self.addresses.get(address)
            if image_id is None:
                if address in self.ambiguous:
                    return None, f"the address leads to several images ({', '.join(self.ambiguous[address])})"
                return None, "no image of the build at this address"
        if image_id in self.ingested:
            return image_id, ""
        if image_id in self.rejected:
            return None, f"image rejected at ingest ({image_id}: {self.rejected[image_id]})"
        return None, "no image with this image_id"


# ---------------------------------------------------------------- reading lines within limits


def log_lines(path: Path | str) -> Iterator[tuple[int, bytes, int]]:
    """(line number, the line's bytes without its end, its length in bytes), read a block at a time:
    a line longer than a block and MAX_LINE_BYTES gives its first MAX_LINE_BYTES bytes and its whole
    length, the rest read past unheld; nothing larger than a block and a line is ever held."""
    with open(path, "rb") as handle:
        number, rest, skipping = 0, b"", None  # skipping: [first bytes, length] of a long line read past
        while True:
            block = handle.read(BLOCK_BYTES)
            if not block:
                break
            if skipping is not None:
                end = block.find(b"\n")
                if end < 0:
                    skipping[1] += len(block)
                    continue
                skipping[1] += end - (block[end - 1:end] == b"\r")
                yield number, skipping[0], skipping[1]
                skipping, block = None, block[end + 1:]
            parts = (rest + block).split(b"\n") if rest else block.split(b"\n")
            rest = parts.pop()
            for part in parts:
                number += 1
                if part[-1:] == b"\r":
                    part = part[:-1]
                yield number, part, len(part)
            if len(rest) > MAX_LINE_BYTES:
                number += 1
                skipping, rest = [rest[:MAX_LINE_BYTES], len(rest)], b""
        if skipping is not None:
            yield number, skipping[0], skipping[1]
        elif rest:
            rest = rest[:-1] if rest[-1:] == b"\r" else rest
            yield number + 1, rest, len(rest)


def raw_text(data: bytes | str) -> str:
    """A rejected line as its rejects row keeps it: its first RAW_CHARS characters, bad bytes as \\xNN."""
    text = data if isinstance(data, str) else data[: RAW_CHARS * 4].decode("utf-8", "backslashreplace")
    return text if len(text) <= RAW_CHARS else text[:RAW_CHARS] + "…"


def rank_of(value) -> tuple[int | None, str]:
    """A rank (a whole number from 1, as text or a JSON number), or None and why not."""
    if isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.isdigit():
            if len(text) > 10 or int(text) > MAX_RANK:
                return None, f"rank out of range ({text[:20]}; at most {MAX_RANK:,})"
            number = int(text)
        elif text[:1] == "-" and text[1:].isascii() and text[1:].isdigit():
            return None, f"rank below 1 ({text[:20]})"
        else:
            return None, f"rank is not a whole number ({text[:40]!r})" if text else "empty rank"
    elif isinstance(value, int) and not isinstance(value, bool):
        if value > MAX_RANK:
            return None, f"rank out of range ({str(value)[:20]}; at most {MAX_RANK:,})"
        number = value
    else:
        return None, f"rank is not a whole number ({json.dumps(value)[:40]})"
    return (number, "") if number >= 1 else (None, f"rank below 1 ({number})")


# ---------------------------------------------------------------- the rows


REPEATED = "the same image, query, engine and rank as line "
REPEATED_SHAPE = REPEATED + "N"


def reason_shape(reason: str) -> str:
    """A reason without its particulars, which every reason gives in parentheses or as a line number."""
    return REPEATED_SHAPE if reason.startswith(REPEATED) else reason.split(" (", 1)[0]


ROW_SCHEMA = pa.schema([pa.field("image_id", pa.string()), pa.field("query", pa.string()),
                        pa.field("engine", pa.string()), pa.field("rank", pa.int32()), pa.field("line", pa.int64())])


@dataclass
class Gathered:
    """Rows and rejects: Python values for BATCH_ROWS lines at most, then Arrow columns."""

    rows: list[pa.RecordBatch] = field(default_factory=list)
    rejects: list[pa.RecordBatch] = field(default_factory=list)
    reject_batch: list[tuple] = field(default_factory=list)  # (line, reason, raw)
    listed: int = 0  # rejected lines listed; past MAX_LISTED_REJECTS they are counted by reason
    unlisted: Counter = field(default_factory=Counter)

    def __post_init__(self):
        self.columns: tuple[list, ...] = ([], [], [], [], [])  # image_id, query, engine, rank, line

    def reject(self, line: int, reason: str, raw: bytes | str) -> None:
        if self.listed >= MAX_LISTED_REJECTS:
            self.unlisted[reason_shape(reason)] += 1
            return
        self.listed += 1
        self.reject_batch.append((line, reason, raw_text(raw)))
        if len(self.reject_batch) >= BATCH_ROWS:
            self.flush_rejects()

    def flush_rows(self) -> None:
        if self.columns[0]:
            arrays = [pa.array(values, f.type) for values, f in zip(self.columns, ROW_SCHEMA)]
            for values in self.columns:
                values.clear()
            self.rows.append(pa.RecordBatch.from_arrays(arrays, schema=ROW_SCHEMA))

    def flush_rejects(self) -> None:
        if self.reject_batch:
            columns = list(zip(*self.reject_batch))
            self.reject_batch = []
            self.rejects.append(pa.RecordBatch.from_arrays(
                [pa.array(values, f.type) for values, f in zip(columns, SCHEMAS[REJECTS])], schema=SCHEMAS[REJECTS]))


def tidy(text: str) -> str:
    """A query or engine as the table keeps it: whitespace runs made one space, none at the ends."""
    return " ".join(text.split())


def is_tidy(text: str) -> bool:
    """tidy(text) == text, tested fast: no whitespace but single inner ASCII spaces (isprintable
    is false for every other whitespace character)."""
    return bool(text) and text.isprintable() and text[0] != " " and text[-1] != " " and "  " not in text


def add_row(gathered: Gathered, images: BuildImages, line: int, raw: bytes | str, query: str, engine: str,
            rank: str | int, url: str, image_id: str) -> None:
    """One line's values: a row, or a rejects row naming the first thing wrong."""
    query, engine = tidy(query), tidy(engine)
    if not query:
        gathered.reject(line, "empty query", raw)
        return
    if not engine:
        gathered.reject(line, "empty engine", raw)
        return
    number, why = rank_of(rank)
    if number is None:
        gathered.reject(line, why, raw)
        return
    found, why = images.image_of(image_id.strip(), url.strip())
    if found is None:
        gathered.reject(line, why, raw)
        return
    for values, value in zip(gathered.columns, (found, query, engine, number, line)):
        values.append(value)
    if len(gathered.columns[0]) >= BATCH_ROWS:
        gathered.flush_rows()


def read_csv_lines(lines: Iterator[tuple[int, bytes, int]], header: tuple[int, str], images: BuildImages,
                   gathered: Gathered) -> None:
    """The lines after the header; a header that is not a search log's refuses the whole file."""
    number, text = header
    try:
        names = [name.strip().lower() for name in next(csv.reader([text], strict=True))]
    except csv.Error as error:
        gathered.reject(number, f"header is not a CSV line ({error}); no line of the file is read", text)
        return
    problem = header_problem(names, "column")
    if problem:
        gathered.reject(number, f"{problem}; no line of the file is read", text)
        return
    names.append("")  # the position of a column the header does not have: an empty last field
    query, engine, rank, url, image_id = (names.index(name) if name in names else -1 for name in COLUMNS)
    width, ingested = len(names) - 1, images.ingested
    ids, queries, engines, ranks, numbers = (values.append for values in gathered.columns)
    for number, body, length in lines:
        text = decoded(number, body, length, gathered)
        if text is None:
            continue
        if '"' in text:
            try:
                fields = next(csv.reader([text], strict=True), [""])
            except csv.Error as error:
                gathered.reject(number, f"not a CSV line ({error})", text)
                continue
        else:
            fields = text.split(",")
        if len(fields) != width:
            if text.strip():  # a blank line is skipped
                more = "more" if len(fields) > width else "fewer"
                gathered.reject(number, f"{more} fields than the header ({len(fields)}, not {width})", text)
            continue
        fields.append("")
        q, e, r, i = fields[query], fields[engine], fields[rank], fields[image_id]
        # The common line passes every test of add_row at a glance; any other goes through add_row.
        if i in ingested and is_tidy(q) and is_tidy(e) and 0 < len(r) < 10 and r[0] != "0" and r.isdigit() \
                and r.isascii():
            ids(i)
            queries(q)
            engines(e)
            ranks(int(r))
            numbers(number)
            if number % BATCH_ROWS == 0:
                gathered.flush_rows()
        else:
            add_row(gathered, images, number, text, q, e, r, fields[url], i)


def read_json_lines(lines: Iterator[tuple[int, bytes, int]], first: tuple[int, str], images: BuildImages,
                    gathered: Gathered) -> None:
    """Every line an object of the keys query, engine, rank and url and/or image_id."""
    for number, text in _texts(first, lines, gathered):
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            gathered.reject(number, f"not valid JSON ({error.msg} at column {error.colno})", text)
            continue
        except RecursionError:
            gathered.reject(number, "JSON nested too deeply", text)
            continue
        except ValueError as error:  # a number of more digits than Python converts
            gathered.reject(number, f"not valid JSON ({error})", text)
            continue
        if not isinstance(record, dict):
            gathered.reject(number, f"not a JSON object (a {type(record).__name__})", text)
            continue
        problem = header_problem(list(record), "field")
        if problem:
            gathered.reject(number, problem, text)
            continue
        values = [record.get(name) for name in COLUMNS]
        wrong = next((name for name, value in zip(COLUMNS, values)
                      if name != "rank" and value is not None and not is_text(value)), None)
        if wrong:
            gathered.reject(number, f"{wrong} is not text ({json.dumps(record[wrong])[:40]})", text)
            continue
        add_row(gathered, images, number, text, *(value if value is not None else "" for value in values))


def is_text(value) -> bool:
    """A JSON string that is text: JSON may escape a lone surrogate (\\ud800), which no UTF-8 holds."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _texts(first: tuple[int, str], lines, gathered: Gathered) -> Iterator[tuple[int, str]]:
    yield first
    for number, body, length in lines:
        text = decoded(number, body, length, gathered)
        if text is not None and text.strip():
            yield number, text


def header_problem(names: list[str], what: str) -> str:
    """What is wrong with a CSV header's columns or a JSON line's keys ('' if nothing)."""
    unknown = [name for name in names if name not in COLUMNS]
    if unknown:
        shown = ", ".join(repr(name[:40]) for name in unknown[:5])
        return f"unknown {what}(s) ({shown}); a search log has {', '.join(COLUMNS)}"
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        return f"repeated {what}(s) ({', '.join(repeated)})"
    missing = [name for name in REQUIRED if name not in names]
    if missing:
        return f"missing {what}(s) ({', '.join(missing)})"
    if "url" not in names and "image_id" not in names:
        return f"neither a url nor an image_id {what}"
    return ""


def decoded(number: int, body: bytes, length: int, gathered: Gathered) -> str | None:
    """A line's text, or None with its rejects row (too long, not UTF-8)."""
    if length > MAX_LINE_BYTES:
        gathered.reject(number, f"line too long ({length:,} bytes; at most {MAX_LINE_BYTES:,})", body)
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        gathered.reject(number, f"not UTF-8 text ({error.reason} at byte {error.start} of the line)", body)
        return None
    return text[1:] if number == 1 and text.startswith("\ufeff") else text


def read_search_log(path: Path | str, images: BuildImages, log: Callable[[str], None] = lambda line: None
                    ) -> tuple[pa.Table, pa.Table]:
    """The search_keywords rows and the search_keyword_rejects rows of a log."""
    gathered = Gathered()
    lines = log_lines(path)
    first = None
    for number, body, length in lines:
        text = decoded(number, body, length, gathered)
        if text is not None and text.strip():
            first = (number, text)
            break
    if first is None:
        gathered.reject(0, "no lines: expected a CSV header (query,engine,rank,url,image_id) or JSON lines", "")
    elif first[1].lstrip().startswith("{"):
        read_json_lines(lines, first, images, gathered)
    else:
        read_csv_lines(lines, first, images, gathered)
    gathered.flush_rows()
    gathered.flush_rejects()
    gathered_rows = pa.Table.from_batches(gathered.rows, ROW_SCHEMA)
    gathered.rows = []  # the batches are the table's now: dropped with it
    rows, repeated, unlisted_repeats = without_repeats(gathered_rows)
    del gathered_rows
    unlisted = gathered.unlisted + Counter({REPEATED_SHAPE: unlisted_repeats})
    rejects = pa.concat_tables([pa.Table.from_batches(gathered.rejects, SCHEMAS[REJECTS]), repeated])
    rejects = rejects.sort_by([("line", "ascending"), ("reason", "ascending")])
    if rejects.num_rows > MAX_LISTED_REJECTS:  # the first of both kinds by line; the rest counted
        unlisted.update(reason_shape(reason) for reason in rejects.column("reason")[MAX_LISTED_REJECTS:].to_pylist())
        rejects = rejects.slice(0, MAX_LISTED_REJECTS)
    rejected = rejects.num_rows + sum(unlisted.values())
    rejects = pa.concat_tables([rejects, pa.Table.from_pylist(
        [{"line": None, "raw": None, "reason": f"{count:,} more lines rejected, not listed (only the first "
                                                f"{MAX_LISTED_REJECTS:,} are): {shape}"}
         for shape, count in sorted(unlisted.items()) if count], schema=SCHEMAS[REJECTS])])
    log(f"search log {path}: {rows.num_rows:,} rows of {pc.count_distinct(rows.column('image_id')).as_py():,} "
        f"images, {rejected:,} lines rejected")
    return rows, rejects


def without_repeats(rows: pa.Table) -> tuple[pa.Table, pa.Table, int]:
    """The rows in the table's order (KEY), each (image, query, engine, rank) once; a rejects row
    for each later line of a repeated one, naming its first line (the first MAX_LISTED_REJECTS by
    line), and how many more there are. Sorted by index, one key column at a time, so the rows
    are copied once: into the table returned."""
    order = pc.sort_indices(rows, [(name, "ascending") for name in KEY])  # stable: lines in order
    count = len(order)
    same = np.zeros(count, dtype=bool)  # the row repeats the one before it in the order
    if count > 1:
        equal = np.ones(count - 1, dtype=bool)
        for name in KEY:
            values = rows.column(name).take(order)
            equal &= pc.equal(values.slice(1), values.slice(0, count - 1)).to_numpy(zero_copy_only=False)
            del values
        same[1:] = equal
    lines = rows.column("line").take(order).to_numpy()
    first = lines[np.maximum.accumulate(np.where(same, 0, np.arange(count)))][same]
    shown = np.argsort(lines[same], kind="stable")[:MAX_LISTED_REJECTS]
    repeated = rows.take(pa.array(order.to_numpy()[same][shown]))
    first = first[shown]
    raw = pc.binary_join_element_wise(*(pc.cast(repeated.column(name), pa.string()) for name in KEY), ",")
    rejects = pa.table({
        "line": repeated.column("line"),
        "reason": pc.binary_join_element_wise(REPEATED,
                                              pc.cast(pa.array(first, pa.int64()), pa.string()), ""),
        "raw": pc.utf8_slice_codeunits(raw, 0, RAW_CHARS),
    }, schema=SCHEMAS[REJECTS])
    kept = rows.select(list(KEY)).take(pa.array(order.to_numpy()[~same])).combine_chunks()
    return kept.cast(SCHEMAS[TABLE]), rejects, int(same.sum()) - len(shown)


# ---------------------------------------------------------------- writing


def write_search_keywords(rows: pa.Table, rejects: pa.Table, table_path: Path | str, rejects_path: Path | str,
                          export_path: Path | str) -> None:
    """The two tables, and the export: one CSV of every row (image_id,query,engine,rank), in the
    table's order, so each image's rows are together (docs/tables.md#search_keywords)."""
    limits = {"max_line_bytes": MAX_LINE_BYTES, "max_listed_rejects": MAX_LISTED_REJECTS, "raw_chars": RAW_CHARS}
    write_table(rows, table_path, TABLE, params=limits)
    write_table(rejects, rejects_path, REJECTS, params=limits)
    with atomic_path(export_path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(KEY)
        for batch in rows.to_batches(BATCH_ROWS):  # Python values for a batch at a time
            writer.writerows(zip(*(batch.column(name).to_pylist() for name in KEY)))


def search_keywords_job(job: Job) -> list[dict]:
    """Rule search_keywords: input.search_log joined to the build's images. Returns the log, hashed,
    for provenance (replaying a record, it is read where the record says)."""
    from annobench.core.provenance import raw_file

    if job.recorded_raw is None:
        path = given = job.input("search_log")
    else:
        recorded = job.raw("search_log")[0]
        path, given = recorded["absolute_path"], recorded["path"]
    images = BuildImages.from_tables(job.input_list("images"), job.input_list("rejects"),
                                     job.input_list("image_urls"), job.input_list("warc_records"))
    rows, rejects = read_search_log(path, images, job.log)
    write_search_keywords(rows, rejects, job.output("table"), job.output("rejects"), job.output("export"))
    return [raw_file(path, given, role="search_log")]
