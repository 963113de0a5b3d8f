"""Every sandbox fault, driven through ``Ledger.run`` in real Chromium.

Each test checks both sides: what the ledger says (outcome, status, events)
and what the sandbox actually holds (its ground truth: one object, or none).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actonce import EventType, Ledger, Outcome, Registry, Status
from actonce.sandbox import SEED_USERS, SESSION_COOKIE, FaultRule

from .conftest import INVOICE, POST, Counted, ListingOnlyPost, SessionFactory, key, status, types

pytestmark = pytest.mark.browser

E = EventType


def _posts(gt: dict[str, Any]) -> list[dict[str, Any]]:
    return [g["key"] for g in gt["posts"] for _ in g["ids"]]


def test_lost_response_after_commit_is_verified_confirmed(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
    base: str,
) -> None:
    faults(FaultRule("post.create", "lost_response", times=1))
    c = Counted(session("alice").post_effect("Lost in transit"))
    result = ledger.run(c.effect(key("lost"), POST))
    assert result.outcome is Outcome.COMPLETED and result.performed
    assert result.status is Status.CONFIRMED and result.result_ref == base + "/posts/1"
    assert c.performs == 1
    assert types(ledger, key("lost")) == [E.CLAIMED, E.EXECUTING, E.CONFIRMED]
    assert _posts(truth()) == [{"author": "alice", "text": "Lost in transit", "parent": None}]


def test_lost_response_with_verification_down_is_unknown_then_reconciled(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    ledger_path: Path,
    truth: Callable[[], dict[str, Any]],
    base: str,
) -> None:
    """The click's answer is lost and search is rate-limited: unknown, never a retry."""
    faults(FaultRule("post.create", "lost_response", times=1))
    c = Counted(session("alice").post_effect("Lost, then checked later"))
    # Right after the click, search starts answering with a rate-limit screen.
    c.after_perform = lambda: faults(FaultRule("view.search", "rate_limit"))
    result = ledger.run(c.effect(key("lost-later"), POST))
    assert result.outcome is Outcome.NEEDS_REVIEW and result.status is Status.UNKNOWN
    assert c.performs == 1 and c.verifies == 1 + POST.verify_attempts  # 1: under the claim
    assert "verification unavailable" in (result.reason or "")
    assert truth()["totals"]["posts"] == 1

    # Run it again while search is still down: held, never performed again.
    again = Counted(session("alice").post_effect("Lost, then checked later"))
    second = ledger.run(again.effect(key("lost-later"), POST))
    assert second.outcome is Outcome.NEEDS_REVIEW and not second.performed
    assert again.performs == 0 and status(ledger, key("lost-later")) is Status.UNKNOWN

    # Search is back: reconcile (a registered verifier, no perform at all) confirms it.
    faults()
    checker = session("alice").post_effect("Lost, then checked later")
    registry = Registry()
    registry.register("post", lambda record: checker.verify(), policy=POST)
    with Ledger.open(str(ledger_path), create=True, registry=registry) as reconciler:
        report = reconciler.reconcile()
    assert [r.status for r in report.results] == [Status.CONFIRMED]
    assert status(ledger, key("lost-later")) is Status.CONFIRMED
    assert ledger.get(key("lost-later").value).result_ref == base + "/posts/1"  # type: ignore[union-attr]
    assert types(ledger, key("lost-later"))[-2:] == [E.UNKNOWN, E.CONFIRMED]
    assert truth()["totals"]["posts"] == 1 and truth()["duplicates"] == []


def test_confirmation_slower_than_client_timeout_is_verified(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
) -> None:
    # The click waits for the answer up to the session's timeout (see the report).
    faults(FaultRule("invoice.create", "slow_response", seconds=3.0, times=1))
    c = Counted(session("bob", confirm_timeout=0.8, timeout=1.5).invoice_effect("ORDER-SLOW", 250))
    result = ledger.run(c.effect(key("slow", "bob", "invoice"), INVOICE))
    assert result.outcome is Outcome.COMPLETED and result.status is Status.CONFIRMED
    assert c.performs == 1
    gt = truth()
    assert gt["totals"]["invoices"] == 1 and gt["duplicates"] == []


