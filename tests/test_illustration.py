"""Text illustration (the ImageCLEF 2016 teaser, Gilbert et al. 2016): R@k by hand, query extraction on real pages, the
ranking-run checker on corrupted runs, the baselines and the commands end to end on the shared pages."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from annobench.benchmark.illustration.baselines import random_run, tfidf_run
from annobench.benchmark.illustration.commands import (
    check_illustration_run_main,
    evaluate_illustration_main,
    illustration_main,
)
from annobench.benchmark.illustration.measure import IllustrationTruth, chance, evaluation, read_truth, recall_at_k
from annobench.benchmark.illustration.queries import QUERIES_TABLE, page_text, query_id
from annobench.benchmark.illustration.runs import RankingRun, read_ranking_run, run_bytes
from annobench.benchmark.problems import RunFormatError
from annobench.text.features import TextParams
from annobench.text.page_map import derive_mapping
from helpers import KIWIX, REAL, require_shared

POPULAR = REAL / "pages" / "dataset_popular"
KS = (1, 5, 10, 25, 50, 75, 100)


def filler(n: int, prefix: str = "x") -> list[str]:
    return [f"{prefix}{k}" for k in range(n)]


# --- R@k by hand ----------------------------------------------------------------

def test_recall_at_k_by_hand():
    # Truth image ranks: q1 at 1, q2 at 5, q3 at 30, q5 at 100; q4 is not in the run; q6 is
    # ranked but without its image. Six queries, 200 candidates.
    truth = IllustrationTruth.from_mapping({f"q{k}": f"t{k}" for k in range(1, 7)})
    run = RankingRun.from_rankings({
        "q1": ["t1"] + filler(99),
        "q2": filler(4) + ["t2"],
        "q3": filler(29) + ["t3"] + filler(10, "y"),
        "q5": filler(99) + ["t5"],
        "q6": filler(100),
    })
    #            k:   1    5    10   25   50   75   100
    hits = {1: 1, 5: 2, 10: 2, 25: 2, 50: 3, 75: 3, 100: 4}
    result = evaluation(truth, run, 200)
    assert {key: result[key] for key in recall_at_k(truth, run)} == {f"R@{k}": hits[k] / 6 for k in KS}
    assert result["chance"] == {f"R@{k}": k / 200 for k in KS}
    assert (result["queries"], result["candidates"], result["queries_not_in_run"]) == (6, 200, 1)
    assert chance(50)["R@75"] == 1.0 and chance(50)["R@25"] == 0.5


def test_run_round_trip_is_byte_identical(tmp_path):
    run = RankingRun.from_rankings({"p.html#b": ["a,1", 'quote"d', "plain"], "p.html#a": ["plain"]})
    path = tmp_path / "run.csv"
    path.write_bytes(run_bytes(run))
    assert path.read_bytes().decode().splitlines() == [
        "query_id,rank,image_id", 'p.html#a,1,plain', 'p.html#b,1,"a,1"', 'p.html#b,2,"quote""d"', "p.html#b,3,plain"]
    again = read_ranking_run(path, {"p.html#a", "p.html#b"}, {"a,1", 'quote"d', "plain"})
    assert run_bytes(again) == path.read_bytes()
    assert again.rankings() == run.rankings()


def test_query_ids_are_escaped_and_stable():
    assert query_id("A/Ray Charles.html", "I__m__a,b#c.png") == "A/Ray%20Charles.html#I__m__a%2Cb%23c.png"


# --- query documents on real pages ---------------------------------------------------------

def test_extraction_drops_scripts_and_styles_and_keeps_the_text():
    scripted = page_text(require_shared(POPULAR) / "www.cato.org" / "www.cato.org" / "index.html")
    raw = (POPULAR / "www.cato.org" / "www.cato.org" / "index.html").read_text(errors="replace")
    assert "_gaq.push" in raw and "Drupal.settings" in raw  # the page's inline scripts
    assert "_gaq" not in scripted and "Drupal.settings" not in scripted
    assert scripted.startswith("Cato Institute | Individual Liberty, Free Markets, and Peace")
    assert "The Implications of the Expanding U.S. Drone Program" in scripted
    styled = page_text(POPULAR / "www.aaas.org" / "www.aaas.org" / "index.html")
    assert "#organizational_menu" in (POPULAR / "www.aaas.org" / "www.aaas.org" / "index.html").read_text()
    assert "organizational_menu" not in styled and "background-color" not in styled
    assert "AAAS - The World's Largest General Scientific Society" in styled
    assert "  " not in styled


# --- the checker on corrupted runs -------------------------------------------------------

def check(tmp_path, text: str, queries=None, candidates=None) -> list[str]:
    path = tmp_path / "run.csv"
    path.write_text(text)
    with pytest.raises(RunFormatError) as caught:
        read_ranking_run(path, queries, candidates)
    return [line.split(":", 1)[1] for line in caught.value.report_lines()]


def test_checker_names_each_fault_at_its_line(tmp_path):
    text = "\n".join([
        "query_id,rank,image_id",   # 1
        "q1,1,a",                   # 2
        "q1,1,b",                   # 3 rank repeated
        "q1,3,c",                   # 4 gap (no rank 2)
        "",                         # 5 blank
        "q2,x,a",                   # 6 rank not a number
        "q2,1,a",                   # 7
        "q2,2,a",                   # 8 image repeated
        "q3,1,a",                   # 9 unknown query
        "q4,101,a",                 # 10 rank over 100
        "q4,1,a,b",                 # 11 four fields
        ",1,a",                     # 12 empty query id
        "q4,1,z",                   # 13 unknown image
    ]) + "\n"
    problems = check(tmp_path, text, {"q1", "q2", "q4"}, {"a", "b", "c"})
    assert problems == [
        "3: rank 1 of query 'q1' repeats line 2",
        "4: query 'q1': rank 3 but no rank 2 (ranks run 1, 2, ... without gaps)",
        "5: blank line",
        "6: rank 'x' is not a positive integer",
        "8: image 'a' is ranked twice for query 'q2' (first at line 7)",
        "9: query id 'q3' is not a query of the truth",
        "10: rank 101 is over 100 (a run ranks at most 100 images per query)",
        "11: 4 fields; a line is query_id,rank,image_id",
        "12: empty query id",
        "13: image id 'z' is not a candidate image",
    ]


def test_checker_header_encoding_and_empty_runs(tmp_path):
    assert check(tmp_path, "query,rank,image\nq,1,a\n") == [
        "1: the header must be query_id,rank,image_id, not 'query,rank,image'"]
    assert check(tmp_path, "query_id,rank,image_id\n") == ["0: the run ranks no query"]
    assert check(tmp_path, "query_id,rank,image_id\nq,0,a\nq,1,b\nq,-2,c\n") == [  # parsed as integers
        "2: rank '0' is not a positive integer", "4: rank '-2' is not a positive integer"]
    path = tmp_path / "bytes.csv"
    path.write_bytes(b"query_id,rank,image_id\nq,1,a\nq,2,\xff\nq,3,\"open\n")
    with pytest.raises(RunFormatError) as caught:
        read_ranking_run(path)
    assert [p.line for p in caught.value.problems] == [3, 4]
    assert "not UTF-8" in caught.value.problems[0].message


def test_checker_stops_listing_at_its_limit(tmp_path):
    path = tmp_path / "run.csv"
    path.write_text("query_id,rank,image_id\n" + "".join(f"q,{k},a{k}\n" for k in range(101, 351)))
    with pytest.raises(RunFormatError) as caught:
        read_ranking_run(path, limit=10)
    problems = caught.value.problems
    assert [p.line for p in problems[:10]] == list(range(2, 12))
    assert problems[-1].line == 0 and problems[-1].message.startswith("240 more problem(s)")


# --- baselines ---------------------------------------------------------------------------

def test_random_run_is_seeded_per_query_independent_of_order():
    candidates = filler(500)
    queries = filler(30, "q")
    first = random_run(queries, candidates, seed=7).rankings()
    assert random_run(list(reversed(queries)), list(reversed(candidates)), seed=7).rankings() == first
    assert random_run(queries[:5], candidates, seed=7).rankings() == {q: first[q] for q in queries[:5]}
    other = random_run(queries, candidates, seed=8).rankings()
    assert all(other[q] != first[q] for q in queries)
    assert all(len(r) == 100 == len(set(r)) for r in first.values())
    assert len(random_run(["q"], filler(40), seed=0).rankings()["q"]) == 40  # fewer candidates than ranks


def test_tfidf_weighting_by_hand():
    # idf over the 3 candidates: cat df 2, dog df 1, fish df 1.
    terms = pd.DataFrame({"image_id": ["a", "b", "b", "c"], "term": ["cat", "cat", "dog", "fish"],
                          "score": [1.0, 0.5, 0.5, 1.0]})
    idf_cat, idf_dog = math.log(4 / 3) + 1, math.log(4 / 2) + 1
    query = np.array([1 + math.log(2), 1.0]) * [idf_dog, idf_cat]  # "dog dog cat": dog, cat
    b = np.array([0.5 * idf_dog, 0.5 * idf_cat])
    cos_b = query @ b / np.linalg.norm(query) / np.linalg.norm(b)
    cos_a = query[1] * idf_cat / np.linalg.norm(query) / idf_cat
    assert cos_b > cos_a > 0  # so b ranks first, then a; c shares no term and is not ranked
    run = tfidf_run({"q": "Dog, dog; cat!", "none": "zebra 42"}, terms, ["a", "b", "c"])
    assert run.rankings() == {"q": ["b", "a"]}


def sparse_product_ranking(query_vectors, image_vectors, depth: int) -> list[np.ndarray]:
    """The ranking as _top_images made it first: SciPy's sparse product, then a full sort of
    each query's positive scores (score descending, then column)."""
    ranked = []
    for row in (query_vectors @ image_vectors).toarray():
        positive = np.flatnonzero(row > 0)
        ranked.append(positive[np.lexsort((positive, -row[positive]))[:depth]])
    return ranked


