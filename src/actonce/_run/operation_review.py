"""People's decisions about operations, withdrawals, and the operations that wait.

Theory of operation. Written once for both ledgers, like ``review`` is for
effects. :func:`decide` reads the operation as it stands
(:func:`~actonce._run.operation_view.view_of`), asks the pure rule
(:func:`actonce._rules.operation_review.judge`) and records the one change:
for an undo in doubt, first the undo's own effect (``Ledger.resolve``'s
compare-and-set: happened when done by hand, not happened before a retry),
then the decision (numbered per operation: two decisions racing for the
same number, one wins and the other looks again), then the receipt as true
afterwards. The same decision again answers with the existing state.

:func:`withdraw_intent` closes an intent version in one transaction
(``_store.gated_ops.intent_withdraw``); :func:`in_review` and :func:`due`
list the operations that wait for a person, and those with work due.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from .._rules.approvals import Answered
from .._rules.errors import InvalidTransition, UsageError
from .._rules.intents import IntentRef
from .._rules.operation_review import decision_of, judge
from .._rules.operations import Next, OperationDecision, OperationState
from .._rules.text import world_text
from .._store.records import RevisionResult
from .operation_view import OperationView, receipt_row, view_of
from .ops import NOW, Op, StoreOp, Tick
from .review import REVIEW_RUN_PREFIX, resolve

__all__ = [
    "RECEIPTED",
    "decide",
    "due",
    "in_review",
    "stands_still",
    "touch",
    "withdraw_intent",
    "withdrawn_receipts",
    "write_receipt",
]

T = TypeVar("T")
Gen = Generator[Op, Any, T]


@dataclass(frozen=True, slots=True)
class DecisionPut(StoreOp):
    primitive: ClassVar[str] = "decision_put"
    op_id: str
    n: int
    decision: str
    step: str | None
    attempt: int
    by: str
    now: float
    reason: str
    run_id: str


@dataclass(frozen=True, slots=True)
class ReceiptWrite(StoreOp):
    primitive: ClassVar[str] = "receipt_put"
    op_id: str
    state: str
    text: str
    data: str
    now: float
    run_id: str
    due_at: float | None
    update_only: bool = False


@dataclass(frozen=True, slots=True)
class OperationOf(StoreOp):
    primitive: ClassVar[str] = "operation_of"
    key: str


#: States an operation's receipt is written for (it stands still in them).
RECEIPTED = frozenset(
    {
        OperationState.COMPLETE,
        OperationState.COMPENSATED,
        OperationState.ABANDONED,
        OperationState.ACCEPTED,
        OperationState.NEEDS_REVIEW,
    }
)


@dataclass(frozen=True, slots=True)
class OperationsIn(StoreOp):
    primitive: ClassVar[str] = "operations_in"
    state: str
    limit: int


@dataclass(frozen=True, slots=True)
class OperationsDue(StoreOp):
    primitive: ClassVar[str] = "operations_due"
    now: float
    limit: int


@dataclass(frozen=True, slots=True)
class IntentWithdraw(StoreOp):
    primitive: ClassVar[str] = "intent_withdraw"
    ref: IntentRef
    by: str
    reason: str
    now: float
    run_id: str


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"an operation decision needs {what}")
    # A person's words are stored like the world's: storable and scrubbed.
    return world_text(value.strip(), limit=1000)


def stands_still(view: OperationView) -> bool:
    """Whether the operation stands in a state its receipt is written for."""
    a = view.assessment
    return view.closed or (
        a.state in RECEIPTED and (a.next is not Next.RUN or a.state is OperationState.COMPLETE)
    )


def write_receipt(view: OperationView, run_id: str) -> Gen[bool]:
    """Keep what the ledger says of the operation true: its receipt, when its work is due.

    A receipt is written when the operation stands still (:func:`stands_still`);
    otherwise one written before is rewritten (never left saying what is no
    longer true), and none is made.
    """
    op_id, state, text, data, at, due_at = receipt_row(view)
    wrote: bool = yield ReceiptWrite(
        op_id, state, text, data, at, run_id, due_at, not stands_still(view)
    )
    return wrote and stands_still(view)


def touch(key: str, run_id: str) -> Gen[None]:
    """After ``key`` moved outside a pass (a reviewer, reconcile): its operation's receipt."""
    op_id: str | None = yield OperationOf(key)
    if op_id is None:
        return
    try:
        view = yield from view_of(op_id)
    except UsageError:
        return
    yield from write_receipt(view, run_id)


