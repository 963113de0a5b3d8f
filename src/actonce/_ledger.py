"""``Ledger`` and ``AsyncLedger``: the public face of the protocol.

Both plan an effect once (:func:`actonce._effect.plan_of`) and hand the
protocol generator (:mod:`actonce._run.effect`, :mod:`actonce._run.review`)
to their driver (:mod:`actonce._run.drive`): the sync driver calls the store
and the user's callables directly, the async driver awaits them and runs a
synchronous store (SQLite) through the one thread adapter. Every method is a
few lines over its driver; the two classes have the same names.
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Callable, Generator, Iterable
from typing import Any, ParamSpec, TypeVar

from ._approvals import Approvals, AsyncApprovals, AsyncIntents, Intents
from ._budgets import AsyncBudgets, Budgets
from ._effect import Effect, fingerprint_key_from_env, plan_of, reconcile_plan
from ._registry import Registry
from ._registry import registry as default_registry
from ._rules.approvals import SigningKeys
from ._rules.errors import ActOnceError, UnknownEffect, UsageError
from ._rules.holds import Hold
from ._rules.keys import EffectKey, check_name, is_name
from ._rules.model import (
    EffectRecord,
    Event,
    Outcome,
    Policy,
    ReconcileReport,
    Resolution,
    RunResult,
    Status,
    Verdict,
)
from ._rules.operator import RunSummary
from ._rules.receipts import Receipt
from ._rules.secrets import FingerprintKey, mask_url
from ._rules.text import world_text
from ._run import approvals as gated
from ._run import operation, ops, review
from ._run.clock import Clock, SystemClock
from ._run.drive import AsyncDriver, Callables, Driver, Heartbeats
from ._run.effect import Plan, needs_reconcile, reconcile_effect, run_effect
from ._run.operator import SummaryGet, SummaryList
from ._run.ops import Op
from ._run.telemetry import Telemetry
from ._store.base import AsyncEffectStore, AsyncStore, EffectStore
from ._store.threads import threaded
from ._store.urls import open_store, resolve_url

__all__ = ["AsyncLedger", "Ledger"]

P = ParamSpec("P")
T = TypeVar("T")

#: Seconds between two readings of a database server's clock (PostgreSQL).
ANCHOR_EVERY = 60.0


class _Base:
    """What both ledgers share: configuration, plans and the triage of reconcile."""

    def __init__(
        self,
        store: Any,
        *,
        clock: Clock | None,
        registry: Registry | None,
        fingerprint_key: FingerprintKey | None,
        url: str | None,
        signing_keys: SigningKeys | None = None,
    ) -> None:
        if fingerprint_key is not None and not isinstance(fingerprint_key, FingerprintKey):
            raise UsageError(
                f"fingerprint_key must be a FingerprintKey, not {type(fingerprint_key).__name__}"
            )
        if registry is not None and not isinstance(registry, Registry):
            raise UsageError(f"registry must be a Registry, not {type(registry).__name__}")
        self.clock: Clock = clock or SystemClock()
        self._signing_keys = signing_keys
        self.registry = registry or default_registry
        self.fingerprint_key = (
            fingerprint_key if fingerprint_key is not None else fingerprint_key_from_env()
        )
        self._url = url
        # A ledger on a database server compares windows on the server's clock.
        self._server_time = None if clock is not None else getattr(store, "server_time", None)

    _driver: Any  # Driver or AsyncDriver, set by the subclass

    @property
    def telemetry(self) -> Telemetry | None:
        """The observer of effect attempts (``None``: off, the default).

        Set it to an implementation of :class:`actonce.Telemetry` (e.g.
        ``actonce.otel.instrument(ledger)``): every run and reconcile of an
        effect is then told to it. Off, it costs one attribute check per run.
        """
        telemetry: Telemetry | None = self._driver.telemetry
        return telemetry

    @telemetry.setter
    def telemetry(self, value: Telemetry | None) -> None:
        if value is not None and not callable(getattr(value, "begin", None)):
            raise UsageError("telemetry needs a begin(run) method (see actonce.Telemetry)")
        self._driver.telemetry = value

    @property
    def url(self) -> str:
        """The ledger's URL, fit to print (credentials masked)."""
        return mask_url(self._url) if self._url else "(a store given directly)"

    def _plan(self, effect: Effect, run_id: str | None) -> Plan:
        if not isinstance(effect, Effect):
            raise UsageError(f"run() takes an actonce.Effect, not {type(effect).__name__}")
        return plan_of(effect, self.fingerprint_key, run_id)

    def _anchor_due(self) -> bool:
        if self._server_time is None or not isinstance(self.clock, SystemClock):
            return False
        since = self.clock.anchored_for()
        return since is None or since >= ANCHOR_EVERY

    def _triage(
        self, records: builtins.list[EffectRecord]
    ) -> tuple[builtins.list[tuple[Plan, EffectRecord, Callables]], int, builtins.list[str]]:
        """Split open effects into work for reconcile, live ones and unverifiable ones."""
        work: builtins.list[tuple[Plan, EffectRecord, Callables]] = []
        live, missing = 0, []
        now, trusted = self.clock.now(), self.clock.trusted()
        for record in records:
            if not needs_reconcile(record, now, trusted=trusted):
                live += 1
                continue
            entry = self.registry.get(record.kind)
            if entry is None:
                missing.append(record.key)
                continue
            fns = Callables(verify=functools.partial(entry.verify, record))
            work.append((reconcile_plan(record, entry.policy), record, fns))
        return work, live, missing


