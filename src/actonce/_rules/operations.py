"""Multi-step operations: hold → pay → book → notify, and what to do next.

Theory of operation. An operation is an ordered list of steps for one intent
version (seed 004: "record each consequential step separately"). Each step
is an effect of its own — its own key, verifier, policy — with a **role**:

- ``compensatable``: has an undo effect (a hold, a payment authorization);
- ``pivot``: the commitment (the booking, the order); after it, forward only;
- ``retriable``: may be retried alone (a notification); its failure never
  downgrades the operation's outcome.

The operation's state is **derived** from its steps' ledger states by one
pure function (:func:`assess`), never stored as a second source of truth:

- a step runs only after the step before it is verified (``confirmed``);
- a step in doubt (``unknown``, ``needs_review``) stops everything: nothing
  moves forward, nothing is compensated blindly (``needs_review``);
- a step that provably did not happen (``failed``) is retried up to its
  ``attempts``; after that, before the pivot, the steps verified as done are
  **compensated**, newest first, each by its undo effect (keyed, claimed,
  verified, at most once) — verify before compensate: only a ``confirmed``
  step is ever undone, and an undo in doubt goes to review;
- once the pivot is confirmed the operation is ``complete``; retriable steps
  after it are tried on their own, and their failure is an exception noted
  in the receipt, not a failure of the operation.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import UsageError
from .model import Status

__all__ = ["Assessment", "Next", "OperationState", "Role", "StepState", "assess"]


class Role(enum.StrEnum):
    """What a step is to its operation."""

    COMPENSATABLE = "compensatable"
    PIVOT = "pivot"
    RETRIABLE = "retriable"


class OperationState(enum.StrEnum):
    """Where an operation stands, derived from its steps."""

    IN_PROGRESS = "in_progress"  # the next step may run (or one is running)
    COMPLETE = "complete"  # every step up to and including the pivot is verified
    NEEDS_COMPENSATION = "needs_compensation"  # a step failed for good before the pivot
    COMPENSATING = "compensating"  # undo effects are running
    COMPENSATED = "compensated"  # every verified step before the failure is undone
    NEEDS_REVIEW = "needs_review"  # a step (or an undo) is in doubt: a human decides
    ABANDONED = "abandoned"  # a human abandoned a step; nothing more happens


class Next(enum.StrEnum):
    """What the operation's runner does next."""

    RUN = "run"  # run step ``index`` (its effect)
    UNDO = "undo"  # run the undo effect of step ``index``
    WAIT = "wait"  # a step is being run by someone else: come back later
    STOP = "stop"  # nothing more to do now (complete, compensated, review)


@dataclass(frozen=True, slots=True)
class StepState:
    """One step as the ledger holds it.

    Attributes:
        name: the step's name (``hold``, ``pay`` ...).
        role: its role.
        status: its effect's status (``None``: never claimed).
        attempts: claims made so far (the effect's fence; 0 when never claimed).
        max_attempts: how many proven failures are retried before giving up.
        undo: the status of its undo effect (``None``: none yet, or no undo).
        has_undo: whether the step can be undone.
    """

    name: str
    role: Role
    status: Status | None = None
    attempts: int = 0
    max_attempts: int = 1
    undo: Status | None = None
    has_undo: bool = False


@dataclass(frozen=True, slots=True)
class Assessment:
    """The derived state, the next move, and why."""

    state: OperationState
    next: Next
    index: int | None = None
    reason: str = ""


_DOUBT = (Status.UNKNOWN, Status.NEEDS_REVIEW)
_BUSY = (Status.CLAIMED, Status.EXECUTING)


def _check(steps: Sequence[StepState]) -> int:
    if not steps:
        raise UsageError("an operation needs at least one step")
    pivots = [i for i, s in enumerate(steps) if s.role is Role.PIVOT]
    if len(pivots) > 1:
        raise UsageError("an operation has at most one pivot step")
    for i, s in enumerate(steps):
        if s.role is Role.COMPENSATABLE and not s.has_undo:
            raise UsageError(f"step {s.name!r} is compensatable but has no undo")
        if pivots and i < pivots[0] and s.role is Role.RETRIABLE:
            raise UsageError(f"retriable step {s.name!r} must come after the pivot")
    return pivots[0] if pivots else len(steps) - 1


