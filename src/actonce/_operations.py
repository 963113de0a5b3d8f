"""``Operation``: hold → pay → book → notify, one effect per step, sync and async.

Thin facades over :mod:`actonce._run.operation`, run by the ledger's driver.
Each step is an :class:`~actonce.Effect` (its own key, verifier, policy) with
a role; a compensatable step has an undo effect. ``run()`` makes one pass:
it runs the next steps while they settle, compensates verified steps when one
fails for good before the pivot, stops at anything in doubt, and writes the
operation's receipt when it stands still in a final state (``receipt()``
reads it, as true when read).

``ledger.operations`` (:class:`Operations`, :class:`AsyncOperations`) reads
an operation from the ledger alone — no callables needed — and records the
decisions people make about it: retry an undo, record one done by hand,
accept it as it stands, abandon it, withdraw it (see
:mod:`actonce._rules.operation_review`). The review console and the CLI use
it.

:func:`provider_retry` is the one retry a *perform* may make: the same
request with the same provider idempotency key, for a provider that
honours one (seed 004: "Provider retry: backoff retains the provider key").
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ._effect import Effect, new_run_id, plan_of
from ._rules.errors import UsageError
from ._rules.intents import IntentRef
from ._rules.operations import RETRY_BACKOFF, Assessment, OperationDecision, Role, StepState, assess
from ._rules.receipts import Receipt
from ._rules.text import world_text
from ._run import operation as gen
from ._run import operation_review as review
from ._run import operation_view as views
from ._run.callables import Callables
from ._run.drive import AsyncDrives, Drives
from ._run.operation_view import OperationView

if TYPE_CHECKING:
    from ._ledger import AsyncLedger, Ledger

__all__ = [
    "AsyncOperation",
    "AsyncOperations",
    "Operation",
    "Operations",
    "Step",
    "aprovider_retry",
    "provider_retry",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Step:
    """One step of an operation.

    Attributes:
        name: the step's name (``hold``, ``pay``, ``book``, ``notify``).
        effect: the step's effect (its own key, verifier and policy).
        role: ``compensatable`` (give ``undo``), ``pivot`` (at most one; forward
            only after it) or ``retriable`` (after the pivot; a notification).
        undo: the effect that undoes a verified ``compensatable`` step.
        attempts: how many proven failures are retried before the operation
            gives up on the step (compensating before the pivot; a retriable
            step is then *given up*, with its last reason).
        backoff: seconds before a failed retriable step is tried again,
            doubling with each attempt (at most an hour).
    """

    name: str
    effect: Effect
    role: Role | str = Role.COMPENSATABLE
    undo: Effect | None = None
    attempts: int = 1
    backoff: float = RETRY_BACKOFF

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise UsageError("a step needs a name")
        if not isinstance(self.effect, Effect):
            raise UsageError(f"step {self.name!r}: effect must be an actonce.Effect")
        try:
            object.__setattr__(self, "role", Role(self.role))
        except ValueError:
            roles = ", ".join(r.value for r in Role)
            raise UsageError(f"step {self.name!r}: role is one of {roles}") from None
        if self.undo is not None and not isinstance(self.undo, Effect):
            raise UsageError(f"step {self.name!r}: undo must be an actonce.Effect")
        ok = isinstance(self.attempts, int) and not isinstance(self.attempts, bool)
        if not ok or not 1 <= self.attempts <= 100:
            raise UsageError(f"step {self.name!r}: attempts is a whole number from 1 to 100")
        good = isinstance(self.backoff, int | float) and not isinstance(self.backoff, bool)
        if not good or not 0 <= self.backoff <= 86400:
            raise UsageError(f"step {self.name!r}: backoff is 0 to 86400 seconds")


def _callables(effect: Effect) -> Callables:
    return Callables(
        effect.verify, effect.perform, effect.precondition, effect.evidence, effect.refresh
    )


def _plan(
    ledger: Ledger | AsyncLedger,
    op_id: str,
    steps: Sequence[Step],
    intent: IntentRef | None,
    approval: str | None,
    contact: str | None = None,
) -> gen.OperationPlan:
    if not isinstance(op_id, str) or not op_id.strip():
        raise UsageError("an operation needs an id")
    if contact is not None and (not isinstance(contact, str) or not contact.strip()):
        raise UsageError("contact is who the user may ask (a non-empty string)")
    if not steps:
        raise UsageError("an operation needs at least one step")
    names = [s.name for s in steps]
    if len(set(names)) != len(names):
        raise UsageError("the steps of an operation need different names")
    run_id = new_run_id()
    key = ledger.fingerprint_key
    planned = []
    for s in steps:
        undo = None if s.undo is None else plan_of(s.undo, key, run_id)
        planned.append(
            gen.StepPlan(
                s.name,
                Role(s.role),
                s.attempts,
                plan_of(s.effect, key, run_id),
                _callables(s.effect),
                undo,
                None if s.undo is None else _callables(s.undo),
                float(s.backoff),
            )
        )
    keys = [p.plan.key for p in planned] + [p.undo_plan.key for p in planned if p.undo_plan]
    if len(set(keys)) != len(keys):
        raise UsageError("every step and undo of an operation needs a key of its own")
    text = None if contact is None else world_text(contact.strip(), limit=200)
    plan = gen.OperationPlan(op_id, intent, approval, tuple(planned), run_id, text)
    assess([StepState(p.name, p.role, has_undo=p.undo_plan is not None) for p in planned])
    return plan


class Operation:
    """A multi-step operation over a :class:`~actonce.Ledger`.

    Args:
        ledger: the ledger.
        op_id: a stable id (e.g. ``"booking:trip-1@v2"``).
        steps: the steps in order.
        intent: the intent version the operation serves (its receipt shows it).
        approval: the approval packet that authorized it (its receipt shows it).
        contact: who the user may ask about it (its receipt names it).
    """

    def __init__(
        self,
        ledger: Ledger,
        op_id: str,
        steps: Sequence[Step],
        *,
        intent: IntentRef | None = None,
        approval: str | None = None,
        contact: str | None = None,
    ) -> None:
        self._ledger = ledger
        self.plan = _plan(ledger, op_id, steps, intent, approval, contact)
        self.op_id = op_id
        self._defined = False

    def run(self) -> gen.OperationResult:
        """One pass: run the next steps while they settle (see the module docstring)."""
        result = self._ledger._drive(gen.run_operation(self.plan, define=not self._defined))
        self._defined = True
        return result

    def state(self) -> Assessment:
        """The operation's state, derived from its steps now."""
        return self._ledger._drive(_assess(self.plan))

    def receipt(self) -> Receipt | None:
        """Its receipt as true now (``None`` before its first pass)."""
        return self._ledger.receipt(self.op_id)

    def withdraw(self, *, by: str, reason: str) -> OperationView:
        """Close it: no unstarted step runs any more; its next pass undoes what it did.

        For a version that can commit nothing any more (its approval expired
        or was denied). A revision of the intent withdraws the operations of
        the version it supersedes by itself.
        """
        result = self._ledger._drive(gen.withdraw_operation(self.plan, by, reason))
        self._defined = True
        return result