def _failed(record: EffectRecord, exc: Exception) -> tuple[RunResult, tuple[str, str]]:
    message = world_text(f"reconcile of this effect failed: {type(exc).__name__}: {exc}")
    result = RunResult(
        Outcome.DEFERRED, record.key, record.status, record.result_ref, message, record.fence
    )
    return result, (record.key, message)


StatusFilter = Status | str | Iterable[Status | str] | None
"""One status, several, or ``None`` for all."""

Cursor = tuple[float, str]


def _statuses(status: StatusFilter) -> tuple[Status, ...] | None:
    if status is None:
        return None
    many = [status] if isinstance(status, str) else list(status)
    if not many:
        raise UsageError("give at least one status, or None for all")
    try:
        return tuple(Status(s) for s in many)
    except ValueError:
        choices = ", ".join(s.value for s in Status)
        raise UsageError(f"a status is one of {choices}, not {status!r}") from None


def _after(after: EffectRecord | Cursor | None) -> Cursor | None:
    if after is None:
        return None
    if isinstance(after, EffectRecord):
        return (after.updated_at, after.key)
    ok = (
        isinstance(after, tuple)
        and len(after) == 2
        and isinstance(after[0], int | float)
        and not isinstance(after[0], bool)
        and math.isfinite(after[0])
        and isinstance(after[1], str)
    )
    if not ok:
        raise UsageError(
            f"after is the last record of a page or its (updated_at, key), not {after!r}"
        )
    return (float(after[0]), after[1])


def _limit(limit: Any) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1_000_000:
        raise UsageError(f"limit must be a whole number from 1 to 1,000,000, not {limit!r}")
    return limit


def _progress(progress: Any) -> None:
    if progress is not None and not callable(progress):
        raise UsageError(f"progress must be callable or None, not {progress!r}")


