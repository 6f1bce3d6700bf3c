"""Hashes that decide when an output is stale: parameters and code.

Snakemake reruns a job when its params change, but it tracks a `script:`
file only by modification time and not the modules that script imports.
Each rule therefore carries `code_fingerprint(script)` among its params: a
hash of the script, every annobench module it imports (transitively) and the
versions of the third-party distributions those modules import.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import sys
from functools import lru_cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # annobench/, above core/
PACKAGE = PACKAGE_DIR.name


def file_state(path: str | Path) -> str:
    """`size:mtime` of a raw input, or `missing`: what tells a rerun that it changed (as make does)."""
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    return f"{st.st_size}:{st.st_mtime_ns}"


def folder_state(path: str | Path) -> str:
    """Hash of the names and file_state of every file under a folder (or of one file)."""
    root = Path(path)
    if not str(path) or not root.exists():
        return "absent"
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for file in files:
        name = file.relative_to(root).as_posix() if file != root else file.name
        digest.update(f"{name}\t{file_state(file)}\n".encode())
    return digest.hexdigest()


def params_hash(params: object) -> str:
    """Stable hash of a JSON-serialisable parameter structure."""
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@lru_cache(maxsize=None)
def code_fingerprint(script: str | Path, *modules: str) -> str:
    """Hash of the script, the annobench modules it (or `modules`) imports, and their libraries.

    `modules` names modules the script loads by name (importlib), which its
    import statements do not show.
    """
    entries = [Path(script).resolve()] + [m for m in map(_annobench_module_file, modules) if m is not None]
    sources = set().union(*(_annobench_sources(entry) for entry in entries))
    digest = hashlib.sha256()
    for path in sorted(sources, key=_display_name):
        digest.update(_display_name(path).encode())
        digest.update(b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    for name, version in sorted(_third_party_versions(sources).items()):
        digest.update(f"{name}=={version}\n".encode())
    return digest.hexdigest()


def _display_name(path: Path) -> str:
    # Relative names keep the fingerprint independent of the checkout folder.
    try:
        return str(path.relative_to(PACKAGE_DIR.parent))
    except ValueError:
        return path.name


def _annobench_sources(script: Path) -> set[Path]:
    seen: set[Path] = set()
    todo = [script]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in _imported_modules(path):
            resolved = _annobench_module_file(module)
            if resolved is not None:
                todo.append(resolved)
    return seen


# An import statement at the start of a line (module level or inside a function): `import a.b
# as c, d` or `from .x import (y, z)`, the parenthesised list over several lines. Docstring
# lines that look like imports are read too: a module too many only widens the fingerprint.
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(?P<base>[.\w]+)[ \t]+import[ \t]+(?P<names>\([^)]*\)|[^\n#;]*)"
    r"|import[ \t]+(?P<modules>[^\n#;]*))",
    re.MULTILINE,
)


@lru_cache(maxsize=None)  # a rule file fingerprints many scripts sharing modules: read each once
def _imported_modules(path: Path) -> frozenset[str]:
    """Every module a file imports, and `base.name` for each `from base import name` (the name
    may be a module). Read by a regular expression: parsing every module's syntax tree was
    most of the workflow's planning time (0.65 of 1 CPU-s for the scripts' fingerprints)."""
    package = _package_of(path)
    names: set[str] = set()
    for match in _IMPORT.finditer(path.read_text(encoding="utf-8")):
        if match["base"] is not None:
            base = _absolute_module(match["base"], package)
            names.add(base)
            names.update(f"{base}.{name}" for name in _imported_names(match["names"]))
        else:
            names.update(_imported_names(match["modules"]))
    names.discard("")
    return frozenset(names)


def _imported_names(listing: str) -> list[str]:
    """`a.b as c, d` or `(  # comment\n x,\n y as z,)` -> the names before any `as`."""
    parts = re.sub(r"#[^\n]*", "", listing).strip().strip("()").replace("\\", " ").split(",")
    return [part.split()[0] for part in parts if part.split() and part.split()[0] != "*"]


def _package_of(path: Path) -> str | None:
    try:
        rel = path.relative_to(PACKAGE_DIR.parent)
    except ValueError:
        return None
    return ".".join(rel.parent.parts) or None


def _absolute_module(base: str, package: str | None) -> str:
    """`base` of a `from base import` statement as an absolute module name."""
    level = len(base) - len(base.lstrip("."))
    if level == 0 or package is None:
        return base.lstrip(".")
    parts = package.split(".")
    return ".".join(parts[: len(parts) - level + 1] + ([base[level:]] if base[level:] else []))


def _annobench_module_file(module: str) -> Path | None:
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = PACKAGE_DIR.parent.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _third_party_versions(sources: set[Path]) -> dict[str, str]:
    top_level = {m.split(".")[0] for path in sources for m in _imported_modules(path)}
    top_level -= {PACKAGE, ""}
    top_level -= set(sys.stdlib_module_names)
    owners = _distributions_of_modules()
    return {dist: _version(dist) for name in top_level for dist in owners.get(name, [])}


@lru_cache(maxsize=1)
def _distributions_of_modules() -> dict[str, list[str]]:
    # Reads the metadata of every installed distribution (about a second): once per planning.
    return importlib.metadata.packages_distributions()


@lru_cache(maxsize=None)
def _version(distribution: str) -> str:
    return importlib.metadata.version(distribution)
