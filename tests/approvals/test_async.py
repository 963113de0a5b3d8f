"""``AsyncLedger.intents`` / ``.approvals``: the same names, the same flow, awaited."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import pytest

from actonce import (
    Answered,
    Approvals,
    ApprovalStatus,
    AsyncApprovals,
    AsyncIntents,
    AsyncLedger,
    Effect,
    Fact,
    HoldKind,
    HoldStatus,
    Intent,
    Intents,
    Ledger,
    MemoryStore,
    Outcome,
    Policy,
    intent_key,
)
from actonce.testing import FakeProvider, FrozenClock

from .conftest import KEYS


def public(cls: type) -> set[str]:
    # "ǁ": the copies mutmut adds beside a mutated method (tests/mutants/areas.py)
    return {n for n in dir(cls) if not n.startswith("_") and "ǁ" not in n}


@pytest.mark.parametrize(("sync", "async_"), [(Intents, AsyncIntents), (Approvals, AsyncApprovals)])
def test_the_async_facades_have_the_same_names(sync: type, async_: type) -> None:
    assert public(sync) == public(async_)
    for name in public(sync) - {"keys", "gate"}:
        assert inspect.iscoroutinefunction(getattr(async_, name)), name
        sig, asig = inspect.signature(getattr(sync, name)), inspect.signature(getattr(async_, name))
        assert list(sig.parameters) == list(asig.parameters), name


def test_the_async_ledger_has_holds_too() -> None:
    assert "holds" in public(Ledger) and "holds" in public(AsyncLedger)


@pytest.fixture(params=["memory", "postgres"])
async def aledger(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[AsyncLedger, FrozenClock]]:
    clock = FrozenClock()
    if request.param == "memory":
        store: Any = MemoryStore()
    else:
        from actonce import AsyncPostgresStore

        dsn, schema = request.getfixturevalue("pg_schema")
        store = AsyncPostgresStore(dsn, schema=schema, create=True)
    ledger = AsyncLedger(store, clock=clock, signing_keys=KEYS)
    try:
        yield ledger, clock
    finally:
        await ledger.aclose()


async def test_the_main_flow_async(aledger: tuple[AsyncLedger, FrozenClock]) -> None:
    ledger, clock = aledger
    provider = FakeProvider(clock=clock)
    price = {"now": "110"}
    trip = await ledger.intents.put(
        Intent("trip", "booking", user="ana", provider="Hotel Ibis", when="2026-12-24",
               price_ceiling=Decimal(120), currency="EUR")
    )  # fmt: skip
    assert [r.intent for r in await ledger.intents.list()] == [trip]
    key = intent_key(trip, "book", tenant="t", actor="agent")
    req = await ledger.approvals.request(
        trip, "book", key, amount="110", facts=[Fact("price", "110", clock.now())]
    )

    async def book() -> str:
        return provider.submit("trip", {"amount": price["now"]})

    async def verify() -> Any:
        return provider.lookup("trip")

    async def refresh() -> list[Fact]:
        return [Fact("price", price["now"], clock.now()), Fact("session", True, clock.now())]

    def effect(packet: Any) -> Effect:
        return Effect(key=key, kind="book", payload={"v": packet.intent.version}, perform=book,
                      verify=verify, gate=ledger.approvals.gate(packet), refresh=refresh,
                      policy=Policy(settle_seconds=0, absence_authoritative=True,
                                    verify_attempts=1))  # fmt: skip

    assert (await ledger.run(effect(req.packet))).outcome is Outcome.NEEDS_APPROVAL
    assert (await ledger.approvals.answer_code(req.code, "approve", by="ana")).answer is (
        Answered.ACCEPTED
    )
    again = await ledger.approvals.answer_link(req.link, "approve", by="ana")
    assert again.answer is Answered.SAME
    price["now"] = "135"  # the price moved while the user answered
    stale = await ledger.run(effect(req.packet))
    assert stale.outcome is Outcome.NEEDS_APPROVAL
    fresh_id = (await ledger.approvals.get(req.packet.packet_id)).replaced_by
    assert fresh_id is not None
    resent = await ledger.approvals.resend(fresh_id)
    await ledger.approvals.answer_code(resent.code, "approve", by="ana")
    done = await ledger.run(effect(resent.packet))
    assert done.outcome is Outcome.COMPLETED and provider.count("trip") == 1
    assert (await ledger.run(effect(resent.packet))).outcome is Outcome.SKIPPED
    holds = await ledger.holds(key.value)
    assert [(h.kind, h.ref, h.status) for h in holds if h.kind is HoldKind.APPROVAL] == [
        (HoldKind.APPROVAL, fresh_id, HoldStatus.CONSUMED)
    ]
    statuses = [p.status for p in await ledger.approvals.list(key=key)]
    assert statuses == [ApprovalStatus.INVALIDATED, ApprovalStatus.CONSUMED]
    history = [e.type.value for e in await ledger.approvals.history(fresh_id)]
    assert history[0] == "approval_requested" and history[-1] == "approval_consumed"
    rev = await ledger.intents.revise("trip", when="2026-12-26")
    assert rev.material and rev.intent.version == 2
    assert [r.intent.version for r in await ledger.intents.chain("trip")] == [1, 2]
    assert len(await ledger.intents.history("trip")) == 2
    assert (await ledger.approvals.answer(req.packet.packet_id, "deny", by="ana")).answer is (
        Answered.REFUSED
    )
    provider.close()
