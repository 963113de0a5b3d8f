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
import inspect
from collections.abc import Callable, Generator
from typing import Any, ParamSpec, TypeVar

from ._approvals import Approvals, AsyncApprovals, AsyncIntents, Intents
from ._budgets import AsyncBudgets, Budgets
from ._effect import Effect, new_run_id, once_effect
from ._firewall import AsyncFirewallLog, FirewallLog
from ._ledger_base import LedgerBase
from ._operations import AsyncOperations, Operation, Operations
from ._registry import Registry
from ._rules.approvals import SigningKeys
from ._rules.errors import ActOnceError, UsageError
from ._rules.holds import Hold
from ._rules.keys import EffectKey
from ._rules.model import (
    EffectRecord,
    Event,
    Policy,
    ReconcileReport,
    Resolution,
    RunResult,
    Status,
    Verdict,
)
from ._rules.operator import RunSummary
from ._rules.receipts import Receipt
from ._rules.secrets import FingerprintKey
from ._run import approvals as gated
from ._run import operation, operation_review, reads, review
from ._run.callables import Callables
from ._run.clock import Clock, SystemClock
from ._run.drive import AsyncDriver, Driver
from ._run.effect import reconcile_effect, run_effect
from ._run.heartbeat import Heartbeats
from ._run.ops import Duplicates, Op
from ._run.reads import Cursor, StatusFilter
from ._run.reconcile import check_progress, failed
from ._store.base import AsyncEffectStore, AsyncStore, EffectStore
from ._store.threads import threaded
from ._store.urls import open_store, resolve_url

__all__ = ["AsyncLedger", "Ledger"]

P = ParamSpec("P")
T = TypeVar("T")


