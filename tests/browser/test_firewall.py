"""The write firewall of a Playwright context, and declared multi-request submits.

Real Chromium against the sandbox: every mutating request outside an
effect's perform is refused and recorded in the ledger (form post, fetch,
XHR, sendBeacon, a popup's, an iframe's), and nothing reaches the server;
inside a perform only the effect's declared requests leave, each once, and
a submit left incomplete is never ``confirmed``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from actonce import (
    Ledger,
    Outcome,
    RefusalReason,
    RequestPattern,
    Status,
    UsageError,
    effect_key,
    open_ledger,
)
from actonce.browser import (
    AsyncBrowserSession,
    Browser,
    BrowserSession,
    FirewallWarning,
    NoteEffect,
    as_effect,
    firewall,
)
from actonce.sandbox import SEED_USERS


def log(base: str, action: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = httpx.get(base + "/admin/requests").json()["requests"]
    return [r for r in entries if r["action"] == action]


def notes(base: str) -> list[dict[str, Any]]:
    truth = httpx.get(base + "/admin/ground-truth").json()
    return [{**g["key"], "count": g["count"]} for g in truth["notes"]]


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    with open_ledger("memory://") as led:
        yield led


def agent_session(
    browser: Browser, base: str, ledger: Ledger | None, **kwargs: Any
) -> BrowserSession:
    """alice's session with the firewall on; only the login form is allowlisted."""
    login = RequestPattern("POST", "/login", origin=base)
    session = browser.new_session(
        base, "alice", ledger=ledger, firewall=True, allow=[login, *kwargs.pop("allow", ())],
        timeout=5.0, confirm_timeout=4.0, **kwargs,
    )  # fmt: skip
    session.login(SEED_USERS["alice"])
    return session


async def _outside(s: AsyncBrowserSession) -> dict[str, Any]:
    """Six ways a page posts outside any effect; what the page saw of each."""
    page, seen = s.page, {}
    await s.goto("/compose")
    await page.get_by_test_id("editor").fill("by a form")
    await page.get_by_role("button", name="Publish").click()
    await page.wait_for_load_state()
    seen["form"] = await page.get_by_test_id("firewall-refusal").get_attribute("data-reason")
    await s.goto("/")
    seen["fetch"] = await page.evaluate(
        """() => fetch('/compose?token=s3cret', {method: 'POST', body: new URLSearchParams({text: 'by fetch'})})
                   .then(r => 'sent ' + r.status, e => 'failed')"""
    )
    seen["xhr"] = await page.evaluate(
        """() => new Promise(done => { const x = new XMLHttpRequest();
              x.open('POST', '/compose'); x.onload = () => done('sent ' + x.status);
              x.onerror = () => done('failed');
              x.setRequestHeader('Content-Type', 'application/x-www-form-urlencoded');
              x.send('text=by+xhr'); })"""
    )
    await page.evaluate("() => navigator.sendBeacon('/compose', 'text=by+beacon')")
    async with page.context.expect_page() as opened:
        await page.evaluate("() => window.open('/compose', '_blank')")
    popup = await opened.value
    await popup.wait_for_load_state()
    seen["popup"] = await popup.evaluate(
        """() => fetch('/compose', {method: 'POST', body: new URLSearchParams({text: 'by popup'})})
                   .then(r => 'sent ' + r.status, e => 'failed')"""
    )
    await popup.close()
    await page.set_content('<iframe src="/compose" data-testid="frame"></iframe>')
    frame = page.frame_locator('[data-testid="frame"]')
    await frame.get_by_test_id("editor").fill("by an iframe")
    await frame.get_by_role("button", name="Publish").click()
    await frame.get_by_test_id("firewall-refusal").wait_for()
    wall = s.firewall
    assert wall is not None
    for _ in range(100):  # the beacon is refused after sendBeacon returned
        if len(wall.refused) >= 6:
            break
        # The beacon reaches the route after sendBeacon returned; no event says so.
        await asyncio.sleep(0.02)  # sync-ok: a bounded poll on a condition
    await wall.settled()
    return seen


def test_mutations_outside_an_effect_are_refused_and_recorded(
    browser: Browser, base: str, ledger: Ledger
) -> None:
    session = agent_session(browser, base, ledger)
    seen = session.run(_outside)
    assert seen == {"form": "outside_effect", "fetch": "failed", "xhr": "failed",
                    "popup": "failed"}  # fmt: skip
    refused = ledger.firewall.refusals(actor="alice")
    assert len(refused) == 6
    assert {r.reason for r in refused} == {RefusalReason.OUTSIDE_EFFECT}
    assert {r.url for r in refused} == {base + "/compose"}  # no query kept
    assert all(r.effect_key is None and r.via == "playwright" and r.at > 0 for r in refused)
    assert {r.page for r in refused} >= {base + "/compose", base + "/"}
    assert ledger.firewall.totals() == {"alice": 6}
    assert log(base, "post.create") == []  # nothing reached the server
    assert [r["method"] for r in log(base, "login")] == ["POST"]  # the allowlisted one passed


