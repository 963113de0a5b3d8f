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
  in the receipt, not a failure of the operation. A retriable step that
  failed is retried with backoff (:func:`retry_at`), under its own key,
  until it is confirmed or its attempts are spent (then it is *given up*,
  with the reason its last attempt recorded).

People move what the rules cannot (:class:`OperationDecision`, each a
:class:`DecisionRecord` with who, when, why and on which attempt): a
**withdrawn** operation (its intent version superseded, or its approval
gone) runs no unstarted step any more and undoes its verified steps newest
first; an undo the provider refused runs again only when a person says so
(``retry_undo``) or is taken as done by hand (``undone_by_hand``); a person
may end an operation in review as it stands (``accept``) or ``abandon`` it.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .errors import UsageError
from .model import Status

__all__ = [
    "RETRY_BACKOFF",
    "Assessment",
    "DecisionRecord",
    "Next",
    "OperationDecision",
    "OperationState",
    "Role",
    "StepState",
    "assess",
    "retry_at",
]

#: Seconds before a failed retriable step (a notification) is tried again, doubling.
RETRY_BACKOFF = 30.0
#: The longest wait between two tries of a retriable step.
RETRY_BACKOFF_MAX = 3600.0


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
    ABANDONED = "abandoned"  # a human abandoned a step (or it); nothing more happens
    ACCEPTED = "accepted"  # a human accepted it as it stands; nothing more happens


class Next(enum.StrEnum):
    """What the operation's runner does next."""

    RUN = "run"  # run step ``index`` (its effect)
    UNDO = "undo"  # run the undo effect of step ``index``
    WAIT = "wait"  # a step is being run by someone else: come back later
    STOP = "stop"  # nothing more to do now (complete, compensated, review)


class OperationDecision(enum.StrEnum):
    """What a person (or a revision of the intent) decides about an operation."""

    RETRY_UNDO = "retry_undo"  # run the refused (or proven absent) undo again
    UNDONE_BY_HAND = "undone_by_hand"  # the undo was done by hand, outside actonce
    ACCEPT = "accept"  # end it as it stands: what is done stays done
    ABANDON = "abandon"  # end it: nothing more happens (what stands is said)
    WITHDRAW = "withdraw"  # close it: no unstarted step runs, verified steps are undone


