"""Evidence is written without secrets; threads publish in order with parents."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actonce._rules.errors import UsageError
from actonce._rules.model import Confirmed
from actonce.browser import (
    AsyncBrowser,
    AsyncBrowserSession,
    BrowserNotFound,
    BrowserSession,
    find_chromium,
    next_thread_part,
)
from actonce.sandbox import SEED_USERS, SESSION_COOKIE, SandboxServer

SessionFactory = Callable[..., BrowserSession]

pytestmark = pytest.mark.browser


def found(*refs: str) -> Confirmed:
    """The verdict of a verifier that saw exactly these matches, oldest first."""
    return Confirmed(refs[0], count=len(refs), refs=refs)


def test_evidence_has_no_cookie_or_password(new_session: SessionFactory) -> None:
    session = new_session("alice")
    password = SEED_USERS["alice"]

    async def cookie_and_typed_password(s: AsyncBrowserSession) -> str:
        cookies = await s.page.context.cookies()
        await s.page.goto(s.url("/login"))
        await s.page.get_by_label("Password").fill(password)
        return next(c["value"] for c in cookies if c["name"] == SESSION_COOKIE)

    cookie = session.run(cookie_and_typed_password)
    path = Path(session.capture_evidence("login page / with ../odd:name"))
    assert path.parent == session.evidence_dir
    assert path.name == "001-login_page_with_.._odd_name"
    files = sorted(p.name for p in path.iterdir())
    assert files == ["meta.json", "page.html", "screenshot.png"]
    for f in path.iterdir():
        data = f.read_bytes()
        assert cookie.encode() not in data and password.encode() not in data
    assert 'data-testid="login-form"' in (path / "page.html").read_text()
    assert json.loads((path / "meta.json").read_text())["url"].endswith("/login")
    effect = session.invoice_effect("ORDER-E", 1)
    label = effect.evidence("before")
    assert label is not None and label.endswith("002-invoice-before")


def test_thread_published_in_order_with_parents(
    new_session: SessionFactory, base: str, truth: Callable[[], dict[str, Any]]
) -> None:
    session = new_session("alice")
    parts = ["1/3 A thread", "2/3 goes on", "3/3 and ends"]
    verified: list[str] = []
    while (effect := session.thread_effect(parts, verified)) is not None:
        effect.perform()
        verdict = effect.verify()
        assert isinstance(verdict, Confirmed) and verdict.result_ref
        verified.append(verdict.result_ref)
        if len(verified) == 1:
            break  # "crash" after part one: state lives with the caller
    # Resume from the first unverified part, not from the start.
    first = next_thread_part(parts, verified)
    assert first is not None and first.position == 1 and first.parent == verified[0]
    while (effect := session.thread_effect(parts, verified)) is not None:
        effect.perform()
        verdict = effect.verify()
        assert isinstance(verdict, Confirmed) and verdict.result_ref
        verified.append(verdict.result_ref)
    assert verified == [f"{base}/posts/{i}" for i in (1, 2, 3)]
    keys = [g["key"] for g in truth()["posts"]]
    assert keys == [
        {"author": "alice", "text": parts[0], "parent": None},
        {"author": "alice", "text": parts[1], "parent": 1},
        {"author": "alice", "text": parts[2], "parent": 2},
    ]
    assert truth()["duplicates"] == []


def test_thread_part_validation() -> None:
    assert next_thread_part(["a"], ["http://x/posts/1"]) is None
    with pytest.raises(UsageError):
        next_thread_part(["a"], ["u1", "u2"])
    with pytest.raises(UsageError):
        next_thread_part(["a", "b"], [""])


def test_find_chromium_explains_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    assert find_chromium()
    monkeypatch.delenv("ACTONCE_CHROMIUM", raising=False)
    monkeypatch.setattr("actonce.browser._discovery.os.access", lambda *a: False)
    with pytest.raises(BrowserNotFound, match="apt-get install chromium"):
        find_chromium()


async def test_async_session_same_names(tmp_path: Path) -> None:
    with SandboxServer() as srv:
        async with await AsyncBrowser.launch() as browser:
            session = await browser.new_session(srv.url, "carol", evidence_dir=tmp_path)
            try:
                await session.login(SEED_USERS["carol"])
                effect = session.invoice_effect("ORDER-ASYNC", 7)
                assert await effect.precondition() is True
                await effect.perform()
                assert await effect.verify() == found(srv.url + "/invoices/1")
                assert await effect.evidence("after") is not None
                part = session.thread_effect(["only part"], [])
                assert part is not None and part.payload["parent"] is None
            finally:
                await session.aclose()