class Ledger(_Base):
    """The durable ledger of effects, synchronous.

    Open one with :meth:`open` (a URL or a path) or wrap a store. Use it as a
    context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        store: EffectStore,
        *,
        clock: Clock | None = None,
        registry: Registry | None = None,
        fingerprint_key: FingerprintKey | None = None,
        url: str | None = None,
        signing_keys: SigningKeys | None = None,
    ) -> None:
        if not isinstance(store, EffectStore):
            raise UsageError("Ledger needs a synchronous store: use AsyncLedger for async stores")
        super().__init__(
            store,
            clock=clock,
            registry=registry,
            fingerprint_key=fingerprint_key,
            url=url,
            signing_keys=signing_keys,
        )
        self.store = store
        self._heartbeats = Heartbeats()
        self._driver = Driver(store, self.clock, self._heartbeats)
        self.intents = Intents(self)
        """Versioned intents (see :class:`~actonce.Intents`)."""
        self.approvals = Approvals(self, signing_keys)
        """Approval packets (see :class:`~actonce.Approvals`)."""
        self.budgets = Budgets(self)
        """Budget pools (see :class:`~actonce.Budgets`)."""

    def _drive(self, steps: Generator[Op, Any, T]) -> T:
        result: T = self._driver.run(steps)
        return result

    @classmethod
    def open(
        cls,
        url: str | None = None,
        *,
        create: bool = False,
        readonly: bool = False,
        clock: Clock | None = None,
        registry: Registry | None = None,
        fingerprint_key: FingerprintKey | None = None,
        signing_keys: SigningKeys | None = None,
    ) -> Ledger:
        """Open the ledger at ``url`` (see :func:`actonce.open_ledger`)."""
        target = resolve_url(url)
        store = open_store(target, create=create, readonly=readonly)
        return cls(
            store,
            clock=clock,
            registry=registry,
            fingerprint_key=fingerprint_key,
            url=target,
            signing_keys=signing_keys,
        )

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the underlying store."""
        self._heartbeats.close()
        self.store.close()

    def _anchor(self) -> None:
        if self._anchor_due():
            assert self._server_time is not None and isinstance(self.clock, SystemClock)
            self.clock.anchor(self._server_time())

    def run(self, effect: Effect, *, run_id: str | None = None) -> RunResult:
        """Run ``effect`` under the protocol: perform at most once.

        Raises:
            PayloadMismatch: the key is recorded with another payload.
            LedgerError: the ledger could not record a step; nothing was
                performed after the failed write.
            UsageError: ``effect`` is not a valid effect.
        """
        plan = self._plan(effect, run_id)
        self._anchor()
        fns = Callables(
            effect.verify, effect.perform, effect.precondition, effect.evidence, effect.refresh
        )
        result: RunResult = self._driver.run(run_effect(plan), fns, plan)
        return result

    def once(
        self,
        *,
        kind: str,
        key: Callable[P, EffectKey | str],
        verify: Callable[P, Verdict],
        payload: Callable[P, Any] | None = None,
        policy: Policy | None = None,
    ) -> Callable[[Callable[P, Any]], Callable[P, RunResult]]:
        """Decorator: make a plain function an effect run under the protocol.

        ``key``, ``verify`` and ``payload`` receive the same arguments as the
        function; the payload defaults to the arguments themselves::

            @ledger.once(kind="invoice", key=lambda ref: invoice_key(ref),
                         verify=lambda ref: invoice_exists(ref))
            def create_invoice(ref: str) -> None: ...

            result = create_invoice("ORDER-9201")   # a RunResult
        """

        def deco(fn: Callable[P, Any]) -> Callable[P, RunResult]:
            @functools.wraps(fn)
            def wrapper(*args: P.args, **kwargs: P.kwargs) -> RunResult:
                return self.run(_once_effect(kind, key, verify, payload, policy, fn, args, kwargs))

            return wrapper

        return deco

    def reconcile(
        self, *, limit: int = 10_000, progress: Callable[[RunResult], None] | None = None
    ) -> ReconcileReport:
        """Verify every unfinished effect and move it on (never performs).

        One effect whose reconcile fails (a ledger error, an answer that
        cannot be stored) is reported in ``errors``; the pass goes on.
        """
        _progress(progress)
        self._anchor()
        records = self._driver.run(_open(limit))
        work, live, missing = self._triage(records)
        results: builtins.list[RunResult] = []
        errors: builtins.list[tuple[str, str]] = []
        for plan, record, fns in work:
            try:
                result = self._driver.run(reconcile_effect(plan, record), fns, plan, "reconcile")
            except ActOnceError as exc:
                result, error = _failed(record, exc)
                errors.append(error)
            results.append(result)
            if progress:
                progress(result)
        return ReconcileReport(tuple(results), live, tuple(missing), tuple(errors))

    def resolve(
        self,
        key: str,
        decision: Resolution | str,
        *,
        reviewer: str,
        reason: str,
        result_ref: str | None = None,
    ) -> EffectRecord:
        """Record a reviewer's decision on an effect in review (or unknown)."""
        steps = review.resolve(
            key, decision, reviewer=reviewer, reason=reason, result_ref=result_ref
        )
        record: EffectRecord = self._driver.run(steps)
        return record

    def get(self, key: str) -> EffectRecord | None:
        """The current record under the full ``key``, or ``None``."""
        record: EffectRecord | None = self._driver.run(_get(key))
        return record

    def find(self, key_or_prefix: str) -> EffectRecord:
        """The record under a full key or a unique key prefix.

        Raises:
            UnknownEffect: nothing (or more than one effect) matches.
        """
        record: EffectRecord = self._driver.run(review.find(key_or_prefix))
        return record

    def list(
        self,
        status: StatusFilter = None,
        *,
        kind: str | None = None,
        limit: int = 100,
        after: EffectRecord | Cursor | None = None,
    ) -> builtins.list[EffectRecord]:
        """Effects, oldest change first, optionally of some statuses and one kind.

        Page with ``after``: the last record of the previous page (or its
        ``(updated_at, key)``). A page is read from an index, so page 1,000
        of a large ledger costs what the first one does::

            page = ledger.list(["unknown", "needs_review"], limit=50)
            more = ledger.list(["unknown", "needs_review"], limit=50, after=page[-1])
        """
        steps = _select(status, kind, limit, after)
        records: builtins.list[EffectRecord] = self._driver.run(steps)
        return records

    def events(self, key: str) -> builtins.list[Event]:
        """The full history of an effect (key or unique prefix).

        A gated effect that was never claimed has no record, but a history
        under its full key (why its claims were refused, its refreshed facts).
        """
        events: builtins.list[Event] = self._driver.run(_events(key))
        return events

    def holds(self, key: str) -> builtins.list[Hold]:
        """What the claims of an effect hold (key or unique prefix), oldest attempt first.

        A gated claim holds its intent version, its approval packet and its
        budget draws; the verdict consumes them (confirmed) or releases them
        (provably not happened, abandoned). An effect that was never gated
        holds nothing.
        """
        return self._drive(gated.holds(key))

    def counts(self, status: StatusFilter = None) -> dict[Status, int]:
        """How many effects are in each status.

        With ``status`` (one or several), only those are counted, each one
        an index range: cheap in a ledger of any size, where counting every
        status reads the whole index.
        """
        counts: dict[Status, int] = self._driver.run(_counts(status))
        return counts

    def duplicates(self) -> int:
        """How many effects were settled on a verdict that saw more than one result."""
        return int(self._driver.run(_one(ops.Duplicates())))

    def receipt(self, op_id: str) -> Receipt | None:
        """The receipt of an operation (``None`` until it stood still in a final state)."""
        return self._drive(operation.stored_receipt(op_id))

    def receipts(
        self, *, limit: int = 50, before: float | None = None
    ) -> builtins.list[tuple[Receipt, float]]:
        """Receipts newest first, each with the ledger time it was written.

        ``before`` pages on: pass the time of the last receipt of a page.
        """
        return self._drive(_receipts(limit, before))

    def operation_of(self, key: str) -> str | None:
        """The id of the operation whose step (or undo) has effect key ``key``."""
        return self._drive(_operation_of(key))

    def summary(self, run_id: str) -> RunSummary | None:
        """The stored summary of an operator run (see :class:`~actonce.Operator`)."""
        found: RunSummary | None = self._driver.run(_summary(run_id))
        return found

    def summaries(
        self, operator: str | None = None, *, limit: int = 20
    ) -> builtins.list[RunSummary]:
        """Stored operator run summaries, newest first (of one operator, or all)."""
        found: builtins.list[RunSummary] = self._driver.run(_summaries(operator, limit))
        return found


