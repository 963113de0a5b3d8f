"""``Listings``: reconcile's verifiers, one read of each listing per pass, in Chromium (issue 23).

Inside ``one_pass()`` the first effect of a listing loads it and the others
are judged on the same rows; outside it, for an effect seen twice in the
pass, and for an absence read before the effect's settle window passed,
each effect runs its own ``verify`` (its own page). Which page was loaded
is what tells the paths apart, so the tests count the page loads.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from actonce import Absent, Confirmed, EffectRecord, Policy, Registry, Status, Unavailable
from actonce.browser import BrowserSession, InvoiceEffect, Listings
from actonce.sandbox import SandboxServer
from actonce.testing import FrozenClock

SessionFactory = Callable[..., BrowserSession]

pytestmark = pytest.mark.browser


def _record(key: str, reference: str, executing_at: float | None = None) -> EffectRecord:
    payload = {"account": "alice", "reference": reference, "amount": 5}
    return EffectRecord(
        key=key,
        kind="invoice",
        status=Status.UNKNOWN,
        fence=1,
        owner="",
        lease_expires_at=0.0,
        payload=json.dumps(payload),
        payload_hash="h",
        executing_at=executing_at,
    )


def _invoice(record: EffectRecord) -> InvoiceEffect:
    data = record.data
    return InvoiceEffect(data["account"], data["reference"], data["amount"])


def _pages(session: BrowserSession) -> list[str]:
    urls: list[str] = []

    async def listen(s: Any) -> None:
        s.page.on("request", lambda r: urls.append(r.url) if r.is_navigation_request() else None)

    session.run(listen)
    return urls


def _setup(
    server: SandboxServer, session: BrowserSession, clock: FrozenClock, settle: float = 5.0
) -> tuple[Listings, Callable[[EffectRecord], Any]]:
    server.db.create_invoice("alice", "ORDER-1", 5)  # invoice 1
    server.db.create_invoice("alice", "ORDER-1", 5)  # invoice 2: a duplicate
    listings, registry = Listings(session, clock), Registry()
    listings.register(registry, "invoice", _invoice, policy=Policy(settle_seconds=settle))
    entry = registry.get("invoice")
    assert entry is not None
    return listings, entry.verify


def test_one_pass_reads_the_listing_once_and_judges_every_effect_on_it(
    server: SandboxServer, base: str, new_session: SessionFactory
) -> None:
    session, clock = new_session("alice"), FrozenClock()
    listings, verify = _setup(server, session, clock)
    pages = _pages(session)
    one, two = _record("k1", "ORDER-1"), _record("k2", "ORDER-2")
    both = Confirmed(
        f"{base}/invoices/1", count=2, refs=(f"{base}/invoices/1", f"{base}/invoices/2")
    )
    assert verify(one) == both, "outside a pass: the effect's own page"
    assert pages == [f"{base}/invoices?reference=ORDER-1"] and listings.loads == 0
    pages.clear()
    with listings.one_pass():
        assert verify(one) == both
        assert verify(two) == Absent(), "never performed: an absence on the listing counts"
        assert pages == [f"{base}/invoices"] and listings.loads == 1
        assert verify(one) == both, "a second look in the pass is the effect's own"
        assert pages[1:] == [f"{base}/invoices?reference=ORDER-1"]
    pages.clear()
    with listings.one_pass():
        assert verify(two) == Absent()
    assert pages == [f"{base}/invoices"] and listings.loads == 2, "each pass reads anew"
    pages.clear()
    assert verify(two) == Absent() and pages == [f"{base}/invoices?reference=ORDER-2"]


def test_an_absence_read_before_the_settle_window_is_looked_at_again(
    server: SandboxServer, base: str, new_session: SessionFactory
) -> None:
    session, clock = new_session("alice"), FrozenClock()
    listings, verify = _setup(server, session, clock, settle=5.0)
    pages = _pages(session)
    fresh = _record("k3", "ORDER-3", executing_at=clock.now() - 4.9)
    settled = _record("k4", "ORDER-4", executing_at=clock.now() - 5.0)
    with listings.one_pass():
        assert verify(fresh) == Absent()
        assert pages == [f"{base}/invoices", f"{base}/invoices?reference=ORDER-3"]
        assert verify(settled) == Absent()
        assert pages[2:] == [], "read past its window: the listing's absence counts"


def test_a_listing_that_fails_is_unavailable_for_the_pass(
    server: SandboxServer,
    base: str,
    new_session: SessionFactory,
    set_faults: Callable[..., None],
) -> None:
    session, clock = new_session("alice"), FrozenClock()
    listings, verify = _setup(server, session, clock)
    set_faults({"action": "view.invoices", "fault": "captcha", "times": 1})
    with listings.one_pass():
        assert verify(_record("k1", "ORDER-1")) == Unavailable(
            "cannot check: the shared listing /invoices: CAPTCHA screen is visible"
        )
        assert verify(_record("k2", "ORDER-2")) == Unavailable(
            "cannot check: the shared listing /invoices: CAPTCHA screen is visible"
        ), "the failed read stands for the whole pass"
    assert listings.loads == 1
