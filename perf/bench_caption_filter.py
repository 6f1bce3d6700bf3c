"""The caption filter on the hand-labelled rows of the shared pages, and the best any rule of its
measures could do there.

    python3 perf/bench_caption_filter.py [--workdir DIR] [--conditions 3] [--recall 0.9]

Builds the shared kiwix Wikipedia and popular web pages with their images (page map derived by
`annobench pages-map`, target text_all, as tests/test_caption_filter.py does) in DIR, then prints,
per collection, the precision and recall of the default filter of `text.captions` on the labels
of tests/data/caption_labels.csv (the rows its tests were tuned on) and of
tests/data/caption_labels_heldout.csv (rows labelled after). Then, on the first, the ceiling: of
every conjunction of up to `--conditions` thresholds on what a row measures beyond its meaning
(the image's sides, area and aspect, the counts on the page and over the collection, words, word
share, capitalised tokens, kind), each applied after the filter's tests of the words, the file
name and the page's structure, the best precision with a recall of at least `--recall`. The
thresholds are fitted on the labels themselves, so the ceiling is an upper bound of what a
filter of that form can do on new pages, not a figure it would reach.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from annobench.text.captions import CaptionFilter, dropped_because
from common import REPO, SHARED

PAGES = SHARED / "data" / "real" / "pages"
COLLECTIONS = ("kiwix_wikipedia", "dataset_popular")
LABELS = REPO / "tests" / "data" / "caption_labels.csv"
HELD_OUT = REPO / "tests" / "data" / "caption_labels_heldout.csv"
MEASURES = ("min_side", "max_side", "area", "aspect", "same_on_page", "text_pages", "text_images",
            "file_pages", "words", "word_share", "tokens", "capitalised")
THRESHOLDS = 12  # quantiles tried per measure (every value where it has fewer)
# The default filter with every threshold open: its tests of the words, the file name and the
# page's structure alone, which the ceiling's rules are applied after.
NO_THRESHOLDS = CaptionFilter(min_words=0, min_filename_words=0, max_words=10**9, min_word_share=0.0,
                              max_same_on_page=10**9, min_image_side=0, max_image_aspect=float("inf"),
                              max_pages=10**9, max_images=10**9)


def build(collection: str, workdir: Path) -> Path:
    """The collection's text tables (target text_all), built once in workdir/collection."""
    import yaml

    folder = workdir / collection
    out = folder / "out"
    if (out / "tables" / "page_captions").is_dir():
        return out
    folder.mkdir(parents=True, exist_ok=True)
    run([sys.executable, "-m", "annobench.cli", "pages-map", "--pages", str(PAGES / collection),
         "--out", str(folder / "derived")])
    config = {"output": "out",
              "input": {"image_list": str(folder / "derived" / "images.csv"), "pages": str(PAGES / collection),
                        "page_map": str(folder / "derived" / "mapping.csv"), "segmentations": ""},
              "benchmark": {"vocabulary": "", "ground_truth": {"source": "", "path": ""}}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    run(["snakemake", "text_all", "-s", str(REPO / "Snakefile"), "--directory", str(folder), "--cores", "2",
         "--quiet", "--configfile", str(folder / "config.yaml")])
    return out


def run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(command[:4])} ... failed:\n{done.stderr[-2000:]}")


def labelled_rows(outs: dict[str, Path], labels_file: Path = LABELS) -> list[dict]:
    """Each label with its page_captions row (texts matched by their SHA-256 prefix)."""
    import pyarrow.parquet as pq

    rows = {}
    for collection, out in outs.items():
        for row in pq.read_table(out / "tables" / "page_captions").to_pylist():
            digest = hashlib.sha256(row["text"].encode("utf-8")).hexdigest()[:12]
            rows[(collection, row["page_id"], row["image_id"], row["kind"], digest)] = row
    with open(labels_file, encoding="utf-8") as handle:
        labels = list(csv.DictReader(line for line in handle if not line.startswith("#")))
    joined = []
    for label in labels:
        key = tuple(label[k] for k in ("collection", "page_id", "image_id", "kind", "text_sha256"))
        if key not in rows:
            sys.exit(f"a labelled row is not in the builds (changed text?): {key}")
        joined.append({**measures(rows[key]), "collection": label["collection"],
                       "caption": label["label"] == "caption"})
    return joined


