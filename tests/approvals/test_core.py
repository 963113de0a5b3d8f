"""Regressions in the core of issue 10, each once wrong (on every backend)."""

from __future__ import annotations

from decimal import Decimal

from actonce import (
    ApprovalStatus,
    AsyncLedger,
    EventType,
    Gate,
    HoldKind,
    HoldStatus,
    Ledger,
    MemoryStore,
    Outcome,
)

from .conftest import KEYS, World


def test_a_worker_that_comes_second_observes_the_commit(world: World) -> None:
    # Worker B reads "no record yet", then worker A commits the approved
    # booking entirely before B's claim. B must see A's commit (skipped), not
    # be told that "the approval is consumed".
    trip = world.intent()
    req = world.request(trip)
    world.ledger.approvals.answer(req.packet.packet_id, "approve", by="ana")
    other = Ledger(world.ledger.store, clock=world.clock, signing_keys=KEYS)
    first = {}

    def meanwhile() -> bool:
        first["a"] = world.ledger.run(world.effect(trip, req.packet))
        return True

    late = world.effect(trip, req.packet)
    from dataclasses import replace

    second = other.run(replace(late, precondition=meanwhile))
    assert first["a"].outcome is Outcome.COMPLETED
    assert second.outcome is Outcome.SKIPPED, second.reason
    assert world.provider.count(str(trip.ref)) == 1
    holds = world.ledger.holds(world.key(trip).value)
    assert [(h.kind, h.status) for h in holds if h.kind is HoldKind.APPROVAL] == [
        (HoldKind.APPROVAL, HoldStatus.CONSUMED)
    ]
    assert world.approval_events(req.packet.packet_id).count("approval_held") == 1


def test_a_replaced_packet_is_not_refreshed_again(world: World) -> None:
    trip = world.intent()
    req = world.request(trip)
    world.ledger.approvals.answer(req.packet.packet_id, "approve", by="ana")
    world.facts["price"] = "130"
    effect = world.effect(trip, req.packet)
    first = world.ledger.run(effect)
    assert first.outcome is Outcome.NEEDS_APPROVAL
    fresh = world.ledger.approvals.get(req.packet.packet_id).replaced_by
    assert fresh is not None
    for _ in range(2):  # the agent retries with the old gate: nothing new is issued
        again = world.ledger.run(effect)
        assert again.outcome is Outcome.REFUSED
        assert again.reason is not None and fresh in again.reason
    assert len(world.ledger.approvals.list()) == 2
    assert world.approval_events(req.packet.packet_id).count("approval_invalidated") == 1
    assert world.provider.count(str(trip.ref)) == 0


def test_an_approval_given_on_facts_that_went_stale_needs_a_refresh(world: World) -> None:
    trip = world.intent()
    req = world.request(trip)  # shows a price observed now, valid for 300 s
    world.ledger.approvals.answer(req.packet.packet_id, "approve", by="ana")
    world.clock.sleep(301)
    blind = world.ledger.run(world.effect(trip, req.packet, refresh=False))
    assert blind.outcome is Outcome.REFUSED
    assert blind.reason is not None and "'price'" in blind.reason
    assert world.ledger.get(world.key(trip).value) is None  # the refused claim wrote nothing
    assert world.ledger.approvals.get(req.packet.packet_id).status is ApprovalStatus.APPROVED
    done = world.ledger.run(world.effect(trip, req.packet))
    assert done.outcome is Outcome.COMPLETED
    assert world.provider.count(str(trip.ref)) == 1


def test_a_refused_claim_is_recorded_in_the_approvals_history(world: World) -> None:
    trip = world.intent()
    req = world.request(trip)
    world.ledger.approvals.answer(req.packet.packet_id, "deny", by="ana")
    result = world.ledger.run(world.effect(trip, req.packet))
    assert result.outcome is Outcome.REFUSED
    history = world.ledger.approvals.history(req.packet.packet_id)
    assert history[-1].type is EventType.APPROVAL_REFUSED
    assert history[-1].data["via"] == "claim"


async def test_the_async_gate_is_a_plain_function() -> None:
    ledger = AsyncLedger(MemoryStore(), signing_keys=KEYS)
    try:
        from actonce import Intent

        trip = await ledger.intents.put(
            Intent("t", "booking", user="ana", price_ceiling=Decimal(9), currency="EUR")
        )
        from actonce import intent_key

        req = await ledger.approvals.request(
            trip, "book", intent_key(trip, "book", tenant="t", actor="a"), amount="5"
        )
        gate = ledger.approvals.gate(req.packet)
        assert gate == Gate(trip.ref, req.packet.packet_id, Decimal(5))
    finally:
        await ledger.aclose()
