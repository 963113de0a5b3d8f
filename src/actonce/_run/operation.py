"""The operation protocol: run the steps of a multi-step operation, as a generator.

Theory of operation. Each pass reads every step's effect (and undo effect)
from the ledger, asks :func:`actonce._rules.operations.assess` what to do,
and runs that one effect under the effect protocol (``RunEffect``: the
driver nests ``run_effect`` with the step's own callables). It goes on while
each move ends settled (``completed``, ``skipped``, ``failed``); any run that
ends in doubt or waits (``needs_review``, ``deferred``, ``needs_approval``,
``refused``, ``over_budget``, ``hard_stop``) ends the pass: the next pass, or
a human, takes it from there. People's decisions (a retried undo, one done
by hand, a withdrawal) count in every assessment. The state is never
stored: after its moves a pass reads the operation back
(:func:`actonce._run.operation_view.view_of`) and writes its receipt
whenever it stands still in a state worth one (complete, compensated,
abandoned, accepted, in review, or withdrawn), and when its next work falls
due (a notification's retry after its backoff, an undo a withdrawal queued).
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass, replace
from typing import Any, ClassVar, TypeVar

from .._rules.errors import UsageError
from .._rules.intents import IntentRef
from .._rules.model import EffectRecord, Outcome, RunResult, Status
from .._rules.operations import (
    RETRY_BACKOFF,
    Next,
    OperationDecision,
    OperationState,
    Role,
    StepState,
    assess,
)
from .._rules.receipts import Receipt
from .._rules.scrub import scrub_stored, stored_form
from .callables import Callables
from .operation_review import decide, stands_still, write_receipt
from .operation_view import (
    DecisionsOf,
    OperationView,
    StepSpec,
    decision_of_row,
    parse_spec,
    step_state,
    view_from,
    view_of,
)
from .operation_view import live_receipt as live_receipt
from .ops import NOW, Get, Op, RunEffect, StoreOp, Tick
from .plan import Plan

__all__ = [
    "OperationPlan",
    "OperationResult",
    "StepPlan",
    "define_operation",
    "live_receipt",
    "operation_of",
    "run_operation",
    "stored_receipts",
    "withdraw_operation",
]

T = TypeVar("T")
Gen = Generator[Op, Any, T]

#: Outcomes after which a pass goes on to the next move.
_SETTLED = frozenset({Outcome.COMPLETED, Outcome.SKIPPED, Outcome.FAILED})
#: Step statuses a pass looks at again before it decides (verification first).
_IN_FLIGHT = frozenset({Status.CLAIMED, Status.EXECUTING, Status.UNKNOWN})


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
    backoff: float = RETRY_BACKOFF


@dataclass(frozen=True, slots=True)
class OperationPlan:
    """An operation, planned: its id, its intent version, its steps."""

    op_id: str
    intent: IntentRef | None
    approval: str | None
    steps: tuple[StepPlan, ...]
    run_id: str
    contact: str | None = None

    def spec(self) -> str:
        """The definition the ledger keeps (names, roles, keys; no callables)."""
        return json.dumps(
            {
                "intent": None if self.intent is None else str(self.intent),
                "approval": self.approval,
                "contact": self.contact,
                "steps": [
                    {
                        "name": s.name,
                        "role": s.role.value,
                        "key": s.plan.key,
                        "undo": None if s.undo_plan is None else s.undo_plan.key,
                        "attempts": s.max_attempts,
                        "backoff": s.backoff,
                    }
                    for s in self.steps
                ],
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    def step_specs(self) -> list[StepSpec]:
        """The steps as the definition records them."""
        return [
            StepSpec(
                s.name,
                s.role,
                s.plan.key,
                None if s.undo_plan is None else s.undo_plan.key,
                s.max_attempts,
                s.backoff,
            )
            for s in self.steps
        ]


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


def _same_definition(recorded: str, spec: str) -> bool:
    """Whether two definitions name the same steps for the same intent version.

    The approval packet is not part of it: the refresh before a commit may
    replace the packet (a price moved within reach of a new approval), and the
    refreshed packet authorizes the same steps (seed 004's stale price). Nor
    are the contact the receipt names and a retriable step's backoff (an
    operation recorded before they were part of the definition is the same).
    """
    if recorded == spec:
        return True
    try:
        # The ledger keeps the definition scrubbed (a step named after a
        # secret): compare it with this one as the ledger would keep it.
        old, new = json.loads(recorded), stored_form(json.loads(spec))
    except ValueError:
        return False
    if not isinstance(old, dict) or not isinstance(new, dict):
        return False
    for d in (old, new):
        d.pop("approval", None)
        d.pop("contact", None)
        for step in d.get("steps") or []:
            if isinstance(step, dict):
                step.pop("backoff", None)
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
    return [step_state(spec, r, u) for spec, (r, u) in zip(op.step_specs(), records, strict=True)]


def define_operation(op: OperationPlan) -> Gen[str]:
    """Record the operation's definition (once; a later one must name the same steps).

    Answers the definition as the ledger keeps it (scrubbed).
    """
    tick: Tick = yield NOW
    recorded: str = yield OperationPut(op.op_id, op.intent, op.spec(), tick.now, op.run_id)
    if not _same_definition(recorded, op.spec()):
        raise UsageError(
            f"operation {op.op_id!r} was defined with other steps or keys; "
            "an operation's steps never change (make a new one for a new intent version)"
        )
    return recorded


def withdraw_operation(op: OperationPlan, by: str, reason: str) -> Gen[OperationView]:
    """Withdraw ``op`` (recording its definition first if no pass did yet)."""
    yield from define_operation(op)
    return (yield from decide(op.op_id, OperationDecision.WITHDRAW, by=by, reason=reason))


def run_operation(op: OperationPlan, *, define: bool = True) -> Gen[OperationResult]:
    """One pass: run the operation's next moves while they settle.

    ``define=False`` skips recording the definition (a pass of an operation
    object that already recorded it).
    """
    recorded = (yield from define_operation(op)) if define else None
    runs: list[tuple[str, RunResult]] = []
    records = yield from _records(op)
    states = _states(op, records)
    rows: list[tuple[Any, ...]] = yield DecisionsOf(op.op_id)
    decisions = tuple(decision_of_row(r) for r in rows)
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
            states[i] = _moved(states[i], result)
        if undo is not None and undo.status in _IN_FLIGHT:
            assert step.undo_plan is not None and step.undo_fns is not None
            result = yield RunEffect(step.undo_plan, step.undo_fns)
            runs.append((f"reconcile undo {step.name}", result))
            states[i] = replace(states[i], undo=result.status, undo_attempts=result.attempt)
    tick = yield NOW
    for _ in range(4 * len(op.steps) + 4):
        a = assess(states, decisions=decisions, now=tick.now)
        if a.next not in (Next.RUN, Next.UNDO):
            break
        assert a.index is not None
        step = op.steps[a.index]
        if a.next is Next.RUN:
            result = yield RunEffect(step.plan, step.fns)
            runs.append((step.name, result))
            states[a.index] = _moved(states[a.index], result)
        else:
            assert step.undo_plan is not None and step.undo_fns is not None
            result = yield RunEffect(step.undo_plan, step.undo_fns)
            runs.append((f"undo {step.name}", result))
            states[a.index] = replace(
                states[a.index], undo=result.status, undo_attempts=result.attempt
            )
        if result.outcome not in _SETTLED:
            break
        if step.role is Role.RETRIABLE and result.outcome is Outcome.FAILED:
            break  # a dropped notification is retried on its own, after its backoff
    # What the runs wrote, read back once: the state, the receipt, the next due work.
    # (A definition never changes: the one recorded above is read again only
    # by a pass that did not record it.)
    view: OperationView = yield from (
        view_of(op.op_id) if recorded is None else view_from(op.op_id, parse_spec(recorded))
    )
    yield from write_receipt(view, op.run_id)
    receipt = view.receipt if stands_still(view) else None
    # The steps named as the ledger keeps them (a name scrubbed), as the view reads them.
    named = tuple((scrub_stored(name), result) for name, result in runs)
    return OperationResult(op.op_id, view.state, view.reason, named, receipt)


def _moved(state: StepState, result: RunResult) -> StepState:
    """A step's state after one of its runs (what the run reports; the pass reads back after)."""
    return replace(state, status=result.status, attempts=result.attempt, since=None)
