"""The text-illustration part of the benchmark stage (the ImageCLEF 2016 teaser, Gilbert et al.
2016): rules illustration_queries, illustration_rank and illustration.

The query documents come from the saved pages of the chosen images
(benchmark.illustration.images: the benchmark's test split, or every
ingested image with a page), one query per (page, image) pair with that
image as its truth. Reading the pages is most of the work, so it is split:
each illustration_queries job reads the pages of one block (pages dealt to
blocks by a hash of their id, so each page is read once) and keeps their
queries and rejects. The candidates are the images of every block's
queries. Ranking every query against every candidate is the other large
cost (the teaser's 180,000 texts x 200,000 images), so each
illustration_rank job ranks one block's queries with the baselines that
read the text (tf-idf): a query's ranking depends on no other query, so
the blocks' rankings are those of one job. The illustration job pools the
blocks in the order one job gives (queries by id, rejects by page and
image), draws the random baseline (cheap: 100 draws a query) and writes the
`queries` table (which is the truth), the `query_rejects` table (pairs that
gave no query, with why), the truth as the CSV `evaluate-illustration`
reads, and each baseline's ranking run with its R@k evaluation. The tf-idf
baseline ranks by the images' near-image text terms (the text stage's
`text_terms`), the random one by benchmark.illustration.seed. Queries and
candidates are in id order, so the outputs do not depend on the cores or
the blocks.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pandas as pd
import pyarrow as pa

from annobench.benchmark.illustration.baselines import random_run, tfidf_run
from annobench.benchmark.illustration.measure import IllustrationTruth, evaluation, write_truth
from annobench.benchmark.illustration.queries import QuerySet, make_queries
from annobench.benchmark.illustration.runs import (
    RankingRun,
    pooled_ranking_run,
    ranking_table,
    write_ranking_run,
)
from annobench.benchmark.json_form import json_bytes
from annobench.benchmark.splits import split_ids
from annobench.core.errors import AnnobenchError
from annobench.core.fsutil import write_bytes_atomic
from annobench.core.jobs import Job
from annobench.core.tables import image_ids, rows_of_images, write_table
from annobench.sources.pages import PageLimits
from annobench.text.features import TextParams
from annobench.text.stage import FolderPages, read_mapping

# The baselines that rank by the text: a job per block of queries (illustration_rank). The random
# one draws 100 candidates a query, seconds for the teaser's queries, in the illustration job.
TEXT_BASELINES = ("tfidf",)


class IllustrationConfigError(AnnobenchError):
    """A benchmark.illustration setting this build cannot follow."""


# -- planning (called from the Snakefile) ----------------------------------

def query_blocks(config: dict, n_images: int) -> int:
    """How many illustration_queries jobs read the pages: one per benchmark.illustration.block_images."""
    return max(1, math.ceil(n_images / config["benchmark"]["illustration"]["block_images"]))


def page_block(page_id: str, blocks: int) -> int:
    """The block whose job reads a page (by a hash of its id: the same whatever the shards)."""
    return int.from_bytes(hashlib.sha256(page_id.encode("utf-8")).digest()[:8], "big") % blocks


def illustration_runs(config: dict) -> list[str]:
    settings = config["benchmark"]["illustration"]
    return list(settings["baselines"]) if settings["enabled"] else []


def text_runs(config: dict) -> list[str]:
    """The baselines illustration_rank ranks, block by block."""
    return [name for name in illustration_runs(config) if name in TEXT_BASELINES]


def check_config(config: dict) -> None:
    settings, inputs = config["benchmark"]["illustration"], config["input"]
    if not settings["enabled"]:
        return
    if inputs["warc"] or not (inputs["pages"] and inputs["page_map"]):
        raise IllustrationConfigError("benchmark.illustration reads saved pages: it needs input.pages and "
                                      "input.page_map (web archives are not read for it)")
    if settings["images"] == "test" and not config["benchmark"]["ground_truth"]["source"]:
        raise IllustrationConfigError("benchmark.illustration.images: test needs the benchmark's split: set "
                                      "benchmark.ground_truth.source, or use images: all")


# -- the job -------------------------------------------------------------------

def chosen_images(job: Job) -> set[str]:
    """The ingested images, or the benchmark's test images among them."""
    ingested = image_ids(job.input_list("images"))
    if job.config["benchmark"]["illustration"]["images"] == "test":
        return ingested & set(split_ids(job.input("splits"), "test"))
    return ingested


def image_terms(paths: list[str], candidates: set[str]) -> pd.DataFrame:
    """The candidates' text terms, in the shards' order. Each shard is filtered as it is read:
    every block reads the whole collection's terms (about a hundred rows an image), and held
    whole before filtering they took some 150 bytes a row of the job's memory."""
    columns = ["image_id", "term", "score"]
    wanted = pa.array(sorted(candidates), type=pa.string())
    parts = [rows_of_images(path, columns, wanted) for path in sorted(paths)]
    return pa.concat_tables(parts).to_pandas() if parts else pd.DataFrame(columns=columns)