def measures(row: dict) -> dict:
    tokens = row["text"].split()
    width, height = row["width"], row["height"]
    return {"keep": row["keep"], "kind": row["kind"],
            "passes_names": dropped_because(row, NO_THRESHOLDS) is None,
            "min_side": min(width, height), "max_side": max(width, height), "area": width * height,
            "aspect": max(width, height) / max(1, min(width, height)), "same_on_page": row["same_on_page"],
            "text_pages": row["text_pages"], "text_images": row["text_images"], "file_pages": row["file_pages"],
            "words": row["words"], "word_share": row["word_share"], "tokens": len(tokens),
            "capitalised": sum(token[:1].isupper() for token in tokens) / max(1, len(tokens))}


def precision_recall(kept: np.ndarray, captions: np.ndarray) -> tuple[float, float]:
    return (captions[kept].mean() if kept.any() else float("nan"), (kept & captions).sum() / captions.sum())


def conditions(rows: list[dict]) -> list[tuple[str, np.ndarray]]:
    found = []
    for name in MEASURES:
        values = np.array([row[name] for row in rows], dtype=np.float64)
        distinct = np.unique(values)
        if len(distinct) > THRESHOLDS:
            distinct = np.unique(np.quantile(values, np.linspace(0, 1, THRESHOLDS)))
        for threshold in distinct:
            found += [(f"{name} >= {threshold:.3g}", values >= threshold),
                      (f"{name} <= {threshold:.3g}", values <= threshold)]
    for kind in ("alt", "title", "caption", "filename"):
        found.append((f"kind is not {kind}", np.array([row["kind"] != kind for row in rows])))
    return found


def ceiling(rows: list[dict], most: int, min_recall: float) -> tuple[float, float, tuple[str, ...]]:
    captions = np.array([row["caption"] for row in rows])
    start = np.array([row["passes_names"] for row in rows])
    names, holds = zip(*conditions(rows))
    matrix = np.array(holds, dtype=np.float64)  # conditions x rows
    best = (0.0, 0.0, ())
    for size in range(1, most + 1):
        # Every choice of all but the last condition, then every last one at once (a product).
        for prefix in itertools.combinations(range(len(names)), size - 1):
            kept = start.copy()
            for index in prefix:
                kept &= holds[index]
            first = prefix[-1] + 1 if prefix else 0
            n_kept = matrix[first:] @ kept
            n_captions = matrix[first:] @ (kept & captions)
            fits = (n_captions >= min_recall * captions.sum()) & (n_kept > 0)
            if not fits.any():
                continue
            precision = np.where(fits, n_captions / np.maximum(n_kept, 1), -1.0)
            last = int(np.argmax(precision))
            if precision[last] > best[0]:
                best = (float(precision[last]), float(n_captions[last] / captions.sum()),
                        tuple(names[index] for index in prefix) + (names[first + last],))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, help="where to build (default: a temporary folder)")
    parser.add_argument("--conditions", type=int, default=3, help="thresholds per rule, at most")
    parser.add_argument("--recall", type=float, default=0.9, help="the least recall a rule must keep")
    args = parser.parse_args()
    if not PAGES.is_dir():
        sys.exit(f"needs the shared pages at {PAGES} (../shared next to the checkout)")
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch)
        outs = {collection: build(collection, workdir) for collection in COLLECTIONS}
        rows, held_out = labelled_rows(outs), labelled_rows(outs, HELD_OUT)
    print(f"{len(rows)} labelled rows, {sum(row['caption'] for row in rows)} captions; held out: "
          f"{len(held_out)} rows, {sum(row['caption'] for row in held_out)} captions")
    print("| rows | labelled | captions | kept | default filter: precision | recall "
          f"| best rule of <= {args.conditions} thresholds, recall >= {args.recall}: precision | recall | rule |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in COLLECTIONS + ("both",):
        chosen = [row for row in rows if name in ("both", row["collection"])]
        best = ceiling(chosen, args.conditions, args.recall)
        print(f"| {name} | {scores(chosen)} | {best[0]:.3f} | {best[1]:.3f} | {'; '.join(best[2])} |")
    for name in COLLECTIONS + ("both",):
        chosen = [row for row in held_out if name in ("both", row["collection"])]
        print(f"| {name}, held out | {scores(chosen)} | | | |")


def scores(rows: list[dict]) -> str:
    """Labelled rows, captions, kept rows, precision and recall, as table cells."""
    captions, kept = np.array([row["caption"] for row in rows]), np.array([row["keep"] for row in rows])
    precision, recall = precision_recall(kept, captions)
    return f"{len(rows)} | {captions.sum()} | {kept.sum()} | {precision:.3f} | {recall:.3f}"


if __name__ == "__main__":
    main()