@dataclass(frozen=True, slots=True)
class DecisionRecord:
    """One decision as the ledger keeps it.

    Attributes:
        decision: what was decided.
        by: who decided (a reviewer's name, or ``system`` for a revision).
        at: ledger time of the decision.
        reason: why, in the decider's words.
        step: the step it is about (``None``: the whole operation).
        attempt: the attempt (fence) of the effect in question when decided.
        n: its number among the operation's decisions (1, 2, ...).
    """

    decision: OperationDecision
    by: str
    at: float
    reason: str
    step: str | None = None
    attempt: int = 0
    n: int = 0

    def as_json(self) -> dict[str, object]:
        """The decision as JSON."""
        return {"n": self.n, "decision": self.decision.value, "by": self.by, "at": self.at,
                "reason": self.reason, "step": self.step, "attempt": self.attempt}  # fmt: skip


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
        undo_attempts: claims of its undo so far (the undo's fence).
        since: when its effect last changed (ledger time; the backoff of a
            retriable step counts from its last failure).
        reason: its effect's recorded reason (why a retriable step failed).
        backoff: seconds before a failed retriable step is tried again (doubling).
        undo_retry: a person asked for its refused undo to run again.
    """

    name: str
    role: Role
    status: Status | None = None
    attempts: int = 0
    max_attempts: int = 1
    undo: Status | None = None
    has_undo: bool = False
    undo_attempts: int = 0
    since: float | None = None
    reason: str | None = None
    backoff: float = RETRY_BACKOFF
    undo_retry: bool = False


@dataclass(frozen=True, slots=True)
class Assessment:
    """The derived state, the next move, and why."""

    state: OperationState
    next: Next
    index: int | None = None
    reason: str = ""
    undo: bool = False  # the step at ``index`` is in question for its undo
    due: float | None = None  # when a waiting retriable step may be tried again
    closed: bool = False  # the operation was withdrawn


def retry_at(step: StepState) -> float | None:
    """When a failed retriable step may be tried again (``None``: at once)."""
    if step.since is None or step.attempts < 1:
        return None
    wait: float = step.backoff * 2.0 ** (step.attempts - 1)
    return step.since + min(wait, RETRY_BACKOFF_MAX)


_DOUBT = (Status.UNKNOWN, Status.NEEDS_REVIEW)
_BUSY = (Status.CLAIMED, Status.EXECUTING)
#: Undo statuses a person may settle: refused (proven not done) or in doubt.
_QUESTIONED = (Status.FAILED, Status.UNKNOWN, Status.NEEDS_REVIEW)


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


def assess(
    steps: Sequence[StepState],
    *,
    decisions: Sequence[DecisionRecord] = (),
    now: float | None = None,
) -> Assessment:
    """The operation's state and the runner's next move (a pure function).

    ``decisions`` are the operation's decisions, oldest first (see
    :class:`OperationDecision`); ``now`` (ledger time) holds a failed
    retriable step back until its backoff has passed (without it, at once).
    """
    pivot = _check(steps)
    for d in reversed(decisions):
        if d.decision is OperationDecision.ACCEPT:
            why = f"accepted as it stands by {d.by}: {d.reason}"
            return Assessment(OperationState.ACCEPTED, Next.STOP, reason=why)
        if d.decision is OperationDecision.ABANDON:
            why = f"abandoned by {d.by}: {d.reason}"
            return Assessment(OperationState.ABANDONED, Next.STOP, reason=why)
    steps = _applied(steps, decisions)
    closed = next((d for d in decisions if d.decision is OperationDecision.WITHDRAW), None)
    a = _assess(steps, pivot, None if closed is None else closed.reason, now)
    return a if closed is None else replace(a, closed=True)


def _applied(steps: Sequence[StepState], decisions: Sequence[DecisionRecord]) -> list[StepState]:
    """The steps as the decisions about their undos make them count."""
    out = list(steps)
    for d in decisions:
        i = next((i for i, s in enumerate(out) if s.name == d.step), None)
        if i is None or out[i].undo_attempts != d.attempt:
            continue  # about another attempt of the undo: it has moved on since
        s = out[i]
        if d.decision is OperationDecision.RETRY_UNDO and s.undo is Status.FAILED:
            out[i] = replace(s, undo_retry=True)
        elif d.decision is OperationDecision.UNDONE_BY_HAND and s.undo in _QUESTIONED:
            out[i] = replace(s, undo=Status.CONFIRMED, undo_retry=False)
    return out


def _assess(
    steps: list[StepState], pivot: int, withdrawn: str | None, now: float | None
) -> Assessment:
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
    if withdrawn is not None and steps[pivot].status is not Status.CONFIRMED:
        # Withdrawn before its pivot: nothing unstarted runs; a step on its way
        # is waited for (its owner verifies it), then the verified ones are undone.
        for i, s in enumerate(steps[: pivot + 1]):
            if s.status in _BUSY:
                why = f"withdrawn ({withdrawn}); {s.name} is {s.status}: waiting for it"
                return Assessment(OperationState.COMPENSATING, Next.WAIT, i, why)
        return _compensation(steps, pivot, f"withdrawn ({withdrawn})")
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
    return _after_pivot(steps, pivot, now)


def _after_pivot(steps: list[StepState], pivot: int, now: float | None) -> Assessment:
    """Everything up to the pivot is verified: forward only, retriable steps with backoff."""
    given_up = []
    for i, s in enumerate(steps):
        if i <= pivot or s.status is Status.CONFIRMED:
            continue
        if s.status in _BUSY:
            return Assessment(OperationState.COMPLETE, Next.WAIT, i, f"{s.name} is {s.status}")
        if s.status in _DOUBT:
            return Assessment(
                OperationState.COMPLETE, Next.STOP, i, f"{s.name} is {s.status}: a human decides"
            )
        if s.status is None:
            return Assessment(OperationState.COMPLETE, Next.RUN, i, f"{s.name} runs (retriable)")
        if s.attempts < s.max_attempts:
            due = retry_at(s)
            if now is not None and due is not None and now < due:
                why = (
                    f"{s.name} failed (attempt {s.attempts} of {s.max_attempts}): "
                    "it is tried again after its backoff"
                )
                return Assessment(OperationState.COMPLETE, Next.WAIT, i, why, due=due)
            return Assessment(OperationState.COMPLETE, Next.RUN, i, f"{s.name} runs (retriable)")
        given_up.append(s)
    if given_up:
        why = "; ".join(
            f"{s.name} given up after {s.attempts} attempt{'s' if s.attempts != 1 else ''}"
            + (f": {s.reason}" if s.reason else "")
            for s in given_up
        )
        return Assessment(OperationState.COMPLETE, Next.STOP, reason=f"complete; {why}")
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


def _compensation(steps: Sequence[StepState], pivot: int, why: str | None = None) -> Assessment:
    """Undo, newest first, every step before the failure that is verified as done."""
    failed = next(
        (i for i, s in enumerate(steps) if s.status is Status.FAILED and i <= pivot), pivot
    )
    if why is not None:
        pass  # withdrawn: the caller says why
    elif steps[failed].status is Status.FAILED:
        why = f"{steps[failed].name} failed"
    else:
        # Nothing failed and no withdrawal is recorded: an agent undid steps of
        # an operation that could commit nothing any more before this step ran.
        stop = next(i for i in range(pivot + 1) if steps[i].status is not Status.CONFIRMED)
        why = f"withdrawn before {steps[stop].name}"
    # From the failure (or, withdrawn, the pivot) down: a step in doubt there may have
    # happened even after the undos began (a pass that chose it before the withdrawal).
    for i in range(failed, -1, -1):
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
        if s.undo in _DOUBT or (s.undo is Status.FAILED and not s.undo_retry):
            # An undo in doubt, or one the provider refused: a human decides.
            why = (
                f"the undo of {s.name} was refused: {s.name} still stands"
                if s.undo is Status.FAILED
                else f"the undo of {s.name} is {s.undo}"
            )
            return Assessment(OperationState.NEEDS_REVIEW, Next.STOP, i, why, undo=True)
        if s.undo in _BUSY:
            return Assessment(OperationState.COMPENSATING, Next.WAIT, i, f"undoing {s.name}")
        state = (
            OperationState.COMPENSATING
            if any(x.undo is not None for x in steps)
            else OperationState.NEEDS_COMPENSATION
        )
        return Assessment(state, Next.UNDO, i, f"{why}: undo {s.name}")
    return Assessment(OperationState.COMPENSATED, Next.STOP, reason=f"{why}; undone")
