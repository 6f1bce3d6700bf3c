r"""The user reference (mkdocs.yml, docs/) builds, and its names cannot fall behind the code.

Conventions these checks rely on; keep to them when editing the docs:

1. Tables of names. A name is documented in a Markdown table row whose FIRST
   cell holds it in backticks. Which tables count is decided by the first
   header cell: `key` (config keys, evaluation keys), `argument` (command-line
   arguments), `column` (table columns). Other tables are free text.
   A first cell may hold several names: | `-h`, `--help` | ... |.
2. configuration.md: one `key` row per key of config/config.schema.yaml,
   objects included, written as a dotted path: | `features.gist.blocks` |;
   an entry the user names is NAME: | `features.cnn.NAME.layer` |.
   Its third cell is the default as JSON in backticks (`[8, 8, 4]`, `""`,
   `true`); a key without default says none. Every `key` row names a key of
   the schema. Anywhere under docs/ (outside code blocks), a backticked dotted
   name starting with a top-level config section (`resize.max_side`) must be a
   key of the schema, unless it ends like a file name (`features.txt`).
3. command-line.md: a heading `## \`annobench SUB\`` per subcommand and
   `## \`annobench\`` for the top-level options. Under each, `argument` rows:
   every option string (`--out`; `-h`/`--help` only under `annobench`), every
   positional by its dest or metavar (`images`, `release_dir`). Every heading
   and every argument row must name a real subcommand / argument.
4. tables.md: a heading `### \`NAME\`` (nothing else in the heading) per
   folder under tables/, followed by its `column` rows. Every table of the
   demo release must be there with every column, and every documented table
   and column must exist (tables the demo does not build: named by the code;
   a network's table by its placeholder, `cnn_NAME`).
   The leaderboard's measure columns are `column` rows of the section
   `## Leaderboard columns` in measures.md instead.
5. artefacts.md: a heading `### \`PATH\`` for each kind of Parquet file
   outside tables/ (artefacts/, runs/, work/), UPPERCASE words being
   placeholders (`runs/RUN.parquet`), followed by its `column` rows, checked
   like the tables against the demo build.
6. measures.md: every key of a baseline's evaluations/RUN.json (and the
   region measures of evaluations/regions_random.json) is a `key` row.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
SCHEMA = REPO / "config" / "config.schema.yaml"

BACKTICKED = re.compile(r"`([^`]+)`")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# A file name such as `features.txt` is not a config key, though `features` is a section.
FILE_NAME = re.compile(r"\.(txt|csv|json|jsonl|yaml|yml|md|html|png|jpg|npy|mat|parquet|scofeat)$")


# --- reading the Markdown ------------------------------------------------------------

def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (a `# comment` in a shell block is not a heading)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def sections(text: str, level: int) -> list[tuple[str, str]]:
    """(heading text, body) of every heading of exactly `level`; a body runs to the next heading
    of that level or higher."""
    found, current, body = [], None, []
    for line in prose_lines(text):
        match = HEADING.match(line)
        if match and len(match.group(1)) <= level:
            if current is not None:
                found.append((current, "\n".join(body)))
            current, body = (match.group(2) if len(match.group(1)) == level else None), []
        elif current is not None:
            body.append(line)
    if current is not None:
        found.append((current, "\n".join(body)))
    return found


def only_backticked(heading: str) -> str | None:
    """`name` for a heading that is exactly one backticked name, else None."""
    match = re.fullmatch(r"`([^`]+)`", heading.strip())
    return match.group(1) if match else None


def cells(line: str) -> list[str]:
    # Split on pipes that are not escaped (`\|` inside a cell).
    parts = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [part.strip() for part in parts]


def table_rows(text: str, header: str) -> list[list[str]]:
    """Body rows (as cells) of the Markdown tables whose first header cell is `header`."""
    rows, in_table, wanted = [], False, False
    for line in prose_lines(text):
        if not line.lstrip().startswith("|"):
            in_table = False
            continue
        if not in_table:
            in_table = True
            wanted = cells(line)[0].lower() == header
            continue
        if re.fullmatch(r"\|?[\s:|-]+\|?", line.strip()):
            continue  # the separator row
        if wanted:
            rows.append(cells(line))
    return rows


def named(text: str, header: str) -> list[str]:
    """Every backticked name in the first cell of the `header` tables of `text`."""
    return [name for row in table_rows(text, header) for name in BACKTICKED.findall(row[0])]


# --- configuration -------------------------------------------------------------------

def schema() -> dict:
    import yaml

    return yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))


def schema_keys(properties: dict, prefix: str = "") -> dict[str, dict]:
    """Dotted path -> property, for every nested property of the schema. A section of entries named
    by the user (`features.cnn`: additionalProperties with properties) has its entry's keys under
    the placeholder NAME: `features.cnn.NAME.layer`."""
    keys = {}
    for name, prop in properties.items():
        path = prefix + name
        keys[path] = prop
        if "properties" in prop:
            keys.update(schema_keys(prop["properties"], path + "."))
        entry = prop.get("additionalProperties")
        if isinstance(entry, dict) and "properties" in entry:
            keys.update(schema_keys({"NAME": entry}, path + "."))
    return keys


def assert_same_names(documented, known, missing_message: str, unknown_message: str) -> None:
    """Both ways: everything known is documented, and nothing documented is unknown."""
    missing = sorted(set(known) - set(documented))
    unknown = sorted(set(documented) - set(known))
    assert not missing, f"{missing_message}: {missing}"
    assert not unknown, f"{unknown_message}: {unknown}"


def test_every_config_key_is_documented_with_its_default():
    keys = schema_keys(schema()["properties"])
    text = page("configuration.md")
    rows = {}
    for row in table_rows(text, "key"):
        for name in BACKTICKED.findall(row[0]):
            assert name not in rows, f"configuration.md documents `{name}` twice"
            rows[name] = row
    assert_same_names(rows, keys, f"config keys of {SCHEMA.name} not documented in docs/configuration.md",
                      f"docs/configuration.md documents keys that are not in {SCHEMA.name}")
    wrong = []
    for path, prop in keys.items():
        row = rows[path]
        assert len(row) >= 4, f"configuration.md row of `{path}` needs key | type | default | meaning"
        if prop.get("type") == "object":
            continue
        expected = f"`{json.dumps(prop['default'], ensure_ascii=False)}`" if "default" in prop else "none"
        if row[2] != expected:
            wrong.append(f"`{path}`: {row[2]!r}, schema says {expected!r}")
    assert not wrong, "defaults in docs/configuration.md differ from the schema:\n  " + "\n  ".join(wrong)


def test_config_names_anywhere_in_the_docs_exist():
    keys = schema_keys(schema()["properties"])
    sections_ = "|".join(re.escape(name) for name in schema()["properties"])
    dotted = re.compile(rf"(?:{sections_})(?:\.[a-z0-9_]+)+")
    stale = []
    for path in sorted(DOCS.rglob("*.md")):
        tokens = [token for line in prose_lines(path.read_text(encoding="utf-8")) for token in BACKTICKED.findall(line)]
        for token in tokens:
            if dotted.fullmatch(token) and not FILE_NAME.search(token) and token not in keys:
                stale.append(f"{path.relative_to(REPO)}: `{token}`")
    assert not stale, "backticked config keys that the schema does not have:\n  " + "\n  ".join(stale)


# --- command line --------------------------------------------------------------------

def parsers() -> dict[str, argparse.ArgumentParser]:
    """'annobench' and 'annobench SUB' -> parser, from annobench.cli.build_parser()."""
    from annobench.cli import build_parser

    top = build_parser()
    found = {"annobench": top}
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update({f"annobench {name}": sub for name, sub in action.choices.items()})
    assert len(found) > 1, "build_parser() has no subcommands"
    return found


def argument_names(parser: argparse.ArgumentParser, top: bool) -> tuple[list[set[str]], set[str]]:
    """(what must be documented: one set of accepted spellings per required name,
    every spelling that names an argument)."""
    required, known = [], set()
    for action in parser._actions:
        if action.option_strings:
            known.update(action.option_strings)
            if isinstance(action, argparse._HelpAction) and not top:
                continue  # -h/--help of every subcommand is documented once, under `annobench`
            required.extend({option} for option in action.option_strings)
        else:
            spellings = {action.dest} | ({action.metavar} if isinstance(action.metavar, str) else set())
            known.update(spellings)
            required.append(spellings)
    return required, known


def test_every_subcommand_and_argument_is_documented():
    commands = parsers()
    documented = {}
    for heading, body in sections(page("command-line.md"), 2):
        name = only_backticked(heading)
        if name is not None:
            documented[name] = body
    assert_same_names(documented, commands,
                      "commands without a `## \\`annobench SUB\\`` section in docs/command-line.md",
                      "docs/command-line.md has sections for commands that do not exist")
    problems = []
    for command, parser in commands.items():
        names = set(named(documented[command], "argument"))
        required, known = argument_names(parser, top=command == "annobench")
        for spellings in required:
            if not names & spellings:
                problems.append(f"{command}: {' / '.join(sorted(spellings))} is not documented")
        for name in sorted(names - known):
            problems.append(f"{command}: documents `{name}`, which it does not take")
    assert not problems, "docs/command-line.md and annobench.cli disagree:\n  " + "\n  ".join(problems)


# --- tables and files --------------------------------------------------------------------

def documented_columns(text: str) -> dict[str, list[str]]:
    """`### \\`NAME\\`` section -> the names of its column rows."""
    found = {}
    for heading, body in sections(text, 3):
        name = only_backticked(heading)
        if name is not None:
            assert name not in found, f"`{name}` is documented twice"
            found[name] = named(body, "column")
    return found


def parquet_columns(paths) -> list[str]:
    import pyarrow.parquet as pq

    columns = []
    for path in paths:
        for name in pq.read_schema(path).names:
            if name not in columns:
                columns.append(name)
    return columns


def tables_named_by_code() -> set[str]:
    """Table folder names the code knows: its table registries, and the names written in the
    code, the rules and the scripts as `tables/NAME/` or `table_file("NAME", ...)`."""
    import importlib

    names = set()
    for module, attribute in (("annobench.text.stage", "TEXT_TABLES"), ("annobench.regions.stage", "REGION_TABLES"),
                              ("annobench.regions.stage", "STATS_TABLES"), ("annobench.visual.stage", "FEATURES"),
                              ("annobench.visual.cnn", "TABLES")):
        names.update(getattr(importlib.import_module(module), attribute, ()))
    bow = schema()["properties"]["features"]["properties"]["bow"]["properties"]["kinds"]["items"]["enum"]
    names.update(f"bow_{kind}" for kind in bow)
    pattern = re.compile(r"""tables/([a-z0-9_]+)/|table_file\(\s*["']([a-z0-9_]+)["']""")
    for folder, glob in (("annobench", "*.py"), ("workflow/rules", "*.smk"), ("scripts", "*.py")):
        for path in (REPO / folder).rglob(glob):  # sub-packages too (benchmark/illustration names tables/queries/)
            for match in pattern.finditer(path.read_text(encoding="utf-8")):
                names.add(match.group(1) or match.group(2))
    return names


def leaderboard_measure_columns() -> list[str]:
    for heading, body in sections(page("measures.md"), 2):
        if heading.strip().lower() == "leaderboard columns":
            return named(body, "column")
    raise AssertionError("docs/measures.md has no section '## Leaderboard columns'")


@pytest.fixture(scope="module")
def release_tables(demo_build) -> dict[str, list[str]]:
    root = demo_build / "release" / "data" / "tables"
    tables = {folder.name: parquet_columns(sorted(folder.glob("*.parquet")))
              for folder in sorted(root.iterdir()) if folder.is_dir()}
    assert tables, f"the demo release has no tables under {root}"
    return tables


def test_every_table_and_column_is_documented(release_tables):
    docs = documented_columns(page("tables.md"))
    measures = leaderboard_measure_columns()
    problems = []
    for table, columns in release_tables.items():
        if table not in docs:
            problems.append(f"table `{table}` has no `### \\`{table}\\`` section")
            continue
        listed = set(docs[table]) | (set(measures) if table == "leaderboard" else set())
        for column in columns:
            if column not in listed:
                where = "tables.md or measures.md (Leaderboard columns)" if table == "leaderboard" else "tables.md"
                problems.append(f"`{table}.{column}` is not documented in {where}")
        for column in docs[table]:
            if column not in columns:
                problems.append(f"tables.md documents `{table}.{column}`, which the demo release does not have")
        if table == "leaderboard":
            for column in measures:
                if column not in columns:
                    problems.append(f"measures.md lists leaderboard column `{column}`, which the leaderboard lacks")
    known = set(release_tables) | tables_named_by_code()
    for table in sorted(set(docs) - known):
        problems.append(f"tables.md documents table `{table}`, which neither the demo release nor the code has")
    assert not problems, "docs/tables.md and the tables disagree:\n  " + "\n  ".join(problems)


def placeholder_pattern(documented: str) -> re.Pattern:
    """`runs/RUN.parquet` -> a pattern where each UPPERCASE word matches one name."""
    parts = re.split(r"([A-Z][A-Z0-9_]*[A-Z0-9]|[A-Z])", documented)
    return re.compile("".join("[^/]+" if re.fullmatch(r"[A-Z][A-Z0-9_]*", part) else re.escape(part)
                              for part in parts))


def test_every_other_parquet_file_is_documented(demo_build):
    docs = {name: columns for name, columns in documented_columns(page("artefacts.md")).items()
            if name.endswith(".parquet")}
    # The most literal pattern wins: runs/regions_random.parquet before runs/RUN.parquet.
    patterns = sorted(((placeholder_pattern(name), name) for name in docs),
                      key=lambda item: -len(re.sub(r"[A-Z][A-Z0-9_]*", "", item[1])))
    files = sorted(p for top in ("artefacts", "runs", "work") for p in (demo_build / top).rglob("*.parquet"))
    assert files, f"no Parquet files outside tables/ in {demo_build}"
    problems, used = [], set()
    for path in files:
        relative = path.relative_to(demo_build).as_posix()
        name = next((name for pattern, name in patterns if pattern.fullmatch(relative)), None)
        if name is None:
            problems.append(f"{relative} matches no `### \\`PATH\\`` section of artefacts.md")
            continue
        used.add(name)
        columns = parquet_columns([path])
        problems += [f"{relative}: column `{c}` is not documented under `{name}`"
                     for c in columns if c not in docs[name]]
        problems += [f"artefacts.md documents `{c}` under `{name}`, which {relative} lacks"
                     for c in docs[name] if c not in columns]
    problems += [f"artefacts.md documents `{name}`, which the demo build does not have"
                 for name in sorted(set(docs) - used)]
    assert not problems, "docs/artefacts.md and the build disagree:\n  " + "\n  ".join(problems)


def test_every_measure_is_documented(demo_build):
    keys = set(named(page("measures.md"), "key"))
    found = set()
    for path in sorted((demo_build / "evaluations").glob("*.json")):
        evaluation = json.loads(path.read_text(encoding="utf-8"))
        if path.stem == "regions_random":
            found.update(k for subset in evaluation["subsets"] for k in subset if k.startswith("e_"))
        else:
            found.update(evaluation)
            found.update(k for subset in evaluation.get("subsets", {}).values() for k in subset)
    assert found, f"no evaluations in {demo_build}"
    missing = sorted(found - keys)
    assert not missing, f"evaluation keys without a `key` row in docs/measures.md: {missing}"


# --- the site builds -----------------------------------------------------------------------

def test_site_builds_strictly_and_offline(tmp_path):
    for module in ("mkdocs", "material"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (python3 -m pip install -e '.[docs]')")
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"), "-d", str(site)],
        capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=600,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= len(list(DOCS.glob("*.md"))), "fewer HTML pages than Markdown pages"
    fetched = re.compile(r"""(?:src|href)=["'](?:https?:)?//(?:fonts\.googleapis|fonts\.gstatic|cdn\.)""")
    online = [p.name for p in pages if fetched.search(p.read_text(encoding="utf-8"))]
    assert not online, f"pages that fetch fonts or scripts from the network: {online}"


# Cited as "Name YYYY", "Name et al. YYYY" or "Name and Other YYYY" (a line break may fall
# anywhere in it); a few capitalised words before a year are not citations.
CITATION = re.compile(r"\b([A-Z][A-Za-zà-ÿ\-]+)(?:\s+et\s+al\.?|\s+and\s+[A-Z][A-Za-zà-ÿ\-]+)?,?\s+\(?((?:19|20)\d\d)\b")
NOT_CITATIONS = {("JPEG", "2000"), ("July", "1999"), ("Parquet", "2012"), ("Tower", "2011"), ("UBC", "2002"),
                 ("May", "2013"), ("Hits", "1962")}
CITING = ("annobench", "workflow", "scripts", "config", "docs", "tests", "perf")


def project_texts():
    for root in CITING:
        for path in sorted((REPO / root).rglob("*")):
            if path.suffix in (".py", ".smk", ".md", ".yaml"):
                yield path, path.read_text(encoding="utf-8", errors="replace")
    yield REPO / "README.md", (REPO / "README.md").read_text(encoding="utf-8")


def test_nothing_cites_a_document_the_project_does_not_hold():
    """The project cites papers (docs/references.md), never the notes it was started from."""
    # [P] keeps this pattern from matching a plain grep for the words it looks for.
    outside = re.compile(r"\bS[P]EC\s+\d|\bseeds?\s+0\d\d\b|\bthe\s+S[P]EC\b")
    found = [f"{path.relative_to(REPO)}: {match.group(0)!r}" for path, text in project_texts()
             for match in outside.finditer(text)]
    assert not found, found


def test_every_cited_paper_is_in_the_references():
    references = (REPO / "docs" / "references.md").read_text(encoding="utf-8")
    missing = {}
    for path, text in project_texts():
        for name, year in CITATION.findall(text):
            if (name, year) not in NOT_CITATIONS and not (name in references and year in references):
                missing.setdefault(f"{name} {year}", str(path.relative_to(REPO)))
    assert not missing, missing
