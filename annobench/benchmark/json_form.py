"""The JSON form of the benchmark's evaluations, diagnostics and statistics: the same results are
always the same bytes, whichever subtask or command writes them."""

from __future__ import annotations

import json


def json_bytes(value) -> bytes:
    """Sorted, indented JSON; a NaN (a mean over nothing, e.g. no concept with a positive) becomes null."""
    def clean(item):
        if isinstance(item, dict):
            return {key: clean(v) for key, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [clean(v) for v in item]
        if isinstance(item, float) and item != item:
            return None
        return item

    return (json.dumps(clean(value), indent=1, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")
