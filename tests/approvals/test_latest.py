"""``ledger.approvals.latest``: the packet a commit runs under once a refresh replaced one."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from actonce import (
    Absent,
    ApprovalStatus,
    AsyncLedger,
    Gate,
    MemoryStore,
    Outcome,
    UsageError,
    effect_key,
)
from actonce.browser import as_effect

from .conftest import KEYS, World


def test_latest_follows_the_replacements_and_its_ceiling_is_the_one_that_counts(
    world: World,
) -> None:
    trip = world.intent()  # price ceiling 120
    req = world.request(trip)
    first = req.packet.packet_id
    assert world.ledger.approvals.latest(first) == world.ledger.approvals.get(first)
    world.ledger.approvals.answer(first, "approve", by="ana")
    world.facts["price"] = "130"  # above the approved ceiling: a refreshed packet
    assert world.ledger.run(world.effect(trip, first)).outcome is Outcome.NEEDS_APPROVAL
    newest = world.ledger.approvals.latest(first)
    assert newest.packet_id == world.ledger.approvals.get(first).replaced_by
    assert (newest.revision, newest.ceiling, newest.status) == (
        2,
        Decimal("130"),
        ApprovalStatus.PENDING,
    )
    world.ledger.approvals.answer(newest.packet_id, "approve", by="ana")
    world.facts["price"] = "140"  # and again: revision 3
    assert world.ledger.run(world.effect(trip, newest)).outcome is Outcome.NEEDS_APPROVAL
    third = world.ledger.approvals.latest(first)
    assert third.revision == 3 and third.ceiling == Decimal("140")
    assert world.ledger.approvals.latest(newest.packet_id) == third  # from the middle too
    world.ledger.approvals.answer(third.packet_id, "approve", by="ana")
    # Gated by the newest packet, the commit reaches its ceiling, above the intent's 120.
    done = world.ledger.run(world.effect(trip, world.ledger.approvals.latest(first)))
    assert done.outcome is Outcome.COMPLETED, done.reason
    assert world.provider.count(str(trip.ref)) == 1


def test_latest_of_an_unknown_packet_is_refused(world: World) -> None:
    with pytest.raises(UsageError, match="no approval packet"):
        world.ledger.approvals.latest("apv-nope")


def test_the_async_twin_has_the_same_name() -> None:
    async def go() -> None:
        ledger = AsyncLedger(MemoryStore(), signing_keys=KEYS)
        try:
            with pytest.raises(UsageError, match="no approval packet"):
                await ledger.approvals.latest("apv-nope")
        finally:
            await ledger.aclose()

    asyncio.run(go())


def test_as_effect_refuses_a_refresh_without_an_approval_gate() -> None:
    key = effect_key(tenant="t", actor="a", kind="pay", object="o", operation="pay")
    for gate in (None, Gate(intent=None)):
        with pytest.raises(UsageError, match=r"as_effect\(refresh=...\) needs gate="):
            as_effect(object(), key, gate=gate, refresh=lambda: [Absent()])  # type: ignore[arg-type]
