"""An operation as the ledger holds it now, read from its recorded definition alone.

Theory of operation. An operation's definition (its steps' names, roles,
keys, undo keys, attempts) is recorded once (``operations.spec``); its state
is never stored: :func:`view_of` reads the definition, each step's record
and history, the decisions people made, the intent version and the approval
chain, asks :func:`actonce._rules.operations.assess` where it stands, and
renders its receipt with the one renderer
(:func:`actonce._rules.receipts.build_receipt`). The operation's own passes,
``Ledger.receipt``, the review console and the CLI all read an operation
through it, so each says the same thing, and what it says is true when it is
read. Nothing here needs the steps' callables: a reviewer's tool reads and
decides without them.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from .._rules.errors import UsageError
from .._rules.intents import IntentRef, IntentStatus
from .._rules.model import EffectRecord, Event
from .._rules.operation_review import choices, in_question
from .._rules.operations import (
    RETRY_BACKOFF,
    Assessment,
    DecisionRecord,
    Next,
    OperationDecision,
    OperationState,
    Role,
    StepState,
    assess,
)
from .._rules.receipts import Receipt, StepView, build_receipt
from .._store.records import IntentRow
from .ops import NOW, Events, Get, Op, StoreOp, Tick

__all__ = [
    "DecisionsOf",
    "OperationGet",
    "OperationView",
    "Spec",
    "StepSpec",
    "decision_of_row",
    "live_receipt",
    "parse_spec",
    "receipt_row",
    "step_state",
    "stored",
    "view_from",
    "view_of",
]

T = TypeVar("T")
Gen = Generator[Op, Any, T]

#: How many packets a receipt follows along a chain of refreshed packets.
_MAX_CHAIN = 20


@dataclass(frozen=True, slots=True)
class StepSpec:
    """One step as its operation's definition records it."""

    name: str
    role: Role
    key: str
    undo: str | None
    attempts: int = 1
    backoff: float = RETRY_BACKOFF


@dataclass(frozen=True, slots=True)
class Spec:
    """An operation's recorded definition."""

    intent: IntentRef | None
    approval: str | None
    contact: str | None
    steps: tuple[StepSpec, ...]


def parse_spec(text: str) -> Spec:
    """The definition ``OperationPlan.spec`` wrote (``UsageError`` if it is not one)."""
    try:
        raw = json.loads(text)
        intent = None
        if raw.get("intent"):
            intent_id, _, version = str(raw["intent"]).rpartition("@v")
            intent = IntentRef(intent_id, int(version))
        steps = tuple(
            StepSpec(
                str(s["name"]),
                Role(s["role"]),
                str(s["key"]),
                None if s.get("undo") is None else str(s["undo"]),
                int(s.get("attempts") or 1),
                float(s.get("backoff", RETRY_BACKOFF)),
            )
            for s in raw["steps"]
        )
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise UsageError(f"not an operation's definition: {exc}") from None
    return Spec(intent, raw.get("approval"), raw.get("contact"), steps)


@dataclass(frozen=True, slots=True)
class OperationView:
    """One operation as the ledger holds it now.

    Attributes:
        op_id: the operation's id.
        intent: the intent version it serves.
        state: where it stands (derived from its steps and decisions).
        reason: why, in words.
        step: the step it stands at (``None``: none in particular).
        attempt: the attempt of the effect in question (decisions name it).
        undo: True when it is the undo of ``step`` that is in question.
        since: when the effect in question last changed (ledger time).
        steps: every step, its record and history, its undo's.
        states: every step as the rule sees it.
        decisions: people's decisions (and withdrawals), oldest first.
        choices: the decisions that can move it from where it stands.
        receipt: its receipt, as true now.
        assessment: the rule's full answer.
    """

    op_id: str
    intent: IntentRef | None
    state: OperationState
    reason: str
    step: str | None
    attempt: int
    undo: bool
    since: float | None
    steps: tuple[StepView, ...]
    states: tuple[StepState, ...]
    decisions: tuple[DecisionRecord, ...]
    choices: tuple[OperationDecision, ...]
    receipt: Receipt
    assessment: Assessment

    @property
    def closed(self) -> bool:
        """True once the operation was withdrawn."""
        return self.assessment.closed

    @property
    def in_review(self) -> bool:
        """True while it waits for a person."""
        return self.state is OperationState.NEEDS_REVIEW

    @property
    def due_at(self) -> float | None:
        """When it next has work nobody else starts (``None``: none now)."""
        a = self.assessment
        now: float = self.receipt.data["written_at"]
        if a.next is Next.WAIT and a.due is not None:
            return a.due
        if a.next is Next.UNDO or (a.closed and a.next is not Next.STOP):
            return now  # an undo queued (by a withdrawal, a person's retry) or a step to see to
        if a.state is OperationState.COMPLETE and a.next is Next.RUN:
            return now  # a retriable step to send again
        return None


@dataclass(frozen=True, slots=True)
class OperationGet(StoreOp):
    primitive: ClassVar[str] = "operation_get"
    op_id: str


@dataclass(frozen=True, slots=True)
class DecisionsOf(StoreOp):
    primitive: ClassVar[str] = "decisions_of"
    op_id: str


@dataclass(frozen=True, slots=True)
class IntentRead(StoreOp):
    primitive: ClassVar[str] = "intent_get"
    intent_id: str
    version: int | None = None


