"""``Operator`` and ``AsyncOperator``: the operator loop of seed 000, every stage a hook.

You write the stages (:class:`Hooks`: who you are, what to look at, what is
worth doing, what effects it takes); actonce keeps the guarantees: the
operator lease, reconcile before new work, the budget, at most one perform
per effect, a heartbeat between steps, the lease given back in ``finally``,
and a run summary in the failure taxonomy, stored in the ledger::

    class Poster(Hooks[Draft]):
        def identity(self) -> bool | str | None:
            return None if page.signed_in_as() == "alice" else "not signed in as alice"

        def observe(self) -> Iterable[Draft]:
            return drafts_due()

        def quality(self, draft: Draft) -> str | None:
            return "too short" if len(draft.text.split()) < 3 else None

        def plan(self, draft: Draft) -> Effect:
            return post_effect(draft, gate=ledger.budgets.gate("text_posts", "original"))

    summary = Operator(ledger, "alice-browser", Poster(), kinds=("post",)).run()

The loop itself is one generator (:mod:`actonce._run.operator`) for both
classes; the host below answers its hooks with the user's stages and the
ledger's own work.
"""

from __future__ import annotations

import functools
import inspect
import math
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Awaitable, Generator, Iterable, Mapping
from dataclasses import replace
from typing import Any, Generic, TypeAlias, TypeVar

from ._effect import Effect, new_run_id, reconcile_plan
from ._leases import default_owner
from ._ledger import AsyncLedger, Ledger
from ._operations import AsyncOperation, Operation
from ._rules.errors import UsageError
from ._rules.model import EffectRecord, RunResult
from ._rules.operator import RunSummary
from ._run.callables import NO_CALLABLES, Callables
from ._run.effect import reconcile_effect
from ._run.operation_review import touch
from ._run.operator import Config, operate

__all__ = ["AsyncHooks", "AsyncOperator", "EffectPlan", "Hooks", "Operator"]

C = TypeVar("C")

#: What ``plan`` returns: one effect, none, or several in order. A generator
#: receives each effect's :class:`~actonce.RunResult` (``sent``) before it
#: yields the next one: a thread's part ``n + 1`` names part ``n``'s URL.
EffectPlan: TypeAlias = Effect | Iterable[Effect] | Generator[Effect, RunResult, Any] | None


class Hooks(ABC, Generic[C]):
    """The stages of an operator run that you write (synchronous).

    ``observe`` and ``plan`` are required; the others have safe defaults.
    Raise :class:`~actonce.HardStop` from any of them to stop the run.
    """

    def owns(self, record: EffectRecord) -> bool:
        """Whether an open effect of the operator's kinds is this operator's own.

        Its own effects are reconciled before new work, and block new work
        while they stay ambiguous. Default: every effect of its kinds.
        """
        return True

    def identity(self) -> bool | str | None:
        """Confirm who the run acts as: ``None``/``True`` when sure; ``False`` or
        a reason (or ``HardStop``) otherwise: a hard stop."""
        return None

    @abstractmethod
    def observe(self) -> Iterable[C]:
        """The candidates due now (read-only)."""

    def rank(self, candidates: list[C]) -> Iterable[C]:
        """The candidates in the order worth trying (a model may help). Default: as observed."""
        return candidates

    def label(self, candidate: C) -> str:
        """How the summary names a candidate."""
        return str(candidate)

    def quality(self, candidate: C) -> str | None:
        """A reason the candidate is not worth doing (a quality skip), or ``None``."""
        return None

    @abstractmethod
    def plan(self, candidate: C) -> EffectPlan:
        """The effect(s) that carry the candidate out (see :data:`EffectPlan`)."""

    def resume(self, op_id: str) -> Operation | None:
        """The operation ``op_id`` with its steps' callables, if it is this operator's.

        Each operation with work due (a message to send again after its
        backoff, an undo a withdrawal queued: ``ledger.operations.due()``)
        gets one pass in the run's operations stage, after the identity check.
        Default: ``None`` (this operator drives no operations).
        """
        return None


class AsyncHooks(ABC, Generic[C]):
    """The stages of an :class:`AsyncOperator` run; same names as :class:`Hooks`, awaited.

    ``plan`` may also return an async generator of effects (``asend`` gets
    each result).
    """

    async def owns(self, record: EffectRecord) -> bool:
        """See :meth:`Hooks.owns`."""
        return True

    async def identity(self) -> bool | str | None:
        """See :meth:`Hooks.identity`."""
        return None

    @abstractmethod
    async def observe(self) -> Iterable[C]:
        """See :meth:`Hooks.observe`."""

    async def rank(self, candidates: list[C]) -> Iterable[C]:
        """See :meth:`Hooks.rank`."""
        return candidates

    async def label(self, candidate: C) -> str:
        """See :meth:`Hooks.label`."""
        return str(candidate)

    async def quality(self, candidate: C) -> str | None:
        """See :meth:`Hooks.quality`."""
        return None

    @abstractmethod
    async def plan(self, candidate: C) -> EffectPlan | AsyncGenerator[Effect, RunResult]:
        """See :meth:`Hooks.plan`."""

    async def resume(self, op_id: str) -> AsyncOperation | None:
        """See :meth:`Hooks.resume`."""
        return None


