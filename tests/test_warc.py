"""Web archives as input: a real crawl made by wget, and hostile archives made with warcio."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pyarrow.parquet as pq
import pytest
import yaml
from warc_crawl import crawl, html_pages, wget_path

from annobench.core.config import load_config
from annobench.images.ingest import ingest_shard
from annobench.sources.listing import ImageSource
from annobench.sources.pages import PageLimits
from annobench.sources.warc_index import IndexSettings, build_index
from annobench.text.page_map import derive_mapping, write_mapping
from helpers import REAL, REPO, require_shared, run_snakemake, shared_build

PAGES = REAL / "pages"
COLLECTIONS = ["dataset_popular", "kiwix_wikipedia"]
KIWIX = PAGES / "kiwix_wikipedia"
HOST = "http://archive.test/"


# --- a real crawl ------------------------------------------------------------------------

@pytest.fixture(scope="session")
def real_crawl(tmp_path_factory) -> tuple[Path, str]:
    for collection in COLLECTIONS:
        require_shared(PAGES / collection)
    wget = wget_path()
    if wget is None:
        pytest.skip("needs GNU wget to make real WARC files (apt-get install wget, as root)")

    def make(workdir: Path) -> None:
        archive, base = crawl(PAGES, html_pages(PAGES, COLLECTIONS), workdir, wget=wget)
        (workdir / "crawl.json").write_text(json.dumps({"archive": str(archive), "base": base}))

    made = json.loads((shared_build(tmp_path_factory, "crawl", make) / "crawl.json").read_text())
    return Path(made["archive"]), made["base"]


def write_config(workdir: Path, settings: dict) -> Path:
    base = {"output": "out", "features": {"bow": {"kinds": ["sift"], "words": 20, "iterations": 5}},
            "benchmark": {"ground_truth": {"source": ""}}}
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump({**base, **settings}), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def both_builds(real_crawl, tmp_path_factory) -> tuple[Path, Path]:
    """The Snakemake build from the archive alone, and the build of the same pages from their folder."""
    archive, _ = real_crawl

    def warc_build(warc_dir: Path) -> None:
        # Two shards: each job reads its own part of the catalogue (warc_index.shard_slice).
        config = write_config(warc_dir, {"input": {"warc": str(archive), "segmentations": ""},
                                         "sharding": {"num_shards": 2}})
        run_snakemake(warc_dir, "--cores", "2", "--configfile", str(config))

    def folder_build(folder_dir: Path) -> None:
        derived = derive_mapping(PAGES)
        derived.mapping = [row for row in derived.mapping if row[1].split("/")[0] in COLLECTIONS]
        write_mapping(derived, folder_dir / "mapping.csv", folder_dir / "images.csv", PAGES)
        config = write_config(folder_dir, {"input": {
            "image_list": str(folder_dir / "images.csv"), "pages": str(PAGES),
            "page_map": str(folder_dir / "mapping.csv"), "segmentations": ""}})
        run_snakemake(folder_dir, "ingest_all", "text_all", "--cores", "2", "--configfile", str(config))

    return (shared_build(tmp_path_factory, "warc_build", warc_build) / "out",
            shared_build(tmp_path_factory, "folder_build", folder_build) / "out")


def table(out: Path, name: str) -> list[dict]:
    return pq.read_table(out / "tables" / name).to_pylist()


def folder_path(address: str) -> str:
    """The file a served address came from, as a path under the pages folder."""
    return unquote(urlsplit(address).path).lstrip("/")


def outside_the_served_site(img_src: str) -> bool:
    """An address the saved folder resolves in wget's mirror layout (HOST/PATH folders), but which
    leads elsewhere when the folder is served as one site: another host, or the server's root."""
    parts = urlsplit(img_src)
    if parts.netloc:
        return not parts.netloc.startswith("127.0.0.1")
    return parts.path.startswith("/")


