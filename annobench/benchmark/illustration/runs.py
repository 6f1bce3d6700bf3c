"""Ranking runs of the text-illustration task: CSV `query_id,rank,image_id`, read, checked, written.

Each line puts one image at one rank of one query. Per query the ranks run
1, 2, ..., n without gaps, n <= 100, and no image appears twice; lines may
come in any order. Ids are as the truth writes them (a field holding a
comma or a quote is quoted, CSV style; no field may span lines). Given the
truth, a query id it does not have is an error; given the candidate
images, so is an image id outside them. Every problem is reported with its
line (1 is the header), up to MAX_PROBLEMS, like `check-run`.

Reading is columnar (pyarrow's CSV reader, ids dictionary-encoded), so a
run of 180,000 queries x 100 ranks is read and checked in seconds; a file
pyarrow cannot parse (a wrong number of fields, bad UTF-8, an open quote)
is re-read line by line to name each such line, and its other lines are
checked as usual.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from annobench.benchmark.problems import MAX_PROBLEMS, Problems, quote
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.tables import field

HEADER = ("query_id", "rank", "image_id")
MAX_RANK = 100
RANK = r"^[1-9][0-9]{0,8}$"  # a positive integer written plainly (no sign, no leading zero)
# A run's rows as Parquet: the rankings of one block of queries (rule illustration_rank).
RANKING_SCHEMA = pa.schema([
    field("query_id", pa.string(), "the query"),
    field("rank", pa.int32(), "1, 2, ... in the query's ranking"),
    field("image_id", pa.string(), "the candidate image ranked there"),
])


@dataclass(frozen=True)
class RankingRun:
    """One row per line, ids dictionary-encoded: row r ranks image_ids[image_codes[r]] at
    ranks[r] for query_ids[query_codes[r]]."""

    query_ids: np.ndarray  # unique ids (object)
    query_codes: np.ndarray  # int32 per row
    ranks: np.ndarray  # int32 per row
    image_ids: np.ndarray  # unique ids (object)
    image_codes: np.ndarray  # int32 per row

    def __len__(self) -> int:
        return len(self.ranks)

    @classmethod
    def from_rankings(cls, rankings: Mapping[str, Sequence[str]]) -> "RankingRun":
        """Queries in id order, each's images at ranks 1, 2, ... in the order given."""
        queries = sorted(rankings)
        counts = np.array([len(rankings[q]) for q in queries], dtype=np.int64)
        images = [image for q in queries for image in rankings[q]]
        image_codes, image_ids = pd.factorize(pd.Series(images, dtype=object), sort=False)
        starts = np.repeat(np.cumsum(counts) - counts, counts)
        ranks = np.arange(len(images), dtype=np.int64) - starts + 1
        return cls(np.array(queries, dtype=object), np.repeat(np.arange(len(queries)), counts).astype(np.int32),
                   ranks.astype(np.int32), np.asarray(image_ids, dtype=object), image_codes.astype(np.int32))

    def rankings(self) -> dict[str, list[str]]:
        """query_id -> its images in rank order."""
        order = np.lexsort((self.ranks, self.query_codes))
        found: dict[str, list[str]] = {}
        for query, image in zip(self.query_ids[self.query_codes[order]], self.image_ids[self.image_codes[order]]):
            found.setdefault(query, []).append(image)
        return found


# --- in blocks of queries -----------------------------------------------------

def ranking_table(run: RankingRun) -> pa.Table:
    """The run's rows, in its row order, as a table of RANKING_SCHEMA."""
    return pa.table({"query_id": run.query_ids[run.query_codes], "rank": run.ranks,
                     "image_id": run.image_ids[run.image_codes]}, schema=RANKING_SCHEMA)


def pooled_ranking_run(paths: Sequence[Path | str]) -> RankingRun:
    """The run whose rows several ranking tables (blocks of distinct queries) hold, in the row
    order of RankingRun.from_rankings: queries by id, each's ranks ascending."""
    tables = [pq.read_table(path, columns=list(HEADER)).replace_schema_metadata(None) for path in paths]
    rows = pa.concat_tables(tables or [RANKING_SCHEMA.empty_table()])
    rows = rows.sort_by([("query_id", "ascending"), ("rank", "ascending")])
    query_ids, query_codes = _dictionary_codes(rows.column("query_id"))
    image_ids, image_codes = _dictionary_codes(rows.column("image_id"))
    return RankingRun(query_ids, query_codes, rows.column("rank").to_numpy().astype(np.int32), image_ids, image_codes)


# --- writing ------------------------------------------------------------------

def csv_field(text: str) -> str:
    return f'"{text.replace(chr(34), chr(34) * 2)}"' if any(c in text for c in ',"\r\n') else text