class Ledger(LedgerBase):
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
        self.operations = Operations(self)
        """Multi-step operations and people's decisions (see :class:`~actonce.Operations`)."""
        self.firewall = FirewallLog(self)
        """The write firewall's refusals (see :class:`~actonce.FirewallLog`)."""

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
                return self.run(once_effect(kind, key, verify, payload, policy, fn, args, kwargs))

            return wrapper

        return deco

    def reconcile(
        self,
        *,
        limit: int = 10_000,
        progress: Callable[[RunResult], None] | None = None,
        resume: Callable[[str], Operation | None] | None = None,
    ) -> ReconcileReport:
        """Verify every unfinished effect and move it on (never performs).

        One effect whose reconcile fails (a ledger error, an answer that
        cannot be stored) is reported in ``errors``; the pass goes on.
        With ``resume`` (an operation's id -> the operation with its steps'
        callables, or ``None``), each operation with work due afterwards (a
        message to send again after its backoff, an undo a withdrawal
        queued) gets one pass: the only performs are those passes' steps,
        each under the effect protocol.
        """
        check_progress(progress)
        self._anchor()
        records = self._driver.run(reads.open_effects(limit))
        work, live, missing = self._triage(records)
        results: builtins.list[RunResult] = []
        errors: builtins.list[tuple[str, str]] = []
        for plan, record, fns in work:
            try:
                result = self._driver.run(reconcile_effect(plan, record), fns, plan, "reconcile")
                self._driver.run(operation_review.touch(record.key, plan.run_id))
            except ActOnceError as exc:
                result, error = failed(record, exc)
                errors.append(error)
            results.append(result)
            if progress:
                progress(result)
        ops: builtins.list[tuple[str, str]] = []
        for op_id in self.operations.due() if resume is not None else ():
            op = resume(op_id)  # type: ignore[misc]
            if op is not None:
                ops.append((op_id, op.run().state.value))
        return ReconcileReport(tuple(results), live, tuple(missing), tuple(errors), tuple(ops))

    def resolve(
        self,
        key: str,
        decision: Resolution | str,
        *,
        reviewer: str,
        reason: str,
        result_ref: str | None = None,
        attempt: int | None = None,
    ) -> EffectRecord:
        """Record a reviewer's decision on an effect in review (or unknown).

        Pass ``attempt`` (the record's ``fence`` as the reviewer saw it): the
        decision is then refused if the effect has moved on to another
        attempt. "Not happened" is refused while the attempt's lease is live.
        """
        steps = review.resolve(
            key, decision, reviewer=reviewer, reason=reason, result_ref=result_ref,
            attempt=attempt,
        )  # fmt: skip
        record: EffectRecord = self._driver.run(steps)
        self._drive(operation_review.touch(record.key, new_run_id()))  # its operation's receipt
        return record

    def get(self, key: str) -> EffectRecord | None:
        """The current record under the full ``key``, or ``None``."""
        record: EffectRecord | None = self._driver.run(reads.get(key))
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
        steps = reads.select(status, kind, limit, after)
        records: builtins.list[EffectRecord] = self._driver.run(steps)
        return records

    def events(self, key: str) -> builtins.list[Event]:
        """The full history of an effect (key or unique prefix).

        A gated effect that was never claimed has no record, but a history
        under its full key (why its claims were refused, its refreshed facts).
        """
        events: builtins.list[Event] = self._driver.run(reads.events(key))
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
        counts: dict[Status, int] = self._driver.run(reads.counts(status))
        return counts

    def duplicates(self) -> int:
        """How many effects were settled on a verdict that saw more than one result."""
        return int(self._driver.run(reads.one(Duplicates())))

    def receipt(self, op_id: str) -> Receipt | None:
        """The receipt of an operation, as true now (``None``: no such operation).

        Built again from the ledger at every read (the one renderer, see
        :mod:`actonce._rules.receipts`), so what it says of a retry or a
        pending message is what holds when it is read.
        """
        return self._drive(operation.live_receipt(op_id))

    def receipts(
        self, *, limit: int = 50, before: float | None = None
    ) -> builtins.list[tuple[Receipt, float]]:
        """Receipts newest first, each with the ledger time it was written.

        ``before`` pages on: pass the time of the last receipt of a page.
        """
        return self._drive(reads.receipts(limit, before))

    def operation_of(self, key: str) -> str | None:
        """The id of the operation whose step (or undo) has effect key ``key``."""
        return self._drive(reads.operation_of(key))

    def summary(self, run_id: str) -> RunSummary | None:
        """The stored summary of an operator run (see :class:`~actonce.Operator`)."""
        found: RunSummary | None = self._driver.run(reads.summary(run_id))
        return found

    def summaries(
        self, operator: str | None = None, *, limit: int = 20
    ) -> builtins.list[RunSummary]:
        """Stored operator run summaries, newest first (of one operator, or all)."""
        found: builtins.list[RunSummary] = self._driver.run(reads.summaries(operator, limit))
        return found


