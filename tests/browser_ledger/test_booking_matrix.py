"""Seed 004's fault matrix, in real Chromium, on SQLite and on PostgreSQL.

Every row of the seed's table is a test: the browser adapter's built-in
booking effects (``actonce.browser.booking_steps``) run hold → pay → book →
notify against the sandbox's booking world, under the row's injection. Each
test checks the row's *Expected behavior* (what the ledger and the operation
do) and its *Evidence* (what the provider's own ground truth, its request log
and the receipt show). Workers that crash or race are real processes, killed
by PID. Nothing waits on a sleep: tests wait on a worker's next line, a crash
point, or a pass returning.

| row | test |
|---|---|
| lost response | test_lost_response_is_unknown_then_reconciled_never_resubmitted |
| duplicate approval | test_duplicate_approval_answers_the_existing_status |
| worker crash | test_worker_killed_after_submit_is_verified_by_its_replacement |
| stale price | test_stale_price_invalidates_the_approval_and_issues_a_refreshed_packet |
| expired session | test_expired_session_pauses_and_keeps_the_checkpoint |
| concurrent workers | test_concurrent_workers_one_owns_the_commit_the_other_observes |
| provider retry | test_provider_500s_are_retried_with_the_same_provider_key |
| changed intent | test_changed_intent_needs_a_new_version_and_a_new_approval |
| partial success | test_partial_success_is_compensated_with_a_refund_receipt, |
|                 | test_partial_success_with_an_unknown_void_escalates_to_review |
| notification failure | test_notification_failure_keeps_the_booking_verified |
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from actonce import Answered, ApprovalStatus, EventType, IntentStatus, OperationState
from actonce.browser import Browser
from actonce.sandbox import FaultRule, SandboxServer
from actonce.testing import observing
from pgtest import drop_schema, postgres_dsn

from .booking_kit import DATE, DATE2, World, new_world, runs


@pytest.fixture(params=["sqlite", "postgres"])
def world(
    request: pytest.FixtureRequest, server: SandboxServer, browser: Browser, tmp_path: Path
) -> Iterator[World]:
    if request.param == "sqlite":
        yield from new_world(server, browser, str(tmp_path / "ledger.db"), tmp_path)
        return
    dsn = postgres_dsn()
    schema = f"actonce_bk_{uuid.uuid4().hex[:10]}"
    try:
        yield from new_world(server, browser, f"{dsn}?schema={schema}", tmp_path)
    finally:
        drop_schema(dsn, schema)


def at_perform(n: int, then: Callable[[], None]) -> Callable[[str], None]:
    """A crash-point observer that calls ``then`` after the ``n``-th perform."""
    seen = [0]

    def hit(point: str) -> None:
        if point == "after_perform":
            seen[0] += 1
            if seen[0] == n:
                then()

    return hit


LOOKUPS_DOWN = FaultRule("view.booking.lookup", "error_before_commit")


# --- lost response ----------------------------------------------------------------------


def test_lost_response_is_unknown_then_reconciled_never_resubmitted(world: World) -> None:
    case = world.case("trip-lost")
    case.approve()
    # The provider commits the payment, then the connection closes without a byte
    # (a browser would resend that POST); and its lookup is down right after.
    world.faults(FaultRule("booking.pay", "lost_response", mode="close", times=1))
    with observing(at_perform(2, lambda: world.faults(LOOKUPS_DOWN))):
        first = case.run()
    assert next(r for r in runs(first) if r[0] == "pay")[2] is True  # performed once
    assert case.status("pay") == "unknown" and first.state is OperationState.NEEDS_REVIEW
    assert case.status("book") is None  # nothing goes forward from doubt
    told = case.told("in review", charged="not known yet; up to 240.00 EUR may have been charged.")
    assert told["Still uncertain"] == "pay (a person checks)."
    assert world.truth()["totals"]["authorizations"] == 1  # the provider did it, once

    world.faults()  # the lookup answers again
    lost_at = max(r["seq"] for r in world.log() if r["action"] == "booking.pay")
    second = case.run()
    assert second.state is OperationState.COMPLETE
    assert runs(second)[0][0::2] == ("reconcile pay", False)  # verified, not resubmitted
    # Evidence: one provider object, and the lookup that found it.
    totals = world.totals()
    assert (totals["authorizations"], totals["bookings"]) == (1, 1)
    assert world.truth()["duplicates"] == []
    assert world.posts("booking.pay") == 1
    assert any(r["action"] == "view.booking.lookup" for r in world.log() if r["seq"] > lost_at)
    assert len(case.executions("pay")) == 1
    wire = [e.data["perform"]["details"]["wire"] for e in case.events("pay")
            if e.type is EventType.UNKNOWN]  # fmt: skip
    assert wire and wire[0][0]["outcome"] == "no response: connection closed"
    case.told("done", charged="240.00 EUR.")  # the receipt, read again, says it now


# --- duplicate approval -----------------------------------------------------------------


def test_duplicate_approval_answers_the_existing_status(world: World) -> None:
    case = world.case("trip-dup")
    first, second = case.approve(), case.approve()
    assert first.answer is Answered.ACCEPTED
    assert (second.answer, second.status) == (Answered.SAME, ApprovalStatus.APPROVED)
    assert case.run().state is OperationState.COMPLETE
    late = case.approve()  # delivered once more after the commit
    assert (late.answer, late.status) == (Answered.SAME, ApprovalStatus.CONSUMED)
    # Evidence: one commit lease and one side effect.
    packet = world.ledger.approvals.get(case.request.packet.packet_id)
    assert packet.status is ApprovalStatus.CONSUMED and packet.held_by == case.key("pay")
    history = [e.type for e in world.ledger.approvals.history(packet.packet_id)]
    assert history.count(EventType.APPROVAL_DUPLICATE) == 2
    assert len(case.executions("pay")) == 1
    assert world.totals()["authorizations"] == 1 and world.posts("booking.pay") == 1
    case.told("done", charged="240.00 EUR.")


# --- worker crash -----------------------------------------------------------------------


def test_worker_killed_after_submit_is_verified_by_its_replacement(world: World) -> None:
    case = world.case("trip-crash")
    case.approve()
    worker = world.worker([case.spec], stop_after_perform=2)  # hold, then pay
    worker.until("ready")
    worker.send()
    stopped, _ = worker.until("stopped")
    assert stopped["pid"] == worker.pid
    # The submit is done, the ledger not updated: the worker dies right there.
    worker.kill()
    record = world.ledger.get(case.key("pay"))
    assert record is not None and record.status.value == "executing"
    assert f'"provider_key":"{case.key("pay")}"' in record.payload  # the persisted identity
    db = world.server.sandbox.booking.db
    paid = db.idempotency_object(case.user, "pay", case.key("pay"))
    assert paid is not None  # the provider knows the payment by that identity

    replacement = case.run()
    assert replacement.state is OperationState.COMPLETE
    assert runs(replacement)[0][0::2] == ("reconcile pay", False)  # queried, never resubmitted
    assert world.ledger.get(case.key("pay")).result_ref.endswith(f"/book/payments/{paid}")  # type: ignore[union-attr]
    totals = world.totals()
    assert (totals["authorizations"], totals["bookings"], totals["deliveries"]) == (1, 1, 1)
    assert world.posts("booking.pay") == 1 and len(case.executions("pay")) == 1
    case.told("done", charged="240.00 EUR.")


# --- stale price ------------------------------------------------------------------------


def test_stale_price_invalidates_the_approval_and_issues_a_refreshed_packet(world: World) -> None:
    case = world.case("trip-price")
    held = case.run()  # the hold is made while the user decides
    assert case.status("hold") == "confirmed" and held.state is OperationState.IN_PROGRESS
    case.approve()  # 240.00 approved, ceiling 250.00
    world.server.sandbox.booking.db.change_price("harbor-double", 700)  # now 254.00
    stale = case.run()
    assert [r[1] for r in runs(stale)] == ["needs_approval"]
    old = world.ledger.approvals.get(case.request.packet.packet_id)
    assert old.status is ApprovalStatus.INVALIDATED and old.replaced_by is not None
    fresh = world.ledger.approvals.get(old.replaced_by)
    assert (fresh.revision, str(fresh.amount), fresh.status) == (
        2,
        "254.00",
        ApprovalStatus.PENDING,
    )
    # Evidence: a version mismatch and no commit.
    again = case.approve()  # the old link is answered with its status, and refused
    assert again.answer is Answered.REFUSED and again.status is ApprovalStatus.INVALIDATED
    assert case.status("pay") is None and world.posts("booking.pay") == 0
    assert world.truth()["totals"]["authorizations"] == 0
    refreshed = [e for e in case.events("pay") if e.type is EventType.FACTS_REFRESHED]
    assert refreshed and "above the approved" in (refreshed[-1].message or "")

    # The user approves the refreshed packet: the same operation commits at 254.00.
    case.approve(world.ledger.approvals.link(fresh.packet_id))
    done = case.run()
    assert done.state is OperationState.COMPLETE
    assert world.truth()["authorizations"][0]["amount"] == 25400
    receipt = world.ledger.receipt(case.spec.op_id)
    assert receipt is not None and receipt.data["approval"]["packet_id"] == fresh.packet_id
    # The second approval raised the ceiling: the receipt says so, and what was charged.
    case.told("done", charged="254.00 EUR.", ceiling="254.00 EUR", raised_from="250.00 EUR")


# --- expired session --------------------------------------------------------------------


def test_expired_session_pauses_and_keeps_the_checkpoint(world: World) -> None:
    case = world.case("trip-session")
    case.approve()
    # The session ends as the agent opens the checkout: the login wall, before the click.
    world.faults(FaultRule("view.booking.pay", "session_expired", times=1))
    paused = case.run()
    assert ("pay", "hard_stop", True) in runs(paused)
    assert paused.state is OperationState.IN_PROGRESS  # paused, not failed, not compensated
    # Evidence: the checkpoint is retained — the hold, the approval, nothing paid.
    assert case.status("hold") == "confirmed" and case.status("pay") == "failed"
    packet = world.ledger.approvals.get(case.request.packet.packet_id)
    assert packet.status is ApprovalStatus.APPROVED
    holds = world.truth()["holds"]
    assert len(holds) == 1 and holds[0]["statuses"]["held"] == 1
    assert world.posts("booking.pay") == 0

    resumed = case.run()  # signed in again, the same hold is paid and booked
    assert resumed.state is OperationState.COMPLETE
    assert world.ledger.get(case.key("pay")).fence == 2  # type: ignore[union-attr]
    holds = world.truth()["holds"]
    assert len(holds) == 1 and holds[0]["statuses"]["booked"] == 1
    assert world.totals()["authorizations"] == 1
    case.told("done", charged="240.00 EUR.")


# --- concurrent workers -----------------------------------------------------------------


def test_concurrent_workers_one_owns_the_commit_the_other_observes(world: World) -> None:
    case = world.case("trip-race")
    case.approve()
    a, b = world.worker([case.spec]), world.worker([case.spec])
    a.until("ready")
    b.until("ready")
    a.send()
    b.send()  # two commit attempts at once
    passes = [a.until("round")[1][0], b.until("round")[1][0]]
    # Whoever did not finish looks again: it observes, it never commits.
    later = [w.round()[0] for w in (a, b)]
    assert {p["state"] for p in later} == {"complete"}
    performed = {
        step: sum(1 for p in passes + later for r in p["runs"] if r[0] == step and r[3])
        for step in ("hold", "pay", "book", "notify")
    }
    assert performed == {"hold": 1, "pay": 1, "book": 1, "notify": 1}
    # Evidence: the lease history — one commit per step, under one fence.
    for step in ("hold", "pay", "book", "notify"):
        assert len(case.executions(step)) == 1
        assert world.ledger.get(case.key(step)).fence == 1  # type: ignore[union-attr]
    totals = world.totals()
    assert (totals["holds"], totals["authorizations"], totals["bookings"]) == (1, 1, 1)
    assert world.truth()["duplicates"] == [] and world.posts("booking.pay") == 1
    case.told("done", charged="240.00 EUR.")


# --- provider retry ---------------------------------------------------------------------


def test_provider_500s_are_retried_with_the_same_provider_key(world: World) -> None:
    case = world.case("trip-500")
    case.approve()
    world.faults(FaultRule("booking.pay", "error_after_commit", times=2))
    assert case.run().state is OperationState.COMPLETE
    # Evidence: three submits, one external object, found by the one key.
    assert world.posts("booking.pay") == 3
    assert world.totals()["authorizations"] == 1
    paid = world.server.sandbox.booking.db.idempotency_object(case.user, "pay", case.key("pay"))
    assert paid == world.truth()["authorizations"][0]["ids"][0]
    done = next(e for e in case.events("pay") if e.type is EventType.CONFIRMED)
    details = done.data["perform"]["details"]
    assert details["submits"] == 3 and [w["outcome"] for w in details["wire"]] == [500, 500, 303]
    assert len(case.executions("pay")) == 1  # one perform: the retry is inside it
    case.told("done", charged="240.00 EUR.")


# --- changed intent ---------------------------------------------------------------------


def test_changed_intent_needs_a_new_version_and_a_new_approval(world: World) -> None:
    v1 = world.case("trip-change")
    v1.run()  # the hold for May is made
    v1.approve()
    revision = world.ledger.intents.revise("trip-change", when=DATE2)
    assert revision.material and revision.intent.version == 2
    assert v1.request.packet.packet_id in revision.voided
    # v1 is closed in the revision's own transaction, and its receipt says so at once.
    assert revision.operations == (v1.spec.op_id,)
    closed = world.ledger.operations.get(v1.spec.op_id)
    assert closed.closed and closed.step == "hold" and closed.assessment.next.value == "undo"
    withdrawn = v1.run()  # the old version commits nothing, and its hold is released
    assert withdrawn.state is OperationState.COMPENSATED
    assert [r[0] for r in runs(withdrawn)] == ["undo hold"]
    assert v1.status("pay") is None
    told = v1.told("withdrawn", charged="nothing.", exceptions="none.")
    assert "superseded by v2" in told["headline"]
    assert told["What was done"].startswith("hold (") and told["What was done"].endswith(
        "then undone."
    )
    refused = v1.approve()
    assert refused.answer is Answered.REFUSED and refused.status is ApprovalStatus.VOIDED

    v2 = world.case("trip-change", when=DATE2, version=2)
    assert v2.run().state is OperationState.IN_PROGRESS  # waits for the new approval
    v2.approve()
    assert v2.run().state is OperationState.COMPLETE
    # Evidence: the supersession chain, and the provider holds only the new date.
    chain = world.ledger.intents.chain("trip-change")
    assert [(r.intent.version, r.status, r.intent.when) for r in chain] == [
        (1, IntentStatus.SUPERSEDED, DATE),
        (2, IntentStatus.CURRENT, DATE2),
    ]
    truth = world.truth()
    by_date = {h["key"]["date"]: h["statuses"] for h in truth["holds"]}
    assert by_date[DATE]["released"] == 1 and by_date[DATE2]["booked"] == 1
    assert [b["key"]["date"] for b in truth["bookings"]] == [DATE2]
    assert truth["totals"]["authorizations"] == 1
    v2.told("done", charged="240.00 EUR.")


# --- partial success --------------------------------------------------------------------


def test_partial_success_is_compensated_with_a_refund_receipt(world: World) -> None:
    case = world.case("trip-partial")
    case.approve()
    world.faults(FaultRule("booking.book", "booking_failed", times=1))
    result = case.run()
    assert result.state is OperationState.COMPENSATED
    assert [r[0] for r in runs(result)][-2:] == ["undo pay", "undo hold"]
    truth = world.truth()
    assert truth["totals"]["bookings"] == 0 and truth["open_authorizations"] == []
    assert truth["totals"]["voids"] == 1 and truth["totals"]["standing_amount"] == 0
    # Evidence: the receipt says what happened, what was undone and how we know.
    receipt = world.ledger.receipt(case.spec.op_id)
    assert receipt is not None and receipt.state is OperationState.COMPENSATED
    told = case.told("undone", charged="nothing.", released="240.00 EUR.")
    assert told["What was not done"] == "book (it did not happen)."
    assert told["What was done"].count("then undone") == 2
    pay = next(s for s in receipt.data["steps"] if s["name"] == "pay")
    assert pay["undo"]["status"] == "confirmed" and "/book/payments/" in pay["undo"]["provider_ref"]


def test_partial_success_with_an_unknown_void_escalates_to_review(world: World) -> None:
    case = world.case("trip-escalate")
    case.approve()
    world.faults(
        FaultRule("booking.book", "booking_failed", times=1),
        FaultRule("booking.void", "lost_response", mode="close", times=1),
    )
    # The void's answer is lost and the lookup goes down: nobody can say if it happened.
    with observing(at_perform(4, lambda: world.faults(LOOKUPS_DOWN))):
        result = case.run()
    assert result.state is OperationState.NEEDS_REVIEW
    receipt = world.ledger.receipt(case.spec.op_id)
    assert receipt is not None and receipt.data["uncertain"] == ["undo of pay"]
    told = case.told(  # the escalation: money may still be held, and a person checks
        "in review", charged="240.00 EUR; whether it was given back is not known yet."
    )
    assert told["Still uncertain"] == "the undo of pay (a person checks)."
    view = world.ledger.operations.get(case.spec.op_id)
    assert (view.in_review, view.step, view.undo) == (True, "pay", True)
    assert [o.op_id for o in world.ledger.operations.in_review()] == [case.spec.op_id]
    assert world.truth()["totals"]["bookings"] == 0
    assert world.posts("booking.void") == 1  # never a blind second void


# --- notification failure ---------------------------------------------------------------


def test_notification_failure_keeps_the_booking_verified(world: World) -> None:
    case = world.case("trip-notify")
    case.approve()
    world.faults(FaultRule("booking.message", "message_dropped", times=1))
    first = case.run()
    assert first.state is OperationState.COMPLETE  # the outcome stays verified
    assert case.status("book") == "confirmed" and case.status("notify") == "failed"
    case.told("done", charged="240.00 EUR.",
              exceptions="the notify message is not delivered yet: it is sent again "
              "(attempt 2 of 3).")  # fmt: skip
    second = case.run()  # the message alone is retried
    assert [r[0] for r in runs(second)] == ["notify"] and second.state is OperationState.COMPLETE
    # Evidence: one purchase, several message attempts, one delivery.
    truth = world.truth()
    assert (truth["totals"]["authorizations"], truth["totals"]["bookings"]) == (1, 1)
    assert truth["messages_by_key"][0]["attempts"] == ["dropped", "delivered"]
    assert truth["totals"]["deliveries"] == 1
    receipt = world.ledger.receipt(case.spec.op_id)
    assert receipt is not None and receipt.data["notification"] == "delivered"
    case.told("done", charged="240.00 EUR.")  # true when read: no exception any more