class AsyncOperation:
    """A multi-step operation over an :class:`~actonce.AsyncLedger`; same names."""

    def __init__(
        self,
        ledger: AsyncLedger,
        op_id: str,
        steps: Sequence[Step],
        *,
        intent: IntentRef | None = None,
        approval: str | None = None,
        contact: str | None = None,
    ) -> None:
        self._ledger = ledger
        self.plan = _plan(ledger, op_id, steps, intent, approval, contact)
        self.op_id = op_id
        self._defined = False

    async def run(self) -> gen.OperationResult:
        """See :meth:`Operation.run`."""
        steps = gen.run_operation(self.plan, define=not self._defined)
        result = await self._ledger._drive(steps)
        self._defined = True
        return result

    async def state(self) -> Assessment:
        """See :meth:`Operation.state`."""
        return await self._ledger._drive(_assess(self.plan))

    async def receipt(self) -> Receipt | None:
        """See :meth:`Operation.receipt`."""
        return await self._ledger.receipt(self.op_id)

    async def withdraw(self, *, by: str, reason: str) -> OperationView:
        """See :meth:`Operation.withdraw`."""
        result = await self._ledger._drive(gen.withdraw_operation(self.plan, by, reason))
        self._defined = True
        return result


def _assess(op: gen.OperationPlan) -> gen.Gen[Assessment]:
    view = yield from views.view_of(op.op_id)
    return view.assessment


def _limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
        raise UsageError(f"limit is a whole number from 1 to 10000, not {limit!r}")
    return limit