# --- the host: what the loop's hooks are answered with ---------------------------------------


class _Source:
    """The effects of one plan, handed out one at a time."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.started = False
        self.kind: str
        if value is None:
            self.kind, self.value = "iter", iter(())
        elif isinstance(value, Effect):
            self.kind = "one"
        elif inspect.isasyncgen(value):
            self.kind = "agen"
        elif inspect.isgenerator(value):
            self.kind = "gen"
        elif isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping):
            self.kind, self.value = "iter", iter(value)
        else:
            raise UsageError(
                "plan() returns an Effect, effects, a generator of effects or None, "
                f"not {type(value).__name__}"
            )

    def advance(self, result: RunResult | None) -> Effect | Awaitable[Effect | None] | None:
        first, self.started = not self.started, True
        if self.kind == "one":
            return _checked(self.value) if first else None
        if self.kind == "agen":
            return self._anext(first, result)
        try:
            if self.kind == "gen" and not first:
                return _checked(self.value.send(result))
            return _checked(next(self.value))
        except StopIteration:
            return None

    async def _anext(self, first: bool, result: RunResult | None) -> Effect | None:
        gen: AsyncGenerator[Effect, RunResult | None] = self.value
        try:
            return _checked(await (gen.__anext__() if first else gen.asend(result)))
        except StopAsyncIteration:
            return None


def _checked(value: Any) -> Effect:
    if not isinstance(value, Effect):
        raise UsageError(f"a plan's effects are actonce.Effect values, not {type(value).__name__}")
    return value


class _Host:
    """Answers the loop's ``Hook`` operations: the user's stages, then the ledger's work.

    One class for both operators: for an async ledger or async hooks, what a
    method returns is awaitable, and the async driver awaits it.
    """

    def __init__(self, ledger: Ledger | AsyncLedger, hooks: Any) -> None:
        self.ledger = ledger
        self.hooks = hooks

    def owns(self, record: EffectRecord) -> Any:
        return self.hooks.owns(record)

    def identity(self) -> Any:
        return self.hooks.identity()

    def observe(self) -> Any:
        return self.hooks.observe()

    def rank(self, candidates: list[Any]) -> Any:
        return self.hooks.rank(candidates)

    def label(self, candidate: Any) -> Any:
        return self.hooks.label(candidate)

    def quality(self, candidate: Any) -> Any:
        return self.hooks.quality(candidate)

    def plan(self, candidate: Any) -> Any:
        return self.hooks.plan(candidate)

    def source(self, value: Any) -> _Source:
        return _Source(value)

    def advance(self, source: _Source, result: RunResult | None) -> Any:
        return source.advance(result)

    def run(self, effect: Effect, run_id: str) -> Any:
        return self.ledger.run(effect, run_id=run_id)

    def reconcile(self, record: EffectRecord, run_id: str) -> Any:
        """Reconcile one record with its kind's verifier (``None``: there is none).

        Then its operation's receipt (if it is a step) says what is true now.
        """
        entry = self.ledger.registry.get(record.kind)
        if entry is None:
            return None
        plan = replace(reconcile_plan(record, entry.policy), run_id=run_id)
        fns = Callables(verify=functools.partial(entry.verify, record))
        driver = self.ledger._driver
        if isinstance(self.ledger, AsyncLedger):

            async def both() -> Any:
                result = await driver.run(reconcile_effect(plan, record), fns)
                await driver.run(touch(record.key, run_id))
                return result

            return both()
        result = driver.run(reconcile_effect(plan, record), fns)
        driver.run(touch(record.key, run_id))
        return result

    def resume(self, op_id: str) -> Any:
        """One pass of the operation the ``resume`` hook hands back (``None``: not ours)."""
        found = self.hooks.resume(op_id)
        if inspect.isawaitable(found) or isinstance(self.ledger, AsyncLedger):

            async def both() -> Any:
                op = await found if inspect.isawaitable(found) else found
                if op is None:
                    return None
                done = op.run()
                return await done if inspect.isawaitable(done) else done

            return both()
        return None if found is None else found.run()


def _config(name: str, kinds: Iterable[str], ttl: float, owner: str | None, limit: int) -> Config:
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise UsageError("an operator needs a name (its lease's; at most 200 characters)")
    if isinstance(kinds, str):
        kinds = (kinds,)
    wanted = frozenset(kinds)
    if not wanted or not all(isinstance(k, str) and k.strip() for k in wanted):
        raise UsageError("an operator needs the kinds of effect it makes (kinds=('post', ...))")
    if not isinstance(ttl, int | float) or isinstance(ttl, bool) or not math.isfinite(ttl):
        raise UsageError(f"an operator's ttl is a finite number of seconds, not {ttl!r}")
    if ttl <= 0:
        raise UsageError("an operator needs a positive ttl")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 100_000:
        raise UsageError(f"limit must be a whole number from 1 to 100,000, not {limit!r}")
    return Config(name, owner or default_owner(), float(ttl), "", wanted, limit)


def _run_id(run_id: str | None) -> str:
    if run_id is None:
        return f"op-{new_run_id()}"
    if not isinstance(run_id, str) or not run_id.strip() or len(run_id) > 200:
        raise UsageError("run_id must be a non-empty string (at most 200 characters)")
    return run_id


class Operator(Generic[C]):
    """The operator loop of seed 000 on a :class:`~actonce.Ledger`.

    Args:
        ledger: where effects, the lease, budgets and summaries live.
        name: the operator's name: its lease's (one run at a time per name,
            e.g. one per browser profile).
        hooks: your stages (see :class:`Hooks`).
        kinds: the kinds of effect this operator makes: their open effects
            are reconciled first, and block new work while ambiguous.
        ttl: the lease's seconds without a heartbeat; it must cover the
            longest step (one perform and its verification).
        owner: who runs it (default: host, process and a random part).
        limit: how many open effects reconcile looks at.
    """

    def __init__(
        self,
        ledger: Ledger,
        name: str,
        hooks: Hooks[C],
        *,
        kinds: Iterable[str],
        ttl: float = 300.0,
        owner: str | None = None,
        limit: int = 1000,
    ) -> None:
        if not isinstance(ledger, Ledger):
            raise UsageError("Operator needs a Ledger: use AsyncOperator with an AsyncLedger")
        if isinstance(hooks, AsyncHooks):
            raise UsageError("AsyncHooks are awaited: use AsyncOperator with an AsyncLedger")
        self.ledger = ledger
        self.hooks = hooks
        self.config = _config(name, kinds, ttl, owner, limit)

    @property
    def name(self) -> str:
        return self.config.name

    def run(self, *, run_id: str | None = None) -> RunSummary:
        """One run: lease, reconcile, identity, observe, rank, then each candidate.

        Returns the stored summary. A crash inside a hook (a
        ``BaseException``) gives the lease back and is re-raised.
        """
        cfg = replace(self.config, run_id=_run_id(run_id))
        self.ledger._anchor()
        fns = Callables(verify=NO_CALLABLES.verify, host=_Host(self.ledger, self.hooks))
        summary: RunSummary = self.ledger._driver.run(operate(cfg), fns)
        return summary

    def summaries(self, limit: int = 20) -> list[RunSummary]:
        """This operator's stored summaries, newest first."""
        return self.ledger.summaries(self.name, limit=limit)


