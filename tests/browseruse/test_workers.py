"""A service worker never runs in a guarded browser: its requests would leave out of sight.

The sandbox serves no script, so a tiny stdlib server on 127.0.0.1 serves a
page and ``/sw.js``, whose install step POSTs to ``/hit`` (and whose fetch
handler would answer the page's requests itself). The model registers it
through browser-use's ``evaluate``; the firewall keeps the worker from
starting, and nothing reaches ``/hit``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from actonce import AsyncLedger

from .conftest import need_browser_use

need_browser_use()
pytestmark = pytest.mark.browser

from .kit import alice, run_agent  # noqa: E402

WORKER = b"""
self.addEventListener('install', e => e.waitUntil(fetch('/hit', {method: 'POST', body: 'x'})));
self.addEventListener('fetch', e => e.respondWith(new Response('from the worker')));
"""


class Site(BaseHTTPRequestHandler):
    posts: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        body, kind = (
            (WORKER, "text/javascript") if self.path == "/sw.js" else (b"<p>hi</p>", "text/html")
        )
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        Site.posts.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    Site.posts = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


async def test_a_service_worker_never_runs(
    site: str, base: str, ledger: AsyncLedger, tmp_path: Path
) -> None:
    register = "(() => { navigator.serviceWorker.register('/sw.js'); return 'asked'; })()"
    async with alice(ledger, base, str(tmp_path / "evidence")) as guarded:
        await run_agent(
            guarded, [{"navigate": {"url": site + "/"}}, {"evaluate": {"code": register}}]
        )
        deadline = time.monotonic() + 20
        while not (guarded.firewall.blocked_workers or Site.posts) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)  # sync-ok: a poll on a condition, with a deadline
        blocked = guarded.firewall.blocked_workers
    assert Site.posts == []
    assert blocked >= 1  # each start of it was refused