def test_an_effect_still_posts_through_the_firewall(
    browser: Browser, base: str, ledger: Ledger
) -> None:
    session = agent_session(browser, base, ledger)
    key = effect_key(tenant="t", actor="alice", kind="post", object="fw-1", operation="publish")
    result = ledger.run(as_effect(session.post_effect("Through the firewall"), key))
    assert result.outcome is Outcome.COMPLETED
    assert len(log(base, "post.create")) == 1
    assert ledger.firewall.totals() == {}


def test_service_workers_are_blocked_or_warned_about(browser: Browser, base: str) -> None:
    session = agent_session(browser, base, None)
    wall = session.firewall
    assert wall is not None and wall.problems == []

    async def unblocked(s: AsyncBrowserSession) -> list[str]:
        own = s.page.context.browser
        assert own is not None
        context = await own.new_context()
        try:
            with pytest.warns(FirewallWarning, match="service workers are not blocked"):
                fw = await firewall(context, None, actor="bob")
            return fw.problems
        finally:
            await context.close()

    assert len(session.run(unblocked)) == 1


def _note_key(text: str) -> Any:
    return effect_key(tenant="t", actor="alice", kind="note", object=text, operation="publish")


def test_declared_two_request_submit_is_published_once(
    browser: Browser, base: str, ledger: Ledger
) -> None:
    beacons = RequestPattern("POST", "/analytics", origin=base, beacon=True)
    session = agent_session(browser, base, ledger, allow=[beacons])
    bound = session.effect(NoteEffect("alice", "Two requests, declared"))
    result = ledger.run(as_effect(bound, _note_key("declared")))
    assert result.outcome is Outcome.COMPLETED, result.reason
    assert notes(base) == [
        {"author": "alice", "text": "Two requests, declared", "published": 1, "count": 1}
    ]
    sends = [r for r in bound.wire if isinstance(r["outcome"], int)]
    assert [(r["method"], r["url"], r["outcome"]) for r in sends] == [
        ("POST", base + "/notes", 201),
        ("POST", base + "/notes/1/publish", 200),
    ]
    assert [r["outcome"] for r in bound.wire if r["url"].endswith("/analytics")] == [
        "allowed: allowlist"
    ]
    assert httpx.get(base + "/admin/ground-truth").json()["beacons"] == 1  # the opt-in
    assert ledger.firewall.totals() == {}


class UndeclaredPublish(NoteEffect):
    """Declares only the draft: its publish request is undeclared."""

    requests = ("POST /notes",)


def test_undeclared_second_request_is_refused_and_named(
    browser: Browser, base: str, ledger: Ledger
) -> None:
    session = agent_session(browser, base, ledger)
    bound = session.effect(UndeclaredPublish("alice", "Publish undeclared"))
    key = _note_key("undeclared")
    result = ledger.run(as_effect(bound, key))
    assert result.outcome is Outcome.NEEDS_REVIEW
    record = ledger.get(key.value)
    assert record is not None and record.status is not Status.CONFIRMED
    assert record.status in (Status.UNKNOWN, Status.NEEDS_REVIEW)
    publish = f"POST {base}/notes/1/publish (undeclared request)"
    assert f"refused {publish}" in (result.reason or "")
    assert f"refused {publish}" in (record.reason or "")
    assert notes(base) == [{"author": "alice", "text": "Publish undeclared", "published": 0,
                            "count": 1}]  # fmt: skip
    assert log(base, "note.publish") == []
    refused = ledger.firewall.refusals(actor="alice")
    # Newest first: the publish, then the page's analytics beacon (not allowlisted
    # here: refused too, but a beacon is never a part of the submit).
    assert [(r.url, r.reason, r.effect_key) for r in refused] == [
        (base + "/notes/1/publish", RefusalReason.UNDECLARED, key.value),
        (base + "/analytics", RefusalReason.UNDECLARED, key.value),
    ]
    assert "analytics" not in (result.reason or "")


def test_declared_request_unanswered_is_unknown(
    browser: Browser, base: str, ledger: Ledger
) -> None:
    httpx.post(
        base + "/admin/faults",
        json={"rules": [{"action": "note.publish", "fault": "lost_response", "mode": "close"}]},
    ).raise_for_status()
    session = agent_session(browser, base, ledger)
    key = _note_key("unanswered")
    result = ledger.run(as_effect(session.effect(NoteEffect("alice", "Unanswered")), key))
    assert result.outcome is Outcome.NEEDS_REVIEW
    record = ledger.get(key.value)
    assert record is not None and record.status is Status.UNKNOWN
    assert "a declared request got no answer (no response: connection closed)" in (
        result.reason or ""
    )
    assert len(log(base, "note.publish")) == 1  # sent once, never resent


