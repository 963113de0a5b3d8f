"""Issue 15: one click, one request — the network guard, in real Chromium.

A server that commits a POST and closes the connection without a response
byte (FIN or RST) makes Chromium resend the POST on a new connection when the
old one was a reused keep-alive socket. The raw-Playwright tests prove the
sandbox's fault reproduces that duplicate; the guarded tests prove a perform
sends the first mutating request exactly once and refuses every other.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from actonce import Confirmed, bare_url, origin_of
from actonce.browser import (
    AsyncBrowserSession,
    BrowserSession,
    InvoiceEffect,
    NotPerformed,
    OutcomeUnknown,
    PostEffect,
    SiteEffect,
    StoppedAfterClick,
)
from actonce.browser._wire import NetworkGuard
from actonce.sandbox import SEED_USERS, SESSION_COOKIE, SandboxServer

SessionFactory = Callable[..., BrowserSession]

pytestmark = pytest.mark.browser

_POST_URL = re.compile(r"/posts/\d+$")


def log(base: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = httpx.get(base + "/admin/requests").json()["requests"]
    return entries


def creates(base: str, action: str = "post.create") -> list[dict[str, Any]]:
    """The server's own record of every request of one action (resends included)."""
    return [r for r in log(base) if r["action"] == action]


async def raw_publish(s: AsyncBrowserSession, text: str) -> int:
    """Plain Playwright, no actonce: load the form, fill it, click Publish once.

    Returns how many POSTs Playwright's ``page.on("request")`` saw.
    """
    page = s.page
    seen: list[str] = []

    def note(request: Any) -> None:
        if request.method == "POST":
            seen.append(request.url)

    page.on("request", note)
    try:
        await page.goto(s.url("/compose"))  # a GET: its socket stays alive for the submit
        await page.get_by_test_id("editor").fill(text)
        await page.get_by_role("button", name="Publish").click()
        # Without a resend the page shows the network error and this times out.
        with contextlib.suppress(Exception):
            await page.wait_for_url(_POST_URL, timeout=5000)
    finally:
        page.remove_listener("request", note)
    return len(seen)


@pytest.mark.parametrize("mode", ["close", "reset"])
def test_raw_click_is_resent_by_chromium(
    new_session: SessionFactory,
    base: str,
    set_faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
    mode: str,
) -> None:
    """The proof: the fault reproduces issue 15 — one click, two objects."""
    session = new_session("alice")
    set_faults({"action": "post.create", "fault": "lost_response", "mode": mode, "times": 1})
    seen = session.run(lambda s: raw_publish(s, f"raw click {mode}"))
    first, *rest = creates(base)
    assert first["faults"] == ["lost_response"] and first["lost_mode"] == mode
    assert first["on_connection"] >= 2, "the submit must reuse a keep-alive connection"
    assert len(rest) == 1, "Chromium did not resend the POST"
    assert rest[0]["connection"] != first["connection"] and rest[0]["faults"] == []
    assert [g["count"] for g in truth()["posts"]] == [2]  # one click, two posts
    assert seen == 1  # ... and Playwright saw one request


@pytest.mark.parametrize(
    ("mode", "outcome"),
    [
        ("close", "no response: connection closed"),
        ("reset", "connection reset"),
    ],
)
def test_guarded_perform_sends_once_and_is_unknown(
    new_session: SessionFactory,
    base: str,
    set_faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
    mode: str,
    outcome: str,
) -> None:
    session = new_session("alice", confirm_timeout=30.0, perform_timeout=60.0)
    # A clean perform first: the guard's own HTTP client keeps that connection
    # alive, so the faulted submit goes out on a reused keep-alive socket too.
    assert session.post_effect("warm-up").perform()["sent"] == 1
    set_faults({"action": "post.create", "fault": "lost_response", "mode": mode, "times": 1})
    effect = session.post_effect(f"guarded {mode}")
    started = time.monotonic()
    with pytest.raises(OutcomeUnknown, match=re.escape(outcome)) as info:
        effect.perform()
    # It ends on the lost answer, without waiting out the 30 s confirmation.
    assert time.monotonic() - started < 15
    details = _details(info.value)
    assert details["sent"] == 1 and details["refused"] == 0
    [record] = details["wire"]
    assert record["method"] == "POST" and record["url"] == base + "/compose"
    assert record["outcome"] == outcome and record["at"] >= 0
    assert effect.wire == details["wire"]
    faulted = [r for r in creates(base) if r["faults"]]
    assert len(faulted) == 1 and faulted[0]["on_connection"] >= 2
    assert len(creates(base)) == 2  # the warm-up and the faulted one: never a resend
    assert sorted(g["count"] for g in truth()["posts"]) == [1, 1]
    verdict = effect.verify()
    assert isinstance(verdict, Confirmed) and verdict.count == 1
    folder = effect.evidence("unknown")
    assert folder is not None
    assert json.loads((Path(folder) / "wire.json").read_text()) == details


