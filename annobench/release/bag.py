"""The release as a BagIt bag (Kunze et al. 2018, RFC 8493) holding an RO-Crate (Soiland-Reyes et al. 2022).

The release folder is the bag's base directory. Its payload, `data/`, is the RO-Crate root: every
released file, MANIFEST.jsonl, the crate's `ro-crate-metadata.json` and the rest, laid out as the
build lays them out (RO-Crate 1.1, appendix "Implementation notes", "Adding RO-Crate to BagIt").
Beside `data/` stand the bag's tag files, which are not part of the crate:

- bagit.txt, the bag declaration (RFC 8493 section 2.1.1);
- manifest-sha256.txt, every payload file's sha256 (section 2.1.3), from the hashes the release
  already holds (the job records' and the release job's own): the data are not read again;
- bag-info.txt, the metadata of section 2.2.2: Bagging-Date, External-Description, Payload-Oxum,
  Bag-Size, and Source-Organization when `release.organization` is set;
- tagmanifest-sha256.txt, the sha256 of the three files above (section 2.2.1).

A path in a manifest is percent-encoded as section 2.1.3 asks: CR, LF and '%' only, '%' first.
"""

from __future__ import annotations

import hashlib
import re
import textwrap
from pathlib import Path

PAYLOAD = "data"
BAGIT, BAG_INFO = "bagit.txt", "bag-info.txt"
BAG_MANIFEST, TAG_MANIFEST = "manifest-sha256.txt", "tagmanifest-sha256.txt"
TAG_FILES = (BAGIT, BAG_INFO, BAG_MANIFEST, TAG_MANIFEST)
DECLARATION = "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n"
LINE = 79  # bag-info.txt lines longer than this are folded (section 2.2.2 recommends it)


def encode_path(path: str) -> str:
    """A manifest's file path: '%', CR and LF percent-encoded (RFC 8493 section 2.1.3)."""
    return path.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def decode_path(text: str) -> str:
    """The inverse of encode_path: %0A, %0D and %25 (either case) back, '%' last."""
    return re.sub("%0[aA]", "\n", re.sub("%0[dD]", "\r", text)).replace("%25", "%")


def manifest_text(digests: list[tuple[str, str]]) -> str:
    """A manifest: `SHA256  PATH` a line (two spaces, as sha256sum writes it), sorted by path."""
    return "".join(f"{digest}  {encode_path(path)}\n" for path, digest in sorted(digests))


def human_size(size: int) -> str:
    """Bytes in decimal units, one decimal place past the first thousand: '512 B', '17.5 MB'."""
    value = float(size)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def bag_info(metadata: dict, created: str, total: int, count: int) -> str:
    """bag-info.txt: one `Label: value` a line, long values folded with indented continuation lines.
    `metadata`: name, title, description and organization of the release."""
    description = f"{metadata['title']} ({metadata['name']}). {metadata['description']}".strip()
    elements = [
        ("Bagging-Date", created[:10]),
        ("Bag-Size", human_size(total)),
        ("External-Description", description),
        ("Payload-Oxum", f"{total}.{count}"),
    ]
    if metadata.get("organization"):
        elements.append(("Source-Organization", metadata["organization"]))
    lines = []
    for label, value in elements:
        text = f"{label}: {' '.join(str(value).split())}"  # one line, then folded
        # A continuation line starts with one space, the one the fold took: unfolded (the line
        # break removed, RFC 8493 section 2.2.2), the value is the one-line text again.
        lines += textwrap.wrap(text, LINE, subsequent_indent=" ", break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines) + "\n"


