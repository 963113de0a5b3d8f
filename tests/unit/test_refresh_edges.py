"""The approval refresh right before a gated claim, pinned field by field (issue 7).

Mutation testing found the refresh's outcomes unpinned by the fast suite:
the refreshed packet's fields, the reasons, the retry of a failing
refresher. Memory store, frozen clock, the approvals world of
``tests/approvals`` (public API only).
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from actonce import ApprovalStatus, EventType, Fact, Outcome, Policy
from approvals.conftest import World, mem_world  # noqa: F401 (a fixture)


@pytest.fixture
def world(mem_world: World) -> World:  # noqa: F811 (the approvals world, memory store)
    return mem_world


def refreshed_notes(world: World, key: str) -> list[Any]:
    return [e for e in world.ledger.store.events(key) if e.type is EventType.FACTS_REFRESHED]


def test_a_price_above_the_ceiling_issues_a_refreshed_packet(world: World) -> None:
    trip, old = world.approved()
    world.facts["price"] = "130"  # above the approved ceiling of 120
    world.clock.advance(7)
    result = world.ledger.run(world.effect(trip, old))
    assert result.outcome is Outcome.NEEDS_APPROVAL
    now = world.ledger.approvals.get(old.packet_id)
    assert now.status is ApprovalStatus.INVALIDATED and now.replaced_by is not None
    fresh = world.ledger.approvals.get(now.replaced_by)
    assert (fresh.revision, fresh.replaces) == (old.revision + 1, old.packet_id)
    assert fresh.amount == fresh.ceiling == Decimal("130")
    assert fresh.status is ApprovalStatus.PENDING
    assert (fresh.intent, fresh.action, fresh.effect_key) == (
        old.intent,
        old.action,
        old.effect_key,
    )
    assert (fresh.user, fresh.destination, fresh.currency) == (
        old.user,
        old.destination,
        old.currency,
    )
    assert (fresh.details, fresh.terms) == (old.details, old.terms)
    assert fresh.created_at == world.clock.now()
    assert fresh.expires_at - fresh.created_at == old.expires_at - old.created_at
    assert {f.name: f.value for f in fresh.facts}["price"] == "130"
    why = "the refreshed price 130 is above the approved 120"
    assert result.reason == (
        f"{why}: approval {old.packet_id} invalidated, refreshed packet {fresh.packet_id} "
        "issued for approval"
    )
    [note] = refreshed_notes(world, world.key(trip).value)
    assert note.message == why
    assert note.data["packet"] == old.packet_id
    assert {f["name"] for f in note.data["facts"]} >= {"price", "session"}
    assert world.provider.count(str(trip.ref)) == 0


def test_a_price_within_the_ceiling_commits_at_the_refreshed_amount(world: World) -> None:
    trip, old = world.approved()
    world.facts["price"] = "115"
    result = world.ledger.run(world.effect(trip, old))
    assert result.outcome is Outcome.COMPLETED
    [note] = refreshed_notes(world, world.key(trip).value)
    assert note.message == "within the approved boundary"
    assert {f["name"]: f["value"] for f in note.data["facts"]}["price"] == "115"
    assert world.ledger.approvals.get(old.packet_id).status is ApprovalStatus.CONSUMED


def test_an_expired_session_pauses_and_loses_nothing(world: World) -> None:
    trip, old = world.approved()
    world.facts["session"] = False
    result = world.ledger.run(world.effect(trip, old))
    assert result.outcome is Outcome.DEFERRED
    assert result.reason == "paused, nothing lost: the session expired: sign in again, then resume"
    assert world.ledger.approvals.get(old.packet_id).status is ApprovalStatus.APPROVED
    assert world.ledger.get(world.key(trip).value) is None


def test_a_failing_refresher_is_asked_again_then_pauses_with_its_error(world: World) -> None:
    trip, old = world.approved()
    calls: list[float] = []
    good = world.refresher()

    def flaky() -> list[Fact]:
        calls.append(world.clock.now())
        if len(calls) < 3:
            raise ConnectionError("price service down")
        return good()

    policy = Policy(
        settle_seconds=0, absence_authoritative=True, verify_attempts=3, verify_backoff=1
    )
    effect = replace(world.effect(trip, old, policy=policy), refresh=flaky)
    assert world.ledger.run(effect).outcome is Outcome.COMPLETED
    assert len(calls) == 3 and calls[1] - calls[0] == 1 and calls[2] - calls[1] == 2  # backoff
    calls.clear()
    trip2, packet2 = world.approved("trip-2")

    def down() -> list[Fact]:
        calls.append(world.clock.now())
        raise ConnectionError("price service down")

    again = replace(world.effect(trip2, packet2, policy=policy), refresh=down)
    result = world.ledger.run(again)
    assert len(calls) == 3
    assert result.outcome is Outcome.DEFERRED
    assert result.reason is not None
    assert result.reason.startswith("paused, nothing lost: the facts could not be refreshed")
    assert "price service down" in result.reason
    [note] = refreshed_notes(world, world.key(trip2).value)
    assert note.data["facts"] is None


def test_a_missing_packet_is_refused(world: World) -> None:
    trip, old = world.approved()
    effect = world.effect(trip, old)
    assert effect.gate is not None
    gone = replace(effect, gate=replace(effect.gate, approval="no-such-packet"))
    result = world.ledger.run(gone)
    assert result.outcome is Outcome.REFUSED
    assert result.reason == "no approval packet no-such-packet"


# --- a refused claim: what it says, where ---------------------------------------------------


def test_a_claim_refused_by_its_approval_is_recorded_on_both_sides(world: World) -> None:
    trip = world.intent()
    req = world.request(trip)
    world.ledger.approvals.answer(req.packet.packet_id, "deny", by="ana")
    key = world.key(trip).value
    result = world.ledger.run(world.effect(trip, req.packet))
    assert result.outcome is Outcome.REFUSED and result.status is None
    assert result.reason is not None
    [refused] = [e for e in world.ledger.store.events(key) if e.type is EventType.CLAIM_REFUSED]
    assert refused.message == result.reason and refused.data == {"waiting": False}
    assert refused.at == world.clock.now()
    [note] = [
        e
        for e in world.ledger.approvals.history(req.packet.packet_id)
        if e.type is EventType.APPROVAL_REFUSED
    ]
    assert note.data == {"via": "claim", "effect_key": key}
    assert note.message == f"a claim of {key[:16]} under it was refused: {result.reason}"
    assert note.fence == 0 and note.at == world.clock.now()
    assert note.run_id == refused.run_id


def test_a_refresh_s_words_keep_no_secret_of_the_effect(world: World) -> None:
    """A refresher's error that quotes a secret of the effect's payload (one no detector
    knows by its shape): the refresh's note and the run's reason name it redacted."""
    trip, old = world.approved()
    secret = "Zx9-unguessable-77"

    def leaky() -> list[Fact]:
        raise ConnectionError(f"the page still showed {secret} after the reload")

    policy = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1)
    effect = world.effect(trip, old, policy=policy)
    effect = replace(effect, payload={**effect.payload, "password": secret}, refresh=leaky)
    result = world.ledger.run(effect)
    assert result.outcome is Outcome.DEFERRED
    shown = "ConnectionError: the page still showed [redacted] after the reload"
    assert result.reason is not None and result.reason.endswith(shown)
    [note] = refreshed_notes(world, world.key(trip).value)
    assert note.message is not None and note.message.endswith(shown)
    assert secret not in repr(world.ledger.store.events(world.key(trip).value))
