"""The caption measure (ImageCLEF 2016 subtask 2, Gilbert et al. 2016): wall time, CPU time (Java
children included) and peak memory of evaluate_run, Meteor 1.5 through pycocoevalcap, at the 2016
test size.

    python3 perf/bench_captions.py [--images 3070] [--references 10] [--human]

Synthetic, seeded sentences from a real word list: the words of the shared kiwix Wikipedia
pages (the 2,000 most frequent of 3 to 12 letters). Each image has a topic of 12 such words;
its references and the run's caption are 6 to 16 words long, drawn from the topic (about
half), caption function words and the whole list, so Meteor finds exact matches, stems and
paraphrases as on real captions. The evaluation is the command's: PTB tokenisation (two Java
runs), one Meteor process fed every image, BLEU, ROUGE-L and CIDEr. With --human the
leave-one-out human bound (images x references segments) is timed too.
"""

from __future__ import annotations

import argparse
import re
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from common import SHARED, peak_rss_mb

PAGES = SHARED / "data" / "real" / "pages" / "kiwix_wikipedia"
FUNCTION_WORDS = "a an the of on in with and is are at near next to by its two three some".split()


def word_list(size: int = 2000) -> list[str]:
    if not PAGES.is_dir():
        sys.exit(f"needs the shared pages at {PAGES} (../shared next to the checkout)")
    counts = Counter()
    for page in sorted(PAGES.rglob("*")):
        if page.is_file() and page.suffix.lower() not in (".png", ".jpg", ".jpeg", ".svg", ".gif", ".webp"):
            text = re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8", errors="replace"))
            counts.update(word.lower() for word in re.findall(r"\b[A-Za-z]{3,12}\b", text))
    return [word for word, _ in counts.most_common(size)]


def sentence(rng: np.random.Generator, topic: list[str], words: list[str]) -> str:
    picked = []
    for _ in range(int(rng.integers(6, 17))):
        draw = rng.random()
        pool = topic if draw < 0.5 else FUNCTION_WORDS if draw < 0.8 else words
        picked.append(pool[int(rng.integers(len(pool)))])
    return " ".join(picked).capitalize() + "."


def write_inputs(folder: Path, n_images: int, n_references: int, seed: int = 0) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    words = word_list()
    refs, run = ["image_id,caption"], ["image_id,caption"]
    for k in range(n_images):
        topic = [words[int(i)] for i in rng.integers(len(words), size=12)]
        refs += [f"img{k:05d},{sentence(rng, topic, words)}" for _ in range(n_references)]
        run.append(f"img{k:05d},{sentence(rng, topic, words)}")
    (folder / "refs.csv").write_text("\n".join(refs) + "\n", encoding="utf-8")
    (folder / "run.csv").write_text("\n".join(run) + "\n", encoding="utf-8")
    return folder / "refs.csv", folder / "run.csv"


def timed(label: str, work) -> dict:
    before_self, before_children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = work()
    wall = time.perf_counter() - start
    after_self, after_children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_self = (after_self.ru_utime + after_self.ru_stime) - (before_self.ru_utime + before_self.ru_stime)
    cpu_java = ((after_children.ru_utime + after_children.ru_stime)
                - (before_children.ru_utime + before_children.ru_stime))
    print(f"{label}: {wall:.1f} s wall, CPU {cpu_self + cpu_java:.1f} s ({cpu_self:.1f} s Python, "
          f"{cpu_java:.1f} s Java children)")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=3070)
    parser.add_argument("--references", type=int, default=10)
    parser.add_argument("--human", action="store_true", help="also time the leave-one-out human bound")
    args = parser.parse_args()

    from annobench.benchmark.captions.files import read_references, read_run
    from annobench.benchmark.captions.measure import evaluate_run, human_bound
    from annobench.benchmark.captions.meteor import require_tools

    require_tools()
    with tempfile.TemporaryDirectory() as folder:
        refs_path, run_path = write_inputs(Path(folder), args.images, args.references)
        references = read_references(refs_path)
        run = read_run(run_path, references)
    print(f"{args.images} images x {args.references} references, one caption each (seeded, kiwix words)")
    result = timed("evaluate_run (PTB, Meteor, BLEU, ROUGE-L, CIDEr)", lambda: evaluate_run(references, run, "ptb"))
    meteor = result["meteor"]
    print(f"  Meteor {meteor['mean']:.4f} ± {meteor['std']:.4f}, corpus {meteor['corpus']:.4f}; "
          f"BLEU-4 {result['bleu_4']:.4f}, CIDEr {result['cider']:.4f}")
    if args.human:
        human = timed(f"human bound ({args.images * args.references} leave-one-out segments)",
                      lambda: human_bound(references, "ptb"))
        print(f"  Meteor {human['meteor']['mean']:.4f} ± {human['meteor']['std']:.4f}")
    print(f"peak memory: {peak_rss_mb():.0f} MiB Python, {peak_rss_mb(children=True):.0f} MiB largest Java child")


if __name__ == "__main__":
    main()