@pytest.mark.parametrize("n_images", [40, 700])  # fewer candidates than ranks, and more
def test_top_images_ranks_as_the_sparse_product_and_a_full_sort(n_images, monkeypatch):
    """The dense product over a block's terms and the partitioned sort give the same scores to
    the bit and the same order, ties included (images repeated with the same terms tie exactly),
    blocks of queries or not."""
    from annobench.benchmark.illustration import baselines

    rng = np.random.default_rng(5)
    words = [f"w{k}" for k in range(300)]
    distinct = [rng.choice(words, size=rng.integers(1, 40), replace=False) for _ in range(n_images // 4)]
    rows = [(f"i{image:04d}", term, float(rng.integers(1, 8)) / 7)
            for image in range(n_images) for term in distinct[image % len(distinct)]]
    terms = pd.DataFrame(rows, columns=["image_id", "term", "score"])
    documents, vocabulary = baselines.image_term_matrix(terms, sorted(terms["image_id"].unique()))
    weights = baselines.idf(documents)
    image_vectors = baselines._unit_rows(documents @ sp.diags(weights)).T.tocsc()
    texts = [" ".join(rng.choice(words + ["unseen"], size=rng.integers(1, 60))) for _ in range(50)] + ["unseen"]
    query_vectors = baselines._unit_rows(baselines.query_matrix(texts, vocabulary, TextParams()) @ sp.diags(weights))
    expected = sparse_product_ranking(query_vectors, image_vectors, 100)
    assert any(len(ranked) == min(100, n_images) for ranked in expected) and len(expected[-1]) == 0
    for scores_per_block in (baselines.SCORES_PER_BLOCK, 7 * n_images):
        monkeypatch.setattr(baselines, "SCORES_PER_BLOCK", scores_per_block)
        found = baselines._top_images(query_vectors, image_vectors, 100)
        assert len(found) == len(expected) and all(np.array_equal(a, b) for a, b in zip(found, expected))
    dense = baselines._block_scores(query_vectors, image_vectors.T.sorted_indices())
    assert np.array_equal(dense, (query_vectors @ image_vectors).toarray().T)  # the same floats, to the bit


# --- end to end on the shared pages ---------------------------------------------------------

@pytest.fixture(scope="module", params=[KIWIX, POPULAR], ids=["kiwix", "dataset_popular"])
def built(request, tmp_path_factory):
    pages = require_shared(request.param)
    out = tmp_path_factory.mktemp(pages.name)
    printed = io.StringIO()
    assert illustration_main(str(pages), str(out), seed=3, out=printed) == 0
    return pages, out, printed.getvalue()


def test_end_to_end_on_the_shared_pages(built):
    pages, out, printed = built
    pairs = {(page, image) for image, page, _ in derive_mapping(pages).mapping}
    queries = pq.read_table(out / QUERIES_TABLE).to_pandas()
    assert set(zip(queries.page_id, queries.image_id)) == pairs and queries.query_id.is_unique
    assert (queries.text.str.len() > 0).all()
    truth = read_truth(out / "truth.csv")
    assert dict(zip(truth.query_ids, truth.image_ids)) == dict(zip(queries.query_id, queries.image_id))
    candidates = pd.read_csv(out / "candidates.csv").image_id.tolist()
    results = {}
    for name in ("random", "tfidf"):
        run = read_ranking_run(out / "runs" / f"{name}.csv", set(truth.query_ids), set(candidates))
        results[name] = json.loads((out / "evaluations" / f"{name}.json").read_text())
        assert results[name] == {**evaluation(truth, run, len(candidates)), "run": name}
    print(f"\n{pages.name}: {printed}")
    tfidf, random = results["tfidf"], results["random"]
    assert tfidf["R@10"] >= 5 * tfidf["chance"]["R@10"]
    assert tfidf["R@1"] >= 5 * tfidf["chance"]["R@1"]
    for k in (10, 100):  # the random run is near chance: within 4 binomial standard deviations
        p, n = random["chance"][f"R@{k}"], random["queries"]
        assert abs(random[f"R@{k}"] - p) <= 4 * math.sqrt(p * (1 - p) / n)


def test_commands_agree_and_reproduce(built, tmp_path):
    pages, out, _ = built
    result = tmp_path / "tfidf.json"
    assert evaluate_illustration_main(str(out / "truth.csv"), str(out / "runs" / "tfidf.csv"), str(result),
                                      str(out / "candidates.csv"), out=io.StringIO()) == 0
    mine = json.loads(result.read_text())
    assert {**mine, "run": "tfidf"} == json.loads((out / "evaluations" / "tfidf.json").read_text())
    again = tmp_path / "again"
    assert illustration_main(str(pages), str(again), seed=3, out=io.StringIO()) == 0
    for name in ("random", "tfidf"):
        assert (again / "runs" / f"{name}.csv").read_bytes() == (out / "runs" / f"{name}.csv").read_bytes()
    printed = io.StringIO()
    assert check_illustration_run_main(str(out / "runs" / "random.csv"), str(out / "truth.csv"),
                                       out=printed) == 0
    assert "OK" in printed.getvalue()


def test_commands_refuse_bad_input_in_one_line_each(tmp_path):
    truth = tmp_path / "truth.csv"
    truth.write_text("query_id,image_id\nq1,a\nq1,b\n")
    run = tmp_path / "run.csv"
    run.write_text("query_id,rank,image_id\nq1,1,a\nq1,2,zz\n")
    err = io.StringIO()
    assert evaluate_illustration_main(str(truth), str(run), str(tmp_path / "out.json"), err=err) == 2
    assert err.getvalue() == f"{truth}:3: query 'q1' repeats line 2 (a query has exactly one ground-truth image)\n"
    truth.write_text("query_id,image_id\nq1,a\n")
    err = io.StringIO()
    assert evaluate_illustration_main(str(truth), str(run), str(tmp_path / "out.json"), err=err) == 2
    assert err.getvalue() == f"{run}:3: image id 'zz' is not a candidate image\n"
    err = io.StringIO()
    assert illustration_main(str(tmp_path / "absent"), str(tmp_path / "out"), err=err) == 2
    assert err.getvalue().count("\n") == 1 and not (tmp_path / "out.json").exists()



def test_queries_made_by_blocks_of_pages_pool_to_one_jobs(tmp_path):
    """The shared kiwix pages read in blocks (each page by the block its id's hash picks) give,
    pooled, the queries and rejects of one pass over every page, in the same order."""
    from annobench.benchmark.illustration.queries import QuerySet, make_queries
    from annobench.benchmark.illustration.stage import page_block
    from annobench.core.tables import write_table

    require_shared(KIWIX)
    rows = [(image_id, page, src) for image_id, page, src in derive_mapping(KIWIX).mapping]
    rows.append(("absent", "no/such/page.html", "x.jpg"))  # a reject
    whole = make_queries(rows, KIWIX)
    paths = {"queries": [], "rejects": []}
    for block in range(5):
        part = make_queries([row for row in rows if page_block(row[1], 5) == block], KIWIX)
        for what, table in (("queries", part.table()), ("rejects", part.rejects_table())):
            paths[what].append(str(tmp_path / f"{what}-{block}.parquet"))
            write_table(table, paths[what][-1], what, params={})
    assert sum(pq.read_metadata(p).num_rows > 0 for p in paths["queries"]) > 1  # the pages are spread
    pooled = QuerySet.pooled(paths["queries"], paths["rejects"])
    assert pooled.queries == whole.queries and pooled.rejects == whole.rejects
    assert ("no/such/page.html", "absent") in [reject[:2] for reject in pooled.rejects]
    assert pooled.table().equals(whole.table())