def run_bytes(run: RankingRun) -> bytes:
    """The CSV text: header, then one line per row in the run's row order."""
    queries = [csv_field(q) for q in run.query_ids]
    images = [csv_field(i) for i in run.image_ids]
    lines = [",".join(HEADER)]
    lines += [f"{queries[q]},{r},{images[i]}"
              for q, r, i in zip(run.query_codes.tolist(), run.ranks.tolist(), run.image_codes.tolist())]
    return ("\n".join(lines) + "\n").encode("utf-8")


def write_ranking_run(run: RankingRun, path: Path | str) -> None:
    write_bytes_atomic(path, run_bytes(run))


# --- reading and checking -----------------------------------------------------

def read_ranking_run(path: Path | str, queries: Collection[str] | None = None,
                     candidates: Collection[str] | None = None, limit: int = MAX_PROBLEMS) -> RankingRun:
    """The run, checked; RunFormatError listing every problem by line if there is any."""
    problems = Problems(limit)
    rows, lines = _columns(Path(path), problems)
    run = _encode(rows)
    _check(run, rows["rank"], lines, problems, queries, candidates)
    problems.found.sort(key=lambda problem: problem.line)  # structural and vectorised problems, merged
    problems.raise_if_any(path)
    return run


def _columns(path: Path, problems: Problems) -> tuple[dict[str, pa.ChunkedArray], np.ndarray]:
    """The three columns (ids as strings, ranks as integers when every rank is one), and the
    file line of each row. pyarrow reads the file itself, so it is never whole in memory twice."""
    with open(path, "rb") as handle:
        first = handle.readline()
    header = first.rstrip(b"\r\n").removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace")
    if _header_fields(header) != list(HEADER):
        problems.add(1, f"the header must be {','.join(HEADER)}, not {quote(header)}")
    try:
        table = pa_csv.read_csv(
            path, read_options=pa_csv.ReadOptions(column_names=list(HEADER), skip_rows=1),
            parse_options=pa_csv.ParseOptions(ignore_empty_lines=False),
            convert_options=pa_csv.ConvertOptions(column_types={"query_id": pa.string(), "rank": pa.int32(),
                                                                "image_id": pa.string()},
                                                  strings_can_be_null=False, quoted_strings_can_be_null=False))
    except pa.ArrowInvalid:  # a line that does not parse, or a rank that is not an integer
        return _columns_line_by_line(path.read_bytes().partition(b"\n")[2], problems)
    columns = {name: table.column(name) for name in HEADER}
    return columns, np.arange(2, table.num_rows + 2, dtype=np.int64)


def _header_fields(header: str) -> list[str] | None:
    """The header line's fields; None when it is not one CSV line (a field past the csv module's limit)."""
    try:
        return next(csv.reader([header]), [])
    except csv.Error:
        return None


def _columns_line_by_line(body: bytes, problems: Problems) -> tuple[dict[str, pa.ChunkedArray], np.ndarray]:
    """The slow path: each line (after the header) parsed alone, those that do not parse named."""
    values: list[list[str]] = [[], [], []]
    lines = []
    pieces = body.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()  # what follows the final newline
    for number, raw in enumerate(pieces, start=2):
        try:
            fields = next(csv.reader([raw.removesuffix(b"\r").decode("utf-8")], strict=True), [])
        except UnicodeDecodeError as error:
            problems.add(number, f"not UTF-8 ({error.reason} at byte {error.start} of the line)")
            continue
        except csv.Error as error:
            problems.add(number, f"not a CSV line ({error}; no field may span lines)")
            continue
        if len(fields) != len(HEADER) and fields:
            problems.add(number, f"{len(fields)} fields; a line is query_id,rank,image_id")
            continue
        for column, value in zip(values, fields or ["", "", ""]):
            column.append(value)
        lines.append(number)
    columns = {name: pa.chunked_array([column], type=pa.string()) for name, column in zip(HEADER, values)}
    return columns, np.asarray(lines, dtype=np.int64)


def _encode(rows: dict[str, pa.ChunkedArray]) -> RankingRun:
    if pa.types.is_integer(rows["rank"].type):  # int32: a larger rank sends the file down the slow path
        ranks = np.maximum(rows["rank"].to_numpy(), 0)  # 0 and below: not a rank
    else:
        valid = pc.match_substring_regex(rows["rank"], RANK).to_numpy()
        ranks = np.zeros(len(valid), dtype=np.int64)
        ranks[valid] = pc.cast(pc.filter(rows["rank"], valid), pa.int64()).to_numpy()
    query_ids, query_codes = _dictionary_codes(rows["query_id"])
    image_ids, image_codes = _dictionary_codes(rows["image_id"])
    return RankingRun(query_ids, query_codes, np.minimum(ranks, np.iinfo(np.int32).max).astype(np.int32, copy=False),
                      image_ids, image_codes)


