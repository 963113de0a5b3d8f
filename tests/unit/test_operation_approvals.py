"""An operation keeps its steps when its approval is refreshed.

Seed 004's stale price: the refresh before the commit finds the total above
the approved ceiling, invalidates the packet and issues a refreshed one; the
user approves the refreshed packet; the same operation (same steps, same
keys) then commits under it. The operation's definition is its steps — the
packet that authorizes the commit may be replaced, and the receipt names the
packet that did authorize it (the newest of the chain).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from actonce import (
    ApprovalStatus,
    Effect,
    Gate,
    Intent,
    Ledger,
    Operation,
    OperationState,
    Outcome,
    Policy,
    SigningKeys,
    Step,
    intent_key,
)
from actonce.testing import FakeProvider, FrozenClock, MemoryStore

POLICY = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1)
KEYS = SigningKeys.parse("test:" + "ab" * 16)


def _world() -> tuple[Ledger, FakeProvider, Intent]:
    clock = FrozenClock()
    ledger = Ledger(MemoryStore(), clock=clock, signing_keys=KEYS)
    intent = ledger.intents.put(
        Intent("trip", "booking", user="ana", price_ceiling=Decimal("250"), currency="EUR")
    )
    return ledger, FakeProvider(clock=clock), intent


def _steps(provider: FakeProvider, intent: Intent, packet: str, price: dict[str, str]) -> Any:
    key = intent_key(intent, "pay", tenant="t", actor="ana")
    pay = Effect(
        key,
        "pay",
        {"trip": "trip"},
        lambda: provider.submit("pay"),
        lambda: provider.lookup("pay"),
        policy=POLICY,
        gate=Gate(intent.ref, packet, Decimal("240")),
        refresh=lambda: dict(price),
    )
    return key, [Step("pay", pay, "pivot")]


def test_a_refreshed_packet_authorizes_the_same_operation() -> None:
    ledger, provider, intent = _world()
    price = {"total": "240"}
    key, _ = _steps(provider, intent, "-", price)
    first = ledger.approvals.request(intent, "pay", key, amount="240", ceiling="250")
    ledger.approvals.answer_link(first.link, "approve", by="ana")
    price["total"] = "260"  # the price rose after the approval, above the ceiling
    _, steps = _steps(provider, intent, first.packet.packet_id, price)
    stale = Operation(ledger, "op", steps, intent=intent.ref, approval=first.packet.packet_id)
    result = stale.run()
    assert result.runs[0][1].outcome is Outcome.NEEDS_APPROVAL
    assert provider.accepted() == {}  # no commit under the old packet
    old = ledger.approvals.get(first.packet.packet_id)
    assert old.status is ApprovalStatus.INVALIDATED and old.replaced_by is not None
    ledger.approvals.answer(old.replaced_by, "approve", by="ana")

    # The same operation, its pay step now gated by the refreshed packet.
    _, steps = _steps(provider, intent, old.replaced_by, price)
    again = Operation(ledger, "op", steps, intent=intent.ref, approval=old.replaced_by)
    done = again.run()
    assert done.state is OperationState.COMPLETE
    assert provider.accepted() == {"pay": 1}
    receipt = ledger.receipt("op")
    assert receipt is not None
    assert receipt.data["approval"]["packet_id"] == old.replaced_by
    assert receipt.data["approval"]["status"] == "consumed"
    assert receipt.data["approval"]["revision"] == 2


def test_the_receipt_follows_the_packet_chain_to_the_one_that_authorized() -> None:
    ledger, provider, intent = _world()
    price = {"total": "240"}
    key, _ = _steps(provider, intent, "-", price)
    first = ledger.approvals.request(intent, "pay", key, amount="240", ceiling="250")
    ledger.approvals.answer_link(first.link, "approve", by="ana")
    price["total"] = "255"
    _, steps = _steps(provider, intent, first.packet.packet_id, price)
    Operation(ledger, "op2", steps, intent=intent.ref, approval=first.packet.packet_id).run()
    fresh = ledger.approvals.get(first.packet.packet_id).replaced_by
    assert fresh is not None
    ledger.approvals.answer(fresh, "approve", by="ana")
    # An agent that only remembers the first packet names it; the gate uses the new one.
    _, steps = _steps(provider, intent, fresh, price)
    Operation(ledger, "op2", steps, intent=intent.ref, approval=first.packet.packet_id).run()
    receipt = ledger.receipt("op2")
    assert receipt is not None and receipt.state is OperationState.COMPLETE
    assert receipt.data["approval"]["packet_id"] == fresh
