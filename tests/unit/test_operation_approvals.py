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


# --- a pass looks again at its steps in flight -------------------------------------------


def _four_steps(provider: FakeProvider, flags: dict[str, bool]) -> list[Step]:
    def effect(name: str) -> Effect:
        def perform() -> None:
            if flags.get(f"{name}_refused"):
                from actonce import NotPerformed

                raise NotPerformed(f"the provider refused the {name}")
            provider.submit(name)
            if name == "pay" and flags.get("lose"):
                flags["lookup_down"] = True  # and the lookup goes down with it
                raise TimeoutError("the payment's answer was lost")

        def verify() -> Any:
            if name == "pay" and flags.get("lookup_down"):
                from actonce import Unavailable

                return Unavailable("the payment lookup is down")
            return provider.lookup(name)

        return Effect(f"k-{name}", "step", {"n": name}, perform, verify, policy=POLICY)

    return [
        Step("hold", effect("hold"), "compensatable", undo=effect("release")),
        Step("pay", effect("pay"), "compensatable", undo=effect("void")),
        Step("book", effect("book"), "pivot"),
        Step("notify", effect("notify"), "retriable"),
    ]


def test_a_later_pass_reconciles_an_unknown_step_before_going_on() -> None:
    ledger, provider, _ = _world()
    flags = {"lose": True}
    first = Operation(ledger, "op3", _four_steps(provider, flags)).run()
    assert first.state is OperationState.NEEDS_REVIEW  # the payment is in doubt
    assert ledger.get("k-pay").status.value == "unknown"  # type: ignore[union-attr]
    flags.update(lose=False, lookup_down=False)  # the lookup answers again
    again = Operation(ledger, "op3", _four_steps(provider, flags)).run()
    assert again.state is OperationState.COMPLETE
    # Verified, never resubmitted: one payment at the provider.
    assert provider.accepted() == {"hold": 1, "pay": 1, "book": 1, "notify": 1}
    assert [n for n, _ in again.runs] == ["reconcile pay", "book", "notify"]


def test_a_replacement_verifies_a_dead_workers_step_instead_of_waiting() -> None:
    from actonce.testing import SimulatedCrash, crash_at

    ledger, provider, _ = _world()
    flags: dict[str, bool] = {}
    try:
        with crash_at("after_perform", nth=2):  # the worker dies after submitting the payment
            Operation(ledger, "op4", _four_steps(provider, flags)).run()
    except SimulatedCrash:
        pass
    assert ledger.get("k-pay").status.value == "executing"  # type: ignore[union-attr]
    replacement = Operation(ledger, "op4", _four_steps(provider, flags)).run()
    assert replacement.state is OperationState.COMPLETE
    assert provider.accepted() == {"hold": 1, "pay": 1, "book": 1, "notify": 1}
    assert replacement.runs[0][0] == "reconcile pay"
    assert replacement.runs[0][1].performed is False


def test_a_withdrawn_operation_says_so_and_not_that_a_step_failed() -> None:
    from actonce import Role, Status
    from actonce._rules.operations import StepState, assess

    # The hold was made and released (the intent changed); nothing else ran.
    steps = [
        StepState("hold", Role.COMPENSATABLE, Status.CONFIRMED, 1, 1, Status.CONFIRMED, True),
        StepState("pay", Role.COMPENSATABLE, None, 0, 1, None, True),
        StepState("book", Role.PIVOT),
        StepState("notify", Role.RETRIABLE),
    ]
    a = assess(steps)
    assert a.state is OperationState.COMPENSATED
    assert "book" not in a.reason and a.reason == "withdrawn before pay; undone"
    # A step that did fail is still named.
    steps[1] = StepState("pay", Role.COMPENSATABLE, Status.FAILED, 1, 1, None, True)
    assert assess(steps).reason == "pay failed; undone"


def test_a_refused_undo_is_named_in_the_escalation_receipt() -> None:
    ledger, provider, _ = _world()
    flags = {"book_refused": True, "void_refused": True}
    result = Operation(ledger, "op5", _four_steps(provider, flags)).run()
    assert result.state is OperationState.NEEDS_REVIEW
    receipt = ledger.receipt("op5")
    assert receipt is not None
    assert "pay (obj-2), its undo was refused: it still stands" in receipt.text
    assert "A person checks what is not known or not undone and decides" in receipt.text
    assert receipt.data["not_undone"] == ["pay"]
