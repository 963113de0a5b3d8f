"""Reconcile of many browser effects sharing one listing (``Listings``).

Real Chromium, the real sandbox, a real SQLite ledger. Seven effects are
left ``unknown`` (their owners gave up verifying): some happened, one twice,
some never did, one of another author. The same ledger, copied, is then
reconciled twice: one by one (each kind's verifier runs the effect's own
``verify``, one page load per effect) and with ``Listings`` (one page load
per listing per pass). Both must end every effect the same way.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actonce import (
    Absent,
    AsyncLedger,
    Effect,
    EffectRecord,
    Ledger,
    Outcome,
    Policy,
    Registry,
    Status,
    Unavailable,
    Verdict,
)
from actonce.browser import (
    AsyncBrowser,
    BrowserSession,
    InvoiceEffect,
    Listings,
    Media,
    PostEffect,
    as_effect,
)
from actonce.sandbox import SEED_USERS, FaultRule, SandboxServer

from .conftest import SessionFactory, key

# Reconcile's policies: no settle window to wait out, one retry of a look.
POST_R = Policy(
    settle_seconds=0.0,
    absence_authoritative=False,
    verify_attempts=2,
    verify_backoff=0.01,
    verify_backoff_max=0.01,
)
INVOICE_R = Policy(
    settle_seconds=0.0,
    absence_authoritative=True,
    verify_attempts=2,
    verify_backoff=0.01,
    verify_backoff_max=0.01,
)
# The owners' policy: one look after the perform, then give up (unknown).
GIVE_UP = Policy(settle_seconds=0.0, verify_attempts=1, verify_backoff=0.01)

#: (kind, actor, text or reference, performed by its owner)
EFFECTS = [
    ("post", "alice", "Kept zero", True),
    ("invoice", "alice", "REF-0", True),
    ("post", "alice", "Kept one", True),
    ("invoice", "alice", "REF-1", False),
    ("post", "alice", "Never two", False),
    ("invoice", "alice", "REF-2", True),
    ("post", "bob", "Bob's own", False),  # made in the sandbox by hand below
]


def post_of(record: EffectRecord) -> PostEffect:
    p = record.data
    media = Media(**p["media"]) if p["media"] else None
    return PostEffect(p["author"], p["text"], media=media, parent=p["parent"])


def invoice_of(record: EffectRecord) -> InvoiceEffect:
    p = record.data
    return InvoiceEffect(p["account"], p["reference"], p["amount"])


def _left_unknown(ledger: Ledger, session: BrowserSession, server: SandboxServer) -> None:
    for i, (kind, actor, what, performed) in enumerate(EFFECTS):
        if kind == "post":
            site: Any = session.effect(PostEffect(actor, what))
        else:
            site = session.effect(InvoiceEffect(actor, what, 100 + i))
        looks = [0]

        def verify(site: Any = site, looks: list[int] = looks) -> Verdict:
            looks[0] += 1  # the look under the claim is real; after the perform: down
            return site.verify() if looks[0] == 1 else Unavailable("left for reconcile")

        def perform(site: Any = site, performed: bool = performed) -> Any:
            if performed:
                return site.perform()
            raise RuntimeError("the worker died before the click")

        eff = as_effect(site, key(what, actor, kind), policy=GIVE_UP)
        result = ledger.run(Effect(eff.key, kind, eff.payload, perform, verify, policy=GIVE_UP))
        assert result.status is Status.UNKNOWN, result
    # Bob's post did happen; REF-2 happened twice; bob's REF-1 is not alice's.
    server.db.create_post("bob", "Bob's own", None, None, None, None)
    server.db.create_invoice("alice", "REF-2", 105)
    server.db.create_invoice("bob", "REF-1", 103)


def _pages(session: BrowserSession) -> list[str]:
    """The URLs of the main-frame page loads of ``session`` from now on."""
    urls: list[str] = []

    async def listen(s: Any) -> None:
        s.page.on("request", lambda r: urls.append(r.url) if r.is_navigation_request() else None)

    session.run(listen)
    return urls


LEFT = ["claimed", "executing", "unknown"]
Ends = dict[str, tuple[Outcome, Status, str | None, list[str]]]


def _ends(ledger: Ledger, report: Any) -> Ends:
    return {
        r.key: (r.outcome, r.status, r.result_ref, [e.type.value for e in ledger.events(r.key)])
        for r in report.results
    }


def _one_by_one(path: Path, session: BrowserSession) -> Ends:
    registry = Registry()
    registry.register("post", lambda r: session.effect(post_of(r)).verify(), policy=POST_R)
    registry.register("invoice", lambda r: session.effect(invoice_of(r)).verify(), policy=INVOICE_R)
    with Ledger.open(str(path), registry=registry) as ledger:
        return _ends(ledger, ledger.reconcile())


def _shared(path: Path, session: BrowserSession, clock: Any = None) -> tuple[Ends, Listings]:
    registry = Registry()
    with Ledger.open(str(path), registry=registry) as ledger:
        listings = Listings(session, clock if clock is not None else ledger.clock)
        listings.register(registry, "post", post_of, policy=POST_R)
        listings.register(registry, "invoice", invoice_of, policy=INVOICE_R)
        with listings.one_pass():
            report = ledger.reconcile()
        return _ends(ledger, report), listings


def _copies(tmp_path: Path, session: SessionFactory, server: SandboxServer) -> tuple[Path, Path]:
    first = tmp_path / "one-by-one.db"
    with Ledger.open(str(first), create=True) as ledger:
        _left_unknown(ledger, session("alice"), server)
    second = tmp_path / "shared.db"
    shutil.copy(first, second)
    return first, second


def _status(ends: Ends) -> dict[str, Status]:
    return {k: v[1] for k, v in ends.items()}


def test_unknown_effects_reconciled_from_one_listing_end_as_one_by_one(
    server: SandboxServer, base: str, session: SessionFactory, tmp_path: Path
) -> None:
    first, second = _copies(tmp_path, session, server)
    checker = session("alice")
    pages = _pages(checker)
    alone = _one_by_one(first, checker)
    assert len(pages) == len(EFFECTS)  # one page load per effect
    del pages[:]
    shared, listings = _shared(second, checker)
    assert shared == alone
    assert _status(shared) == {
        key("Kept zero").value: Status.CONFIRMED,
        key("REF-0", kind="invoice").value: Status.CONFIRMED,
        key("Kept one").value: Status.CONFIRMED,
        key("REF-1", kind="invoice").value: Status.FAILED,  # authoritative absence
        key("Never two").value: Status.NEEDS_REVIEW,  # absence proves nothing for a post
        key("REF-2", kind="invoice").value: Status.NEEDS_REVIEW,  # a duplicate
        key("Bob's own", "bob").value: Status.CONFIRMED,
    }
    # One page load per listing: alice's posts, the invoices, bob's posts.
    assert sorted(pages) == sorted(
        [f"{base}/search?author=alice", f"{base}/invoices", f"{base}/search?author=bob"]
    )
    assert listings.loads == 3


def test_a_failing_listing_leaves_every_effect_it_judges_unavailable(
    server: SandboxServer,
    base: str,
    session: SessionFactory,
    tmp_path: Path,
    faults: Callable[..., None],
) -> None:
    first, second = _copies(tmp_path, session, server)
    checker = session("alice")
    faults(FaultRule("view.invoices", "error_before_commit"))
    alone = _one_by_one(first, checker)
    pages = _pages(checker)
    shared, _ = _shared(second, checker)
    assert shared == alone
    for k in (key(f"REF-{i}", kind="invoice").value for i in range(3)):
        # Held as it was (unknown, still in review): nothing proven either way.
        assert shared[k] == (Outcome.NEEDS_REVIEW, Status.UNKNOWN, None, LEFT), shared[k]
    # The listing is loaded once; the retry of each look is the effect's own.
    on_invoices = [u for u in pages if "/invoices" in u]
    assert on_invoices.count(f"{base}/invoices") == 1
    assert sorted(u for u in on_invoices if "reference=" in u) == [
        f"{base}/invoices?reference=REF-{i}" for i in range(3)
    ]


class _Clock:
    """A ledger clock for the listing's reads, fixed."""

    def __init__(self, now: float, trusted: bool) -> None:
        self._now, self._trusted = now, trusted

    def now(self) -> float:
        return self._now

    def trusted(self) -> bool:
        return self._trusted


