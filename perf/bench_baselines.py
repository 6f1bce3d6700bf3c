"""Baselines at ImageCLEF scale: blocked k-NN and the co-occurrence baseline, one core.

    python3 perf/bench_baselines.py                       # 10,000 x 500,000 x 5,000-d (long)
    python3 perf/bench_baselines.py --test 1000 --train 20000 --dim 5000
    python3 perf/bench_baselines.py --skip-knn            # only the co-occurrence part

(a) k-NN: test images against training vectors generated block by block
from real ones (the Mulan scene features, 294-d, tiled up to --dim values,
rows cycled, each copy with a small seeded uniform perturbation so copies are
near but not tied). The training set is never held whole: its blocks are
made as the search consumes them. Prints images/s, seconds (search and
generation apart), peak RSS and the bytes the blocks need.

(b) co-occurrence baseline: training "text features" of ~100 real English
words each (drawn by their frequency in the shared Wikipedia articles),
concepts with real words as keywords, random neighbour lists of k = 32;
prints the time to build the matrices and the cost per test image.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, before numpy loads BLAS
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import collections  # noqa: E402
import html  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from annobench.benchmark.annotation.baselines import (  # noqa: E402
    cooccurrence_matrix,
    cooccurrence_scores,
    keyword_columns,
    text_terms_matrix,
)
from annobench.benchmark.neighbours.search import (  # noqa: E402
    DEFAULT_MARGIN,
    EXACT_CHUNK_VALUES,
    nearest_neighbours,
)
from common import SHARED, peak_rss_mb  # noqa: E402

REAL = SHARED / "data" / "real"
SCENE = REAL / "multilabel" / "scene"
ARTICLES = REAL / "pages" / "kiwix_wikipedia" / "A"
SCENE_FEATURES = 294
PERTURBATION = 0.01  # features lie in [0, 1]; copies end up ~0.4 apart at 5,000-d, distinct rows ~8


def scene_rows(name: str) -> np.ndarray:
    path = SCENE / f"scene-{name}.arff"
    if not path.exists():
        raise SystemExit(f"needs the real scene features at {path} (../shared next to the checkout)")
    rows = [line.split(",")[:SCENE_FEATURES] for line in path.read_text().split("@data", 1)[1].split()]
    return np.array(rows, dtype=np.float32)


def tiled(base: np.ndarray, dimension: int) -> np.ndarray:
    copies = -(-dimension // base.shape[1])
    return np.tile(base, (1, copies))[:, :dimension]


def perturbed_rows(base: np.ndarray, start: int, count: int, seed: int) -> np.ndarray:
    """Rows start..start+count of the endless cycle of base rows, each copy perturbed."""
    noise = np.random.default_rng([seed, start]).random((count, base.shape[1]), dtype=np.float32)
    noise -= 0.5
    noise *= PERTURBATION
    noise += base[np.arange(start, start + count) % len(base)]
    return noise


class TrainingStream:
    """Training blocks made on demand; counts the time spent making them."""

    def __init__(self, base: np.ndarray, n_rows: int, block: int, seed: int) -> None:
        self.base, self.n_rows, self.block, self.seed = base, n_rows, block, seed
        self.seconds = 0.0

    def __iter__(self):
        for start in range(0, self.n_rows, self.block):
            began = time.perf_counter()
            rows = perturbed_rows(self.base, start, min(self.block, self.n_rows - start), self.seed)
            self.seconds += time.perf_counter() - began
            yield rows


def block_bytes(n_test: int, dimension: int, k: int, query_block: int, block: int) -> dict[str, int]:
    q = min(query_block, n_test)
    return {
        "queries (held whole)": n_test * dimension * 4,
        "reference block": block * dimension * 4,
        "products + argpartition + mask": q * block * (4 + 8 + 1),
        "exact re-ranking chunk": 2 * EXACT_CHUNK_VALUES * 8,
        "running best k": n_test * k * 16,
    }


def bench_knn(args) -> None:
    base = tiled(scene_rows("train"), args.dim)
    test_base = tiled(scene_rows("test"), args.dim)
    queries = np.empty((args.test, args.dim), dtype=np.float32)
    for start in range(0, args.test, args.block):  # no full-size temporaries
        part = queries[start:start + args.block]
        part[:] = perturbed_rows(test_base, start, len(part), seed=2)
    stream = TrainingStream(base, args.train, args.block, seed=1)
    rss_before = peak_rss_mb()
    began = time.perf_counter()
    index, distance = nearest_neighbours(queries, stream, args.k, query_block=args.query_block,
                                         reference_block=args.block)
    total = time.perf_counter() - began
    search = total - stream.seconds
    print(f"k-NN: {args.test:,} test x {args.train:,} training x {args.dim:,}-d, k = {args.k}, "
          f"blocks {args.query_block} x {args.block}, margin {DEFAULT_MARGIN}, one core")
    print(f"  search {search:.1f} s = {args.test / search:.1f} test images/s "
          f"({2.0 * args.test * args.train * args.dim / search / 1e9:.1f} GFLOP/s in the products); "
          f"generating the training blocks {stream.seconds:.1f} s more; total {total:.1f} s")
    print(f"  peak RSS {peak_rss_mb():.0f} MiB (before the search {rss_before:.0f} MiB)")
    need = block_bytes(args.test, args.dim, args.k, args.query_block, args.block)
    print("  bytes the blocks need: " + ", ".join(f"{name} {size / 2**20:.1f} MiB" for name, size in need.items())
          + f"; the training set itself would be {args.train * args.dim * 4 / 2**30:.1f} GiB")
    print(f"  check: nearest distance median {np.median(distance[:, 0]):.3f}, k-th {np.median(distance[:, -1]):.3f}, "
          f"indices {index.min()}..{index.max()}")


def article_word_counts() -> collections.Counter:
    if not ARTICLES.is_dir():
        raise SystemExit(f"needs the real articles at {ARTICLES} (../shared next to the checkout)")
    counts: collections.Counter = collections.Counter()
    for path in sorted(ARTICLES.glob("*.html")):
        text = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", path.read_text(encoding="utf-8", errors="replace"))
        counts.update(re.findall(r"[^\W_]+", html.unescape(re.sub(r"(?s)<[^>]+>", " ", text)).lower()))
    return counts


def synthetic_text_terms(n_images: int, terms_per_image: int, seed: int) -> tuple[pd.DataFrame, list[str]]:
    """~terms_per_image real words per image, drawn by their real frequency; scores sum to 1."""
    counts = article_word_counts()
    words = np.array(sorted(counts))
    weights = np.array([counts[w] for w in words], dtype=np.float64)
    probability = weights / weights.sum()
    rng = np.random.default_rng(seed)
    ids, terms, scores = [], [], []
    for image in range(n_images):
        drawn = np.sort(rng.choice(len(words), size=terms_per_image, replace=False, p=probability))
        raw = rng.random(len(drawn)) + 0.05
        ids.append(np.full(len(drawn), f"train{image:07d}"))
        terms.append(words[drawn])
        scores.append(raw / raw.sum())
    frame = pd.DataFrame({"image_id": np.concatenate(ids), "term": np.concatenate(terms),
                          "score": np.concatenate(scores)})
    return frame, [f"train{image:07d}" for image in range(n_images)]


def bench_cooccurrence(args) -> None:
    began = time.perf_counter()
    frame, train_ids = synthetic_text_terms(args.cooc_train, 100, seed=7)
    made = time.perf_counter() - began
    began = time.perf_counter()
    train_terms, vocabulary = text_terms_matrix(frame, train_ids)
    to_csr = time.perf_counter() - began
    # concepts: real words of middling frequency, one to three keywords each
    by_use = np.asarray((train_terms > 0).sum(axis=0)).ravel()
    candidates = [vocabulary[c] for c in np.argsort(-by_use, kind="stable")[50:50 + 3 * args.concepts]]
    rng = np.random.default_rng(8)
    keywords = [list(rng.choice(candidates, size=rng.integers(1, 4), replace=False)) for _ in range(args.concepts)]
    columns = keyword_columns(keywords, vocabulary)
    began = time.perf_counter()
    cooc = cooccurrence_matrix(train_terms, columns)
    build = time.perf_counter() - began
    neighbours = rng.integers(0, len(train_ids), size=(args.cooc_test, 32))
    began = time.perf_counter()
    scores, decisions = cooccurrence_scores(neighbours, train_terms, cooc)
    scoring = time.perf_counter() - began
    print(f"co-occurrence: {len(train_ids):,} training images x {train_terms.nnz / len(train_ids):.0f} terms "
          f"(vocabulary {len(vocabulary):,} real words), {args.concepts:,} concepts, {args.cooc_test:,} test "
          f"images, k = 32")
    print(f"  text terms made in {made:.1f} s; CSR in {to_csr:.2f} s; co-occurrence matrix "
          f"({cooc.nnz:,} non-zeros) in {build:.2f} s")
    print(f"  scores + decisions {scoring:.2f} s = {1000 * scoring / args.cooc_test:.2f} ms per test image "
          f"({decisions.sum(axis=1).mean():.1f} concepts decided on average); peak RSS {peak_rss_mb():.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", type=int, default=10_000, help="test images (queries)")
    parser.add_argument("--train", type=int, default=500_000, help="training vectors")
    parser.add_argument("--dim", type=int, default=5_000, help="dimension")
    parser.add_argument("--k", type=int, default=32, help="neighbours")
    parser.add_argument("--block", type=int, default=4096, help="training rows per block")
    parser.add_argument("--query-block", type=int, default=1024, help="test rows per matrix product")
    parser.add_argument("--cooc-train", type=int, default=10_000)
    parser.add_argument("--cooc-test", type=int, default=2_000)
    parser.add_argument("--concepts", type=int, default=1_000)
    parser.add_argument("--skip-knn", action="store_true")
    parser.add_argument("--skip-cooc", action="store_true")
    args = parser.parse_args()
    if not args.skip_cooc:
        bench_cooccurrence(args)
    if not args.skip_knn:
        bench_knn(args)


if __name__ == "__main__":
    main()
