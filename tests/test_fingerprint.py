from __future__ import annotations

from annobench.core.fingerprint import _annobench_sources, _third_party_versions, code_fingerprint, params_hash
from helpers import REPO


def test_params_hash_ignores_key_order_and_sees_values():
    assert params_hash({"a": 1, "b": [1, 2]}) == params_hash({"b": [1, 2], "a": 1})
    assert params_hash({"a": 1}) != params_hash({"a": 2})


def test_script_fingerprint_covers_the_modules_it_imports_transitively():
    sources = {p.relative_to(REPO).as_posix() for p in _annobench_sources(REPO / "scripts" / "ingest_shard.py")}
    # ingest_shard imports annobench.images.ingest, which imports decode, resize, tables, ...
    for module in ("images/ingest", "images/decode", "images/resize", "core/tables", "core/fsutil",
                   "sources/inventory", "core/layout", "core/progress"):
        assert f"annobench/{module}.py" in sources
    assert "annobench/demo.py" not in sources


def test_script_fingerprint_covers_library_versions():
    versions = _third_party_versions(_annobench_sources(REPO / "scripts" / "ingest_shard.py"))
    assert {"numpy", "pillow", "opencv-python-headless", "pyarrow"} <= {k.lower() for k in versions}


def test_fingerprint_changes_with_the_code(tmp_path, monkeypatch):
    import annobench.core.fingerprint as fp

    package = tmp_path / "annobench"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("VALUE = 1\n")
    script = tmp_path / "entry.py"
    script.write_text("from annobench.helper import VALUE\n")
    monkeypatch.setattr(fp, "PACKAGE_DIR", package)
    before = fp.code_fingerprint.__wrapped__(script)
    (package / "helper.py").write_text("VALUE = 2\n")
    after = fp.code_fingerprint.__wrapped__(script)
    assert before != after
    assert code_fingerprint(REPO / "scripts" / "ingest_shard.py") == code_fingerprint(str(REPO / "scripts" / "ingest_shard.py"))


def imports_by_syntax_tree(path) -> set[str]:
    """What _imported_modules must find in a file, read from its syntax tree."""
    import ast

    from annobench.core.fingerprint import _absolute_module, _package_of

    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute_module("." * node.level + (node.module or ""), _package_of(path))
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names if alias.name != "*"}
    return names - {""}


def test_import_reading_finds_every_import_of_the_package_and_scripts():
    from annobench.core.fingerprint import _imported_modules

    files = sorted((REPO / "annobench").rglob("*.py")) + sorted((REPO / "scripts").glob("*.py"))
    assert len(files) > 100
    for path in files:
        missing = imports_by_syntax_tree(path.resolve()) - _imported_modules(path.resolve())
        assert not missing, f"{path}: {sorted(missing)}"


def test_import_reading_of_the_hard_forms(tmp_path, monkeypatch):
    import annobench.core.fingerprint as fp

    package = tmp_path / "annobench"
    (package / "sub").mkdir(parents=True)
    source = package / "sub" / "mod.py"
    source.write_text(
        "import os.path as p, json\n"
        "from . import sibling  # a module\n"
        "from ..core.x import (\n    a,\n    b as c,\n)\n"
        "def f():\n    from numpy import linalg\n"
        "x = 1  # import nothing\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(fp, "PACKAGE_DIR", package)
    found = fp._imported_modules.__wrapped__(source)
    assert found == {"os.path", "json", "annobench.sub", "annobench.sub.sibling", "annobench.core.x",
                     "annobench.core.x.a", "annobench.core.x.b", "numpy", "numpy.linalg"}
