"""The operation protocol: run the steps of a multi-step operation, as a generator.

Theory of operation. Each pass reads every step's effect (and undo effect)
from the ledger, asks :func:`actonce._rules.operations.assess` what to do,
and runs that one effect under the effect protocol (``RunEffect``: the
driver nests ``run_effect`` with the step's own callables). It goes on while
each move ends settled (``completed``, ``skipped``, ``failed``); any run that
ends in doubt or waits (``needs_review``, ``deferred``, ``needs_approval``,
``refused``, ``over_budget``, ``hard_stop``) ends the pass: the next pass, or
a human, takes it from there. The state is never stored; a receipt is
written whenever the operation stands still in a state worth one (complete,
compensated, abandoned, in review), from the ledger alone.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass, replace
from typing import Any, ClassVar, TypeVar

from .._rules.errors import UsageError
from .._rules.intents import IntentRef, IntentStatus
from .._rules.model import EffectRecord, Event, Outcome, RunResult, Status
from .._rules.operations import Assessment, Next, OperationState, Role, StepState, assess
from .._rules.receipts import Receipt, StepView, build_receipt
from .._store.records import IntentRow
from .callables import Callables
from .ops import NOW, Events, Get, Op, RunEffect, StoreOp, Tick
from .plan import Plan

__all__ = [
    "OperationPlan",
    "OperationResult",
    "StepPlan",
    "operation_of",
    "receipt_of",
    "run_operation",
    "stored_receipt",
    "stored_receipts",
]

T = TypeVar("T")
Gen = Generator[Op, Any, T]

#: Outcomes after which a pass goes on to the next move.
_SETTLED = frozenset({Outcome.COMPLETED, Outcome.SKIPPED, Outcome.FAILED})
#: Step statuses a pass looks at again before it decides (verification first).
_IN_FLIGHT = frozenset({Status.CLAIMED, Status.EXECUTING, Status.UNKNOWN})
#: How many refreshed packets a receipt follows from the one an operation names.
_MAX_REPLACEMENTS = 20
#: States a receipt is written for.
_RECEIPTED = frozenset(
    {
        OperationState.COMPLETE,
        OperationState.COMPENSATED,
        OperationState.ABANDONED,
        OperationState.NEEDS_REVIEW,
    }
)


@dataclass(frozen=True, slots=True)
class StepPlan:
    """One step, planned: its effect (and undo) ready for the effect protocol."""

    name: str
    role: Role
    max_attempts: int
    plan: Plan
    fns: Callables
    undo_plan: Plan | None = None
    undo_fns: Callables | None = None


@dataclass(frozen=True, slots=True)
class OperationPlan:
    """An operation, planned: its id, its intent version, its steps."""

    op_id: str
    intent: IntentRef | None
    approval: str | None
    steps: tuple[StepPlan, ...]
    run_id: str

    def spec(self) -> str:
        """The definition the ledger keeps (names, roles, keys; no callables)."""
        return json.dumps(
            {
                "intent": None if self.intent is None else str(self.intent),
                "approval": self.approval,
                "steps": [
                    {
                        "name": s.name,
                        "role": s.role.value,
                        "key": s.plan.key,
                        "undo": None if s.undo_plan is None else s.undo_plan.key,
                        "attempts": s.max_attempts,
                    }
                    for s in self.steps
                ],
            },
            sort_keys=True,
            separators=(",", ":"),
        )


@dataclass(frozen=True, slots=True)
class OperationResult:
    """What one pass did: the state it left, each run it made, the receipt."""

    op_id: str
    state: OperationState
    reason: str
    runs: tuple[tuple[str, RunResult], ...]
    receipt: Receipt | None = None

    @property
    def done(self) -> bool:
        """True when every step up to the pivot is verified."""
        return self.state is OperationState.COMPLETE


@dataclass(frozen=True, slots=True)
class OperationPut(StoreOp):
    primitive: ClassVar[str] = "operation_put"
    op_id: str
    intent: IntentRef | None
    spec: str
    now: float
    run_id: str


@dataclass(frozen=True, slots=True)
class ReceiptPut(StoreOp):
    primitive: ClassVar[str] = "receipt_put"
    op_id: str
    state: str
    text: str
    data: str
    now: float
    run_id: str


@dataclass(frozen=True, slots=True)
class ReceiptGet(StoreOp):
    primitive: ClassVar[str] = "receipt_get"
    op_id: str


def stored_receipt(op_id: str) -> Gen[Receipt | None]:
    """The receipt the ledger keeps for ``op_id`` (``None``: none yet)."""
    row: tuple[str, str, str, float] | None = yield ReceiptGet(op_id)
    if row is None:
        return None
    state, text, data, _ = row
    return Receipt(op_id, OperationState(state), text, json.loads(data))


@dataclass(frozen=True, slots=True)
class ReceiptList(StoreOp):
    primitive: ClassVar[str] = "receipt_list"
    limit: int
    before: float | None


def stored_receipts(limit: int, before: float | None) -> Gen[list[tuple[Receipt, float]]]:
    """Receipts newest first, each with the time it was written."""
    rows: list[tuple[str, str, str, str, float]] = yield ReceiptList(limit, before)
    return [
        (Receipt(op_id, OperationState(state), text, json.loads(data)), at)
        for op_id, state, text, data, at in rows
    ]


@dataclass(frozen=True, slots=True)
class OperationOf(StoreOp):
    primitive: ClassVar[str] = "operation_of"
    key: str


def operation_of(key: str) -> Gen[str | None]:
    """The id of the operation ``key`` is a step (or an undo) of, if any."""
    found: str | None = yield OperationOf(key)
    return found


@dataclass(frozen=True, slots=True)
class IntentRead(StoreOp):
    primitive: ClassVar[str] = "intent_get"
    intent_id: str
    version: int | None = None


@dataclass(frozen=True, slots=True)
class PacketRead(StoreOp):
    primitive: ClassVar[str] = "approval_get"
    packet_id: str


def _same_definition(recorded: str, spec: str) -> bool:
    """Whether two definitions name the same steps for the same intent version.

    The approval packet is not part of it: the refresh before a commit may
    replace the packet (a price moved within reach of a new approval), and the
    refreshed packet authorizes the same steps (seed 004's stale price).
    """
    if recorded == spec:
        return True
    try:
        old, new = json.loads(recorded), json.loads(spec)
    except ValueError:
        return False
    if not isinstance(old, dict) or not isinstance(new, dict):
        return False
    old.pop("approval", None)
    new.pop("approval", None)
    return bool(old == new)


def _records(op: OperationPlan) -> Gen[list[tuple[EffectRecord | None, EffectRecord | None]]]:
    out = []
    for step in op.steps:
        record = yield Get(step.plan.key)
        undo = None if step.undo_plan is None else (yield Get(step.undo_plan.key))
        out.append((record, undo))
    return out


def _states(
    op: OperationPlan, records: list[tuple[EffectRecord | None, EffectRecord | None]]
) -> list[StepState]:
    return [
        StepState(
            name=s.name,
            role=s.role,
            status=None if r is None else r.status,
            attempts=0 if r is None else r.fence,
            max_attempts=s.max_attempts,
            undo=None if u is None else u.status,
            has_undo=s.undo_plan is not None,
        )
        for s, (r, u) in zip(op.steps, records, strict=True)
    ]


def run_operation(op: OperationPlan, *, define: bool = True) -> Gen[OperationResult]:
    """One pass: run the operation's next moves while they settle.

    ``define=False`` skips recording the definition (a pass of an operation
    object that already recorded it).
    """
    if define:
        tick: Tick = yield NOW
        recorded: str = yield OperationPut(op.op_id, op.intent, op.spec(), tick.now, op.run_id)
        if not _same_definition(recorded, op.spec()):
            raise UsageError(
                f"operation {op.op_id!r} was defined with other steps or keys; "
                "an operation's steps never change (make a new one for a new intent version)"
            )
    runs: list[tuple[str, RunResult]] = []
    records = yield from _records(op)
    states = _states(op, records)
    # Steps in flight first. An unknown step, or one claimed or executing
    # (perhaps by a worker that died after its submit), is looked at again
    # through the effect protocol: it verifies first, records what it finds,
    # and never performs what another owner may have performed (the decision
    # table's busy, orphaned and unknown rows). Without this a replacement
    # would wait on a dead owner's step forever, and an unknown step would
    # stay unknown although its provider can now say what happened.
    for i, step in enumerate(op.steps):
        record, undo = records[i]
        if record is not None and record.status in _IN_FLIGHT:
            result: RunResult = yield RunEffect(step.plan, step.fns)
            runs.append((f"reconcile {step.name}", result))
            states[i] = replace(states[i], status=result.status, attempts=result.attempt)
        if undo is not None and undo.status in _IN_FLIGHT:
            assert step.undo_plan is not None and step.undo_fns is not None
            result = yield RunEffect(step.undo_plan, step.undo_fns)
            runs.append((f"reconcile undo {step.name}", result))
            states[i] = replace(states[i], undo=result.status)
    for _ in range(4 * len(op.steps) + 4):
        a = assess(states)
        if a.next not in (Next.RUN, Next.UNDO):
            break
        assert a.index is not None
        step = op.steps[a.index]
        if a.next is Next.RUN:
            result = yield RunEffect(step.plan, step.fns)
            runs.append((step.name, result))
            states[a.index] = replace(states[a.index], status=result.status,
                                      attempts=result.attempt)  # fmt: skip
        else:
            assert step.undo_plan is not None and step.undo_fns is not None
            result = yield RunEffect(step.undo_plan, step.undo_fns)
            runs.append((f"undo {step.name}", result))
            states[a.index] = replace(states[a.index], undo=result.status)
        if result.outcome not in _SETTLED:
            break
        if step.role is Role.RETRIABLE and result.outcome is Outcome.FAILED:
            break  # a dropped notification is retried on its own, in a later pass
    a = assess(states)
    receipt = None
    if a.state in _RECEIPTED and (a.next is Next.STOP or a.state is OperationState.COMPLETE):
        if runs:  # what the runs wrote, read back once for the receipt
            records = yield from _records(op)
            a = assess(_states(op, records))
        receipt = yield from _write_receipt(op, a, records)
    return OperationResult(op.op_id, a.state, a.reason, tuple(runs), receipt)


def _write_receipt(
    op: OperationPlan,
    a: Assessment,
    records: list[tuple[EffectRecord | None, EffectRecord | None]],
) -> Gen[Receipt]:
    receipt = yield from receipt_of(op, a, records)
    tick: Tick = yield NOW
    yield ReceiptPut(
        op.op_id,
        receipt.state.value,
        receipt.text,
        json.dumps(receipt.data, sort_keys=True, separators=(",", ":"), default=str),
        tick.now,
        op.run_id,
    )
    return receipt


def receipt_of(
    op: OperationPlan,
    a: Assessment,
    records: list[tuple[EffectRecord | None, EffectRecord | None]],
) -> Gen[Receipt]:
    """The receipt of ``op`` as the ledger holds it (nothing is written)."""
    views = []
    for step, (record, undo) in zip(op.steps, records, strict=True):
        events: list[Event] = yield Events(step.plan.key)
        undo_events: list[Event] = (
            [] if step.undo_plan is None else (yield Events(step.undo_plan.key))
        )
        views.append(
            StepView(
                step.name,
                step.role,
                step.plan.key,
                record,
                events,
                None if step.undo_plan is None else step.undo_plan.key,
                undo,
                undo_events,
            )
        )
    intent = None
    if op.intent is not None:
        row: IntentRow | None = yield IntentRead(op.intent.intent_id, op.intent.version)
        if row is not None:
            intent = row.intent.as_json()
            intent["current"] = row.status is IntentStatus.CURRENT
    approval = None
    if op.approval is not None:
        found = yield PacketRead(op.approval)
        # A refreshed packet replaces the one the operation names: the receipt
        # shows the newest of the chain, the one that could authorize the commit.
        for _ in range(_MAX_REPLACEMENTS):
            if found is None or found[0].replaced_by is None:
                break
            newer = yield PacketRead(found[0].replaced_by)
            if newer is None:
                break
            found = newer
        if found is not None:
            approval = found[0].as_json()
    tick: Tick = yield NOW
    return build_receipt(op.op_id, a, views, intent=intent, approval=approval, now=tick.now)