def baseline_run(name: str, queries: QuerySet, candidates: list[str], terms: pd.DataFrame, seed: int,
                 params: TextParams) -> RankingRun:
    """The random or tf-idf ranking of every query (the build's rule and `annobench illustration`)."""
    if name == "random":
        return random_run(list(queries.truth()), candidates, seed)
    return tfidf_run({q.query_id: q.text for q in queries.queries}, terms, candidates, params)


def write_evaluated_run(run: RankingRun, truth: IllustrationTruth, n_candidates: int, name: str,
                        run_path: Path | str, evaluation_path: Path | str) -> dict:
    """The run as CSV and its R@k as JSON (`run` = name); returns the evaluation."""
    write_ranking_run(run, run_path)
    result = {**evaluation(truth, run, n_candidates), "run": name}
    write_bytes_atomic(evaluation_path, json_bytes(result))
    return result


def illustration_queries_job(job: Job) -> list[dict]:
    """Rule illustration_queries: the queries and rejects of one block's pages. Returns the pages read."""
    images = chosen_images(job)
    block, blocks = int(job.wildcards["block"]), job.params["blocks"]
    rows = [(r.image_id, r.page_id, r.img_src) for r in read_mapping(job.config["input"]["page_map"])
            if r.image_id in images and page_block(r.page_id, blocks) == block]
    pages_dir = Path(job.config["input"]["pages"])
    queries = make_queries(rows, pages_dir, PageLimits.from_config(job.config["text"]))
    params = query_params(job)
    write_table(queries.table(), job.output("queries"), "queries", params=params)
    write_table(queries.rejects_table(), job.output("query_rejects"), "query_rejects", params=params)
    job.log(f"block {block} of {blocks}: {len(queries.queries)} queries, {len(queries.rejects)} pairs rejected "
            f"from {len({page for _, page, _ in rows})} pages")
    pages = FolderPages(pages_dir)
    return [pages.raw_input(page_id) for page_id in sorted({page for _, page, _ in rows})]


def query_params(job: Job) -> dict:
    return {"images": job.config["benchmark"]["illustration"]["images"], "extraction": "bs4 get_text, lxml"}


def illustration_rank_job(job: Job) -> None:
    """Rule illustration_rank: one block's queries ranked against every candidate (the images of
    every block's queries) by each baseline that reads the text."""
    queries = QuerySet.pooled([job.input("queries")], [])
    candidates = sorted(image_ids(job.input_list("block_queries")))
    terms = image_terms(job.input_list("text_terms"), set(candidates)) if queries.queries else None
    settings, text_params = job.config["benchmark"]["illustration"], TextParams.from_config(job.config["text"])
    for name in text_runs(job.config):
        run = (baseline_run(name, queries, candidates, terms, settings["seed"], text_params) if queries.queries
               else RankingRun.from_rankings({}))
        write_table(ranking_table(run), job.output(name), "illustration_ranking", params={"baseline": name})
    job.log(f"block {job.wildcards['block']}: {len(queries.queries)} queries ranked against {len(candidates)} "
            f"candidates by {', '.join(text_runs(job.config))}")


def illustration_job(job: Job) -> None:
    """Rule illustration: the pooled queries and truth, the random run, the text baselines' runs
    pooled from their blocks (illustration_rank), and every run's R@k."""
    queries = QuerySet.pooled(job.input_list("block_queries"), job.input_list("block_rejects"))
    if not queries.queries:
        first = f" (first: {queries.rejects[0][2]})" if queries.rejects else ""
        raise IllustrationConfigError(f"no query could be made: the chosen images' {len(queries.rejects)} "
                                      f"page/image pairs were all rejected{first}")
    candidates = sorted({q.image_id for q in queries.queries})
    truth = IllustrationTruth.from_mapping(queries.truth())
    params = query_params(job)
    write_table(queries.table(), job.output("queries"), "queries", params=params)
    write_table(queries.rejects_table(), job.output("query_rejects"), "query_rejects", params=params)
    write_truth(queries.truth(), job.output("truth"))
    seed = job.config["benchmark"]["illustration"]["seed"]
    for name in illustration_runs(job.config):
        run = (pooled_ranking_run(job.input_list(f"{name}_blocks")) if name in TEXT_BASELINES
               else random_run(list(queries.truth()), candidates, seed))
        result = write_evaluated_run(run, truth, len(candidates), f"illustration_{name}", job.output(f"{name}_run"),
                                     job.output(f"{name}_evaluation"))
        job.log(f"{name}: R@1 {result['R@1']:.4f}, R@10 {result['R@10']:.4f}, R@100 {result['R@100']:.4f}")
    job.log(f"{len(queries.queries)} queries, {len(candidates)} candidates, {len(queries.rejects)} pairs rejected")