def test_second_mutating_request_is_refused(
    new_session: SessionFactory,
    base: str,
    set_faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
) -> None:
    """The compose page sends its POST twice by script: the second never leaves."""
    set_faults({"action": "view.compose", "fault": "double_submit"})
    session = new_session("alice")
    effect = session.post_effect("Submitted twice by the page")
    details = effect.perform()
    assert details["sent"] == 1 and details["refused"] == 1
    assert [r["outcome"] for r in details["wire"]] == [303, "refused: second mutating request"]
    assert [r["method"] for r in details["wire"]] == ["POST", "POST"]
    assert len(creates(base)) == 1
    assert truth()["posts"][0]["count"] == 1
    # The page really sends two: without the guard the server sees both.
    httpx.post(base + "/admin/reset").raise_for_status()
    set_faults({"action": "view.compose", "fault": "double_submit"})
    raw = new_session("alice")
    raw.run(lambda s: raw_publish(s, "Submitted twice by the page"))
    assert len(creates(base)) == 2 and truth()["posts"][0]["count"] == 2


class BeaconPost(PostEffect):
    """A post whose page also fires a cross-origin POST when the form submits."""

    def __init__(self, author: str, text: str, beacon: str) -> None:
        super().__init__(author, text)
        self.beacon = beacon

    async def prepare(self, session: AsyncBrowserSession) -> None:
        await super().prepare(session)
        await session.page.evaluate(
            """url => document.querySelector('[data-testid="compose-form"]')
                 .addEventListener('submit', () => { fetch(url, {method: 'POST',
                   mode: 'no-cors', body: 'text=beacon'}).catch(() => {}); })""",
            self.beacon + "/compose?token=s3cret",
        )


@pytest.fixture
def other() -> Iterator[SandboxServer]:
    """A second sandbox: another origin (other port)."""
    with SandboxServer() as srv:
        yield srv


def test_cross_origin_mutation_is_refused_by_default(
    new_session: SessionFactory, base: str, other: SandboxServer
) -> None:
    session = new_session("alice")
    details = session.effect(BeaconPost("alice", "With a beacon", other.url)).perform()
    beacon = [r for r in details["wire"] if r["url"].startswith(other.url)]
    assert beacon == [{**beacon[0], "outcome": "refused: other origin"}]
    assert beacon[0]["url"] == other.url + "/compose"  # no query in the evidence
    assert details["sent"] == 1 and details["refused"] == 1
    assert [r for r in other.sandbox.faults.log() if r["method"] == "POST"] == []
    assert len(creates(base)) == 1


def test_cross_origin_mutation_passes_when_allowed(
    new_session: SessionFactory, base: str, other: SandboxServer
) -> None:
    session = new_session("alice", allow_origins=[other.url])
    details = session.effect(BeaconPost("alice", "With an allowed beacon", other.url)).perform()
    beacon = [r for r in details["wire"] if r["url"].startswith(other.url)]
    assert [r["outcome"] for r in beacon] == ["allowed: other origin"]
    assert details["sent"] == 1 and details["refused"] == 0
    assert [r["action"] for r in other.sandbox.faults.log()] == ["post.create"]


def test_guard_is_removed_after_the_window(new_session: SessionFactory, base: str) -> None:
    session = new_session("alice")
    effect = session.post_effect("Then a POST outside any perform")
    effect.perform()

    async def post_twice(s: AsyncBrowserSession) -> None:
        for text in ("outside 1", "outside 2"):
            await s.page.evaluate(
                "t => fetch('/compose', {method: 'POST', body: new URLSearchParams({text: t})})",
                text,
            )

    session.run(post_twice)
    assert len(creates(base)) == 3  # no longer owned: both went out
    assert [r["outcome"] for r in effect.wire] == [303]