class AsyncLedger(_Base):
    """The durable ledger of effects, asynchronous; same names as :class:`Ledger`.

    A synchronous store (SQLite) runs in one worker thread of its own.
    """

    def __init__(
        self,
        store: EffectStore | AsyncStore,
        *,
        clock: Clock | None = None,
        registry: Registry | None = None,
        fingerprint_key: FingerprintKey | None = None,
        url: str | None = None,
        signing_keys: SigningKeys | None = None,
    ) -> None:
        if not isinstance(store, EffectStore | AsyncEffectStore):
            raise UsageError(f"AsyncLedger needs a store, not {type(store).__name__}")
        super().__init__(
            store,
            clock=clock,
            registry=registry,
            fingerprint_key=fingerprint_key,
            url=url,
            signing_keys=signing_keys,
        )
        self.store = threaded(store)
        self._driver = AsyncDriver(self.store, self.clock)
        self.intents = AsyncIntents(self)
        """Versioned intents (see :class:`~actonce.AsyncIntents`)."""
        self.approvals = AsyncApprovals(self, signing_keys)
        """Approval packets (see :class:`~actonce.AsyncApprovals`)."""
        self.budgets = AsyncBudgets(self)
        """Budget pools (see :class:`~actonce.AsyncBudgets`)."""

    async def _drive(self, steps: Generator[Op, Any, T]) -> T:
        result: T = await self._driver.run(steps)
        return result

    @classmethod
    def open(
        cls,
        url: str | None = None,
        *,
        create: bool = False,
        readonly: bool = False,
        clock: Clock | None = None,
        registry: Registry | None = None,
        fingerprint_key: FingerprintKey | None = None,
        signing_keys: SigningKeys | None = None,
    ) -> AsyncLedger:
        """Open the ledger at ``url`` (see :func:`actonce.open_ledger`)."""
        target = resolve_url(url)
        store = open_store(target, create=create, readonly=readonly, prefer_async=True)
        return cls(
            store,
            clock=clock,
            registry=registry,
            fingerprint_key=fingerprint_key,
            url=target,
            signing_keys=signing_keys,
        )

    async def __aenter__(self) -> AsyncLedger:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the underlying store."""
        await self.store.aclose()

    async def _anchor(self) -> None:
        if self._anchor_due():
            assert self._server_time is not None and isinstance(self.clock, SystemClock)
            value = self._server_time()
            self.clock.anchor(await value if not isinstance(value, float) else value)

    async def run(self, effect: Effect, *, run_id: str | None = None) -> RunResult:
        """Run ``effect`` under the protocol: perform at most once."""
        plan = self._plan(effect, run_id)
        await self._anchor()
        fns = Callables(
            effect.verify, effect.perform, effect.precondition, effect.evidence, effect.refresh
        )
        result: RunResult = await self._driver.run(run_effect(plan), fns, plan)
        return result

    def once(
        self,
        *,
        kind: str,
        key: Callable[P, EffectKey | str],
        verify: Callable[P, Any],
        payload: Callable[P, Any] | None = None,
        policy: Policy | None = None,
    ) -> Callable[[Callable[P, Any]], Callable[P, Any]]:
        """Decorator: an (async) function as an effect; see :meth:`Ledger.once`."""

        def deco(fn: Callable[P, Any]) -> Callable[P, Any]:
            @functools.wraps(fn)
            async def wrapper(*args: P.args, **kwargs: P.kwargs) -> RunResult:
                effect = _once_effect(kind, key, verify, payload, policy, fn, args, kwargs)
                return await self.run(effect)

            return wrapper

        return deco

    async def reconcile(
        self, *, limit: int = 10_000, progress: Callable[[RunResult], None] | None = None
    ) -> ReconcileReport:
        """Verify every unfinished effect and move it on (never performs)."""
        _progress(progress)
        await self._anchor()
        records = await self._driver.run(_open(limit))
        work, live, missing = self._triage(records)
        results: builtins.list[RunResult] = []
        errors: builtins.list[tuple[str, str]] = []
        for plan, record, fns in work:
            try:
                result = await self._driver.run(
                    reconcile_effect(plan, record), fns, plan, "reconcile"
                )
            except ActOnceError as exc:
                result, error = _failed(record, exc)
                errors.append(error)
            results.append(result)
            if progress:
                progress(result)
        return ReconcileReport(tuple(results), live, tuple(missing), tuple(errors))

    async def resolve(
        self,
        key: str,
        decision: Resolution | str,
        *,
        reviewer: str,
        reason: str,
        result_ref: str | None = None,
    ) -> EffectRecord:
        """Record a reviewer's decision on an effect in review (or unknown)."""
        steps = review.resolve(
            key, decision, reviewer=reviewer, reason=reason, result_ref=result_ref
        )
        record: EffectRecord = await self._driver.run(steps)
        return record

    async def get(self, key: str) -> EffectRecord | None:
        """The current record under the full ``key``, or ``None``."""
        record: EffectRecord | None = await self._driver.run(_get(key))
        return record

    async def find(self, key_or_prefix: str) -> EffectRecord:
        """The record under a full key or a unique key prefix."""
        record: EffectRecord = await self._driver.run(review.find(key_or_prefix))
        return record

    async def list(
        self,
        status: StatusFilter = None,
        *,
        kind: str | None = None,
        limit: int = 100,
        after: EffectRecord | Cursor | None = None,
    ) -> builtins.list[EffectRecord]:
        """Effects, oldest change first; see :meth:`Ledger.list` (paging included)."""
        steps = _select(status, kind, limit, after)
        records: builtins.list[EffectRecord] = await self._driver.run(steps)
        return records

    async def events(self, key: str) -> builtins.list[Event]:
        """The full history of an effect (key or unique prefix)."""
        events: builtins.list[Event] = await self._driver.run(_events(key))
        return events

    async def holds(self, key: str) -> builtins.list[Hold]:
        """What the claims of an effect hold; see :meth:`Ledger.holds`."""
        return await self._drive(gated.holds(key))

    async def counts(self, status: StatusFilter = None) -> dict[Status, int]:
        """How many effects are in each status; see :meth:`Ledger.counts`."""
        counts: dict[Status, int] = await self._driver.run(_counts(status))
        return counts

    async def duplicates(self) -> int:
        """How many effects were settled on a verdict that saw more than one result."""
        return int(await self._driver.run(_one(ops.Duplicates())))

    async def receipt(self, op_id: str) -> Receipt | None:
        """See :meth:`Ledger.receipt`."""
        return await self._drive(operation.stored_receipt(op_id))

    async def receipts(
        self, *, limit: int = 50, before: float | None = None
    ) -> builtins.list[tuple[Receipt, float]]:
        """See :meth:`Ledger.receipts`."""
        return await self._drive(_receipts(limit, before))

    async def operation_of(self, key: str) -> str | None:
        """See :meth:`Ledger.operation_of`."""
        return await self._drive(_operation_of(key))

    async def summary(self, run_id: str) -> RunSummary | None:
        """See :meth:`Ledger.summary`."""
        found: RunSummary | None = await self._driver.run(_summary(run_id))
        return found

    async def summaries(
        self, operator: str | None = None, *, limit: int = 20
    ) -> builtins.list[RunSummary]:
        """See :meth:`Ledger.summaries`."""
        found: builtins.list[RunSummary] = await self._driver.run(_summaries(operator, limit))
        return found