def test_error_before_commit_is_proven_absent_then_rerun_once(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
    submits: Callable[[], list[str]],
    base: str,
) -> None:
    faults(FaultRule("invoice.create", "error_before_commit", times=1))
    s = session("carol", confirm_timeout=0.8)
    k = key("ORDER-500", "carol", "invoice")
    first = Counted(s.invoice_effect("ORDER-500", 900))
    result = ledger.run(first.effect(k, INVOICE))
    # The click got a 500: unknown at first, then absent past the settle window,
    # and the invoice page is authoritative: proven not to have happened.
    assert result.outcome is Outcome.FAILED and result.status is Status.FAILED
    assert result.performed and result.attempt == 1
    assert "verified absent after the settle window" in (result.reason or "")
    assert truth()["totals"]["invoices"] == 0
    assert submits() == ["invoice.create"]

    second = Counted(s.invoice_effect("ORDER-500", 900))
    again = ledger.run(second.effect(k, INVOICE))
    assert again.outcome is Outcome.COMPLETED and again.attempt == 2
    assert again.result_ref == base + "/invoices/1"
    assert first.performs == second.performs == 1
    assert types(ledger, k) == [
        E.CLAIMED,
        E.EXECUTING,
        E.FAILED,
        E.CLAIMED,
        E.EXECUTING,
        E.CONFIRMED,
    ]
    gt = truth()
    assert gt["totals"]["invoices"] == 1 and gt["duplicates"] == []


def test_error_after_commit_is_confirmed(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
) -> None:
    faults(FaultRule("post.create", "error_after_commit", times=1))
    c = Counted(session("alice", confirm_timeout=0.8).post_effect("500 but saved"))
    result = ledger.run(c.effect(key("500-after"), POST))
    assert result.outcome is Outcome.COMPLETED and result.status is Status.CONFIRMED
    assert c.performs == 1
    assert truth()["totals"]["posts"] == 1


def test_late_indexing_inside_the_window_is_confirmed(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
) -> None:
    faults(FaultRule("post.create", "late_index", seconds=0.8, times=1))
    c = Counted(session("alice").post_effect("Indexed a bit later"))
    policy = POST.__class__(
        settle_seconds=3.0,
        absence_authoritative=False,
        verify_attempts=8,
        verify_backoff=0.2,
        verify_backoff_max=0.4,
        lease_seconds=30.0,
    )
    result = ledger.run(c.effect(key("late-ok"), policy))
    assert result.outcome is Outcome.COMPLETED and result.status is Status.CONFIRMED
    # One look under the claim; after the perform, found (the page the click left
    # counts the post, verify_here), or absent inside the window and retried.
    assert c.performs == 1 and c.verifies >= 2
    assert types(ledger, key("late-ok")) == [E.CLAIMED, E.EXECUTING, E.CONFIRMED]
    assert truth()["totals"]["posts"] == 1


