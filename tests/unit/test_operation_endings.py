"""A superseded version ends, and a dropped notification is driven to the end.

A material change to an intent closes the old version in the revision's own
transaction: its operations are withdrawn (no unstarted step runs any more,
their verified steps are undone by the next pass) and each gets a receipt
that says so at once. A person may withdraw a version the same way.

A notification that was not delivered is sent again after its backoff,
under its own key, by the operator loop and by reconcile (not by luck),
until it is delivered or given up with its reason; the receipt says what is
true when it is read.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from actonce import (
    Effect,
    EventType,
    Gate,
    Hooks,
    Intent,
    IntentRef,
    Ledger,
    NotPerformed,
    Operation,
    OperationState,
    Operator,
    Policy,
    SigningKeys,
    Step,
    intent_key,
)
from actonce._rules.operations import Next
from actonce.testing import FakeProvider, FrozenClock, MemoryStore

POLICY = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1)
KEYS = SigningKeys.parse("t:" + "cd" * 16)


class World:
    def __init__(self) -> None:
        self.clock = FrozenClock()
        self.provider = FakeProvider(clock=self.clock)
        self.ledger = Ledger(MemoryStore(), clock=self.clock, signing_keys=KEYS)
        self.drops = 0  # notifications the gateway drops, from now on
        self.intent = self.ledger.intents.put(
            Intent("trip", "booking", user="ana", provider="Harbor Hotel", items=("double",),
                   when="2030-05-01", price_ceiling=Decimal("250"), currency="EUR")
        )  # fmt: skip

    def effect(self, ref: IntentRef, name: str, gate: Gate | None) -> Effect:
        def perform() -> None:
            if name == "notify" and self.drops:
                self.drops -= 1
                raise NotPerformed("the gateway dropped the message")
            self.provider.submit(f"{ref}-{name}")

        return Effect(
            intent_key(ref, name, tenant="t", actor="ana"), name, {"n": name},
            perform, lambda: self.provider.lookup(f"{ref}-{name}"), policy=POLICY, gate=gate,
        )  # fmt: skip

    def steps(self, ref: IntentRef, packet: str | None = None) -> list[Step]:
        current = Gate(intent=ref)
        pay_gate = Gate(ref, packet, Decimal("240")) if packet else current
        e = self.effect
        return [
            Step("hold", e(ref, "hold", current), "compensatable", undo=e(ref, "release", None)),
            Step("pay", e(ref, "pay", pay_gate), "compensatable", undo=e(ref, "void", None)),
            Step("book", e(ref, "book", current), "pivot"),
            Step("notify", e(ref, "notify", current), "retriable", attempts=3, backoff=30),
        ]

    def operation(self, ref: IntentRef, packet: str | None = None) -> Operation:
        steps = self.steps(ref, packet)
        return Operation(self.ledger, f"booking:{ref}", steps, intent=ref, approval=packet)

    def waiting_for_approval(self) -> tuple[Operation, str]:
        """v1's hold is made; its payment waits for the user's approval."""
        key = intent_key(self.intent, "pay", tenant="t", actor="ana")
        packet = self.ledger.approvals.request(self.intent, "pay", key, amount="240").packet
        op = self.operation(self.intent.ref, packet.packet_id)
        first = op.run()
        assert first.state is OperationState.IN_PROGRESS
        assert [(n, r.outcome.value) for n, r in first.runs] == [
            ("hold", "completed"), ("pay", "needs_approval"),
        ]  # fmt: skip
        return op, packet.packet_id


def test_a_revision_closes_the_old_version_in_its_own_transaction() -> None:
    w = World()
    op, packet = w.waiting_for_approval()
    revision = w.ledger.intents.revise("trip", when="2030-06-01")
    assert revision.operations == ("booking:trip@v1",) and packet in revision.voided
    # Closed at once, nothing run yet: the withdrawal is a decision on record.
    view = w.ledger.operations.get("booking:trip@v1")
    assert view.closed and view.assessment.next is Next.UNDO and view.step == "hold"
    d = view.decisions[0]
    assert (d.decision.value, d.by, d.reason) == (
        "withdraw", "system", "trip@v1 superseded by v2",
    )  # fmt: skip
    # The old version has a receipt right away, and says what becomes of it.
    stored = [r for r, _ in w.ledger.receipts() if r.operation_id == "booking:trip@v1"]
    assert stored and stored[0].text.splitlines()[0] == (
        "Your booking with Harbor Hotel (double, 2030-05-01) was withdrawn (trip@v1 superseded "
        "by v2); what was done is being undone."
    )
    assert w.ledger.operations.due() == ["booking:trip@v1"]  # its undo is queued
    # The next pass undoes the hold and runs nothing unstarted.
    done = op.run()
    assert [n for n, _ in done.runs] == ["undo hold"]
    assert done.state is OperationState.COMPENSATED
    assert w.ledger.get(intent_key(w.intent, "pay", tenant="t", actor="ana").value) is None
    assert "trip@v1-pay" not in w.provider.accepted()
    receipt = w.ledger.receipt("booking:trip@v1")
    assert receipt is not None and receipt.data["user"]["outcome"] == "withdrawn"
    assert "hold (obj-1), then undone" in receipt.text
    assert w.ledger.operations.due() == [] and op.run().runs == ()


def test_a_person_withdraws_a_version_the_same_way_and_once() -> None:
    w = World()
    op, packet = w.waiting_for_approval()
    closed = w.ledger.intents.withdraw("trip", by="ana", reason="we stay home")
    assert closed.operations == ("booking:trip@v1",) and closed.voided == (packet,)
    assert w.ledger.approvals.get(packet).status.value == "voided"
    again = w.ledger.intents.withdraw("trip", 1, by="ana", reason="we stay home")
    assert again.operations == () and again.voided == ()  # nothing left to close
    assert op.run().state is OperationState.COMPENSATED
    receipt = w.ledger.receipt("booking:trip@v1")
    assert receipt is not None
    assert "was withdrawn (trip@v1 withdrawn by ana: we stay home)" in receipt.text


def test_an_operation_withdrawn_before_its_first_pass_runs_nothing() -> None:
    w = World()
    op = w.operation(w.intent.ref)
    view = op.withdraw(by="agent", reason="its approval expired")
    assert view.closed and view.state is OperationState.COMPENSATED
    assert op.run().runs == () and w.provider.accepted() == {}


class Notifier(Hooks[str]):
    """An operator whose only work here is its operations' due work."""

    def __init__(self, ops: dict[str, Operation]) -> None:
        self.ops = ops

    def observe(self) -> list[str]:
        return []

    def plan(self, candidate: str) -> Any:
        return None

    def resume(self, op_id: str) -> Operation | None:
        return self.ops.get(op_id)


