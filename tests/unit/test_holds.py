"""``Ledger.holds``: what a gated claim holds, and what the verdict did to it."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from decimal import Decimal

import pytest

from actonce import (
    Approvals,
    AsyncLedger,
    Fact,
    Hold,
    HoldKind,
    HoldStatus,
    Intent,
    Ledger,
    Policy,
    SigningKeys,
    Status,
    Store,
    UnknownEffect,
)
from actonce.testing import FakeProvider, FrozenClock

KEYS = SigningKeys((("k1", b"k" * 32),))


def _gated_in_review(ledger: Ledger, provider: FakeProvider, clock: FrozenClock) -> str:
    intent = ledger.intents.put(
        Intent("trip-1", "booking", user="ana", price_ceiling=Decimal("120"), currency="EUR")
    )
    effect = provider.effect("BOOK-1", kind="book", policy=Policy(settle_seconds=1.0))
    asked = ledger.approvals.request(
        intent, "book", effect.key, destination="Hotel", amount="110", currency="EUR",
        facts=[Fact("price", "110", observed_at=clock.now())],
    )  # fmt: skip
    ledger.approvals.answer(asked.packet.packet_id, "approve", by="ana")
    provider.faults.fail_before_commit = 1.0  # absence that proves nothing: review
    result = ledger.run(replace(effect, gate=Approvals.gate(asked.packet)))
    assert result.status is Status.NEEDS_REVIEW
    return str(effect.key)


def test_holds_follow_the_verdict(store: Store, clock: FrozenClock, provider: FakeProvider) -> None:
    ledger = Ledger(store, clock=clock, signing_keys=KEYS)
    key = _gated_in_review(ledger, provider, clock)
    held = ledger.holds(key[:10])
    assert {(h.kind, h.status) for h in held} == {
        (HoldKind.APPROVAL, HoldStatus.HELD),
        (HoldKind.INTENT, HoldStatus.HELD),
    }
    assert all(isinstance(h, Hold) and h.fence == 1 for h in held)
    assert next(h for h in held if h.kind is HoldKind.INTENT).ref == "trip-1@v1"
    assert next(h for h in held if h.kind is HoldKind.APPROVAL).amount == Decimal("1")
    ledger.resolve(key, "not_happened", reviewer="bo", reason="not at the provider")
    assert {h.status for h in ledger.holds(key)} == {HoldStatus.RELEASED}

    async def read() -> list[Hold]:
        aledger = AsyncLedger(store, clock=clock)
        try:
            return await aledger.holds(key)
        finally:
            await aledger.aclose()  # closes the store too: read it last

    expected = ledger.holds(key)
    assert asyncio.run(read()) == expected


def test_an_effect_never_gated_holds_nothing(
    store: Store, clock: FrozenClock, provider: FakeProvider
) -> None:
    ledger = Ledger(store, clock=clock)
    effect = provider.effect("PLAIN-1")
    ledger.run(effect)
    assert ledger.holds(str(effect.key)) == []
    with pytest.raises(UnknownEffect):
        ledger.holds("no-such-effect")