def test_late_indexing_beyond_the_window_needs_review_and_stays_single(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
    submits: Callable[[], list[str]],
) -> None:
    faults(FaultRule("post.create", "late_index", seconds=30.0, times=1))
    s = session("alice")
    c = Counted(s.effect(ListingOnlyPost("alice", "Indexed much later")))
    result = ledger.run(c.effect(key("late-ko"), POST))
    assert result.outcome is Outcome.NEEDS_REVIEW and result.status is Status.NEEDS_REVIEW
    assert "absence proves nothing" in (result.reason or "")
    assert truth()["totals"]["posts"] == 1

    again = Counted(s.post_effect("Indexed much later"))
    second = ledger.run(again.effect(key("late-ko"), POST))
    assert second.outcome is Outcome.NEEDS_REVIEW and not second.performed
    assert again.performs == 0 and again.verifies == 0
    assert truth()["totals"]["posts"] == 1 and submits() == ["post.create"]


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("session_expired", "login wall"),
        ("captcha", "CAPTCHA"),
        ("rate_limit", "rate-limit"),
    ],
)
def test_blocking_screen_at_commit_time_is_a_hard_stop(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
    submits: Callable[[], list[str]],
    fault: str,
    reason: str,
) -> None:
    """The screen shows on the page where the click would happen: nothing is clicked."""
    faults(FaultRule("view.compose", fault, times=1))
    c = Counted(session("alice").post_effect("Blocked"))
    result = ledger.run(c.effect(key(f"wall-{fault}"), POST))
    assert result.outcome is Outcome.HARD_STOP
    assert reason in (result.reason or "")
    # Failed at once (nothing crossed the boundary): no executing/unknown leftover.
    assert result.status is Status.FAILED
    assert types(ledger, key(f"wall-{fault}")) == [E.CLAIMED, E.EXECUTING, E.FAILED]
    assert submits() == [] and truth()["totals"]["posts"] == 0

    # Nothing blocks a later, clean attempt (a fresh, signed-in session).
    retry = Counted(session("alice").post_effect("Blocked"))
    after = ledger.run(retry.effect(key(f"wall-{fault}"), POST))
    assert after.outcome is Outcome.COMPLETED and after.attempt == 2
    assert truth()["totals"]["posts"] == 1


@pytest.mark.parametrize("fault", ["session_expired", "captcha", "rate_limit"])
def test_blocking_screen_on_the_invoice_form_stops_before_the_click(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
    submits: Callable[[], list[str]],
    fault: str,
) -> None:
    """A wall on the form is seen by the preflight inside perform: failed at once, nothing sent."""
    faults(FaultRule("view.invoice_new", fault, times=1))
    k = key(f"pre-{fault}", "bob", "invoice")
    c = Counted(session("bob").invoice_effect(f"ORDER-{fault}", 10))
    result = ledger.run(c.effect(k, INVOICE))
    assert result.outcome is Outcome.HARD_STOP and result.status is Status.FAILED
    assert "nothing was performed" in (result.reason or "")
    assert types(ledger, k)[-1] is E.FAILED
    assert submits() == [] and truth()["totals"]["invoices"] == 0
    # A later, clean attempt in a fresh session completes once.
    retry = Counted(session("bob").invoice_effect(f"ORDER-{fault}", 10))
    assert ledger.run(retry.effect(k, INVOICE)).outcome is Outcome.COMPLETED
    assert truth()["totals"]["invoices"] == 1


def test_editor_append_is_refused_with_secret_free_evidence(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
    submits: Callable[[], list[str]],
    ledger_path: Path,
) -> None:
    faults(FaultRule("view.compose", "editor_append", draft="Old draft. "))
    s = session("alice")
    cookie = s.run(_session_cookie)
    c = Counted(s.post_effect("Fresh text"))
    result = ledger.run(c.effect(key("append"), POST))
    assert result.outcome is Outcome.HARD_STOP and result.status is Status.FAILED
    assert "read-back mismatch on 'text'" in (result.reason or "")
    assert submits() == [] and truth()["totals"]["posts"] == 0

    failed = [e for e in ledger.events(key("append").value) if e.type is E.FAILED]
    assert len(failed) == 1
    evidence = Path(failed[0].data["evidence"])
    assert sorted(p.name for p in evidence.iterdir()) == [
        "meta.json",
        "page.html",
        "screenshot.png",
        "wire.json",
    ]
    # Refused before the click: the network guard never opened, nothing was sent.
    assert json.loads((evidence / "wire.json").read_text()) == {
        "wire": [],
        "sent": 0,
        "refused": 0,
    }
    assert (evidence / "screenshot.png").stat().st_size > 0
    html = (evidence / "page.html").read_text()
    assert 'data-testid="editor"' in html and "Old draft. " in html
    password = SEED_USERS["alice"].encode()
    assert len(cookie) > 8
    for f in [*evidence.iterdir(), ledger_path]:
        data = f.read_bytes()
        assert cookie.encode() not in data and password not in data, f
    assert json.loads((evidence / "meta.json").read_text())["actor"] == "alice"