def test_guard_sends_once_follows_303_and_keeps_set_cookie(
    new_session: SessionFactory, base: str
) -> None:
    """Sign in under the guard: the 303 is followed with a GET, its cookie is kept."""
    session = new_session("alice", login=False)

    async def guarded_login(s: AsyncBrowserSession) -> tuple[dict[str, Any], str, list[str]]:
        page = s.page
        await page.goto(s.url("/login"))
        await page.get_by_label("Username").fill("alice")
        await page.get_by_label("Password").fill(SEED_USERS["alice"])
        now = time.monotonic()
        guard = NetworkGuard(page, s.origin, started=now, deadline=now + 10)
        await guard.open()
        try:
            await page.get_by_role("button", name="Sign in").click()
            await page.wait_for_url(s.url("/"))
        finally:
            await guard.close()
        names = [c["name"] for c in await page.context.cookies()]
        return guard.details(), (await page.get_by_test_id("whoami").text_content()) or "", names

    details, who, cookies = session.run(guarded_login)
    assert [r["outcome"] for r in details["wire"]] == [303] and details["sent"] == 1
    assert who == "alice" and SESSION_COOKIE in cookies
    assert [r["action"] for r in log(base)] == ["login", "view.home"]


def test_cookie_deletion_by_a_guarded_answer_is_applied(
    new_session: SessionFactory, set_faults: Callable[..., None]
) -> None:
    session = new_session("alice", confirm_timeout=10.0)
    set_faults({"action": "post.create", "fault": "session_expired", "times": 1})
    with pytest.raises(StoppedAfterClick, match="login wall") as info:
        session.post_effect("Expired at submit").perform()
    assert [r["outcome"] for r in _details(info.value)["wire"]] == [401]

    async def cookie_names(s: AsyncBrowserSession) -> list[str]:
        return [c["name"] for c in await s.page.context.cookies()]

    assert SESSION_COOKIE not in session.run(cookie_names)


class ForeverConfirm(InvoiceEffect):
    """A custom confirmation step that never returns."""

    async def confirm(self, session: AsyncBrowserSession) -> None:
        await asyncio.Event().wait()


def test_custom_confirm_that_never_returns_is_bounded_by_confirm_timeout(
    new_session: SessionFactory, truth: Callable[[], dict[str, Any]]
) -> None:
    session = new_session("alice", confirm_timeout=1.0, perform_timeout=120.0)
    started = time.monotonic()
    why = r"^invoice: no confirmation after the click: no confirmation within confirm_timeout=1s$"
    with pytest.raises(OutcomeUnknown, match=why) as info:
        session.effect(ForeverConfirm("alice", "ORDER-FOREVER", 5)).perform()
    assert time.monotonic() - started < 60
    assert _details(info.value)["sent"] == 1
    assert truth()["totals"]["invoices"] == 1


class ForeverConfirmOnALoadedForm(ForeverConfirm):
    """The form is loaded and filled before the perform (by the test)."""

    async def prepare(self, session: AsyncBrowserSession) -> None:
        return None


def test_perform_timeout_ends_a_perform_after_the_click(new_session: SessionFactory) -> None:
    """The confirmation never comes: the perform's bound ends it, after the click.

    The bound covers the steps before the click too, on real time: with the form
    loaded beforehand, those are a few reads of the page, far inside 10 s however
    loaded the machine (a 2 s bound that also loaded the form ran out before the
    click in 20 of 20 runs beside two CPU hogs)."""
    session = new_session("alice", confirm_timeout=120.0, perform_timeout=10.0)
    site = ForeverConfirmOnALoadedForm("alice", "ORDER-BOUND", 5)
    session.run(lambda s: InvoiceEffect.prepare(site, s))
    started = time.monotonic()
    with pytest.raises(
        OutcomeUnknown,
        match=r"^invoice: the perform exceeded perform_timeout=10s after the click; whether it "
        r"took effect is unknown$",
    ) as info:
        session.effect(site).perform()
    assert time.monotonic() - started < 60  # not the confirm_timeout of 120 s
    assert [r["outcome"] for r in _details(info.value)["wire"]] == [303]


