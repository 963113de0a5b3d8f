"""What one capture of evidence writes, and when it says it wrote nothing (issue 23).

``capture_page`` writes the files it is given (scrubbed), the page's HTML
with every cookie value of four characters or more redacted, a screenshot
and ``meta.json``; a page that cannot be read is reported, not raised. The
session and a bound effect number the captures and decide what a failure
means. Pinned with a stand-in page that answers as told; the real page's
sanitising script runs in Chromium in ``test_evidence_threads.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Error as PlaywrightError
from stub_site import StubSite

from actonce import scrub_stored
from actonce.browser import PageUnavailable
from actonce.browser._capture import capture_page
from actonce.browser._session import AsyncBrowserSession

ORIGIN = "http://127.0.0.1:8765"
HTML = "<!doctype html>\n<html><body>sid=abcd; short=abc; long=abcdef</body></html>"


class _Context:
    async def cookies(self) -> list[dict[str, str]]:
        return [{"name": "sid", "value": "abcd"}, {"name": "s", "value": "abc"}, {"name": "e"}]


class _Page:
    def __init__(self, url: str = ORIGIN + "/compose?token=s3cr3t#top", *, broken: bool = False):
        self.url, self.broken = url, broken
        self.context = _Context()
        self.shots: list[tuple[str, bool]] = []

    def set_default_timeout(self, ms: float) -> None:
        return None

    def set_default_navigation_timeout(self, ms: float) -> None:
        return None

    async def evaluate(self, script: str) -> str:
        if self.broken:
            raise PlaywrightError("Target page, context or browser has been closed\nCall log")
        return HTML

    async def screenshot(self, *, path: str, full_page: bool) -> None:
        self.shots.append((path, full_page))
        Path(path).write_bytes(b"png")


def _meta(target: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((target / "meta.json").read_text(encoding="utf-8"))
    return data


async def test_a_capture_writes_the_page_without_cookie_values(tmp_path: Path) -> None:
    page = _Page()
    target = tmp_path / "001-post"
    files = {"wire.json": '{"token": "s3cr3tvalue123"}', "a b/c.txt": "plain"}
    assert await capture_page(page, target, "post", "ana", files) is None  # type: ignore[arg-type]
    assert (target / "page.html").read_text(encoding="utf-8") == (
        "<!doctype html>\n<html><body>sid=[redacted]; short=abc; long=[redacted]ef</body></html>"
    )
    assert page.shots == [(str(target / "screenshot.png"), True)]
    assert (target / "wire.json").read_text(encoding="utf-8") == scrub_stored(files["wire.json"])
    assert (target / "a_b_c.txt").read_text(encoding="utf-8") == "plain"
    meta = _meta(target)
    assert set(meta) == {"label", "url", "actor", "captured_at"}
    assert (meta["label"], meta["url"], meta["actor"]) == ("post", ORIGIN + "/compose", "ana")
    assert isinstance(meta["captured_at"], float)
    assert (target / "meta.json").read_text(encoding="utf-8").startswith('{\n  "label"')


async def test_a_page_that_cannot_be_read_is_reported_not_raised(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "002-x"
    why = await capture_page(_Page(broken=True), target, "x", "ana", {"n.txt": "kept"})  # type: ignore[arg-type]
    assert why == "Error: Target page, context or browser has been closed"
    assert _meta(target)["page_error"] == why
    assert not (target / "page.html").exists() and not (target / "screenshot.png").exists()
    assert (target / "n.txt").read_text(encoding="utf-8") == "kept"


def _session(tmp_path: Path, page: _Page) -> AsyncBrowserSession:
    return AsyncBrowserSession(page, origin=ORIGIN, username="ana", evidence_dir=tmp_path)  # type: ignore[arg-type]


async def test_a_sessions_captures_are_numbered_and_a_failure_raised(tmp_path: Path) -> None:
    session = _session(tmp_path, _Page())
    assert await session.capture_evidence("before click") == str(tmp_path / "001-before_click")
    assert await session.capture_evidence("after", files={"x.txt": "y"}) == str(
        tmp_path / "002-after"
    )
    assert (tmp_path / "002-after" / "x.txt").read_text(encoding="utf-8") == "y"
    broken = _session(tmp_path / "b", _Page(broken=True))
    with pytest.raises(PageUnavailable) as caught:
        await broken.capture_evidence("x")
    assert str(caught.value) == (
        "evidence capture failed: Error: Target page, context or browser has been closed"
    )
    assert broken._evidence_seq == 1


class _Site(StubSite):
    kind = "probe"


async def test_an_effects_evidence_is_its_folder_or_none(tmp_path: Path) -> None:
    effect = _session(tmp_path, _Page()).effect(_Site())
    assert await effect.evidence("before") == str(tmp_path / "001-probe-before")
    assert not (tmp_path / "001-probe-before" / "wire.json").exists(), "no perform, no wire"
    broken = _session(tmp_path / "b", _Page(broken=True)).effect(_Site())
    assert await broken.evidence("x") is None, "nothing could be written"
    broken._performed = True  # after a perform the wire evidence is written first
    folder = await broken.evidence("after")
    assert folder == str(tmp_path / "b" / "002-probe-after")
    assert json.loads((Path(folder) / "wire.json").read_text(encoding="utf-8")) == {
        "wire": [],
        "sent": 0,
        "refused": 0,
    }
    (tmp_path / "c").write_text("a file where the folder would go", encoding="utf-8")
    unwritable = _session(tmp_path / "c", _Page()).effect(_Site())
    assert await unwritable.evidence("x") is None, "a folder that cannot be made: None"