@pytest.mark.parametrize(
    "clock",
    [_Clock(0.0, True), _Clock(1e12, False)],
    ids=["read-before-the-window-ended", "untrusted-clock"],
)
def test_an_absence_read_before_the_settle_window_ended_is_looked_at_again(
    server: SandboxServer, base: str, session: SessionFactory, tmp_path: Path, clock: _Clock
) -> None:
    """The listing's absences prove nothing yet: each absent effect runs its own
    ``verify`` at the time its verdict counts; what the listing found stays."""
    first, second = _copies(tmp_path, session, server)
    checker = session("alice")
    alone = _one_by_one(first, checker)
    pages = _pages(checker)
    shared, _ = _shared(second, checker, clock=clock)
    assert shared == alone
    own = sorted(u for u in pages if "q=" in u or "reference=" in u)
    assert own == [f"{base}/invoices?reference=REF-1", f"{base}/search?author=alice&q=Never+two"]


def test_an_async_session_makes_async_verifiers_for_the_async_ledger(
    server: SandboxServer, base: str, tmp_path: Path
) -> None:
    asyncio.run(_async_pass(server, tmp_path))


async def _async_pass(server: SandboxServer, tmp_path: Path) -> None:
    browser = await AsyncBrowser.launch()
    try:
        session = await browser.new_session(server.url, "alice")
        await session.login(SEED_USERS["alice"])
        registry = Registry()
        ledger = AsyncLedger.open(str(tmp_path / "async.db"), create=True, registry=registry)
        for ref in ("A-1", "A-2"):
            looks = [0]

            def verify(looks: list[int] = looks) -> Verdict:
                looks[0] += 1
                return Absent() if looks[0] == 1 else Unavailable("left for reconcile")

            def perform(ref: str = ref) -> None:
                if ref == "A-1":  # it happened, and its answer was lost
                    server.db.create_invoice("alice", ref, 10)
                raise RuntimeError("the answer was lost")

            payload = {"account": "alice", "reference": ref, "amount": 10}
            k = key(ref, kind="invoice")
            result = await ledger.run(
                Effect(k, "invoice", payload, perform, verify, policy=GIVE_UP)
            )
            assert result.status is Status.UNKNOWN
        listings = Listings(session, ledger.clock)
        listings.register(registry, "invoice", invoice_of, policy=INVOICE_R)
        with listings.one_pass():
            report = await ledger.reconcile()
        await ledger.aclose()
    finally:
        await browser.aclose()
    ends = {r.key: (r.status, r.result_ref) for r in report.results}
    assert ends == {
        key("A-1", kind="invoice").value: (Status.CONFIRMED, server.url + "/invoices/1"),
        key("A-2", kind="invoice").value: (Status.FAILED, None),
    }
    assert listings.loads == 1
