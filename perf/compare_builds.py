"""Compare two builds of the same inputs: what a change to the code changed.

    python3 perf/compare_builds.py BUILD_A BUILD_B

BUILD_A and BUILD_B are output folders (`output:` of the config). Prints, per
table under tables/, whether its rows are identical or, for float columns
and float vector columns, the largest difference per element (and in L1 per row for the
bags of words); whether stored images and codebooks are the same bytes; and
the share of dense-SIFT descriptors of the stored images that each build's
codebook assigns to the same word. Exit status 1 when a table differs in
anything but float rounding within --tolerance, or a bag-of-words vector by
more than --bow-l1 in L1.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from common import REPO  # noqa: F401 - puts the checkout on the path


def read_rows(folder: Path) -> pa.Table:
    table = pq.read_table(folder)
    keys = [name for name in ("image_id", "page_id", "region_id", "kind", "word") if name in table.column_names]
    return table.sort_by([(key, "ascending") for key in keys]) if keys else table


def vector_difference(a: pa.ChunkedArray, b: pa.ChunkedArray) -> tuple[float, float]:
    """(largest element difference, largest L1 difference of a row) of two list<float> columns."""
    left = np.array(a.to_pylist(), dtype=np.float64)
    right = np.array(b.to_pylist(), dtype=np.float64)
    difference = np.abs(left - right)
    return float(difference.max(initial=0.0)), float(difference.sum(axis=1).max(initial=0.0))


def compare_table(name: str, a: pa.Table, b: pa.Table, tolerance: float, bow_l1: float) -> bool:
    if a.column_names != b.column_names or a.num_rows != b.num_rows:
        print(f"{name}: DIFFERENT shape ({a.num_rows} vs {b.num_rows} rows; columns {a.column_names} vs {b.column_names})")
        return False
    notes, ok = [], True
    for column in a.column_names:
        left, right = a[column], b[column]
        if left.equals(right):
            continue
        kind = left.type
        if pa.types.is_list(kind) or pa.types.is_fixed_size_list(kind) or pa.types.is_large_list(kind):
            if pa.types.is_floating(kind.value_type):
                element, l1 = vector_difference(left, right)
                notes.append(f"{column} max |diff| {element:.2e}, max L1 per row {l1:.2e}")
                ok &= l1 <= bow_l1 if name.startswith("bow_") else element <= tolerance
                continue
        if pa.types.is_floating(kind) and left.null_count == right.null_count == 0:
            element = float(np.abs(left.to_numpy() - right.to_numpy()).max(initial=0.0))
            notes.append(f"{column} max |diff| {element:.2e}")
            ok &= element <= tolerance
            continue
        notes.append(f"{column} DIFFERENT")
        ok = False
    print(f"{name}: {a.num_rows} rows, " + ("identical" if not notes else "; ".join(notes)))
    return ok


def file_digests(build: Path, paths: list[str]) -> list[str]:
    return [hashlib.sha256((build / path).read_bytes()).hexdigest() for path in paths]


def word_agreement(a: Path, b: Path, images: list[str]) -> None:
    from annobench.images.resize import read_stored
    from annobench.visual.bow_stage import WordAssigner
    from annobench.visual.dsift import DsiftParams, describe

    for codebook_a in sorted((a / "artefacts").glob("codebook_*.parquet")):
        codebook_b = b / "artefacts" / codebook_a.name
        if not codebook_b.exists():
            continue
        vectors = [np.array(pq.read_table(path)["vector"].to_pylist(), dtype=np.float32) for path in (codebook_a, codebook_b)]
        kind = codebook_a.stem.removeprefix("codebook_")
        same = total = 0
        for path in images:
            descriptors = describe(read_stored(a / path), kind, DsiftParams())[1]
            words_a, words_b = (WordAssigner(vector)(descriptors) for vector in vectors)
            same += int((words_a == words_b).sum())
            total += len(descriptors)
        identical = vectors[0].tobytes() == vectors[1].tobytes()
        print(f"codebook {kind}: {'the same bytes' if identical else 'different'}; "
              f"{same}/{total} descriptors ({same / max(total, 1):.4%}) to the same word")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build_a", type=Path)
    parser.add_argument("build_b", type=Path)
    parser.add_argument("--tolerance", type=float, default=1e-6, help="largest element difference of float vectors")
    parser.add_argument("--bow-l1", type=float, default=1e-3, help="largest L1 difference of a bag-of-words vector")
    args = parser.parse_args()
    ok = True
    for folder in sorted(p for p in (args.build_a / "tables").iterdir() if p.is_dir()):
        other = args.build_b / "tables" / folder.name
        if not other.is_dir():
            print(f"{folder.name}: only in {args.build_a}")
            continue
        ok &= compare_table(folder.name, read_rows(folder), read_rows(other), args.tolerance, args.bow_l1)
    images = read_rows(args.build_a / "tables" / "images")["resized_path"].to_pylist()
    images_b = read_rows(args.build_b / "tables" / "images")["resized_path"].to_pylist()
    same_images = images == images_b and file_digests(args.build_a, images) == file_digests(args.build_b, images_b)
    print(f"stored images: {len(images)}, {'the same bytes' if same_images else 'DIFFERENT'}")
    ok &= same_images
    word_agreement(args.build_a, args.build_b, images)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
