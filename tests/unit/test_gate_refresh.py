"""The approval refresh before a gated claim: what the claim goes on with (issue 7).

Mutation testing (``_run/claim.py``, ``refresh_gate``) found these unpinned
by the fast suite: which amount and which facts the claim is checked
against after a refresh that stays within the approved boundary; how often a
refresher is asked; the fields of a refreshed packet the first tests did not
look at (terms, a short lifetime, a boundary left without a price); a packet
that changes while the refresher runs; and what a run reports when the
effect already has a record (a re-opened, failed attempt). Memory store,
frozen clock, the approvals world of ``tests/approvals`` (public API only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from actonce import (
    Approvals,
    ApprovalStatus,
    Budgets,
    EventType,
    Fact,
    NotPerformed,
    Outcome,
    Packet,
    Policy,
    Status,
)
from approvals.conftest import World, mem_world  # noqa: F401 (a fixture)


@pytest.fixture
def world(mem_world: World) -> World:  # noqa: F811 (the approvals world, memory store)
    return mem_world


def refresher(world: World, *names: str, **values: Any) -> Callable[[], list[Fact]]:
    """A refresher that reports only ``names`` of the world's facts, ``values`` overriding."""

    def refresh() -> list[Fact]:
        now = world.clock.now()
        facts = {n: world.facts[n] for n in names} | values
        return [Fact(name, value, now) for name, value in facts.items()]

    return refresh


def refreshed_packet(world: World, old: Packet) -> Packet:
    now = world.ledger.approvals.get(old.packet_id)
    assert now.status is ApprovalStatus.INVALIDATED and now.replaced_by is not None
    return world.ledger.approvals.get(now.replaced_by)


# --- within the boundary: the amount and the facts the claim is checked against ----------


def test_the_claim_is_checked_against_the_refreshed_price_not_the_gates(world: World) -> None:
    """A gate that names 130 on an approval of at most 120: the refreshed price (115) is
    what the commit costs, so the claim goes on; the gate's own amount would be refused."""
    trip, old = world.approved()
    world.facts["price"] = "115"
    effect = world.effect(trip, old)
    effect = replace(effect, gate=Approvals.gate(old, amount="130"))
    result = world.ledger.run(effect)
    assert result.outcome is Outcome.COMPLETED
    assert world.ledger.approvals.get(old.packet_id).status is ApprovalStatus.CONSUMED


def test_a_refresh_without_a_price_keeps_the_gates_amount(world: World) -> None:
    """Refreshed facts that name no price leave the gate's amount in force: 130 on an
    approval of at most 120 is refused by the claim, and nothing is committed."""
    trip, old = world.approved()
    effect = replace(
        world.effect(trip, old),
        gate=Approvals.gate(old, amount="130"),
        refresh=refresher(world, "session", "availability"),
    )
    result = world.ledger.run(effect)
    assert result.outcome is Outcome.REFUSED
    assert result.reason == "130 is above the approved 120 EUR"
    assert world.ledger.approvals.get(old.packet_id).status is ApprovalStatus.APPROVED
    assert world.provider.count(str(trip.ref)) == 0


def test_the_claim_relies_on_the_refreshed_facts_not_the_approved_ones(world: World) -> None:
    """The price the user approved on went stale (its 300 s window passed): the claim
    checks the observation the refresh just made, and goes on."""
    trip, old = world.approved()
    world.clock.advance(400)
    result = world.ledger.run(world.effect(trip, old))
    assert result.outcome is Outcome.COMPLETED
    assert world.provider.count(str(trip.ref)) == 1


def test_a_refresher_that_answers_is_asked_once(world: World) -> None:
    trip, old = world.approved()
    calls: list[float] = []
    good = world.refresher()

    def counted() -> list[Fact]:
        calls.append(world.clock.now())
        return good()

    policy = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=3)
    effect = replace(world.effect(trip, old, policy=policy), refresh=counted)
    assert world.ledger.run(effect).outcome is Outcome.COMPLETED
    assert len(calls) == 1


# --- outside the boundary: the refreshed packet ----------------------------------------------


def test_a_price_in_another_currency_is_not_comparable(world: World) -> None:
    trip, old = world.approved()
    effect = replace(
        world.effect(trip, old),
        refresh=refresher(world, "session", price={"amount": "100", "currency": "USD"}),
    )
    result = world.ledger.run(effect)
    assert result.outcome is Outcome.NEEDS_APPROVAL
    assert result.reason is not None
    assert result.reason.startswith("the price is in USD, the approval in EUR: ")
    assert refreshed_packet(world, old).currency == "EUR"