class NaiveNote(NoteEffect):
    """Declares nothing (the default: one request) and confirms on a mere draft."""

    requests = ()

    async def verify(self, session: AsyncBrowserSession) -> Any:
        from actonce import Absent, Confirmed

        await session.goto("/notes")
        rows = session.page.get_by_test_id("note-row")
        return Confirmed(session.url("/notes")) if await rows.count() else Absent()


def test_an_incomplete_submit_is_never_confirmed_even_by_a_naive_verifier(
    browser: Browser, base: str, ledger: Ledger
) -> None:
    """The issue's case: the publish POST refused, the draft seen, the ledger said confirmed."""
    session = agent_session(browser, base, ledger)
    key = _note_key("naive")
    result = ledger.run(as_effect(session.effect(NaiveNote("alice", "Naive")), key))
    assert result.outcome is Outcome.NEEDS_REVIEW
    record = ledger.get(key.value)
    assert record is not None and record.status is Status.UNKNOWN
    assert f"refused POST {base}/notes/1/publish (undeclared request)" in (record.reason or "")
    assert log(base, "note.publish") == [] and len(log(base, "note.create")) == 1


def test_a_persistent_profile_keeps_one_firewall_for_one_actor(
    base: str, ledger: Ledger, tmp_path: Any
) -> None:
    """Every session of a profile is a page of its one context: one firewall, the first's."""
    login = RequestPattern("POST", "/login", origin=base)
    with Browser(user_data_dir=str(tmp_path / "alice-profile")) as browser:
        first = browser.new_session(base, "alice", ledger=ledger, allow=[login])
        again = browser.new_session(base, "alice", ledger=ledger)  # the same actor: fine
        walls = (first.async_session.firewall, again.async_session.firewall)
        assert walls[0] is not None and walls[0] is walls[1] and walls[0].actor == "alice"
        assert walls[0].problems == [], "a profile's context blocks service workers too"
        with pytest.raises(UsageError, match="one actor's"):
            browser.new_session(base, "bob", ledger=ledger)
        with pytest.raises(UsageError, match="cannot turn it off"):
            browser.new_session(base, "alice", firewall=False)
        other = RequestPattern("POST", "/compose", origin=base)
        with pytest.raises(UsageError, match="allowlist of its first session"):
            browser.new_session(base, "alice", ledger=ledger, allow=[other])


def test_an_incomplete_submit_is_unknown_in_whole_words(
    browser: Browser, base: str, ledger: Ledger
) -> None:
    from actonce import Unavailable
    from actonce.browser import OutcomeUnknown

    session = agent_session(browser, base, ledger)
    effect = session.effect(UndeclaredPublish("alice", "Whole words"))
    with pytest.raises(OutcomeUnknown) as caught:
        effect.perform()
    refused = f"refused POST {base}/notes/1/publish (undeclared request)"
    assert str(caught.value) == f"note: the submit is incomplete: {refused}"
    assert caught.value.details["sent"] == 1  # type: ignore[attr-defined]
    assert effect.verify() == Unavailable(f"cannot confirm: the submit is incomplete: {refused}")
    assert effect.verify() == Unavailable(f"cannot confirm: the submit is incomplete: {refused}")
    httpx.post(
        base + "/admin/faults",
        json={"rules": [{"action": "note.publish", "fault": "lost_response", "mode": "close"}]},
    ).raise_for_status()
    lost = session.effect(NoteEffect("alice", "Lost publish"))
    with pytest.raises(OutcomeUnknown) as unanswered:
        lost.perform()
    failed = "a declared request got no answer (no response: connection closed)"
    assert str(unanswered.value) == (
        f"note: the submit is incomplete: {failed}; note: no confirmation after the click: "
        "the submit got no answer (no response: connection closed)"
    )
    from actonce import Absent, Confirmed

    assert session.effect(NoteEffect("alice", "Whole words")).verify() == Unavailable(
        "1 draft(s) with this text, none published: a partial submit"
    ), "a fresh look, without the perform's doubt: the page shows a draft only"
    published = session.effect(NoteEffect("alice", " Lost publish\r\n")).verify()
    assert published == Confirmed(f"{base}/notes/2", count=1, refs=(f"{base}/notes/2",))
    assert session.effect(NoteEffect("alice", "Never saved")).verify() == Absent()
