"""The 14 rows of seed 001's "Retry Decision Table", driven through a real browser.

Each test is one row (``SEED_ROWS`` order), set up in the real world: posts
that already exist in the sandbox, claims written by another worker's real
run (stopped at a crash point), search made unavailable by a rate-limit
screen, a ledger whose writes fail. Every test checks the ledger and the
sandbox's ground truth.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from actonce import (
    EventType,
    Ledger,
    LedgerOutcomeUnknown,
    LedgerUnavailable,
    Outcome,
    Policy,
    SQLiteStore,
    Status,
    SystemClock,
)
from actonce._rules.decision import SEED_ROWS
from actonce.sandbox import FaultRule, SandboxServer
from actonce.testing import FaultyStore, SimulatedCrash, crash_at

from .booking import BookingEffect
from .conftest import INVOICE, POST, Counted, ListingOnlyPost, SessionFactory, key, status, types

pytestmark = pytest.mark.browser

E = EventType
RATE_LIMITED = FaultRule("view.search", "rate_limit")
#: Another worker's lease; B's clock runs this far ahead to see it expired.
LEASE = 30.0
LATER = LEASE + 1.0


def test_every_seed_row_has_a_test_here() -> None:
    names = {n for n in globals() if n.startswith("test_row_")}
    assert len(SEED_ROWS) == 14
    assert sorted(names) == sorted(
        f"test_row_{i:02d}" + s
        for i, s in enumerate(
            [
                "_unclaimed_confirmed_is_recorded_and_skipped",
                "_unclaimed_absent_is_claimed_and_executed",
                "_unclaimed_unavailable_is_not_executed",
                "_confirmed_is_skipped",
                "_requested_then_confirmed_is_recorded_and_skipped",
                "_requested_temporarily_absent_retries_verification_only",
                "_requested_unavailable_is_marked_unknown",
                "_requested_still_absent_after_execution_goes_to_review",
                "_other_owner_confirmed_is_recorded_and_skipped",
                "_other_owner_absent_is_not_executed",
                "_other_owner_unavailable_is_not_executed",
                "_precondition_no_longer_holds_stops",
                "_checkpoint_write_fails_nothing_is_clicked",
                "_stale_claim_unavailable_is_not_reclaimed",
            ],
            start=1,
        )
    )


@pytest.fixture
def other_worker(ledger_path: Path) -> Iterator[Callable[..., None]]:
    """``other_worker(counted, k, point)``: another worker's real run, stopped at ``point``.

    Its own connection to the same ledger file and its own run id; it stops
    (``SimulatedCrash``) after its claim or after its executing mark, before
    any click, leaving a lease of ``LEASE`` seconds.
    """
    opened: list[Ledger] = []

    def run(c: Counted, k: Any, point: str = "after_claim") -> None:
        led = Ledger.open(str(ledger_path), create=True)
        opened.append(led)
        policy = Policy(settle_seconds=POST.settle_seconds, lease_seconds=LEASE)
        with crash_at(point), pytest.raises(SimulatedCrash):
            led.run(c.effect(k, policy), run_id="worker-A")
        assert c.performs == 0

    yield run
    for led in opened:
        led.close()


def _external_post(server: SandboxServer, author: str, text: str) -> None:
    """The post exists already: made by hand, or by an earlier run that lost its ledger."""
    server.db.create_post(author, text, None, None, None, None)


def wait_until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)  # sync-ok: the pause of a poll on a condition, with a deadline


# --- No effect has been claimed -----------------------------------------------------


def test_row_01_unclaimed_confirmed_is_recorded_and_skipped(
    ledger: Ledger,
    session: SessionFactory,
    server: SandboxServer,
    truth: Callable[[], dict[str, Any]],
    base: str,
) -> None:
    _external_post(server, "alice", "Already out there")
    c = Counted(session("alice").post_effect("Already out there"))
    result = ledger.run(c.effect(key("r01"), POST))
    assert result.outcome is Outcome.SKIPPED and result.status is Status.CONFIRMED
    assert result.result_ref == base + "/posts/1"
    assert c.performs == 0 and c.preconditions == 0 and c.verifies == 1
    # Claim first: the one look runs under the claim, which records what it found.
    assert types(ledger, key("r01")) == [E.CLAIMED, E.CONFIRMED]
    assert truth()["totals"]["posts"] == 1


def test_row_02_unclaimed_absent_is_claimed_and_executed(
    ledger: Ledger, session: SessionFactory, truth: Callable[[], dict[str, Any]]
) -> None:
    c = Counted(session("bob").invoice_effect("ORDER-R02", 42))
    k = key("r02", "bob", "invoice")
    result = ledger.run(c.effect(k, INVOICE))
    assert result.outcome is Outcome.COMPLETED and result.performed and result.attempt == 1
    assert (
        c.preconditions == 1 and c.performs == 1 and c.verifies == 2
    )  # under the claim, after the perform
    assert types(ledger, k) == [E.CLAIMED, E.EXECUTING, E.CONFIRMED]
    assert truth()["totals"]["invoices"] == 1


def test_row_03_unclaimed_unavailable_is_not_executed(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
    submits: Callable[[], list[str]],
) -> None:
    faults(RATE_LIMITED)
    c = Counted(session("alice").post_effect("Cannot look first"))
    result = ledger.run(c.effect(key("r03"), POST))
    assert result.outcome is Outcome.DEFERRED and result.status is None
    assert c.verifies == POST.verify_attempts and c.performs == 0 and c.preconditions == 0
    assert ledger.get(key("r03").value) is None  # the claim was given back
    assert types(ledger, key("r03")) == [E.CLAIMED, E.RELEASED, E.VERIFICATION_UNAVAILABLE]
    assert submits() == [] and truth()["totals"]["posts"] == 0


# --- Effect already confirmed / requested ---------------------------------------------


def test_row_04_confirmed_is_skipped(
    ledger: Ledger, session: SessionFactory, truth: Callable[[], dict[str, Any]]
) -> None:
    s = session("alice")
    first = ledger.run(Counted(s.post_effect("Once only")).effect(key("r04"), POST))
    assert first.outcome is Outcome.COMPLETED
    c = Counted(s.post_effect("Once only"))
    again = ledger.run(c.effect(key("r04"), POST))
    assert again.outcome is Outcome.SKIPPED and again.result_ref == first.result_ref
    assert c.performs == 0 and c.verifies == 0  # the ledger alone answers
    assert types(ledger, key("r04")) == [E.CLAIMED, E.EXECUTING, E.CONFIRMED]
    assert truth()["totals"]["posts"] == 1


def test_row_05_requested_then_confirmed_is_recorded_and_skipped(
    ledger: Ledger,
    session: SessionFactory,
    server: SandboxServer,
    truth: Callable[[], dict[str, Any]],
) -> None:
    """Claimed, then the result shows up before the click (someone else made it)."""
    c = Counted(session("alice").post_effect("Beaten to it"))
    # Claim first: the look under the claim is the first one.
    c.before_verify = lambda n: _external_post(server, "alice", "Beaten to it") if n == 1 else None
    result = ledger.run(c.effect(key("r05"), POST))
    assert result.outcome is Outcome.SKIPPED and result.status is Status.CONFIRMED
    assert c.performs == 0 and c.verifies == 1
    assert types(ledger, key("r05")) == [E.CLAIMED, E.CONFIRMED]
    assert truth()["totals"]["posts"] == 1


def test_row_06_requested_temporarily_absent_retries_verification_only(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    server: SandboxServer,
    truth: Callable[[], dict[str, Any]],
) -> None:
    faults(FaultRule("post.create", "late_index", seconds=1.5, times=1))
    s = session("alice")
    patient = Policy(settle_seconds=30.0, verify_attempts=2, verify_backoff=0.1)
    c = Counted(s.effect(ListingOnlyPost("alice", "Not indexed yet")))
    result = ledger.run(c.effect(key("r06"), patient))
    # Absent inside the settle window: verification was retried, then unknown.
    assert result.outcome is Outcome.NEEDS_REVIEW and result.status is Status.UNKNOWN
    assert c.performs == 1 and c.verifies == 1 + patient.verify_attempts  # 1: under the claim
    # A second run while it is still hidden: verify only, then hold.
    held = Counted(s.post_effect("Not indexed yet"))
    second = ledger.run(held.effect(key("r06"), patient))
    assert second.outcome is Outcome.NEEDS_REVIEW and not second.performed
    assert held.performs == 0 and held.verifies >= 1
    # Once indexed, the next run records it confirmed.
    wait_until(lambda: bool(server.db.search_posts("alice", "Not indexed yet")))
    late = Counted(s.post_effect("Not indexed yet"))
    third = ledger.run(late.effect(key("r06"), patient))
    assert third.outcome is Outcome.SKIPPED and third.status is Status.CONFIRMED
    assert late.performs == 0
    assert types(ledger, key("r06")) == [E.CLAIMED, E.EXECUTING, E.UNKNOWN, E.CONFIRMED]
    assert truth()["totals"]["posts"] == 1


def test_row_07_requested_unavailable_is_marked_unknown(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
) -> None:
    c = Counted(session("carol").effect(ListingOnlyPost("carol", "Posted, then search went down")))
    c.after_perform = lambda: faults(RATE_LIMITED)
    result = ledger.run(c.effect(key("r07", "carol"), POST))
    assert result.outcome is Outcome.NEEDS_REVIEW and result.status is Status.UNKNOWN
    assert "rate-limit" in (result.reason or "")
    assert c.performs == 1
    assert types(ledger, key("r07", "carol"))[-1] is E.UNKNOWN
    assert truth()["totals"]["posts"] == 1


def test_row_08_requested_still_absent_after_execution_goes_to_review(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
) -> None:
    faults(FaultRule("post.create", "late_index", seconds=30.0, times=1))
    c = Counted(session("alice").effect(ListingOnlyPost("alice", "Never shows up in search")))
    result = ledger.run(c.effect(key("r08"), POST))
    assert result.outcome is Outcome.NEEDS_REVIEW and result.status is Status.NEEDS_REVIEW
    assert c.performs == 1
    assert types(ledger, key("r08"))[-1] is E.NEEDS_REVIEW
    assert truth()["totals"]["posts"] == 1


# --- Another worker owns the claim ------------------------------------------------------


def test_row_09_other_owner_confirmed_is_recorded_and_skipped(
    ledger: Ledger,
    session: SessionFactory,
    server: SandboxServer,
    other_worker: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
) -> None:
    s = session("alice")
    other_worker(Counted(s.post_effect("Theirs, done")), key("r09"))
    assert status(ledger, key("r09")) is Status.CLAIMED
    _external_post(server, "alice", "Theirs, done")
    c = Counted(s.post_effect("Theirs, done"))
    result = ledger.run(c.effect(key("r09"), POST), run_id="worker-B")
    assert result.outcome is Outcome.SKIPPED and result.status is Status.CONFIRMED
    assert c.performs == 0
    assert [(e.type, e.run_id) for e in ledger.events(key("r09").value)] == [
        (E.CLAIMED, "worker-A"),
        (E.CONFIRMED, "worker-B"),
    ]
    assert truth()["totals"]["posts"] == 1


def test_row_10_other_owner_absent_is_not_executed(
    ledger: Ledger,
    session: SessionFactory,
    other_worker: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
    submits: Callable[[], list[str]],
) -> None:
    s = session("alice")
    other_worker(Counted(s.post_effect("Theirs, pending")), key("r10"))
    c = Counted(s.post_effect("Theirs, pending"))
    result = ledger.run(c.effect(key("r10"), POST), run_id="worker-B")
    assert result.outcome is Outcome.DEFERRED and "another worker" in (result.reason or "")
    assert c.performs == 0 and c.preconditions == 0
    record = ledger.get(key("r10").value)
    assert record is not None and (record.status, record.owner, record.fence) == (
        Status.CLAIMED,
        "worker-A",
        1,
    )
    assert submits() == [] and truth()["totals"]["posts"] == 0


def test_row_11_other_owner_unavailable_is_not_executed(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    other_worker: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
    submits: Callable[[], list[str]],
) -> None:
    s = session("alice")
    other_worker(Counted(s.post_effect("Theirs, unseen")), key("r11"), "after_mark_executing")
    faults(RATE_LIMITED)
    c = Counted(s.post_effect("Theirs, unseen"))
    result = ledger.run(c.effect(key("r11"), POST), run_id="worker-B")
    assert result.outcome is Outcome.DEFERRED and "unavailable" in (result.reason or "")
    assert c.performs == 0
    assert status(ledger, key("r11")) is Status.EXECUTING  # left to its owner
    assert types(ledger, key("r11"))[-1] is E.VERIFICATION_UNAVAILABLE
    assert submits() == [] and truth()["totals"]["posts"] == 0


# --- Precondition, checkpoint, stale claim --------------------------------------------


def test_row_12_precondition_no_longer_holds_stops(
    ledger: Ledger,
    session: SessionFactory,
    server: SandboxServer,
    truth: Callable[[], dict[str, Any]],
    submits: Callable[[], list[str]],
) -> None:
    """The user approved 4500 for the kayak tour; the price rose before the run."""
    s = session("bob")
    approved = server.db.item("kayak")["price"]  # type: ignore[index]
    server.db.change_price("kayak", 700)
    c = Counted(s.effect(BookingEffect("bob", "kayak", approved)))
    k = key("r12", "bob", "booking")
    result = ledger.run(c.effect(k, INVOICE))
    assert result.outcome is Outcome.FAILED and result.status is None
    assert result.reason == "precondition no longer holds"
    assert c.preconditions == 1 and c.performs == 0
    assert ledger.get(k.value) is None  # failed, its claim given back
    assert types(ledger, k) == [E.CLAIMED, E.RELEASED, E.PRECONDITION_FAILED]
    assert submits() == [] and truth()["totals"]["bookings"] == 0


@pytest.mark.parametrize(
    ("method", "when", "marks", "error", "left"),
    [
        ("claim", "before", False, LedgerUnavailable, None),
        ("claim", "after", False, LedgerOutcomeUnknown, Status.EXECUTING),
        ("transition", "before", True, LedgerUnavailable, Status.CLAIMED),
        ("transition", "after", True, LedgerOutcomeUnknown, Status.EXECUTING),
    ],
    ids=["claim-fails", "claim-ack-lost", "mark-fails", "mark-ack-lost"],
)
def test_row_13_checkpoint_write_fails_nothing_is_clicked(
    ledger_path: Path,
    session: SessionFactory,
    truth: Callable[[], dict[str, Any]],
    submits: Callable[[], list[str]],
    method: str,
    when: str,
    marks: bool,
    error: type[Exception],
    left: Status | None,
) -> None:
    """The claim (or, with verify-after-claim, the executing mark) cannot be written."""
    store = FaultyStore(SQLiteStore(str(ledger_path), create=True))
    store.fail(method, when=when, match=lambda r: r.status is Status.EXECUTING)
    policy = Policy(settle_seconds=0.6, verify_after_claim=marks, verify_backoff=0.1)
    c = Counted(session("alice").post_effect("Checkpoint first"))
    with Ledger(store) as led:  # type: ignore[arg-type]
        with pytest.raises(error):
            led.run(c.effect(key("r13"), policy))
        assert c.performs == 0
        assert status(led, key("r13")) is left  # a mark whose ack was lost stays: reconcile
    assert submits() == [] and truth()["totals"]["posts"] == 0


def test_row_14_stale_claim_unavailable_is_not_reclaimed(
    ledger_path: Path,
    session: SessionFactory,
    faults: Callable[..., None],
    other_worker: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
    submits: Callable[[], list[str]],
) -> None:
    s = session("alice")
    other_worker(Counted(s.post_effect("Stale and unseen")), key("r14"))
    other_worker(Counted(s.post_effect("Orphaned and unseen")), key("r14b"), "after_mark_executing")
    # Worker B comes later: both leases have expired.
    with Ledger.open(str(ledger_path), create=True, clock=SystemClock(LATER)) as led:
        faults(RATE_LIMITED)
        c = Counted(s.post_effect("Stale and unseen"))
        result = led.run(c.effect(key("r14"), POST), run_id="worker-B")
        assert result.outcome is Outcome.DEFERRED and c.performs == 0
        record = led.get(key("r14").value)
        assert record is not None and (record.status, record.owner, record.fence) == (
            Status.CLAIMED,
            "worker-A",
            1,
        )

        # An executing mark whose lease ended just now: absence is not yet proof.
        faults()
        patient = Policy(settle_seconds=30.0, verify_backoff=0.1)
        o = Counted(s.post_effect("Orphaned and unseen"))
        orphan = led.run(o.effect(key("r14b"), patient), run_id="worker-B")
        assert orphan.outcome is Outcome.NEEDS_REVIEW and orphan.status is Status.UNKNOWN
        assert o.performs == 0 and not orphan.performed
    assert submits() == [] and truth()["totals"]["posts"] == 0


# --- Beyond the rows: the reclaim that *is* allowed ------------------------------------


def test_stale_claim_verified_absent_is_released_and_reclaimed(
    ledger_path: Path,
    session: SessionFactory,
    other_worker: Callable[..., None],
    truth: Callable[[], dict[str, Any]],
) -> None:
    s = session("alice")
    other_worker(Counted(s.post_effect("Picked up later")), key("stale"))
    with Ledger.open(str(ledger_path), create=True, clock=SystemClock(LATER)) as led:
        c = Counted(s.post_effect("Picked up later"))
        result = led.run(c.effect(key("stale"), POST), run_id="worker-B")
        assert result.outcome is Outcome.COMPLETED and result.attempt == 2
        assert c.performs == 1
        assert [(e.type, e.run_id) for e in led.events(key("stale").value)] == [
            (E.CLAIMED, "worker-A"),
            (E.FAILED, "worker-B"),
            (E.CLAIMED, "worker-B"),
            (E.EXECUTING, "worker-B"),
            (E.CONFIRMED, "worker-B"),
        ]
    assert truth()["totals"]["posts"] == 1


def test_price_change_at_commit_is_refused_and_never_retried(
    ledger: Ledger,
    session: SessionFactory,
    faults: Callable[..., None],
    server: SandboxServer,
    truth: Callable[[], dict[str, Any]],
) -> None:
    """The price moves between the form and the submit: the shop refuses, verified absent."""
    s = session("carol", confirm_timeout=0.8)
    approved = server.db.item("room-101")["price"]  # type: ignore[index]
    faults(FaultRule("booking.create", "price_change", amount=1500, times=1))
    k = key("room", "carol", "booking")
    c = Counted(s.effect(BookingEffect("carol", "room-101", approved)))
    result = ledger.run(c.effect(k, INVOICE))
    assert result.outcome is Outcome.FAILED and result.status is Status.FAILED
    assert c.performs == 1 and truth()["totals"]["bookings"] == 0
    # Replanning the same approval: the precondition now refuses, no claim, no click.
    again = Counted(s.effect(BookingEffect("carol", "room-101", approved)))
    second = ledger.run(again.effect(k, INVOICE))
    assert second.outcome is Outcome.FAILED and second.reason == "precondition no longer holds"
    assert again.performs == 0 and second.attempt == 1
    assert truth()["totals"]["bookings"] == 0
