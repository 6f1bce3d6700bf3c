"""Real WARC files for the tests and perf/: saved pages served on 127.0.0.1 and archived by GNU wget.

wget (the Debian package) fetches each page with its page requisites
(`--page-requisites`: the images, styles and scripts it shows) and writes
every request and response to a gzip-compressed WARC, as a crawl would.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

WGET_OK = {0, 8}  # 8: the server answered some request with an error (a page links a missing file)


def wget_path() -> str | None:
    """GNU wget, installed from Debian's packages when missing and we are root; None if it cannot be."""
    from debian import debian_program

    return debian_program("wget", "wget")


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the signature of the base class
        pass


@contextlib.contextmanager
def serve(folder: Path):
    """Serve `folder` on a free port of 127.0.0.1; yields the base URL (ending in '/')."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def crawl(folder: Path, pages: list[str], workdir: Path, name: str = "crawl", wget: str = "wget") -> tuple[Path, str]:
    """Archive `pages` (paths under `folder`) with their requisites into workdir/NAME.warc.gz.

    Returns the archive and the base URL the pages were served under."""
    workdir.mkdir(parents=True, exist_ok=True)
    with serve(folder) as base:
        urls = workdir / f"{name}-urls.txt"
        urls.write_text("".join(base + quote(page) + "\n" for page in pages), encoding="utf-8")
        # One connection a request: the standard library server closes connections wget would reuse.
        command = [wget, "--quiet", "--page-requisites", "--execute", "robots=off", "--no-http-keep-alive",
                   "--tries", "3", "--timeout", "20",
                   "--input-file", str(urls), "--warc-file", str(workdir / name),
                   "--directory-prefix", str(workdir / f"{name}-mirror")]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode not in WGET_OK:
        raise RuntimeError(f"wget failed ({done.returncode}): {done.stderr[-2000:]}")
    shutil.rmtree(workdir / f"{name}-mirror", ignore_errors=True)  # the archive is what we keep
    return workdir / f"{name}.warc.gz", base


def html_pages(folder: Path, collections: list[str]) -> list[str]:
    """The .html files of the collections, as paths under `folder`."""
    return sorted(p.relative_to(folder).as_posix() for c in collections
                  for p in (folder / c).rglob("*.html") if p.is_file())