def test_build_from_the_archive_alone_matches_the_build_from_the_folder(both_builds):
    warc_out, folder_out = both_builds
    address = {r["key"]: r["address"] for r in table(warc_out, "warc_records") if r["kind"] == "image"}

    def folder_id(image_id: str) -> str:  # page_map's id of the same file
        return folder_path(address[image_id]).replace("/", "__")

    warc_rows = {(folder_id(r["image_id"]), folder_path(r["page_id"]), r["img_src"]) for r in table(warc_out, "image_urls")}
    folder_rows = {(r["image_id"], r["page_id"], r["img_src"]) for r in table(folder_out, "image_urls")}
    assert warc_rows and warc_rows <= folder_rows, sorted(warc_rows - folder_rows)[:5]
    # The folder build also follows addresses of other hosts, and root-relative ones, into the mirror's
    # host folders (wget's layout); the crawl of the folder served from 127.0.0.1 fetched neither (another
    # host is unreachable, the server's root is not the site's), so its archive has no such images.
    missing = sorted(row for row in folder_rows - warc_rows if not outside_the_served_site(row[2]))
    assert not missing, f"the archive lacks images the pages show by a local address: {missing[:5]}"

    warc_images = {folder_id(r["image_id"]): r for r in table(warc_out, "images")}
    folder_images = {r["image_id"]: r for r in table(folder_out, "images")}
    assert set(warc_images) <= set(folder_images)
    for image_id, row in warc_images.items():
        assert (row["sha256"], row["resized_sha256"]) == (folder_images[image_id]["sha256"],
                                                          folder_images[image_id]["resized_sha256"]), image_id

    def rows_by_image(rows):
        grouped = {}
        for image_id, page, src in rows:
            grouped.setdefault(image_id, set()).add((page, src))
        return grouped

    def terms(out, key=lambda image_id: image_id):
        found = {}
        for r in table(out, "text_terms"):
            found.setdefault(key(r["image_id"]), []).append((r["rank"], r["term"], r["score"]))
        return found

    warc_terms, folder_terms = terms(warc_out, folder_id), terms(folder_out)
    same_pages = [i for i, rows in rows_by_image(warc_rows).items() if rows == rows_by_image(folder_rows)[i]]
    assert len(same_pages) > 400
    for image_id in same_pages:
        assert sorted(warc_terms.get(image_id, [])) == sorted(folder_terms.get(image_id, [])), image_id


def test_the_archive_build_has_visual_features_and_records_every_source(both_builds):
    warc_out, _ = both_builds
    images = {r["image_id"] for r in table(warc_out, "images")}
    for feature in ("colorhist", "getlf", "gist", "bow_sift"):
        assert {r["image_id"] for r in table(warc_out, feature)} == images, feature
    records = table(warc_out, "warc_records")
    assert {r["key"] for r in records if r["kind"] == "image"} >= images
    for record in records:
        assert record["record_id"].startswith("<urn:uuid:") and record["payload_digest"].startswith("sha1:")
    reasons = {r["reason"].split(":")[0] for r in table(warc_out, "warc_rejects")}
    # wget fetches an image again for each page showing it; styles show images no <img> does; and one
    # file of the saved folder is empty. No digest, type or size failures in a sound crawl.
    assert reasons <= {"duplicate", "not shown by any page of the archives (warc.images", "empty payload"}, reasons
    jobs = [json.loads(p.read_text()) for p in (warc_out / "provenance" / "jobs").glob("ingest_shard-*.json")]
    raw = [r for job in jobs for r in job["raw_inputs"]]
    assert raw and all(r["warc"]["offset"] >= 0 and r["warc"]["record_id"] and r["warc"]["payload_digest"]
                       for r in raw)
    audit = subprocess.run([sys.executable, "-m", "annobench.cli", "audit", str(warc_out / "release"),
                            "--recompute", "3"], capture_output=True, text=True, cwd=REPO)
    assert audit.returncode == 0, audit.stdout[-3000:] + audit.stderr[-2000:]


