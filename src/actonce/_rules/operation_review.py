"""People's decisions about an operation: which apply now, and whether one is new.

Theory of operation. An operation that stops for a person (``needs_review``)
stops *at* something: a step whose outcome is in doubt, or the undo of a
verified step that the provider refused or whose outcome is in doubt.
:func:`in_question` names it and the attempt it is on; :func:`choices` lists
the decisions that can move the operation from where it stands:

- an undo in question: ``retry_undo`` (run it again: a refused undo, or one
  the person says did not happen), ``undone_by_hand`` (done outside actonce:
  it counts as done), ``accept`` (end it as it stands), ``abandon``;
- a step in question: ``accept`` or ``abandon`` (what the step did is
  decided on the step's own effect: happened, not happened);
- an operation still on its way: ``withdraw`` (no unstarted step runs any
  more; what was done is undone) or ``abandon``.

:func:`judge` decides one decision, purely, like an approval's answer: the
same decision again (same step, same attempt) is answered with the existing
state and changes nothing; a decision that does not apply, or that names an
attempt the operation has moved past, is refused with the reason; otherwise
it is accepted, and for an undo in doubt it says what the undo's own effect
must record first (``not_happened`` before a retry, ``happened`` when it was
done by hand), so that the effect ledger and the operation never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .approvals import Answered
from .errors import UsageError
from .model import Resolution, Status
from .operations import (
    Assessment,
    DecisionRecord,
    Next,
    OperationDecision,
    OperationState,
    StepState,
)

__all__ = ["Ruling", "choices", "decision_of", "in_question", "judge"]

_DOUBT = (Status.UNKNOWN, Status.NEEDS_REVIEW)
_ENDED = (OperationState.ACCEPTED, OperationState.ABANDONED, OperationState.COMPENSATED)
_ON_ITS_WAY = (
    OperationState.IN_PROGRESS,
    OperationState.NEEDS_COMPENSATION,
    OperationState.COMPENSATING,
)


@dataclass(frozen=True, slots=True)
class Ruling:
    """The verdict on one decision.

    Attributes:
        answer: ``accepted`` (record it), ``same`` (the same decision again:
            nothing changes) or ``refused``.
        reason: why it was refused (or that nothing changed).
        step: the step it is about (``None``: the whole operation).
        attempt: the attempt of the effect in question it is recorded on.
        resolve: what the undo's own effect records first, if anything.
    """

    answer: Answered
    reason: str = ""
    step: str | None = None
    attempt: int = 0
    resolve: Resolution | None = None


def decision_of(value: OperationDecision | str) -> OperationDecision:
    """A decision by value (``retry_undo``/``retry-undo``, ``accept`` ...)."""
    try:
        return OperationDecision(str(value).replace("-", "_"))
    except ValueError:
        names = ", ".join(d.value for d in OperationDecision)
        raise UsageError(f"an operation decision is one of {names}, not {value!r}") from None


def in_question(a: Assessment, steps: Sequence[StepState]) -> tuple[str | None, int]:
    """The step the operation stands at, and the attempt of the effect in question."""
    if a.index is None:
        return None, 0
    s = steps[a.index]
    return s.name, s.undo_attempts if a.undo else s.attempts


def choices(a: Assessment, steps: Sequence[StepState]) -> tuple[OperationDecision, ...]:
    """The decisions that can move the operation from where it stands."""
    if a.state in _ENDED:
        return ()
    if a.state is OperationState.NEEDS_REVIEW:
        if a.undo:
            return (
                OperationDecision.RETRY_UNDO,
                OperationDecision.UNDONE_BY_HAND,
                OperationDecision.ACCEPT,
                OperationDecision.ABANDON,
            )
        return OperationDecision.ACCEPT, OperationDecision.ABANDON
    if a.state is OperationState.COMPLETE:
        # Complete, and a retriable step after it in doubt: it may be accepted as it is.
        in_doubt = a.index is not None and a.next is Next.STOP
        return (OperationDecision.ACCEPT,) if in_doubt else ()
    if a.state in _ON_ITS_WAY:
        if a.closed:
            return (OperationDecision.ABANDON,)
        return OperationDecision.WITHDRAW, OperationDecision.ABANDON
    return ()


def _same(
    d: DecisionRecord, decision: OperationDecision, step: str | None, seen: int | None
) -> bool:
    if d.decision is not decision:
        return False
    if decision is OperationDecision.WITHDRAW:
        return True  # one withdrawal closes it for good
    return (step is None or d.step == step) and (seen is None or d.attempt == seen)


def judge(
    decision: OperationDecision | str,
    *,
    a: Assessment,
    steps: Sequence[StepState],
    decisions: Sequence[DecisionRecord],
    step: str | None = None,
    attempt: int | None = None,
) -> Ruling:
    """Decide one decision about an operation assessed as ``a`` (no I/O)."""
    chosen = decision_of(decision)
    if step is not None and step not in {s.name for s in steps}:
        raise UsageError(f"the operation has no step {step!r}")
    for d in reversed(decisions):
        if _same(d, chosen, step, attempt):
            return Ruling(Answered.SAME, "the same decision again: nothing changed", d.step,
                          d.attempt)  # fmt: skip
        if d.decision is not OperationDecision.WITHDRAW:
            break  # only the latest decision (or a withdrawal) can be repeated
    where, now = in_question(a, steps)
    if chosen not in choices(a, steps):
        return Ruling(
            Answered.REFUSED,
            f"'{chosen.value}' does not apply: the operation is {a.state.value} ({a.reason})",
        )
    about = where if chosen in (OperationDecision.RETRY_UNDO,
                                OperationDecision.UNDONE_BY_HAND) else step or where  # fmt: skip
    if step is not None and about != step:
        return Ruling(Answered.REFUSED, f"the operation stands at {where}, not at {step}")
    if attempt is not None and attempt != now:
        return Ruling(
            Answered.REFUSED,
            f"{where or 'the operation'} is on attempt {now} now, not the attempt {attempt} "
            "that was decided on; look again",
        )
    resolve = None
    if a.index is not None and a.undo and steps[a.index].undo in _DOUBT:
        if chosen is OperationDecision.RETRY_UNDO:
            resolve = Resolution.NOT_HAPPENED  # a retry says the first undo did not happen
        elif chosen is OperationDecision.UNDONE_BY_HAND:
            resolve = Resolution.HAPPENED
    return Ruling(Answered.ACCEPTED, "", about, now, resolve)