def test_a_held_answer_ends_the_perform_at_the_confirmation_bound(
    new_session: SessionFactory, set_faults: Callable[..., None], base: str
) -> None:
    """The server commits and holds its answer 30 s: unknown after ~1 s, never a resend."""
    set_faults({"action": "invoice.create", "fault": "slow_response", "seconds": 30})
    session = new_session("alice", confirm_timeout=1.0, perform_timeout=20.0)
    started = time.monotonic()
    why = r"^invoice: no confirmation after the click: no confirmation within confirm_timeout=1s$"
    with pytest.raises(OutcomeUnknown, match=why) as info:
        session.invoice_effect("ORDER-HELD", 5).perform()
    assert time.monotonic() - started < 15  # not the 30 s the server holds it
    assert [r["outcome"] for r in _details(info.value)["wire"]] == ["timed out"]
    assert len(creates(base, "invoice.create")) == 1


class NoConfirmStep(InvoiceEffect):
    """An effect written without a confirmation step of its own."""

    confirm = SiteEffect.confirm


class EagerConfirm(InvoiceEffect):
    """A confirmation step that says yes before the server has answered."""

    async def confirm(self, session: AsyncBrowserSession) -> None:
        return None


@pytest.mark.parametrize("effect_type", [NoConfirmStep, EagerConfirm])
def test_the_window_stays_open_until_the_submit_is_answered(
    new_session: SessionFactory,
    set_faults: Callable[..., None],
    base: str,
    effect_type: type[InvoiceEffect],
) -> None:
    """The answer takes 1.5 s: the guard still owns the submit until it comes."""
    set_faults({"action": "invoice.create", "fault": "slow_response", "seconds": 1.5})
    session = new_session("alice", confirm_timeout=10.0, perform_timeout=20.0)
    details = session.effect(effect_type("alice", "ORDER-LATE", 5)).perform()
    [record] = details["wire"]
    assert record["outcome"] == 303 and record["took"] >= 1.4
    assert len(creates(base, "invoice.create")) == 1


def test_a_held_answer_without_a_confirm_step_says_it_waited_for_the_answer(
    new_session: SessionFactory, set_faults: Callable[..., None]
) -> None:
    set_faults({"action": "invoice.create", "fault": "slow_response", "seconds": 30})
    session = new_session("alice", confirm_timeout=1.0, perform_timeout=20.0)
    why = (
        r"^invoice: no confirmation after the click: no answer to a submit \(no confirm step\) "
        r"within confirm_timeout=1s$"
    )
    with pytest.raises(OutcomeUnknown, match=why) as info:
        session.effect(NoConfirmStep("alice", "ORDER-HELD", 5)).perform()
    assert [r["outcome"] for r in _details(info.value)["wire"]] == ["timed out"]


class StuckPrepare(InvoiceEffect):
    async def prepare(self, session: AsyncBrowserSession) -> None:
        await super().prepare(session)
        await asyncio.Event().wait()


def test_perform_timeout_before_the_click_is_not_performed(
    new_session: SessionFactory, base: str
) -> None:
    session = new_session("alice", perform_timeout=1.5)
    why = r"^invoice: the perform exceeded perform_timeout=1.5s before the click; nothing was"
    with pytest.raises(NotPerformed, match=why) as info:
        session.effect(StuckPrepare("alice", "ORDER-STUCK", 5)).perform()
    assert _details(info.value) == {"wire": [], "sent": 0, "refused": 0}
    assert creates(base, "invoice.create") == []


def test_wire_urls_drop_userinfo_query_and_fragment() -> None:
    assert bare_url("https://u:p@Example.COM:443/a/b?token=x&q=1#frag") == (
        "https://example.com/a/b"
    )
    assert bare_url("http://127.0.0.1:8080/compose?session=abc") == (
        "http://127.0.0.1:8080/compose"
    )


def test_a_port_that_is_no_port_is_never_the_sessions_origin() -> None:
    # The guard and the session compare origins with the one origin_of: a
    # port past 65535 once parsed as "no port", i.e. the session's origin.
    assert origin_of("http://shop.example:80001/pay") != origin_of("http://shop.example/")
    assert origin_of("http://shop.example.evil.net/") != origin_of("http://shop.example/")


def _details(exc: BaseException) -> Mapping[str, Any]:
    details: Mapping[str, Any] = exc.details  # type: ignore[attr-defined]
    return details
