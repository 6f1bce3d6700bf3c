"""Keeping unused heavy libraries out of a job's process.

pyarrow imports pandas the first time it converts Python objects (pa.array
of a list asks whether the list is a pandas Series): about 0.3-0.5 CPU-s of
start-up, paid by every job, more than the whole work of a job on a small
build. Jobs that never use pandas call `keep_out("pandas")` first; pyarrow
then finds no pandas and carries on, and a use of pandas there fails loudly.
"""

from __future__ import annotations

import sys


class _KeptOut:
    def __init__(self, packages: frozenset[str]):
        self.packages = packages

    def find_spec(self, name: str, path=None, target=None):
        if name.partition(".")[0] in self.packages:
            raise ModuleNotFoundError(f"{name} is kept out of this job (annobench.core.imports.keep_out)", name=name)
        return None


def keep_out(*packages: str) -> None:
    """Make `import PACKAGE` fail in this process, for packages not imported yet."""
    loaded = [p for p in packages if p in sys.modules]
    if loaded:
        raise RuntimeError(f"already imported, cannot keep out: {', '.join(loaded)}")
    sys.meta_path.insert(0, _KeptOut(frozenset(packages)))