class Operations:
    """The operations of a :class:`~actonce.Ledger` (``ledger.operations``).

    Reads an operation from the ledger alone, and records the decisions that
    move one a person has to decide (see :mod:`actonce._rules.operation_review`).
    """

    def __init__(self, ledger: Drives) -> None:
        self._ledger = ledger

    def get(self, op_id: str) -> OperationView:
        """The operation as it stands now (``UsageError`` if the ledger has none)."""
        return self._ledger._drive(views.view_of(op_id))

    def in_review(self, *, limit: int = 100) -> builtins.list[OperationView]:
        """Operations waiting for a person, oldest first."""
        return self._ledger._drive(review.in_review(_limit(limit)))

    def due(self, *, limit: int = 100) -> builtins.list[str]:
        """Ids of operations with work due now (a notification to resend, a queued undo)."""
        return self._ledger._drive(review.due(_limit(limit)))

    def decide(
        self,
        op_id: str,
        decision: OperationDecision | str,
        *,
        by: str,
        reason: str,
        attempt: int | None = None,
        step: str | None = None,
    ) -> OperationView:
        """Record a decision (``retry_undo``, ``undone_by_hand``, ``accept``, ``abandon``,
        ``withdraw``); the same decision again answers with the existing state.

        Pass ``attempt`` (``view.attempt`` as the decider saw it): the decision
        is then refused if the effect in question has moved on meanwhile.
        """
        steps = review.decide(op_id, decision, by=by, reason=reason, attempt=attempt, step=step)
        return self._ledger._drive(steps)

    def withdraw(self, op_id: str, *, by: str, reason: str) -> OperationView:
        """Close an operation: no unstarted step runs; its next pass undoes what it did."""
        return self.decide(op_id, OperationDecision.WITHDRAW, by=by, reason=reason)


class AsyncOperations:
    """The operations of an :class:`~actonce.AsyncLedger`; same names as :class:`Operations`."""

    def __init__(self, ledger: AsyncDrives) -> None:
        self._ledger = ledger

    async def get(self, op_id: str) -> OperationView:
        """See :meth:`Operations.get`."""
        return await self._ledger._drive(views.view_of(op_id))

    async def in_review(self, *, limit: int = 100) -> builtins.list[OperationView]:
        """See :meth:`Operations.in_review`."""
        return await self._ledger._drive(review.in_review(_limit(limit)))

    async def due(self, *, limit: int = 100) -> builtins.list[str]:
        """See :meth:`Operations.due`."""
        return await self._ledger._drive(review.due(_limit(limit)))

    async def decide(
        self,
        op_id: str,
        decision: OperationDecision | str,
        *,
        by: str,
        reason: str,
        attempt: int | None = None,
        step: str | None = None,
    ) -> OperationView:
        """See :meth:`Operations.decide`."""
        steps = review.decide(op_id, decision, by=by, reason=reason, attempt=attempt, step=step)
        return await self._ledger._drive(steps)

    async def withdraw(self, op_id: str, *, by: str, reason: str) -> OperationView:
        """See :meth:`Operations.withdraw`."""
        return await self.decide(op_id, OperationDecision.WITHDRAW, by=by, reason=reason)


def provider_retry(
    call: Callable[[], T],
    *,
    attempts: int = 4,
    backoff: float = 0.5,
    retry_on: tuple[type[BaseException], ...] = (Exception,),
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``call`` again on a transient error — only for an idempotent provider.

    Use it *inside* a perform whose request carries the provider's
    idempotency key (the step's effect key, say), so every retry is the same
    request and the provider answers it with the one object it made. Never
    use it for a request without such a key: that is the blind retry actonce
    exists to prevent.
    """
    if not isinstance(attempts, int) or not 1 <= attempts <= 20:
        raise UsageError("attempts is a whole number from 1 to 20")
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except retry_on:
            if attempt == attempts:
                raise
            sleep(min(backoff * 2 ** (attempt - 1), 8.0))
    raise AssertionError("unreachable")  # pragma: no cover


async def aprovider_retry(
    call: Callable[[], Awaitable[T]],
    *,
    attempts: int = 4,
    backoff: float = 0.5,
    retry_on: tuple[type[BaseException], ...] = (Exception,),
) -> T:
    """The async twin of :func:`provider_retry`."""
    import asyncio

    if not isinstance(attempts, int) or not 1 <= attempts <= 20:
        raise UsageError("attempts is a whole number from 1 to 20")
    for attempt in range(1, attempts + 1):
        try:
            return await call()
        except retry_on:
            if attempt == attempts:
                raise
            await asyncio.sleep(min(backoff * 2 ** (attempt - 1), 8.0))
    raise AssertionError("unreachable")  # pragma: no cover