@dataclass(frozen=True, slots=True)
class PacketRead(StoreOp):
    primitive: ClassVar[str] = "approval_get"
    packet_id: str


@dataclass(frozen=True, slots=True)
class ReceiptGet(StoreOp):
    primitive: ClassVar[str] = "receipt_get"
    op_id: str


def decision_of_row(row: tuple[Any, ...]) -> DecisionRecord:
    n, decision, step, attempt, by, at, reason = row
    return DecisionRecord(OperationDecision(decision), str(by), float(at), str(reason),
                          None if step is None else str(step), int(attempt), int(n))  # fmt: skip


def step_state(spec: StepSpec, record: EffectRecord | None, undo: EffectRecord | None) -> StepState:
    return StepState(
        name=spec.name,
        role=spec.role,
        status=None if record is None else record.status,
        attempts=0 if record is None else record.fence,
        max_attempts=spec.attempts,
        undo=None if undo is None else undo.status,
        has_undo=spec.undo is not None,
        undo_attempts=0 if undo is None else undo.fence,
        since=None if record is None else record.updated_at,
        reason=None if record is None else record.reason,
        backoff=spec.backoff,
    )


def _chain(first: str | None) -> Gen[list[Mapping[str, Any]]]:
    """The approval chain of ``first``, oldest first (refreshed packets replace one another)."""
    if first is None:
        return []
    found = yield PacketRead(first)
    if found is None:
        return []
    packet = found[0]
    for _ in range(_MAX_CHAIN):  # back to the packet the chain started with
        if packet.replaces is None:
            break
        older = yield PacketRead(packet.replaces)
        if older is None:
            break
        packet = older[0]
    chain = [packet]
    for _ in range(_MAX_CHAIN):
        if chain[-1].replaced_by is None:
            break
        newer = yield PacketRead(chain[-1].replaced_by)
        if newer is None:
            break
        chain.append(newer[0])
    return [p.as_json() for p in chain]


def view_from(op_id: str, spec: Spec) -> Gen[OperationView]:
    """The operation ``op_id`` defined by ``spec``, as the ledger holds it now."""
    views: list[StepView] = []
    states: list[StepState] = []
    for s in spec.steps:
        record: EffectRecord | None = yield Get(s.key)
        events: list[Event] = yield Events(s.key)
        undo: EffectRecord | None = None
        undo_events: list[Event] = []
        if s.undo is not None:
            undo = yield Get(s.undo)
            undo_events = yield Events(s.undo)
        views.append(
            StepView(s.name, s.role, s.key, record, events, s.undo, undo, undo_events, s.attempts)
        )
        states.append(step_state(s, record, undo))
    rows: list[tuple[Any, ...]] = yield DecisionsOf(op_id)
    decisions = tuple(decision_of_row(r) for r in rows)
    tick: Tick = yield NOW
    a = assess(states, decisions=decisions, now=tick.now)
    intent = None
    if spec.intent is not None:
        row: IntentRow | None = yield IntentRead(spec.intent.intent_id, spec.intent.version)
        if row is not None:
            intent = row.intent.as_json()
            intent["current"] = row.status is IntentStatus.CURRENT
    chain = yield from _chain(spec.approval)
    receipt = build_receipt(
        op_id, a, views, intent=intent, approval=chain[-1] if chain else None, now=tick.now,
        approvals=chain, decisions=decisions, contact=spec.contact,
    )  # fmt: skip
    step, attempt = in_question(a, states)
    since = None
    if a.index is not None:
        v = views[a.index]
        held = v.undo_record if a.undo else v.record
        since = None if held is None else held.updated_at
    return OperationView(
        op_id, spec.intent, a.state, a.reason, step, attempt, a.undo, since, tuple(views),
        tuple(states), decisions, choices(a, states), receipt, a,
    )  # fmt: skip


def view_of(op_id: str) -> Gen[OperationView]:
    """The operation ``op_id`` as the ledger holds it now (``UsageError`` if unknown)."""
    if not isinstance(op_id, str) or not op_id.strip():
        raise UsageError("an operation id is a non-empty string")
    text: str | None = yield OperationGet(op_id)
    if text is None:
        raise UsageError(f"no operation {op_id!r} in this ledger")
    return (yield from view_from(op_id, parse_spec(text)))


def stored(op_id: str) -> Gen[Receipt | None]:
    """The receipt the ledger last wrote for ``op_id`` (``None``: none)."""
    row: tuple[str, str, str, float] | None = yield ReceiptGet(op_id)
    if row is None:
        return None
    state, text, data, _ = row
    return Receipt(op_id, OperationState(state), text, json.loads(data))


def live_receipt(op_id: str) -> Gen[Receipt | None]:
    """The receipt of ``op_id`` as true now (``None``: no such operation, and none written)."""
    if not isinstance(op_id, str) or not op_id.strip():
        return None
    text: str | None = yield OperationGet(op_id)
    if text is None:
        return (yield from stored(op_id))
    view = yield from view_from(op_id, parse_spec(text))
    return view.receipt


def receipt_row(view: OperationView) -> tuple[str, str, str, str, float, float | None]:
    """What the ledger keeps of a view's receipt: op id, state, text, JSON, time, due."""
    r = view.receipt
    data = json.dumps(r.data, sort_keys=True, separators=(",", ":"), default=str)
    return view.op_id, r.state.value, r.text, data, float(r.data["written_at"]), view.due_at