def write_bag(bag_dir: Path, payload: list[dict], metadata: dict, created: str) -> list[Path]:
    """The tag files of the bag whose `data/` holds `payload` (manifest entries: `path` under
    data/, `sha256`, `size`, all known). Tag files are hashed from the bytes written, never read."""
    missing = [entry["path"] for entry in payload if entry["sha256"] is None or entry["size"] is None]
    if missing:
        raise ValueError(f"no sha256 or size for {len(missing)} payload file(s), e.g. {missing[0]}")
    texts = {
        BAGIT: DECLARATION,
        BAG_MANIFEST: manifest_text([(f"{PAYLOAD}/{e['path']}", e["sha256"]) for e in payload]),
        BAG_INFO: bag_info(metadata, created, sum(e["size"] for e in payload), len(payload)),
    }
    texts[TAG_MANIFEST] = manifest_text([(name, hashlib.sha256(text.encode()).hexdigest())
                                         for name, text in texts.items()])
    for name, text in texts.items():
        (bag_dir / name).write_bytes(text.encode())
    return [bag_dir / name for name in texts]


def is_bag(folder: Path | str) -> bool:
    return (Path(folder) / BAGIT).is_file() and (Path(folder) / PAYLOAD).is_dir()


def payload_dir(folder: Path | str) -> Path:
    """The release files of a release folder: its `data/` if it is a bag, else the folder itself
    (a release's data/, or a release made before releases were bags)."""
    return Path(folder) / PAYLOAD if is_bag(folder) else Path(folder)


def read_manifest_file(path: Path) -> dict[str, str]:
    """A bag manifest as path (decoded) -> sha256."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            digest, name = line.split(None, 1)
            found[decode_path(name.lstrip("*"))] = digest.lower()
    return found


def read_bag_info(path: Path) -> dict[str, str]:
    """bag-info.txt as label -> value, folded lines unfolded (the line break removed)."""
    found, label = {}, None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line[:1].isspace() and label:
            found[label] += line
        elif ":" in line:
            label, value = line.split(":", 1)
            label = label.strip()
            found[label] = value.strip()
    return found


def check_bag(bag_dir: Path, entries: list[dict], unhashed: dict[str, tuple[str, int]]) -> list[tuple[str, str, str]]:
    """What the bag's tag files get wrong against the release manifest's `entries` (whose payload
    files the audit hashes itself): (kind, path, detail) triples. `unhashed`: (sha256, size) now of
    the released files the release manifest lists without them (MANIFEST.jsonl: it cannot hold its
    own)."""
    problems = [("missing", name, "a tag file of the bag is not there") for name in TAG_FILES
                if not (bag_dir / name).is_file()]
    if problems:
        return problems
    tags = read_manifest_file(bag_dir / TAG_MANIFEST)
    for name in (BAGIT, BAG_INFO, BAG_MANIFEST):
        if tags.get(name) != hashlib.sha256((bag_dir / name).read_bytes()).hexdigest():
            problems.append(("tampered", name, f"its bytes differ from its sha256 in {TAG_MANIFEST}"))
    if (bag_dir / BAGIT).read_text(encoding="utf-8") != DECLARATION:
        problems.append(("tampered", BAGIT, "not the BagIt 1.0 declaration"))
    released = {}
    for entry in entries:
        if entry["released"]:
            digest, size = unhashed.get(entry["path"], (entry["sha256"], entry["size"]))
            released[f"{PAYLOAD}/{entry['path']}"] = (digest, size)
    listed = read_manifest_file(bag_dir / BAG_MANIFEST)
    for path in sorted(set(released) | set(listed)):
        if path not in listed:
            problems.append(("unlisted", path, f"released, not in {BAG_MANIFEST}"))
        elif path not in released:
            problems.append(("unlisted", path, f"in {BAG_MANIFEST}, not a released file of the manifest"))
        elif listed[path] != released[path][0]:
            problems.append(("tampered", path, f"its sha256 in {BAG_MANIFEST} is not the manifest's"))
    oxum = read_bag_info(bag_dir / BAG_INFO).get("Payload-Oxum")
    payload = f"{sum(size or 0 for _, size in released.values())}.{len(released)}"
    if oxum != payload:
        problems.append(("tampered", BAG_INFO, f"Payload-Oxum {oxum}, not the payload's {payload}"))
    return problems
