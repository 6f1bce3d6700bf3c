"""The text illustration's ranking (the ImageCLEF 2016 teaser, Gilbert et al. 2016): core-seconds
per (query, candidate image) pair of the tf-idf scores and their ordering, one core.

    python3 perf/bench_illustration_ranking.py BUILD_DIR [--queries 1000] [--candidates 100000]

Real texts: the page texts of BUILD_DIR's illustration queries (tables/queries) and its images'
near-image terms (tables/text_terms), both repeated under new ids to the sizes asked. The
ranking (scores of a block of queries against every candidate, then the best 100 of each) grows
with queries x candidates: the teaser's 180,000 x 200,000 pairs make it the illustration job's
main cost, which a small build cannot show. Printed: the best of three, its rate per pair (the
figure annobench/projection/costs.py states as ILLUSTRATION_PAIR_RATE) and the machine's float32
product speed beside it.
"""

from __future__ import annotations

import os

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import scipy.sparse as sp  # noqa: E402

REPEATS = 3


def repeated_terms(build: Path, n_candidates: int) -> pd.DataFrame:
    terms = pq.read_table(build / "out" / "tables" / "text_terms", columns=["image_id", "term", "score"]).to_pandas()
    codes, _ = pd.factorize(terms["image_id"], sort=True)
    distinct = codes.max() + 1
    copies = [terms.assign(image_id=[f"c{copy * distinct + c:07d}" for c in codes])
              for copy in range(-(-n_candidates // distinct))]
    everything = pd.concat(copies, ignore_index=True)
    return everything[everything["image_id"] < f"c{n_candidates:07d}"]


def main() -> None:
    from annobench.bench import machine_speed
    from annobench.benchmark.illustration.baselines import _top_images, _unit_rows, idf, image_term_matrix, query_matrix
    from annobench.text.features import TextParams

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=Path, help="a build with illustration queries and text terms")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--candidates", type=int, default=100_000)
    args = parser.parse_args()
    texts = pq.read_table(args.build / "out" / "tables" / "queries" / "all.parquet", columns=["text"])["text"]
    texts = [texts[k % len(texts)].as_py() for k in range(args.queries)]
    image_terms = repeated_terms(args.build, args.candidates)
    candidates = sorted(image_terms["image_id"].unique())
    documents, vocabulary = image_term_matrix(image_terms, candidates)
    weights = idf(documents)
    image_vectors = _unit_rows(documents @ sp.diags(weights)).T.tocsc()
    query_vectors = _unit_rows(query_matrix(texts, vocabulary, TextParams()) @ sp.diags(weights))
    seconds = []
    for _ in range(REPEATS):
        started = time.process_time()
        _top_images(query_vectors, image_vectors, 100)
        seconds.append(time.process_time() - started)
    pairs = len(texts) * len(candidates)
    print(f"{len(texts)} queries x {len(candidates)} candidates ({query_vectors.nnz / len(texts):.0f} terms a query, "
          f"{documents.nnz / len(candidates):.0f} an image): best {min(seconds):.2f} CPU-s of {REPEATS}, "
          f"{min(seconds) / pairs:.3g} core-s per pair; float32 product {machine_speed()['gemm_gflops']:.0f} GFLOP/s")


if __name__ == "__main__":
    main()