class AsyncLedger(LedgerBase):
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
        )
        self.store = threaded(store)
        self._driver = AsyncDriver(self.store, self.clock)
        self.intents = AsyncIntents(self)
        """Versioned intents (see :class:`~actonce.AsyncIntents`)."""
        self.approvals = AsyncApprovals(self, signing_keys)
        """Approval packets (see :class:`~actonce.AsyncApprovals`)."""
        self.budgets = AsyncBudgets(self)
        """Budget pools (see :class:`~actonce.AsyncBudgets`)."""
        self.operations = AsyncOperations(self)
        """Multi-step operations (see :class:`~actonce.AsyncOperations`)."""
        self.firewall = AsyncFirewallLog(self)
        """The write firewall's refusals (see :class:`~actonce.AsyncFirewallLog`)."""

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
                effect = once_effect(kind, key, verify, payload, policy, fn, args, kwargs)
                return await self.run(effect)

            return wrapper

        return deco

    async def reconcile(
        self,
        *,
        limit: int = 10_000,
        progress: Callable[[RunResult], None] | None = None,
        resume: Callable[[str], Any] | None = None,
    ) -> ReconcileReport:
        """Verify every unfinished effect and move it on; see :meth:`Ledger.reconcile`."""
        check_progress(progress)
        await self._anchor()
        records = await self._driver.run(reads.open_effects(limit))
        work, live, missing = self._triage(records)
        results: builtins.list[RunResult] = []
        errors: builtins.list[tuple[str, str]] = []
        for plan, record, fns in work:
            try:
                result = await self._driver.run(
                    reconcile_effect(plan, record), fns, plan, "reconcile"
                )
                await self._driver.run(operation_review.touch(record.key, plan.run_id))
            except ActOnceError as exc:
                result, error = failed(record, exc)
                errors.append(error)
            results.append(result)
            if progress:
                progress(result)
        ops: builtins.list[tuple[str, str]] = []
        for op_id in await self.operations.due() if resume is not None else ():
            op = resume(op_id)  # type: ignore[misc]
            op = await op if inspect.isawaitable(op) else op
            if op is not None:
                ops.append((op_id, (await op.run()).state.value))
        return ReconcileReport(tuple(results), live, tuple(missing), tuple(errors), tuple(ops))

    async def resolve(
        self,
        key: str,
        decision: Resolution | str,
        *,
        reviewer: str,
        reason: str,
        result_ref: str | None = None,
        attempt: int | None = None,
    ) -> EffectRecord:
        """Record a reviewer's decision on an effect in review (or unknown).

        Pass ``attempt`` (the record's ``fence`` as the reviewer saw it): the
        decision is then refused if the effect has moved on to another
        attempt. "Not happened" is refused while the attempt's lease is live.
        """
        steps = review.resolve(
            key, decision, reviewer=reviewer, reason=reason, result_ref=result_ref,
            attempt=attempt,
        )  # fmt: skip
        record: EffectRecord = await self._driver.run(steps)
        await self._drive(operation_review.touch(record.key, new_run_id()))
        return record

    async def get(self, key: str) -> EffectRecord | None:
        """The current record under the full ``key``, or ``None``."""
        record: EffectRecord | None = await self._driver.run(reads.get(key))
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
        steps = reads.select(status, kind, limit, after)
        records: builtins.list[EffectRecord] = await self._driver.run(steps)
        return records

    async def events(self, key: str) -> builtins.list[Event]:
        """The full history of an effect (key or unique prefix)."""
        events: builtins.list[Event] = await self._driver.run(reads.events(key))
        return events

    async def holds(self, key: str) -> builtins.list[Hold]:
        """What the claims of an effect hold; see :meth:`Ledger.holds`."""
        return await self._drive(gated.holds(key))

    async def counts(self, status: StatusFilter = None) -> dict[Status, int]:
        """How many effects are in each status; see :meth:`Ledger.counts`."""
        counts: dict[Status, int] = await self._driver.run(reads.counts(status))
        return counts

    async def duplicates(self) -> int:
        """How many effects were settled on a verdict that saw more than one result."""
        return int(await self._driver.run(reads.one(Duplicates())))

    async def receipt(self, op_id: str) -> Receipt | None:
        """See :meth:`Ledger.receipt`."""
        return await self._drive(operation.live_receipt(op_id))

    async def receipts(
        self, *, limit: int = 50, before: float | None = None
    ) -> builtins.list[tuple[Receipt, float]]:
        """See :meth:`Ledger.receipts`."""
        return await self._drive(reads.receipts(limit, before))

    async def operation_of(self, key: str) -> str | None:
        """See :meth:`Ledger.operation_of`."""
        return await self._drive(reads.operation_of(key))

    async def summary(self, run_id: str) -> RunSummary | None:
        """See :meth:`Ledger.summary`."""
        found: RunSummary | None = await self._driver.run(reads.summary(run_id))
        return found

    async def summaries(
        self, operator: str | None = None, *, limit: int = 20
    ) -> builtins.list[RunSummary]:
        """See :meth:`Ledger.summaries`."""
        found: builtins.list[RunSummary] = await self._driver.run(reads.summaries(operator, limit))
        return found