class AsyncOperator(Generic[C]):
    """The operator loop on an :class:`~actonce.AsyncLedger`; same names as :class:`Operator`.

    ``hooks`` may be :class:`AsyncHooks` or plain :class:`Hooks`.
    """

    def __init__(
        self,
        ledger: AsyncLedger,
        name: str,
        hooks: AsyncHooks[C] | Hooks[C],
        *,
        kinds: Iterable[str],
        ttl: float = 300.0,
        owner: str | None = None,
        limit: int = 1000,
    ) -> None:
        if not isinstance(ledger, AsyncLedger):
            raise UsageError("AsyncOperator needs an AsyncLedger: use Operator with a Ledger")
        self.ledger = ledger
        self.hooks = hooks
        self.config = _config(name, kinds, ttl, owner, limit)

    @property
    def name(self) -> str:
        return self.config.name

    async def run(self, *, run_id: str | None = None) -> RunSummary:
        """See :meth:`Operator.run`."""
        cfg = replace(self.config, run_id=_run_id(run_id))
        await self.ledger._anchor()
        fns = Callables(verify=NO_CALLABLES.verify, host=_Host(self.ledger, self.hooks))
        summary: RunSummary = await self.ledger._driver.run(operate(cfg), fns)
        return summary

    async def summaries(self, limit: int = 20) -> list[RunSummary]:
        """See :meth:`Operator.summaries`."""
        return await self.ledger.summaries(self.name, limit=limit)