def test_a_refreshed_packet_keeps_terms_lifetime_and_reason(world: World) -> None:
    terms = "free cancellation until 20 December"
    trip, old = world.approved(terms=terms, ttl=1.5)
    world.facts["price"] = "130"
    result = world.ledger.run(world.effect(trip, old))
    assert result.outcome is Outcome.NEEDS_APPROVAL
    fresh = refreshed_packet(world, old)
    assert fresh.terms == terms
    assert fresh.expires_at - fresh.created_at == 1.5  # the old packet's lifetime
    why = "the refreshed price 130 is above the approved 120"
    [invalidated] = [
        e
        for e in world.ledger.approvals.history(old.packet_id)
        if e.type is EventType.APPROVAL_INVALIDATED
    ]
    assert invalidated.message == why


def test_a_boundary_left_without_a_price_keeps_the_approved_ceiling(world: World) -> None:
    trip, old = world.approved()
    effect = replace(
        world.effect(trip, old), refresh=refresher(world, "session", availability=False)
    )
    result = world.ledger.run(effect)
    assert result.outcome is Outcome.NEEDS_APPROVAL
    assert result.reason is not None and result.reason.startswith("no longer available: ")
    fresh = refreshed_packet(world, old)
    assert fresh.amount is None
    assert fresh.ceiling == old.ceiling == Decimal("120")


def test_a_packet_that_changes_while_the_refresher_runs_is_left_to_the_user(
    world: World,
) -> None:
    """The intent gets a new version while the price is being read: the packet is voided
    meanwhile, so the refresh replaces nothing and the run says to look again."""
    trip, old = world.approved()
    world.facts["price"] = "130"
    read = world.refresher()

    def revised_meanwhile() -> list[Fact]:
        world.ledger.intents.revise(trip.intent_id, when="2026-12-25")
        return read()

    effect = replace(world.effect(trip, old), refresh=revised_meanwhile)
    result = world.ledger.run(effect)
    assert result.outcome is Outcome.REFUSED
    assert result.reason == "the approval changed meanwhile; look again"
    assert result.key == "" and result.status is None and result.attempt == 0
    now = world.ledger.approvals.get(old.packet_id)
    assert now.status is ApprovalStatus.VOIDED and now.replaced_by is None
    assert world.provider.count(str(trip.ref)) == 0


# --- a gated effect that already has a record --------------------------------------------


def declined(world: World, trip: Any, old: Packet) -> str:
    """A first attempt whose perform declined: ``failed`` (re-openable), approval released."""

    def decline() -> str:
        raise NotPerformed("the booking form was closed")

    first = world.ledger.run(world.effect(trip, old, perform=decline))
    assert first.outcome is Outcome.FAILED and first.attempt == 1
    assert world.ledger.approvals.get(old.packet_id).status is ApprovalStatus.APPROVED
    return first.key


def _price_up(world: World, effect: Any, old: Packet) -> Any:
    world.facts["price"] = "130"
    return effect


def _session_gone(world: World, effect: Any, old: Packet) -> Any:
    world.facts["session"] = False
    return effect


def _packet_gone(world: World, effect: Any, old: Packet) -> Any:
    return replace(effect, gate=replace(effect.gate, approval="no-such-packet"))


def _voided_meanwhile(world: World, effect: Any, old: Packet) -> Any:
    world.facts["price"] = "130"
    read = world.refresher()

    def revised() -> list[Fact]:
        world.ledger.intents.revise("trip", when="2026-12-25")
        return read()

    return replace(effect, refresh=revised)