def decide(
    op_id: str,
    decision: OperationDecision | str,
    *,
    by: str,
    reason: str,
    attempt: int | None = None,
    step: str | None = None,
) -> Gen[OperationView]:
    """Record one decision about an operation; answers it as it stands afterwards.

    Raises:
        InvalidTransition: the decision does not apply where the operation
            stands, or names an attempt it has moved past ("look again").
        UsageError: no such operation, step or decision; no name or reason.
    """
    chosen = decision_of(decision)
    who, why = _text(by, "who decides (by=...)"), _text(reason, "a reason")
    if attempt is not None and (isinstance(attempt, bool) or not isinstance(attempt, int)):
        raise UsageError(f"an attempt is a whole number, not {attempt!r}")
    view = yield from view_of(op_id)
    ruling = judge(chosen, a=view.assessment, steps=view.states, decisions=view.decisions,
                   step=step, attempt=attempt)  # fmt: skip
    if ruling.answer is Answered.SAME:
        return view
    if ruling.answer is Answered.REFUSED:
        raise InvalidTransition(f"operation {op_id}: {ruling.reason}")
    if ruling.resolve is not None:
        # The undo's own effect says it first, so that its page and the
        # operation never disagree (refused while its owner may still perform).
        undo = next(s for s in view.steps if s.name == ruling.step)
        assert undo.undo_key is not None
        yield from resolve(
            undo.undo_key, ruling.resolve, reviewer=who, reason=f"{chosen.value}: {why}",
            result_ref=f"undone by hand ({who})" if chosen is OperationDecision.UNDONE_BY_HAND
            else None, attempt=ruling.attempt,
        )  # fmt: skip
    tick: Tick = yield NOW
    n = len(view.decisions) + 1
    won: bool = yield DecisionPut(op_id, n, chosen.value, ruling.step, ruling.attempt, who,
                                  tick.now, why, f"{REVIEW_RUN_PREFIX}{who}")  # fmt: skip
    if not won:
        raise InvalidTransition(f"operation {op_id} was decided meanwhile; look again")
    after = yield from view_of(op_id)
    yield from write_receipt(after, f"{REVIEW_RUN_PREFIX}{who}")
    return after


def withdraw_intent(
    intent_id: str, version: int | None, *, by: str, reason: str, run_id: str
) -> Gen[RevisionResult]:
    """Close an intent version (the current one by default): it commits nothing any more."""
    from .approvals import get_intent

    who, why = _text(by, "who withdraws it (by=...)"), _text(reason, "a reason")
    intent = yield from get_intent(intent_id, version)
    tick: Tick = yield NOW
    done: RevisionResult = yield IntentWithdraw(intent.ref, who, why, tick.now, run_id)
    if not done.applied:
        raise UsageError(f"no intent {intent.ref}")
    yield from withdrawn_receipts(done.operations, run_id)
    return done


def withdrawn_receipts(op_ids: tuple[str, ...], run_id: str) -> Gen[None]:
    """Each withdrawn operation's receipt, written at once: it says what became of it."""
    for op_id in op_ids:
        view = yield from view_of(op_id)
        yield from write_receipt(view, run_id)


def in_review(limit: int) -> Gen[list[OperationView]]:
    """Operations waiting for a person, oldest first (each read as it stands now)."""
    rows: list[tuple[str, float]] = yield OperationsIn(OperationState.NEEDS_REVIEW.value, limit)
    out = []
    for op_id, _ in rows:
        try:
            view = yield from view_of(op_id)
        except UsageError:
            continue  # a receipt whose definition is gone: nothing to decide
        if view.in_review:
            out.append(view)
    return out


def due(limit: int) -> Gen[list[str]]:
    """Operations with work due now: a retry after its backoff, an undo a withdrawal queued."""
    tick: Tick = yield NOW
    found: list[str] = yield OperationsDue(tick.now, limit)
    return found