# --- the small generators both ledgers drive ---------------------------------------------


def _one(op: ops.Op) -> ops.Steps:
    return (yield op)


def _get(key: str) -> ops.Steps:
    if not isinstance(key, str):
        raise UsageError(f"a key is a string, not {type(key).__name__}")
    if not is_name(key):  # no effect can have it: not a question for the backend
        return None
    return (yield ops.Get(key))


def _open(limit: int) -> ops.Steps:
    return (yield ops.OpenEffects(_limit(limit)))


def _select(
    status: StatusFilter, kind: str | None, limit: int, after: EffectRecord | Cursor | None
) -> ops.Steps:
    if kind is not None:
        check_name(kind, "kind")
    return (yield ops.Select(_statuses(status), _limit(limit), kind, _after(after)))


def _counts(status: StatusFilter) -> ops.Steps:
    return (yield ops.Counts(_statuses(status)))


def _receipts(limit: int, before: float | None) -> Generator[Op, Any, list[tuple[Receipt, float]]]:
    if before is not None and (
        isinstance(before, bool) or not isinstance(before, int | float) or before != before
    ):
        raise UsageError(f"before is a ledger time (a number), not {before!r}")
    return (yield from operation.stored_receipts(_limit(limit), before))


def _operation_of(key: str) -> Generator[Op, Any, str | None]:
    if not isinstance(key, str) or not key:
        raise UsageError(f"an effect key is a non-empty string, not {key!r}")
    return (yield from operation.operation_of(key))