async def _session_cookie(s: Any) -> str:
    cookies = await s.page.context.cookies()
    return str(next(c["value"] for c in cookies if c["name"] == SESSION_COOKIE))


def test_reply_confirmed_with_parent(
    ledger: Ledger, session: SessionFactory, truth: Callable[[], dict[str, Any]], base: str
) -> None:
    s = session("alice")
    root = ledger.run(Counted(s.post_effect("Root")).effect(key("root"), POST))
    assert root.outcome is Outcome.COMPLETED and root.result_ref == base + "/posts/1"
    reply = ledger.run(
        Counted(s.post_effect("Reply", parent=root.result_ref)).effect(key("reply"), POST)
    )
    assert reply.outcome is Outcome.COMPLETED and reply.result_ref == base + "/posts/2"
    assert _posts(truth())[1] == {"author": "alice", "text": "Reply", "parent": 1}


SUBMIT_WALLS = [
    ("captcha", "CAPTCHA"),
    ("rate_limit", "rate-limit"),
    ("session_expired", "login wall"),
]


@pytest.mark.parametrize(("fault", "reason"), SUBMIT_WALLS)
def test_blocking_screen_answering_the_submit_is_never_retried(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
    submits: Callable[[], list[str]],
    fault: str,
    reason: str,
) -> None:
    """The click went out and the answer is a wall: it may have happened, so verify, never redo."""
    faults(FaultRule("post.create", fault, times=1))
    s = session("alice", confirm_timeout=0.8)
    c = Counted(s.post_effect("Walled at submit"))
    result = ledger.run(c.effect(key(f"submit-{fault}"), POST))
    assert c.performs == 1 and not result.done
    assert result.status in (Status.UNKNOWN, Status.NEEDS_REVIEW)
    again = Counted(session("alice").post_effect("Walled at submit"))
    assert ledger.run(again.effect(key(f"submit-{fault}"), POST)).performed is False
    assert submits() == ["post.create"] and truth()["totals"]["posts"] == 0


@pytest.mark.parametrize(("fault", "reason"), SUBMIT_WALLS)
def test_blocking_screen_answering_the_submit_is_a_hard_stop(
    ledger: Ledger, session: SessionFactory, faults: Callable[..., None], fault: str, reason: str
) -> None:
    faults(FaultRule("post.create", fault, times=1))
    c = Counted(session("alice", confirm_timeout=0.8).post_effect("Walled at submit"))
    result = ledger.run(c.effect(key(f"submit-hs-{fault}"), POST))
    assert result.outcome is Outcome.HARD_STOP
    assert reason in (result.reason or "")


def test_what_happened_at_the_boundary_is_kept_when_the_end_is_confirmed(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
) -> None:
    """Issue 15, item 7: the click raised (the server committed, then closed the
    socket without a byte), verification then found the post. The history
    still says what the click did: its error, the one request on the wire,
    and evidence of the page as the error left it."""
    faults(FaultRule("post.create", "lost_response", times=1, mode="close"))
    c = Counted(session("alice").post_effect("Closed without a byte"))
    result = ledger.run(c.effect(key("boundary"), POST))
    assert result.outcome is Outcome.COMPLETED and c.performs == 1
    confirmed = [e for e in ledger.events(key("boundary").value) if e.type is E.CONFIRMED]
    assert len(confirmed) == 1
    perform = confirmed[0].data["perform"]
    assert "OutcomeUnknown" in perform["error"]
    assert "the perform raised" in (confirmed[0].message or "")
    wire = perform["details"]["wire"]
    assert [w["outcome"] for w in wire] == ["no response: connection closed"]
    assert perform["details"]["sent"] == 1
    evidence = Path(confirmed[0].data["evidence"])
    assert json.loads((evidence / "wire.json").read_text())["sent"] == 1
    assert _posts(truth()) == [{"author": "alice", "text": "Closed without a byte", "parent": None}]