def _complete_with_a_dropped_message(w: World, drops: int) -> Operation:
    w.drops = drops
    key = intent_key(w.intent, "pay", tenant="t", actor="ana")
    req = w.ledger.approvals.request(w.intent, "pay", key, amount="240")
    w.ledger.approvals.answer(req.packet.packet_id, "approve", by="ana")
    op = w.operation(w.intent.ref, req.packet.packet_id)
    result = op.run()
    assert result.state is OperationState.COMPLETE and w.drops == drops - 1
    return op


def _exceptions(w: World) -> str:
    receipt = w.ledger.receipt("booking:trip@v1")
    assert receipt is not None
    return next(line for line in receipt.text.splitlines() if line.startswith("Exceptions: "))


def test_the_operator_loop_sends_a_dropped_message_again_after_its_backoff() -> None:
    w = World()
    op = _complete_with_a_dropped_message(w, drops=1)
    assert _exceptions(w) == (
        "Exceptions: the notify message is not delivered yet: it is sent again (attempt 2 of 3)."
    )
    operator = Operator(w.ledger, "trips", Notifier({op.op_id: op}), kinds=("notify",))
    early = operator.run()
    assert early.operations == {"in_review": 0}  # not due yet: its backoff runs
    assert "trip@v1-notify" not in w.provider.accepted()
    w.clock.advance(30)
    summary = operator.run()
    assert summary.operations == {"complete": 1, "in_review": 0}
    assert "operations 0 in review; driven 1 (complete 1)" in summary.lines()
    assert w.provider.accepted()["trip@v1-notify"] == 1
    assert _exceptions(w) == "Exceptions: none."  # true when read
    assert w.ledger.operations.due() == []


def test_reconcile_drives_a_message_until_it_is_given_up_with_its_reason() -> None:
    w = World()
    op = _complete_with_a_dropped_message(w, drops=3)
    mine = {op.op_id: op}
    sends = []
    for wait in (30, 60):  # 30 s after the 1st failure, 60 s after the 2nd
        assert w.ledger.reconcile(resume=mine.get).operations == ()  # not yet
        w.clock.advance(wait)
        sends.append(w.ledger.reconcile(resume=mine.get).operations)
    assert sends == [(("booking:trip@v1", "complete"),)] * 2
    notify = w.ledger.get(intent_key(w.intent, "notify", tenant="t", actor="ana").value)
    assert notify is not None and (notify.status.value, notify.fence) == ("failed", 3)
    assert _exceptions(w) == (
        "Exceptions: the notify message could not be delivered after 3 attempts (the last: "
        "perform stopped before the boundary, nothing was performed: NotPerformed: the "
        "gateway dropped the message); nothing more is sent."
    )
    receipt = w.ledger.receipt(op.op_id)
    assert receipt is not None and receipt.data["notification"] == "given up"
    assert "notify given up after 3 attempts" in receipt.data["reason"]
    w.clock.advance(10_000)
    assert w.ledger.operations.due() == [] and w.ledger.reconcile(resume=mine.get).operations == ()
    events = [e for e in w.ledger.events(notify.key) if e.type is EventType.EXECUTING]
    assert len(events) == 3  # three sends under the one key, never more


async def test_the_async_operator_drives_its_operations_the_same_way() -> None:
    from actonce import AsyncHooks, AsyncLedger, AsyncOperation, AsyncOperator

    w = World()
    op = _complete_with_a_dropped_message(w, drops=1)
    ledger = AsyncLedger(w.ledger.store, clock=w.clock)
    packet = op.plan.approval
    again = AsyncOperation(ledger, op.op_id, w.steps(w.intent.ref, packet), intent=w.intent.ref,
                           approval=packet)  # fmt: skip

    class AsyncNotifier(AsyncHooks[str]):
        async def observe(self) -> list[str]:
            return []

        async def plan(self, candidate: str) -> Any:
            return None

        async def resume(self, op_id: str) -> AsyncOperation | None:
            return again if op_id == op.op_id else None

    w.clock.advance(30)
    summary = await AsyncOperator(ledger, "trips", AsyncNotifier(), kinds=("notify",)).run()
    assert summary.operations == {"complete": 1, "in_review": 0}
    assert w.provider.accepted()["trip@v1-notify"] == 1
