"""Seed 004's failure table, end to end through the public API, on every backend.

Each test is one row: the injection, the expected behaviour, the evidence.
(The concurrent-workers row runs real processes: ``test_processes.py``.)
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest

from actonce import (
    Answered,
    ApprovalStatus,
    EventType,
    HoldKind,
    HoldStatus,
    IntentStatus,
    NotPerformed,
    Outcome,
    Policy,
    Status,
    intent_key,
)
from actonce.testing import Faults, SimulatedCrash, crash_at

from .conftest import World


def _types(world: World, key: str) -> list[EventType]:
    return [e.type for e in world.ledger.events(key)]


# --- duplicate approval ------------------------------------------------------------------


def test_duplicate_approval_one_commit_one_hold_one_side_effect(world: World) -> None:
    """Deliver the same approval twice → the second returns the existing status."""
    trip = world.intent()
    req = world.request(trip)
    pid = req.packet.packet_id
    ap = world.ledger.approvals
    assert ap.answer_link(req.link, "approve", by="ana").answer is Answered.ACCEPTED
    # The same click twice, the same answer over the API, the SMS reply after the click.
    for again in (
        ap.answer_link(req.link, "approve", by="ana"),
        ap.answer(pid, "approve", by="ana"),
        ap.answer_code(req.code, "approve", by="ana"),
    ):
        assert again.answer is Answered.SAME and again.status is ApprovalStatus.APPROVED
    key = world.key(trip).value
    first = world.ledger.run(world.effect(trip, req.packet))
    assert first.outcome is Outcome.COMPLETED
    # Delivered once more after the commit: still the existing state, nothing new.
    late = ap.answer_link(req.link, "approve", by="ana")
    assert late.answer is Answered.SAME and late.status is ApprovalStatus.CONSUMED
    assert world.ledger.run(world.effect(trip, req.packet)).outcome is Outcome.SKIPPED
    # Evidence: one commit (one claim), one hold, one side effect.
    assert world.provider.count(str(trip.ref)) == 1
    assert _types(world, key).count(EventType.CLAIMED) == 1
    approval_holds = [h for h in world.ledger.holds(key) if h.kind is HoldKind.APPROVAL]
    assert [(h.ref, h.status) for h in approval_holds] == [(pid, HoldStatus.CONSUMED)]
    events = world.approval_events(pid)
    assert events.count("approval_answered") == 1
    assert events.count("approval_duplicate") == 4
    assert events.count("approval_held") == 1 and events.count("approval_consumed") == 1


def test_the_same_sms_reply_twice_commits_once(world: World) -> None:
    trip = world.intent()
    req = world.request(trip)
    ap = world.ledger.approvals
    assert ap.answer_code(req.code, "approve", by="ana").answer is Answered.ACCEPTED
    replay = ap.answer_code(req.code, "approve", by="ana")
    # The same reply delivered twice is answered with the existing state; it changes nothing.
    assert replay.answer is Answered.SAME and replay.status is ApprovalStatus.APPROVED
    # A code is single use: another answer with it is refused.
    other = ap.answer_code(req.code, "deny", by="ana")
    assert other.answer is Answered.REFUSED and other.status is ApprovalStatus.APPROVED
    for _ in range(2):
        world.ledger.run(world.effect(trip, req.packet))
    assert world.provider.count(str(trip.ref)) == 1
    assert ap.get(req.packet.packet_id).status is ApprovalStatus.CONSUMED


# --- stale price ---------------------------------------------------------------------------


def test_stale_price_invalidates_the_approval_and_issues_a_refreshed_packet(world: World) -> None:
    """Increase the total after approval → no commit; a refreshed packet to approve."""
    trip = world.intent()
    req = world.request(trip)
    ap = world.ledger.approvals
    ap.answer(req.packet.packet_id, "approve", by="ana")
    world.facts["price"] = "130"  # above the approved ceiling of 120
    result = world.ledger.run(world.effect(trip, req.packet))
    assert result.outcome is Outcome.NEEDS_APPROVAL
    assert result.reason is not None and "above the approved 120" in result.reason
    key = world.key(trip).value
    # No commit: no claim, no side effect; the old approval is invalidated, replaced.
    assert world.ledger.get(key) is None and world.provider.count(str(trip.ref)) == 0
    old = ap.get(req.packet.packet_id)
    assert old.status is ApprovalStatus.INVALIDATED and old.replaced_by is not None
    fresh = ap.get(old.replaced_by)
    assert fresh.status is ApprovalStatus.PENDING
    assert (fresh.revision, fresh.replaces, fresh.amount) == (2, old.packet_id, Decimal("130"))
    assert fresh.intent == old.intent and fresh.effect_key == old.effect_key
    refreshed = [e for e in world.ledger.events(key) if e.type is EventType.FACTS_REFRESHED]
    assert refreshed and refreshed[-1].data["packet"] == old.packet_id
    # The old approval cannot be answered into a commit any more.
    assert ap.answer_link(req.link, "approve", by="ana").answer is Answered.REFUSED
    # The user approves the refreshed packet (sent with fresh carriers): it commits at 130.
    again = ap.resend(fresh.packet_id)
    assert ap.answer_code(again.code, "approve", by="ana").answer is Answered.ACCEPTED
    done = world.ledger.run(world.effect(trip, fresh))
    assert done.outcome is Outcome.COMPLETED
    assert world.provider.count(str(trip.ref)) == 1
    assert ap.get(fresh.packet_id).status is ApprovalStatus.CONSUMED


def test_a_reprice_still_under_the_ceiling_keeps_the_approval(world: World) -> None:
    trip = world.intent()
    req = world.request(trip)  # shows 110, ceiling 120
    world.ledger.approvals.answer(req.packet.packet_id, "approve", by="ana")
    world.facts["price"] = "118"
    result = world.ledger.run(world.effect(trip, req.packet))
    assert result.outcome is Outcome.COMPLETED
    assert [p.status for p in world.ledger.approvals.list()] == [ApprovalStatus.CONSUMED]
    assert world.provider.count(str(trip.ref)) == 1


def test_a_reprice_to_the_ceiling_exactly_is_still_covered(world: World) -> None:
    trip = world.intent()
    req = world.request(trip)
    world.ledger.approvals.answer(req.packet.packet_id, "approve", by="ana")
    world.facts["price"] = "120.00"
    assert world.ledger.run(world.effect(trip, req.packet)).outcome is Outcome.COMPLETED
    world.facts["price"] = "120.01"
    other = world.intent("trip-b")
    req_b = world.request(other, amount="110")
    world.ledger.approvals.answer(req_b.packet.packet_id, "approve", by="ana")
    assert world.ledger.run(world.effect(other, req_b.packet)).outcome is Outcome.NEEDS_APPROVAL


# --- changed intent ------------------------------------------------------------------------


def test_changed_intent_supersedes_and_needs_a_new_approval(world: World) -> None:
    """User changes the date after approval → new version; new approval required."""
    ap = world.ledger.approvals
    v1 = world.intent()
    book = world.request(v1)
    ap.answer(book.packet.packet_id, "approve", by="ana")
    # A booking of v1 claimed, its process gone before the boundary (not executing).
    with crash_at("after_claim"), pytest.raises(SimulatedCrash):
        world.ledger.run(world.effect(v1, book.packet))
    book_key = world.key(v1).value
    assert world.ledger.get(book_key).status is Status.CLAIMED  # type: ignore[union-attr]
    # A payment of v1 in flight: submitted, its response lost, not visible yet.
    pay_key = intent_key(v1, "pay", tenant="t1", actor="agent")
    pay = ap.request(v1, "pay", pay_key, amount="110")
    ap.answer(pay.packet.packet_id, "approve", by="ana")
    world.provider.faults = Faults(script=["lose_response"], visibility_delay=1e9)
    paying = replace(
        world.effect(v1, pay.packet, refresh=False),
        key=pay_key,
        kind="pay",
        perform=lambda: world.provider.submit("pay:" + str(v1.ref)),
        verify=lambda: world.provider.lookup("pay:" + str(v1.ref)),
        policy=Policy(verify_attempts=1, verify_backoff=0),
    )
    assert world.ledger.run(paying).status is Status.UNKNOWN
    world.provider.faults = Faults()
    notify = ap.request(v1, "notify", intent_key(v1, "notify", tenant="t1", actor="agent"))
    # The user changes the date.
    rev = world.ledger.intents.revise("trip", when="2026-12-25")
    assert rev.material and rev.intent.version == 2 and rev.changed == ("when",)
    assert rev.closed == (book_key,) and rev.in_flight == (pay_key.value,)
    assert rev.voided == (notify.packet.packet_id,)
    chain = world.ledger.intents.chain("trip")
    assert [(r.intent.version, r.status) for r in chain] == [
        (1, IntentStatus.SUPERSEDED),
        (2, IntentStatus.CURRENT),
    ]
    # v1's booking had not crossed the boundary: closed, its approval void.
    closed = world.ledger.get(book_key)
    assert closed is not None and closed.status is Status.FAILED
    assert ap.get(book.packet.packet_id).status is ApprovalStatus.VOIDED
    # v1's payment may have happened: left to reconcile, its approval still held.
    assert world.ledger.get(pay_key.value).status is Status.UNKNOWN  # type: ignore[union-attr]
    assert ap.get(pay.packet.packet_id).status is ApprovalStatus.HELD
    # The old packet is refused, however it is presented.
    assert ap.answer_link(book.link, "approve", by="ana").answer is Answered.REFUSED
    assert ap.answer_code(notify.code, "approve", by="ana").answer is Answered.REFUSED
    assert world.ledger.run(world.effect(v1, book.packet)).outcome is Outcome.REFUSED
    v2 = rev.intent
    misused = world.ledger.run(world.effect(v2, book.packet, gate_intent=v2))
    assert misused.outcome is Outcome.REFUSED
    # A new approval is required for v2, and commits v2 only.
    req2 = world.request(v2)
    assert world.ledger.run(world.effect(v2, req2.packet)).outcome is Outcome.NEEDS_APPROVAL
    ap.answer(req2.packet.packet_id, "approve", by="ana")
    assert world.ledger.run(world.effect(v2, req2.packet)).outcome is Outcome.COMPLETED
    assert world.provider.count(str(v2.ref)) == 1 and world.provider.count(str(v1.ref)) == 0
    # The payment of v1 is reconciled by verification, never repeated: it happened.
    world.clock.sleep(1e9)
    from actonce import Registry

    registry = Registry()
    registry.register("pay", lambda r: world.provider.lookup("pay:" + str(v1.ref)))
    from actonce import Ledger

    reconciler = Ledger(world.ledger.store, clock=world.clock, registry=registry)
    report = reconciler.reconcile()
    assert [r.status for r in report.results] == [Status.CONFIRMED]
    assert ap.get(pay.packet.packet_id).status is ApprovalStatus.CONSUMED
    assert world.provider.count("pay:" + str(v1.ref)) == 1
    types = [e.type for e in world.ledger.intents.history("trip")]
    assert types == [EventType.INTENT_CREATED, EventType.INTENT_REVISED]


def test_a_cosmetic_change_keeps_the_version_and_the_approval(world: World) -> None:
    trip = world.intent()
    req = world.request(trip)
    world.ledger.approvals.answer(req.packet.packet_id, "approve", by="ana")
    rev = world.ledger.intents.revise("trip", notes={"seat": "window please"})
    assert not rev.material and rev.intent.version == 1
    assert world.ledger.run(world.effect(trip, req.packet)).outcome is Outcome.COMPLETED


# --- expired session at commit ------------------------------------------------------------


def test_expired_session_pauses_and_resumes_without_losing_anything(world: World) -> None:
    """Invalidate browser auth at commit → the task pauses; the checkpoint is retained."""
    trip = world.intent()
    req = world.request(trip)
    ap = world.ledger.approvals
    ap.answer(req.packet.packet_id, "approve", by="ana")
    world.facts["session"] = False
    paused = world.ledger.run(world.effect(trip, req.packet))
    assert paused.outcome is Outcome.DEFERRED
    assert paused.reason is not None and "session expired" in paused.reason
    key = world.key(trip).value
    # Nothing committed, nothing lost: the intent, the packet and its facts are as they were.
    assert world.ledger.get(key) is None and world.provider.count(str(trip.ref)) == 0
    assert world.ledger.intents.get("trip") == trip
    kept = ap.get(req.packet.packet_id)
    assert kept.status is ApprovalStatus.APPROVED and kept.facts == req.packet.facts
    assert _types(world, key) == [EventType.FACTS_REFRESHED]
    # The user signs in again; the agent resumes.
    world.facts["session"] = True
    resumed = world.ledger.run(world.effect(trip, req.packet))
    assert resumed.outcome is Outcome.COMPLETED
    assert world.provider.count(str(trip.ref)) == 1


def test_a_session_lost_at_the_submit_itself_releases_the_approval_for_the_resume(
    world: World,
) -> None:
    # The login page appears instead of the confirmation: nothing was submitted.
    trip = world.intent()
    req = world.request(trip)
    world.ledger.approvals.answer(req.packet.packet_id, "approve", by="ana")

    def login_page() -> None:
        raise NotPerformed("the provider asked to sign in again before the submit")

    first = world.ledger.run(world.effect(trip, req.packet, perform=login_page))
    assert first.outcome is Outcome.FAILED and not world.provider.count(str(trip.ref))
    kept = world.ledger.approvals.get(req.packet.packet_id)
    assert kept.status is ApprovalStatus.APPROVED  # released: it authorizes the resume
    resumed = world.ledger.run(world.effect(trip, req.packet))
    assert resumed.outcome is Outcome.COMPLETED and resumed.attempt == 2
    assert world.provider.count(str(trip.ref)) == 1
    holds = world.ledger.holds(world.key(trip).value)
    assert [(h.fence, h.kind, h.status) for h in holds if h.kind is HoldKind.APPROVAL] == [
        (1, HoldKind.APPROVAL, HoldStatus.RELEASED),
        (2, HoldKind.APPROVAL, HoldStatus.CONSUMED),
    ]


def test_a_refresh_that_fails_pauses_too(world: World) -> None:
    trip = world.intent()
    req = world.request(trip)
    world.ledger.approvals.answer(req.packet.packet_id, "approve", by="ana")

    def broken() -> None:
        raise TimeoutError("the price API did not answer")

    effect = replace(world.effect(trip, req.packet), refresh=broken)
    paused = world.ledger.run(effect)
    assert paused.outcome is Outcome.DEFERRED and "unavailable" in (paused.reason or "")
    assert world.ledger.approvals.get(req.packet.packet_id).status is ApprovalStatus.APPROVED