def test_command_line_maps_and_extracts_text_from_archives(real_crawl, tmp_path):
    archive, base = real_crawl
    mapped = subprocess.run([sys.executable, "-m", "annobench.cli", "pages-map", "--warc", str(archive),
                             "--out", str(tmp_path / "map")], capture_output=True, text=True, cwd=REPO)
    assert mapped.returncode == 0, mapped.stderr
    lines = (tmp_path / "map" / "mapping.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "image_id,page_id,img_src,page_url" and len(lines) > 1000
    assert all(line.split(",")[1].startswith(base) for line in lines[1:6])
    done = subprocess.run([sys.executable, "-m", "annobench.cli", "text", "--warc", str(archive),
                           "--out", str(tmp_path / "text")], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    terms = pq.read_table(tmp_path / "text" / "tables" / "text_terms").to_pylist()
    mapped_images = {line.split(",")[0] for line in lines[1:]}
    assert {r["image_id"] for r in terms} == mapped_images
    missing = subprocess.run([sys.executable, "-m", "annobench.cli", "text", "--warc", str(tmp_path / "none.warc"),
                              "--out", str(tmp_path / "x")], capture_output=True, text=True, cwd=REPO)
    assert missing.returncode != 0 and missing.stderr.startswith("annobench:") and "Traceback" not in missing.stderr


# --- hostile archives --------------------------------------------------------------------

def writer_for(handle, compressed: bool):
    from warcio.warcwriter import WARCWriter

    return WARCWriter(handle, gzip=compressed)


def response(writer, uri: str, body, content_type: str, headers=(), length: int | None = None):
    from warcio.statusandheaders import StatusAndHeaders

    stream = io.BytesIO(body) if isinstance(body, bytes) else body
    size = length if length is not None else len(body)
    http = StatusAndHeaders("200 OK", [("Content-Type", content_type), ("Content-Length", str(size)), *headers],
                            protocol="HTTP/1.1")
    record = writer.create_warc_record(uri, "response", payload=stream, http_headers=http)
    writer.write_record(record)
    return record


def kiwix_page() -> tuple[str, bytes, list[tuple[str, Path]]]:
    """A real kiwix page and the images it shows (address under the page, file)."""
    require_shared(KIWIX)
    pages = {}
    for image_id, page, src in derive_mapping(KIWIX).mapping:
        pages.setdefault(page, []).append((src, KIWIX / image_id.replace("__", "/")))
    page, shown = max(pages.items(), key=lambda item: len({p for _, p in item[1]}))
    return page, (KIWIX / page).read_bytes(), sorted(set(shown))


def pixel_bomb_png(width: int = 60000, height: int = 60000) -> bytes:
    """A PNG whose header claims billions of pixels (its data is a few bytes)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def gzip_bomb(decoded_bytes: int) -> bytes:
    """Content-Encoding gzip of `decoded_bytes` zeros (about a thousandth of that on the wire)."""
    packer, zeros, parts = zlib.compressobj(9, zlib.DEFLATED, 31), b"\0" * (1 << 20), []
    for _ in range(decoded_bytes >> 20):
        parts.append(packer.compress(zeros))
    return b"".join(parts) + packer.flush()


@pytest.fixture(scope="module")
def hostile_archive(tmp_path_factory) -> dict:
    """An uncompressed archive: a real page with its images, then every kind of bad record."""
    page, html, shown = kiwix_page()
    folder = tmp_path_factory.mktemp("hostile")
    page_uri = HOST + page
    uris = {src: urljoin(page_uri, src) for src, _ in shown}
    path = folder / "hostile.warc"
    with open(path, "wb") as handle:
        writer = writer_for(handle, compressed=False)
        response(writer, page_uri, html, "text/html")
        first = None
        for src, file in shown:
            record = response(writer, uris[src], file.read_bytes(), "image/jpeg" if file.suffix.lower() in
                              (".jpg", ".jpeg") else "image/png")
            first = first or record
        response(writer, uris[shown[0][0]], shown[0][1].read_bytes(), "image/jpeg")  # fetched again
        response(writer, HOST + "bad-digest.jpg", shown[0][1].read_bytes(), "image/jpeg")
        response(writer, HOST + "html-as-image.jpg", html, "image/jpeg")
        response(writer, HOST + "png-as-page.html", pixel_bomb_png(), "text/html")
        response(writer, HOST + "pixel-bomb.png", pixel_bomb_png(), "image/png")
        response(writer, HOST + "gzip-bomb.png", gzip_bomb(300 << 20), "image/png", [("Content-Encoding", "gzip")])
        response(writer, HOST + "large.jpg", b"\xff\xd8\xff" + bytes(3_100_000), "image/jpeg")  # over settings()
        cyrillic = "<html><head><title>Кошка</title></head><body><p>Кошка на крыше</p></body></html>"
        response(writer, HOST + "cp1251.html", cyrillic.encode("cp1251"), "text/html; charset=windows-1251")
        revisit = writer.create_revisit_record(HOST + "copy.jpg", first.rec_headers.get_header("WARC-Payload-Digest"),
                                               first.rec_headers.get_header("WARC-Target-URI"),
                                               first.rec_headers.get_header("WARC-Date"))
        revisit.rec_headers.add_header("WARC-Refers-To", first.rec_headers.get_header("WARC-Record-ID"))
        writer.write_record(revisit)
    data = bytearray(path.read_bytes())
    digest_record = data.index(b"WARC-Target-URI: " + (HOST + "bad-digest.jpg").encode())
    body_at = data.index(b"\r\n\r\n", data.index(b"HTTP/1.1 200", digest_record)) + 4
    data[body_at + 500] ^= 0xFF  # one flipped byte in the payload: the declared digest no longer holds
    path.write_bytes(bytes(data))
    return {"path": path, "page": page_uri, "images": [uris[src] for src, _ in shown]}


def settings(**changes) -> IndexSettings:
    return IndexSettings(**{"images": "all", "max_image_bytes": 3_000_000, "page_limits": PageLimits(),
                            "workers": 1, **changes})


def reasons_by_uri(index) -> dict[str, str]:
    return {r["target_uri"]: r["reason"] for r in index.rejects}


def test_every_bad_record_is_a_rejects_row_and_the_rest_is_used(hostile_archive):
    index = build_index([str(hostile_archive["path"])], settings(), log=lambda line: None)
    reasons = reasons_by_uri(index)
    assert reasons[HOST + "bad-digest.jpg"].startswith("payload digest does not match")
    assert reasons[HOST + "html-as-image.jpg"] == "declared image/jpeg, but the payload is markup (HTML or XML), " \
                                                  "not an image"
    assert reasons[HOST + "png-as-page.html"] == "declared text/html, but the payload is a PNG image"
    assert "once its Content-Encoding gzip is decoded" in reasons[HOST + "gzip-bomb.png"]
    assert reasons[HOST + "large.jpg"].startswith("record over the size limit")
    assert reasons[hostile_archive["images"][0]].startswith("duplicate:")
    addresses = {located.address for located in index.images.values()}
    assert set(hostile_archive["images"]) | {HOST + "pixel-bomb.png", HOST + "copy.jpg"} == addresses
    copy = next(loc for loc in index.images.values() if loc.address == HOST + "copy.jpg")
    assert copy.revisit_id and copy.ref.target_uri == hostile_archive["images"][0]
    assert {hostile_archive["page"], HOST + "cp1251.html"} == set(index.pages)
    assert {row[2] for row in index.mapping} and all(row[1] == hostile_archive["page"] for row in index.mapping)


def test_embedded_images_only_by_default(hostile_archive):
    index = build_index([str(hostile_archive["path"])], settings(images="embedded"), log=lambda line: None)
    assert {loc.address for loc in index.images.values()} == set(hostile_archive["images"])
    assert reasons_by_uri(index)[HOST + "copy.jpg"].startswith("not shown by any page")


def test_ingest_reads_records_and_rejects_the_pixel_bomb(hostile_archive, tmp_path):
    index = build_index([str(hostile_archive["path"])], settings(), log=lambda line: None)
    config = load_config(overrides={"output": str(tmp_path)})
    sources = [ImageSource(image_id, loc.address, loc.ref.warc, loc.ref) for image_id, loc in index.images.items()]
    result = ingest_shard(sources, 0, tmp_path, config, "test", log=lambda line: None)
    rejected = {row["source_path"]: row["reason"] for row in result.rejects}
    assert "pixels" in rejected.pop(HOST + "pixel-bomb.png")
    assert all(reason.startswith("too small") for reason in rejected.values()), rejected  # flags and icons
    stored = {row["source_path"]: row["sha256"] for row in result.images}
    assert stored[HOST + "copy.jpg"] == stored[hostile_archive["images"][0]]


def test_the_http_charset_decides_a_pages_encoding(hostile_archive):
    from annobench.sources.warc_index import WarcPages

    index = build_index([str(hostile_archive["path"])], settings(), log=lambda line: None)
    page = WarcPages(index.pages).read(HOST + "cp1251.html", PageLimits())
    assert page.title == "Кошка" and page.encoding == "cp1251"


def test_a_truncated_archive_keeps_its_whole_records(hostile_archive, tmp_path):
    page, html, shown = kiwix_page()
    path = tmp_path / "cut.warc.gz"
    with open(path, "wb") as handle:
        writer = writer_for(handle, compressed=True)
        response(writer, HOST + page, html, "text/html")
        for index, (_, file) in enumerate(shown):
            response(writer, f"{HOST}image-{index}.jpg", file.read_bytes(), "image/jpeg")
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) - len(shown[-1][1].read_bytes()) // 2])
    index = build_index([str(path)], settings(), log=lambda line: None)
    assert len(index.images) == len(shown) - 1 and len(index.pages) == 1
    assert len(index.rejects) == 1
    reason = index.rejects[0]["reason"]
    assert "truncated" in reason or "damaged" in reason, reason


def test_memory_stays_bounded_on_bombs(tmp_path):
    """A 300 MB Content-Encoding bomb and a 400 MB record inside a .warc.gz: read in bounded memory."""
    path = tmp_path / "bombs.warc.gz"
    zeros = tmp_path / "zeros"
    with open(zeros, "wb") as handle:
        handle.truncate(400 << 20)  # sparse: 400 MB of zeros without writing them
    with open(path, "wb") as handle, open(zeros, "rb") as payload:
        writer = writer_for(handle, compressed=True)
        response(writer, HOST + "gzip-bomb.png", gzip_bomb(300 << 20), "image/png", [("Content-Encoding", "gzip")])
        response(writer, HOST + "huge.png", payload, "image/png", length=400 << 20)
        response(writer, HOST + "after.png", pixel_bomb_png(), "image/png")
    code = ("import resource; from annobench.sources.warc_index import build_index, IndexSettings;"
            "peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024; before = peak();"
            f"index = build_index([{str(path)!r}], IndexSettings(images='all', workers=1), log=lambda line: None);"
            "print(len(index.images), len(index.rejects), peak() - before)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    images, rejects, grown_mib = map(int, done.stdout.split())
    assert (images, rejects) == (1, 2)
    # Bounded by the limit (50 MB: at most the payload read so far and its joined copy), not by the bombs.
    assert grown_mib < 200, f"memory grew by {grown_mib} MiB reading bombs of 300 and 400 MB"


def test_each_shards_part_of_the_catalogue_plans_as_the_whole_does(hostile_archive, tmp_path):
    """What a job reads (its shard's part) gives the listing and text plan the planning computed."""
    from annobench.sources.inventory import build_inventory, shard_sources
    from annobench.sources.listing import listing_fingerprint
    from annobench.text.stage import archived_shard_plan, text_plan_for

    config = load_config(overrides={"output": str(tmp_path), "input": {"warc": str(hostile_archive["path"]),
                                                                       "segmentations": ""},
                                    "warc": {"images": "all", "max_image_bytes": 3_000_000},
                                    "sharding": {"num_shards": 3}})
    inventory = build_inventory(config)
    whole = text_plan_for(config, inventory.n_shards)
    seen = set()
    for shard in range(inventory.n_shards):
        sources, n_shards = shard_sources(config, shard)
        assert n_shards == 3 and listing_fingerprint(sources, n_shards) == inventory.fingerprint(shard)
        part = archived_shard_plan(config, shard)
        assert part.shards[shard] == whole.shards[shard] and part.fingerprint(shard) == whole.fingerprint(shard)
        assert all(part.owners[row.page_id] == whole.owners[row.page_id] for row in part.shards[shard])
        seen |= {source.image_id for source in sources}
    assert seen == {source.image_id for shard in inventory.shards for source in shard}


def test_audit_notices_a_changed_record(hostile_archive, tmp_path):
    from annobench.core.provenance import archived_file
    from annobench.release.audit import _check_archived

    index = build_index([str(hostile_archive["path"])], settings(), log=lambda line: None)
    located = index.images[sorted(index.images)[0]]
    raw = archived_file(located.ref, located.address, "image", "x")
    assert _check_archived(raw, {}) == []
    copy = tmp_path / "copy.warc"
    data = bytearray(hostile_archive["path"].read_bytes())
    data[located.ref.offset + 2000] ^= 0xFF
    copy.write_bytes(bytes(data))
    raw["absolute_path"] = str(copy)
    problems = _check_archived(raw, {})
    assert len(problems) == 1 and problems[0][0] == "stale", problems


def test_a_bad_record_does_not_lose_the_records_after_it(tmp_path):
    """A charset no codec accepts (a NUL inside it) makes the page fall back to detection; the archive goes on."""
    path = tmp_path / "charset.warc"
    with open(path, "wb") as handle:
        writer = writer_for(handle, compressed=False)
        response(writer, HOST + "one.html", b"<html><title>one</title></html>", "text/html")
        response(writer, HOST + "two.html", b"<html><title>two</title></html>", "text/html; charset=utf-8\x00")
        response(writer, HOST + "three.html", b"<html><title>three</title></html>", "text/html")
    index = build_index([str(path)], settings(), log=lambda line: None)
    assert set(index.pages) == {HOST + "one.html", HOST + "two.html", HOST + "three.html"}
    assert not index.rejects


def test_a_folder_of_archives_and_a_missing_one(tmp_path):
    from annobench.sources.warc import list_archives

    (tmp_path / "a" / "b").mkdir(parents=True)
    for name in ("a/one.warc.gz", "a/b/two.warc", "a/notes.txt"):
        (tmp_path / name).write_bytes(b"")
    assert [Path(p).name for p in list_archives(str(tmp_path / "a"))] == ["two.warc", "one.warc.gz"]
    with pytest.raises(FileNotFoundError, match="does not exist"):
        list_archives([str(tmp_path / "missing.warc")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no .warc"):
        list_archives(str(tmp_path / "empty"))