@pytest.mark.parametrize(
    ("change", "outcome", "reason", "noted"),
    [
        (_price_up, Outcome.NEEDS_APPROVAL, "the refreshed price 130 is above", True),
        (_session_gone, Outcome.DEFERRED, "paused, nothing lost: the session expired", True),
        (_packet_gone, Outcome.REFUSED, "no approval packet no-such-packet", False),
        (_voided_meanwhile, Outcome.REFUSED, "the approval changed meanwhile", True),
    ],
    ids=["needs-approval", "deferred", "no-packet", "changed-meanwhile"],
)
def test_a_refresh_that_stops_a_retry_reports_the_failed_attempt(
    world: World,
    change: Callable[[World, Any, Packet], Any],
    outcome: Outcome,
    reason: str,
    noted: bool,
) -> None:
    """The retry of a declined attempt stops at its refresh: the result names the effect's
    record as it stands (the failed attempt 1), and the refresh is noted on it."""
    trip, old = world.approved()
    key = declined(world, trip, old)
    world.clock.advance(1)
    result_at = world.clock.now()
    result = world.ledger.run(change(world, world.effect(trip, old), old))
    assert result.outcome is outcome
    assert result.reason is not None and result.reason.startswith(reason)
    assert (result.key, result.status, result.attempt) == (key, Status.FAILED, 1)
    assert result.performed is False
    events = world.ledger.store.events(key)
    notes = [e for e in events if e.type is EventType.FACTS_REFRESHED and e.at == result_at]
    assert [e.fence for e in notes] == ([1] if noted else [])
    assert world.provider.count(str(trip.ref)) == 0


def test_a_refresh_error_is_scrubbed_of_the_effects_secrets(world: World) -> None:
    """A refresher's error that echoes a secret of the payload (invariant 8): the reason
    returned and the note stored carry the redaction, never the value."""
    trip, old = world.approved()
    canary = "tok-canary-5150"

    def down() -> list[Fact]:
        raise ConnectionError(f"the price service refused the session {canary}")

    effect = world.effect(trip, old)
    payload = {**effect.payload, "api_token": canary}
    result = world.ledger.run(replace(effect, payload=payload, refresh=down))
    assert result.outcome is Outcome.DEFERRED
    assert result.reason is not None and "the price service refused the session" in result.reason
    [note] = [
        e
        for e in world.ledger.store.events(world.key(trip).value)
        if e.type is EventType.FACTS_REFRESHED
    ]
    assert note.message is not None and "the price service refused" in note.message
    assert canary not in result.reason and canary not in note.message


# --- what a refused claim says, and where -----------------------------------------------------


def test_a_claim_waiting_for_its_approval_needs_approval_and_refuses_nothing(
    world: World,
) -> None:
    trip = world.intent()
    req = world.request(trip)  # not answered yet
    result = world.ledger.run(world.effect(trip, req.packet))
    assert result.outcome is Outcome.NEEDS_APPROVAL
    assert result.reason == f"waiting for ana to approve {req.packet.packet_id}"
    key = world.key(trip).value
    [refused] = [e for e in world.ledger.store.events(key) if e.type is EventType.CLAIM_REFUSED]
    assert refused.data == {"waiting": True}
    history = world.approval_events(req.packet.packet_id)
    assert EventType.APPROVAL_REFUSED.value not in history  # waiting is not a refusal


def test_a_claim_over_budget_is_refused_as_such(world: World) -> None:
    world.ledger.budgets.define("rooms", 1)
    trips = [world.intent(f"trip-{i}") for i in (1, 2)]
    results = []
    for trip in trips:
        effect = replace(world.effect(trip, world.approved(trip.intent_id)[1]), refresh=None)
        results.append(world.ledger.run(replace(effect, gate=Budgets.gate("rooms"))))
    assert [r.outcome for r in results] == [Outcome.COMPLETED, Outcome.OVER_BUDGET]
    assert results[1].reason is not None and "'rooms' is spent" in results[1].reason
    key = world.key(trips[1]).value
    [refused] = [e for e in world.ledger.store.events(key) if e.type is EventType.CLAIM_REFUSED]
    assert refused.message == results[1].reason and refused.data == {"waiting": False}


def test_a_refused_retry_reports_and_notes_the_failed_attempt(world: World) -> None:
    trip, old = world.approved()
    key = declined(world, trip, old)
    world.clock.advance(1)
    effect = replace(
        world.effect(trip, old),
        gate=Approvals.gate(old, amount="130"),
        refresh=refresher(world, "session"),
    )
    result = world.ledger.run(effect)
    assert result.outcome is Outcome.REFUSED
    assert result.reason == "130 is above the approved 120 EUR"
    assert (result.key, result.status, result.attempt) == (key, Status.FAILED, 1)
    [refused] = [e for e in world.ledger.store.events(key) if e.type is EventType.CLAIM_REFUSED]
    assert (refused.fence, refused.message) == (1, result.reason)
