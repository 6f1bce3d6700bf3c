"""Body of `annobench evaluate-captions`: a caption run, or the human upper bound, as JSON.

Returns the exit status: 0 done, 2 --run and --human both or neither; bad input or missing tools raise
CaptionError, which the command line prints as one line.
"""

from __future__ import annotations

import sys
from typing import TextIO

from annobench.benchmark.captions.files import read_references, read_run, write_captions_table
from annobench.benchmark.captions.measure import BLEU_KEYS, evaluate_run, human_bound
from annobench.benchmark.captions.meteor import METEOR_COMMAND, require_tools
from annobench.benchmark.json_form import json_bytes
from annobench.core.fsutil import write_bytes_atomic

SECONDARY_KEYS = (*BLEU_KEYS, "rouge_l", "cider")


def evaluate_captions_main(refs: str, run: str | None, human: bool, tokenize: str, json_path: str,
                           table: str | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Score the run (or the human bound) into JSON; with `table`, also write the `captions` table there."""
    out, err = out or sys.stdout, err or sys.stderr
    if (run is None) == (not human):
        print("annobench: give exactly one of --run and --human", file=err)
        return 2
    references = read_references(refs)
    caption_run = read_run(run, references) if run is not None else None
    require_tools()
    if caption_run is not None:
        result = {**evaluate_run(references, caption_run, tokenize), "run": run, "run_format": caption_run.form}
    else:
        # The secondary measures are defined against a run; the human bound is Meteor's (Table 3).
        result = {**human_bound(references, tokenize), **dict.fromkeys(SECONDARY_KEYS), "run": "human"}
    result["references"] = references.summary()
    result["settings"] = {"tokenize": tokenize, "std": "population", "meteor": METEOR_COMMAND}
    write_bytes_atomic(json_path, json_bytes(result))
    if table is not None:
        print(f"captions table: {write_captions_table(references, table)}", file=out)
    meteor = result["meteor"]
    print(f"{result['run']}: {result['images']} images, Meteor {meteor['mean']:.4f} ± {meteor['std']:.4f} "
          f"(median {meteor['median']:.4f}, corpus {meteor['corpus']:.4f}) -> {json_path}", file=out)
    return 0