def assess(steps: Sequence[StepState]) -> Assessment:
    """The operation's state and the runner's next move (a pure function)."""
    pivot = _check(steps)
    # Anything abandoned by a human ends the operation where it stands.
    for s in steps:
        if s.status is Status.ABANDONED or s.undo is Status.ABANDONED:
            return Assessment(OperationState.ABANDONED, Next.STOP, reason=f"{s.name} was abandoned")
    compensating = any(s.undo is not None for s in steps)
    if steps[pivot].status is Status.CONFIRMED:
        # Forward only after the pivot. A step before it that is not done, or
        # an undo beside it, contradicts the pivot: a human decides.
        odd = next((s for s in steps[:pivot] if s.status is not Status.CONFIRMED), None)
        if compensating or odd is not None:
            what = f"{odd.name} is {odd.status}" if odd is not None else "a step was undone"
            return Assessment(
                OperationState.NEEDS_REVIEW, Next.STOP, pivot,
                f"{steps[pivot].name} is done but {what}: a human decides",
            )  # fmt: skip
    if not compensating:
        for i, s in enumerate(steps[: pivot + 1]):
            if s.status in _DOUBT:
                return Assessment(
                    OperationState.NEEDS_REVIEW, Next.STOP, i,
                    f"{s.name} is {s.status}: a human decides",
                )  # fmt: skip
    if compensating or _failed_for_good(steps, pivot):
        return _compensation(steps, pivot)
    for i, s in enumerate(steps):
        if s.role is Role.RETRIABLE and i > pivot:
            continue
        if s.status is Status.CONFIRMED:
            continue
        if s.status in _DOUBT:
            return Assessment(
                OperationState.NEEDS_REVIEW,
                Next.STOP,
                i,
                f"{s.name} is {s.status}: a human decides",
            )
        if s.status in _BUSY:
            return Assessment(OperationState.IN_PROGRESS, Next.WAIT, i, f"{s.name} is {s.status}")
        # Never claimed, or proven not to have happened with attempts left.
        return Assessment(OperationState.IN_PROGRESS, Next.RUN, i, f"{s.name} runs next")
    # Everything up to the pivot is verified: forward only from here.
    for i, s in enumerate(steps):
        if i <= pivot or s.status is Status.CONFIRMED:
            continue
        if s.status in _BUSY:
            return Assessment(OperationState.COMPLETE, Next.WAIT, i, f"{s.name} is {s.status}")
        if s.status in _DOUBT:
            return Assessment(
                OperationState.COMPLETE, Next.STOP, i, f"{s.name} is {s.status}: a human decides"
            )
        if s.status is None or s.attempts < s.max_attempts:
            return Assessment(OperationState.COMPLETE, Next.RUN, i, f"{s.name} runs (retriable)")
    return Assessment(OperationState.COMPLETE, Next.STOP, reason="complete")


def _failed_for_good(steps: Sequence[StepState], pivot: int) -> bool:
    for i, s in enumerate(steps):
        if i > pivot:
            return False
        if s.status is Status.FAILED and s.attempts >= s.max_attempts:
            return True
        if s.status is not Status.CONFIRMED:
            return False
    return False


def _compensation(steps: Sequence[StepState], pivot: int) -> Assessment:
    """Undo, newest first, every step before the failure that is verified as done."""
    failed = next(
        (i for i, s in enumerate(steps) if s.status is Status.FAILED and i <= pivot), pivot
    )
    if steps[failed].status is Status.FAILED:
        why = f"{steps[failed].name} failed"
    else:
        # Nothing failed: the operation was withdrawn (its intent version was
        # superseded, its approval expired) before this step ran.
        stop = next(i for i in range(pivot + 1) if steps[i].status is not Status.CONFIRMED)
        why = f"withdrawn before {steps[stop].name}"
    for i in range(failed - 1, -1, -1):
        s = steps[i]
        if s.status in _DOUBT:
            # Never undo what may not have happened: a human decides.
            return Assessment(
                OperationState.NEEDS_REVIEW, Next.STOP, i,
                f"{s.name} is {s.status}: it cannot be compensated blindly",
            )  # fmt: skip
        if s.status is not Status.CONFIRMED or not s.has_undo:
            continue
        if s.undo is Status.CONFIRMED:
            continue
        if s.undo in _DOUBT or s.undo is Status.FAILED:
            # An undo in doubt, or one the provider refused: a human decides.
            return Assessment(
                OperationState.NEEDS_REVIEW, Next.STOP, i, f"the undo of {s.name} is {s.undo}"
            )
        if s.undo in _BUSY:
            return Assessment(OperationState.COMPENSATING, Next.WAIT, i, f"undoing {s.name}")
        state = (
            OperationState.COMPENSATING
            if any(x.undo is not None for x in steps)
            else OperationState.NEEDS_COMPENSATION
        )
        return Assessment(state, Next.UNDO, i, f"{why}: undo {s.name}")
    return Assessment(OperationState.COMPENSATED, Next.STOP, reason=f"{why}; undone")
