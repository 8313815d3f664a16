"""The documentation site, built here from docs/ as CI builds it (``mkdocs
build --strict``, into a temporary folder: the pages as they are now, never
a stale site/), then opened in headless Chromium over a local HTTP server:
the home page and a reference page render, the search finds
``max_memory``, and every public name of ``bpeforge`` has its entry in the
API reference.

The build needs the docs tools (in the ``test`` extra); the browser tests
need Chromium on PATH, a system package (Debian/Ubuntu: ``apt-get install
chromium``), and skip without it, saying so."""

from __future__ import annotations

import functools
import html
import http.server
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import bpeforge
from browser import browse, find_chromium

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built strictly from this checkout's docs/ (any warning or
    broken link fails the build, and with it these tests)."""
    missing = "the docs tools are not installed: pip install '.[test]' (or '.[docs]') to build the site"
    pytest.importorskip("mkdocs", reason=missing)
    pytest.importorskip("material", reason=missing)
    pytest.importorskip("mkdocstrings", reason=missing)
    pytest.importorskip("mkdocstrings_handlers.python", reason=missing)
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{build.stdout[-3000:]}{build.stderr[-3000:]}"
    assert (out / "index.html").is_file()
    return out


# Material's search runs in a web worker, which headless Chromium's virtual
# time does not wait for. On a page opened with ?q=..., this script (added to
# the HTML as it is served; the site itself is unchanged) keeps a request to
# the test server open, 0.2 s of real time each, until the search says how many
# documents match, or 30 s have passed: while a request is pending, virtual time stands still.
WAIT_FOR_SEARCH = b"""<script>(function () {
  if (!/[?&]q=/.test(location.search)) return;
  var tries = 0;
  function tick() {
    var meta = document.querySelector(".md-search-result__meta");
    if ((meta && /match/i.test(meta.textContent)) || tries++ > 150) return;
    fetch("/__wait", {cache: "no-store"}).then(tick, tick);
  }
  tick();
})();</script>"""


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = self.path.split("?", 1)[0]
        if path == "/__wait":
            time.sleep(0.2)
            self.send_response(204)
            self.end_headers()
            return
        if path.endswith("/") or path.endswith(".html"):
            file = Path(self.translate_path(path))
            file = file / "index.html" if file.is_dir() else file
            if file.is_file():
                body = file.read_bytes().replace(b"</body>", WAIT_FOR_SEARCH + b"</body>", 1)
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
        super().do_GET()


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def chromium() -> str:
    path = find_chromium()
    if path is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium); the site is not browser-tested")
    return path


def _dom(chromium: str, url: str, tmp_path: Path, budget_ms: int = 10000) -> str:
    proc = browse(chromium, url, tmp_path / "profile", "--dump-dom", budget_ms=budget_ms)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_home_page_renders(chromium: str, server: str, tmp_path: Path) -> None:
    dom = _dom(chromium, server + "/", tmp_path)
    assert re.search(r"<h1[^>]*>\s*bpeforge", dom), dom[:2000]
    assert "Getting started" in dom and "md-nav" in dom  # the theme's navigation is there
    assert "md-search__input" in dom


def test_reference_page_renders(chromium: str, server: str, tmp_path: Path) -> None:
    dom = _dom(chromium, server + "/reference/train-options/", tmp_path)
    assert 'id="max_memory"' in dom and 'id="vocab_size"' in dom
    assert "memory budget" in dom


def _search(chromium: str, server: str, query: str, tmp_path: Path) -> tuple[str, list[str]]:
    dom = _dom(chromium, f"{server}/?q={query}", tmp_path, budget_ms=20000)
    meta = re.search(r'class="md-search-result__meta"[^>]*>([^<]*)<', dom)
    links = re.findall(r'<a href="([^"]+)"[^>]*class="md-search-result__link"', dom) or \
        re.findall(r'class="md-search-result__link"[^>]*href="([^"]+)"', dom)
    return (meta.group(1) if meta else ""), [html.unescape(link) for link in links]


def test_search_finds_max_memory(chromium: str, server: str, tmp_path: Path) -> None:
    meta, links = _search(chromium, server, "max_memory", tmp_path)
    assert links, f"the search showed no result for max_memory ({meta!r})"
    assert any("reference/train-options/" in link for link in links), links
    # The probe can tell a search that found nothing.
    meta, links = _search(chromium, server, "qxzvbnwordthatisnowhere", tmp_path)
    assert not links and "no matching" in meta.lower(), (meta, links)


def test_generated_pages_were_generated(site: Path) -> None:
    """The build ran the generator hook: no marker is left, the sections are there."""
    for page in site.rglob("*.html"):
        assert "<!-- generated:" not in page.read_text(encoding="utf-8"), page
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert 'id="bpeforge-train"' in cli and "--max-memory" in cli


def test_every_public_name_is_in_the_built_api_reference(site: Path) -> None:
    page = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'id="(bpeforge\.[\w.]+)"', page))
    missing = [n for n in bpeforge.__all__ if n != "__version__" and f"bpeforge.{n}" not in ids]
    assert not missing, missing
    assert "bpeforge.__version__" in page


def test_built_api_reference_shows_types_written_out(site: Path) -> None:
    """The rendered signatures show ``str | os.PathLike[str]``, not the bare
    ``Union`` griffe makes of a typing alias, and no private module."""
    page = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "files: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]" in " ".join(text.split())
    assert not re.search(r"\bUnion\b", text)
    assert not re.findall(r"bpeforge\._[a-z]\w*", text)
