"""``Operation``: hold → pay → book → notify, one effect per step, sync and async.

Thin facades over :mod:`actonce._run.operation`, run by the ledger's driver.
Each step is an :class:`~actonce.Effect` (its own key, verifier, policy) with
a role; a compensatable step has an undo effect. ``run()`` makes one pass:
it runs the next steps while they settle, compensates verified steps when one
fails for good before the pivot, stops at anything in doubt, and writes the
operation's receipt when it stands still in a final state (``receipt()``
reads it).

:func:`provider_retry` is the one retry a *perform* may make: the same
request with the same provider idempotency key, for a provider that
honours one (seed 004: "Provider retry: backoff retains the provider key").
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ._effect import Effect, new_run_id, plan_of
from ._rules.errors import UsageError
from ._rules.intents import IntentRef
from ._rules.operations import Assessment, Role
from ._rules.receipts import Receipt
from ._run import operation as gen
from ._run.callables import Callables

if TYPE_CHECKING:
    from ._ledger import AsyncLedger, Ledger

__all__ = ["AsyncOperation", "Operation", "Step", "aprovider_retry", "provider_retry"]

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
            gives up on the step (compensating before the pivot).
    """

    name: str
    effect: Effect
    role: Role | str = Role.COMPENSATABLE
    undo: Effect | None = None
    attempts: int = 1

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
) -> gen.OperationPlan:
    if not isinstance(op_id, str) or not op_id.strip():
        raise UsageError("an operation needs an id")
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
            )
        )
    keys = [p.plan.key for p in planned] + [p.undo_plan.key for p in planned if p.undo_plan]
    if len(set(keys)) != len(keys):
        raise UsageError("every step and undo of an operation needs a key of its own")
    plan = gen.OperationPlan(op_id, intent, approval, tuple(planned), run_id)
    from ._rules.operations import StepState, assess

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
    """

    def __init__(
        self,
        ledger: Ledger,
        op_id: str,
        steps: Sequence[Step],
        *,
        intent: IntentRef | None = None,
        approval: str | None = None,
    ) -> None:
        self._ledger = ledger
        self.plan = _plan(ledger, op_id, steps, intent, approval)
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
        """The stored receipt (``None`` until the operation stood still in a final state)."""
        return self._ledger.receipt(self.op_id)


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
    ) -> None:
        self._ledger = ledger
        self.plan = _plan(ledger, op_id, steps, intent, approval)
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


def _assess(op: gen.OperationPlan) -> gen.Gen[Assessment]:
    from ._rules.operations import assess

    records = yield from gen._records(op)
    return assess(gen._states(op, records))


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