def _dictionary_codes(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values in order of first appearance, and each row's code (chunks share one
    dictionary, the last chunk's being complete)."""
    encoded = pc.dictionary_encode(column)
    if not encoded.num_chunks:
        return np.array([], dtype=object), np.array([], dtype=np.int32)
    dictionary = np.asarray(encoded.chunk(encoded.num_chunks - 1).dictionary.to_pylist(), dtype=object)
    codes = np.concatenate([chunk.indices.to_numpy() for chunk in encoded.chunks]).astype(np.int32, copy=False)
    return dictionary, codes


class _Faults:
    """Problems found by vectorised checks: every offending line counted, the first `limit` of
    each kind described, all merged in line order at the end."""

    def __init__(self, limit: int):
        self.limit = limit
        self.described: list[tuple[int, str]] = []
        self.uncounted = 0

    def add(self, lines: np.ndarray, describe) -> None:
        """describe(k) is the message of the k-th offender (lines sorted ascending)."""
        order = np.argsort(lines, kind="stable")
        shown = order[: self.limit]
        self.described += [(int(lines[k]), describe(k)) for k in shown]
        self.uncounted += len(order) - len(shown)

    def into(self, problems: Problems) -> None:
        for line, message in sorted(self.described, key=lambda item: item[0]):
            problems.add(line, message)
        problems.total += self.uncounted


def _check(run: RankingRun, rank_text: pa.ChunkedArray, lines: np.ndarray, problems: Problems,
           queries: Collection[str] | None, candidates: Collection[str] | None) -> None:
    faults = _Faults(problems.limit)
    no_query, no_image = _codes_of_empty(run.query_ids, run.query_codes), _codes_of_empty(run.image_ids, run.image_codes)
    # Ranks read as integers leave no blank line (pyarrow would have refused an empty rank).
    blank = (no_query & no_image & pc.equal(rank_text, "").to_numpy() if pa.types.is_string(rank_text.type)
             else np.zeros(len(lines), dtype=bool))
    faults.add(lines[blank], lambda k: "blank line")
    for name, empty in (("query", no_query), ("image", no_image)):
        faults.add(lines[empty & ~blank], lambda k, name=name: f"empty {name} id")
    bad_rank = np.flatnonzero((run.ranks < 1) & ~blank)
    faults.add(lines[bad_rank], lambda k: f"rank {quote(str(rank_text[int(bad_rank[k])].as_py()))} is not a "
                                          "positive integer")
    over = np.flatnonzero(run.ranks > MAX_RANK)
    faults.add(lines[over], lambda k: f"rank {run.ranks[over[k]]} is over {MAX_RANK} (a run ranks at most "
                                      f"{MAX_RANK} images per query)")
    usable = (run.ranks >= 1) & (run.ranks <= MAX_RANK) & ~no_query & ~no_image
    _check_rankings(run, lines, np.flatnonzero(usable), faults)
    if queries is not None:
        _check_known(run.query_ids, run.query_codes, lines, queries, faults, "query",
                     "is not a query of the truth")
    if candidates is not None:
        _check_known(run.image_ids, run.image_codes, lines, candidates, faults, "image",
                     "is not a candidate image")
    if not len(lines) and not problems.total:
        problems.add(0, "the run ranks no query")
    faults.into(problems)


def _codes_of_empty(ids: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per row: is its id the empty string (compared on the codes, not on 18 million strings)."""
    empty = np.flatnonzero(ids == "")
    return codes == empty[0] if len(empty) else np.zeros(len(codes), dtype=bool)


def _check_rankings(run: RankingRun, lines: np.ndarray, rows: np.ndarray, faults: _Faults) -> None:
    """Repeated ranks, repeated images and gaps, per query, among rows with a usable rank.

    Detected first on sorted integer keys (a run written query by query in rank order is
    already sorted, and the query codes follow first appearance); only a run with such a
    problem is sorted again, row by row, to name the lines."""
    queries = run.query_codes[rows].astype(np.int64)
    by_rank = queries * (MAX_RANK + 1) + run.ranks[rows]
    if len(by_rank) > 1 and not (np.diff(by_rank) > 0).all():
        by_rank = np.sort(by_rank)
    repeated_ranks = bool((np.diff(by_rank) == 0).any())
    if repeated_ranks:
        _name_repeats(run, lines, rows, run.ranks, faults)
    if repeated_ranks or _repeats_an_image(run, rows):
        _name_repeats(run, lines, rows, run.image_codes, faults)
    if repeated_ranks or _has_gaps(by_rank // (MAX_RANK + 1), by_rank % (MAX_RANK + 1)):
        _check_gaps(run, lines, rows, faults)


def _repeats_an_image(run: RankingRun, rows: np.ndarray) -> bool:
    """Whether a query ranks an image twice, for rows whose (query, rank) pairs are distinct:
    each query's images laid on a row of a (queries x 100) grid and sorted there, which is much
    faster than sorting all the rows as one array."""
    grid = np.full((len(run.query_ids), MAX_RANK), -1, dtype=np.int32)
    grid[run.query_codes[rows], run.ranks[rows] - 1] = run.image_codes[rows]
    grid.sort(axis=1)
    return bool(((grid[:, 1:] == grid[:, :-1]) & (grid[:, 1:] >= 0)).any())


def _has_gaps(queries: np.ndarray, ranks: np.ndarray) -> bool:
    """Sorted distinct (query, rank) pairs: ranks run 1..n iff each query's last rank is its count."""
    if not len(queries):
        return False
    ends = np.r_[np.flatnonzero(queries[1:] != queries[:-1]), len(queries) - 1]
    return bool((ranks[ends] != np.diff(np.r_[-1, ends])).any())


def _expected_ranks(sorted_queries: np.ndarray) -> np.ndarray:
    """1, 2, ... within each run of equal query codes."""
    if not len(sorted_queries):
        return sorted_queries
    new_query = np.r_[True, sorted_queries[1:] != sorted_queries[:-1]]
    return np.arange(len(sorted_queries)) - np.flatnonzero(new_query)[np.cumsum(new_query) - 1] + 1


def _name_repeats(run: RankingRun, lines: np.ndarray, rows: np.ndarray, codes: np.ndarray, faults: _Faults) -> None:
    """Each row repeating the rank (or the image) of an earlier row of its query."""
    order = rows[np.lexsort((lines[rows], codes[rows], run.query_codes[rows]))]
    same = (run.query_codes[order[1:]] == run.query_codes[order[:-1]]) & (codes[order[1:]] == codes[order[:-1]])
    later, first = order[1:][same], _first_of_runs(order, same)
    if codes is run.ranks:
        message = (lambda k: f"rank {run.ranks[later[k]]} of query {quote(run.query_ids[run.query_codes[later[k]]])}"
                             f" repeats line {lines[first[k]]}")
    else:
        message = (lambda k: f"image {quote(run.image_ids[run.image_codes[later[k]]])} is ranked twice for query "
                             f"{quote(run.query_ids[run.query_codes[later[k]]])} (first at line {lines[first[k]]})")
    faults.add(lines[later], message)


def _first_of_runs(order: np.ndarray, same: np.ndarray) -> np.ndarray:
    """For each repeat (same[j] true: order[j+1] repeats order[j]), the first row of its run."""
    starts = np.flatnonzero(np.r_[True, ~same])
    run_of = np.cumsum(np.r_[True, ~same]) - 1
    return order[starts[run_of[1:][same]]]


def _check_gaps(run: RankingRun, lines: np.ndarray, rows: np.ndarray, faults: _Faults) -> None:
    """Each query's distinct ranks must be 1..n: the first rank past a gap is named, once per query."""
    if not len(rows):
        return
    order = rows[np.lexsort((run.ranks[rows], run.query_codes[rows]))]
    queries, ranks = run.query_codes[order], run.ranks[order]
    distinct = np.r_[True, (queries[1:] != queries[:-1]) | (ranks[1:] != ranks[:-1])]
    order, queries, ranks = order[distinct], queries[distinct], ranks[distinct]
    expected = _expected_ranks(queries)
    wrong = np.flatnonzero(ranks != expected)
    _, first = np.unique(queries[wrong], return_index=True)  # rows are sorted by rank within a query
    past, missing = order[wrong[first]], expected[wrong[first]]
    faults.add(lines[past], lambda k: f"query {quote(run.query_ids[run.query_codes[past[k]]])}: rank "
                                      f"{run.ranks[past[k]]} but no rank {missing[k]} (ranks run 1, 2, ... "
                                      "without gaps)")


def _check_known(ids: np.ndarray, codes: np.ndarray, lines: np.ndarray, known: Collection[str], faults: _Faults,
                 what: str, complaint: str) -> None:
    known = known if isinstance(known, (set, frozenset, dict)) else set(known)
    unknown_codes = np.flatnonzero([bool(i) and i not in known for i in ids])
    if not len(unknown_codes):
        return
    offenders = np.flatnonzero(np.isin(codes, unknown_codes))
    if what == "query":  # one problem per unknown query, at its first line
        _, first = np.unique(codes[offenders], return_index=True)
        offenders = offenders[first]
    faults.add(lines[offenders], lambda k: f"{what} id {quote(ids[codes[offenders[k]]])} {complaint}")