def _summary(run_id: str) -> ops.Steps:
    if not isinstance(run_id, str) or not run_id:
        raise UsageError(f"a run id is a non-empty string, not {run_id!r}")
    return (yield SummaryGet(run_id))


def _summaries(operator: str | None, limit: int) -> ops.Steps:
    if operator is not None and not isinstance(operator, str):
        raise UsageError(f"an operator's name is a string, not {type(operator).__name__}")
    return (yield SummaryList(operator, _limit(limit)))


def _events(key: str) -> ops.Steps:
    try:
        record = yield from review.find(key)
    except UnknownEffect:
        # A gated effect that was never claimed (waiting for its approval,
        # refused, paused) has a history under its full key, and no record.
        events = yield ops.Events(key)
        if events:
            return events
        raise
    return (yield ops.Events(record.key))


def _once_effect(
    kind: str,
    key: Callable[..., EffectKey | str],
    verify: Callable[..., Any],
    payload: Callable[..., Any] | None,
    policy: Policy | None,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Effect:
    body = payload(*args, **kwargs) if payload else {"args": list(args), "kwargs": kwargs}
    return Effect(
        key=key(*args, **kwargs),
        kind=kind,
        payload=body,
        perform=lambda: fn(*args, **kwargs),
        verify=lambda: verify(*args, **kwargs),
        policy=policy or Policy(),
    )
