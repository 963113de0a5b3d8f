"""``Ledger`` and ``AsyncLedger``: the public face of the protocol.

Both prepare a :class:`~actonce._protocol.Plan` once (key, canonical redacted
payload, hash) and hand the protocol generator to a small driver that
executes its operations: the sync driver calls the store and the user's
callables directly; the async driver awaits them, and runs a synchronous
store (SQLite) in a worker thread, one generic adapter for every primitive.
"""

from __future__ import annotations

import asyncio
import builtins
import enum
import functools
import inspect
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, ParamSpec

from . import _crash
from ._clock import Clock, SystemClock
from ._errors import ActOnceError, InvalidTransition, UnknownEffect, UsageError
from ._keys import EffectKey, canonical_json, payload_hash, redact
from ._lifecycle import REVIEWABLE, check_transition
from ._model import (
    OPEN_STATUSES,
    Absent,
    Confirmed,
    EffectRecord,
    Event,
    EventType,
    Policy,
    RunResult,
    Status,
    Unavailable,
    Verdict,
)
from ._protocol import (
    NOW,
    PERFORM,
    PRECONDITION,
    VERIFY,
    Call,
    Evidence,
    Op,
    Plan,
    Point,
    Sleep,
    Steps,
    needs_reconcile,
    reconcile_effect,
    run_effect,
)
from ._registry import Registry
from ._registry import registry as default_registry
from ._store import REVIEW_RUN_PREFIX, AsyncStore, Store
from ._urls import open_store

__all__ = ["AsyncLedger", "Effect", "Ledger", "ReconcileReport", "Resolution"]

P = ParamSpec("P")


@dataclass(frozen=True, slots=True)
class Effect:
    """One consequential external mutation, ready to run.

    Attributes:
        key: the stable effect key (see :func:`actonce.effect_key`).
        kind: the effect kind; reconcile finds its verifier by this name.
        payload: the intended payload (JSON-able). Stored as canonical JSON
            with secret fields fingerprinted; a key reused with another
            payload is refused.
        perform: does the mutation. Called at most once, never retried.
        verify: read-only check, returns ``Confirmed``/``Absent``/
            ``Unavailable``. May be called many times; exceptions count as
            ``Unavailable``.
        precondition: optional business check before the claim; ``False``
            ends the run as ``failed`` without claiming. May raise
            ``HardStop``.
        evidence: optional ``label -> reference`` hook, called when a
            performed effect is not confirmed (screenshot, HTML ...).
        policy: settle window, authoritative absence, backoff, lease.
        secret_fields: payload fields stored only as fingerprints, on top of
            the names actonce always treats as secret (password, token ...).
    """

    key: EffectKey | str
    kind: str
    payload: Any
    perform: Callable[[], Any]
    verify: Callable[[], Verdict | Awaitable[Verdict]]
    precondition: Callable[[], bool | Awaitable[bool]] | None = None
    evidence: Callable[[str], str | Awaitable[str | None] | None] | None = None
    policy: Policy = field(default_factory=Policy)
    secret_fields: tuple[str, ...] = ()


class Resolution(enum.StrEnum):
    """A reviewer's decision on an unresolved effect."""

    HAPPENED = "happened"
    NOT_HAPPENED = "not_happened"
    ABANDON = "abandon"


_RESOLVES_TO = {
    Resolution.HAPPENED: Status.CONFIRMED,
    Resolution.NOT_HAPPENED: Status.FAILED,
    Resolution.ABANDON: Status.ABANDONED,
}


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    """What one reconcile pass found and did.

    Attributes:
        results: one result per effect that was verified.
        live: open effects left alone because their owner's lease is live.
        no_verifier: keys of open effects whose kind has no registered verifier.
    """

    results: tuple[RunResult, ...] = ()
    live: int = 0
    no_verifier: tuple[str, ...] = ()

    @property
    def unresolved(self) -> list[RunResult]:
        """Results still open (claimed, executing or unknown) after the pass."""
        return [r for r in self.results if r.status in OPEN_STATUSES]


@dataclass(frozen=True, slots=True)
class _Callables:
    verify: Callable[[], Any]
    perform: Callable[[], Any] | None = None
    precondition: Callable[[], Any] | None = None
    evidence: Callable[[str], Any] | None = None


class _Base:
    """What both ledgers share: plans, lookups that need no I/O policy."""

    def __init__(self, *, clock: Clock | None, registry: Registry | None) -> None:
        self.clock: Clock = clock or SystemClock()
        self.registry = registry or default_registry
        self._salt: bytes | None = None

    def _plan(self, effect: Effect, salt: bytes, run_id: str | None) -> Plan:
        if not effect.kind:
            raise UsageError("an effect needs a kind")
        key = effect.key.value if isinstance(effect.key, EffectKey) else str(effect.key)
        if not key:
            raise UsageError("an effect needs a key")
        scope = effect.key.scope if isinstance(effect.key, EffectKey) else "{}"
        stored = canonical_json(redact(effect.payload, salt, effect.secret_fields))
        return Plan(
            key=key,
            kind=effect.kind,
            payload=stored,
            payload_hash=payload_hash(stored),
            scope=scope,
            policy=effect.policy,
            run_id=run_id or uuid.uuid4().hex,
            has_precondition=effect.precondition is not None,
            has_evidence=effect.evidence is not None,
        )

    def _reconcile_plan(self, record: EffectRecord, policy: Policy) -> Plan:
        return Plan(
            key=record.key,
            kind=record.kind,
            payload=record.payload,
            payload_hash=record.payload_hash,
            scope=record.scope,
            policy=policy,
            run_id=f"reconcile-{uuid.uuid4().hex[:12]}",
        )

    def _triage(
        self, records: list[EffectRecord]
    ) -> tuple[list[tuple[Plan, EffectRecord, _Callables]], int, list[str]]:
        """Split open effects into work for reconcile, live ones and unverifiable ones."""
        work: list[tuple[Plan, EffectRecord, _Callables]] = []
        live, missing = 0, []
        for record in records:
            if not needs_reconcile(record, self.clock.now()):
                live += 1
                continue
            entry = self.registry.get(record.kind)
            if entry is None:
                missing.append(record.key)
                continue
            fns = _Callables(verify=functools.partial(entry.verify, record))
            work.append((self._reconcile_plan(record, entry.policy), record, fns))
        return work, live, missing

    def _resolution(
        self,
        record: EffectRecord,
        decision: Resolution,
        reviewer: str,
        reason: str,
        result_ref: str | None,
    ) -> tuple[EffectRecord, Event] | None:
        if not reviewer.strip() or not reason.strip():
            raise UsageError("a resolution needs the reviewer's name and a reason")
        to = _RESOLVES_TO[Resolution(decision)]
        if record.status is to:
            return None  # the same decision delivered twice: answer with the state
        if record.status not in REVIEWABLE:
            raise InvalidTransition(
                f"effect {record.key[:16]} is {record.status}, not awaiting review"
            )
        check_transition(record.status, to)
        now = self.clock.now()
        new = replace(
            record,
            status=to,
            updated_at=now,
            reason=f"{decision}: {reason} ({reviewer})",
            result_ref=result_ref or record.result_ref,
        )
        event = Event(
            key=record.key,
            type=EventType(to.value),
            at=now,
            fence=record.fence,
            run_id=f"{REVIEW_RUN_PREFIX}{reviewer}",
            from_status=record.status,
            to_status=to,
            message=reason,
            data={"reviewer": reviewer, "decision": str(decision), "result_ref": new.result_ref},
        )
        return new, event


# --- the sync driver ---------------------------------------------------------------


def _drive(steps: Steps, store: Store, fns: _Callables, clock: Clock, key: str) -> RunResult:
    send: Any = None
    throw: BaseException | None = None
    while True:
        try:
            op = steps.throw(throw) if throw is not None else steps.send(send)
        except StopIteration as stop:
            result: RunResult = stop.value
            return replace(result, key=key)
        send, throw = None, None
        try:
            send = _execute(op, store, fns, clock)
        except ActOnceError as exc:
            throw = exc


def _execute(op: Op, store: Store, fns: _Callables, clock: Clock) -> Any:
    if isinstance(op, Call):
        return getattr(store, op.method)(*op.args)
    if op is NOW:
        return clock.now()
    if isinstance(op, Point):
        _crash.hit(op.name)
        return None
    if op is VERIFY:
        try:
            return _as_verdict(_no_await(fns.verify()))
        except Exception as exc:
            return Unavailable(f"verifier raised {type(exc).__name__}: {exc}")
    if isinstance(op, Sleep):
        clock.sleep(op.seconds)
        return None
    if op is PRECONDITION:
        assert fns.precondition is not None
        return bool(_no_await(fns.precondition()))
    if op is PERFORM:
        assert fns.perform is not None
        try:
            _no_await(fns.perform())
        except Exception as exc:
            return exc
        return None
    if isinstance(op, Evidence):
        return _safe_evidence(lambda: _no_await(fns.evidence(op.label)) if fns.evidence else None)
    raise AssertionError(f"unknown operation {op!r}")  # pragma: no cover


# --- the async driver ---------------------------------------------------------------


async def _adrive(
    steps: Steps, call: Callable[[Call], Awaitable[Any]], fns: _Callables, clock: Clock, key: str
) -> RunResult:
    send: Any = None
    throw: BaseException | None = None
    while True:
        try:
            op = steps.throw(throw) if throw is not None else steps.send(send)
        except StopIteration as stop:
            result: RunResult = stop.value
            return replace(result, key=key)
        send, throw = None, None
        try:
            send = await _aexecute(op, call, fns, clock)
        except ActOnceError as exc:
            throw = exc


async def _aexecute(
    op: Op, call: Callable[[Call], Awaitable[Any]], fns: _Callables, clock: Clock
) -> Any:
    if isinstance(op, Call):
        return await call(op)
    if op is NOW:
        return clock.now()
    if isinstance(op, Point):
        _crash.hit(op.name)
        return None
    if op is VERIFY:
        try:
            return _as_verdict(await _maybe_await(fns.verify()))
        except Exception as exc:
            return Unavailable(f"verifier raised {type(exc).__name__}: {exc}")
    if isinstance(op, Sleep):
        await clock.asleep(op.seconds)
        return None
    if op is PRECONDITION:
        assert fns.precondition is not None
        return bool(await _maybe_await(fns.precondition()))
    if op is PERFORM:
        assert fns.perform is not None
        try:
            await _maybe_await(fns.perform())
        except Exception as exc:
            return exc
        return None
    if isinstance(op, Evidence):
        try:
            return await _maybe_await(fns.evidence(op.label)) if fns.evidence else None
        except Exception:
            return None
    raise AssertionError(f"unknown operation {op!r}")  # pragma: no cover


_VERDICTS = (Confirmed, Absent, Unavailable)
_PLAIN = (bool, str, Confirmed, Absent, Unavailable)


def _no_await(value: Any) -> Any:
    if value is None or isinstance(value, _PLAIN):  # the common answers, checked cheaply
        return value
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()
        raise UsageError("a callable returned an awaitable: use AsyncLedger for async effects")
    return value


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _as_verdict(value: Any) -> Verdict:
    if isinstance(value, _VERDICTS):
        return value
    return Unavailable(f"verifier returned {type(value).__name__}, not a verdict")


def _safe_evidence(fn: Callable[[], Any]) -> str | None:
    try:
        ref = fn()
    except Exception:
        return None
    return None if ref is None else str(ref)


# --- the ledgers ------------------------------------------------------------------------


class Ledger(_Base):
    """The durable ledger of effects, synchronous.

    Open one with :meth:`open` (a URL or a path) or wrap a store. Use it as a
    context manager, or call :meth:`close`.
    """

    def __init__(
        self, store: Store, *, clock: Clock | None = None, registry: Registry | None = None
    ) -> None:
        super().__init__(clock=clock, registry=registry)
        self.store = store

    @classmethod
    def open(
        cls, url: str | None = None, *, clock: Clock | None = None, registry: Registry | None = None
    ) -> Ledger:
        """Open the ledger at ``url`` (see :func:`actonce.open_ledger`)."""
        store = open_store(url)
        if not isinstance(store, Store):
            raise UsageError("this URL opens an async store: use AsyncLedger.open")
        return cls(store, clock=clock, registry=registry)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the underlying store."""
        self.store.close()

    def _salt_bytes(self) -> bytes:
        if self._salt is None:
            self._salt = self.store.salt()
        return self._salt

    def run(self, effect: Effect, *, run_id: str | None = None) -> RunResult:
        """Run ``effect`` under the protocol: perform at most once.

        Raises:
            PayloadMismatch: the key is recorded with another payload.
            LedgerError: the ledger could not record a step; nothing was
                performed after the failed write.
        """
        plan = self._plan(effect, self._salt_bytes(), run_id)
        fns = _Callables(effect.verify, effect.perform, effect.precondition, effect.evidence)
        return _drive(run_effect(plan), self.store, fns, self.clock, plan.key)

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
                body = (
                    payload(*args, **kwargs) if payload else {"args": list(args), "kwargs": kwargs}
                )
                return self.run(
                    Effect(
                        key=key(*args, **kwargs),
                        kind=kind,
                        payload=body,
                        perform=lambda: fn(*args, **kwargs),
                        verify=lambda: verify(*args, **kwargs),
                        policy=policy or Policy(),
                    )
                )

            return wrapper

        return deco

    def reconcile(
        self, *, limit: int = 10_000, progress: Callable[[RunResult], None] | None = None
    ) -> ReconcileReport:
        """Verify every unfinished effect and move it on (never performs)."""
        work, live, missing = self._triage(self.store.open_effects(limit))
        results: builtins.list[RunResult] = []
        for plan, record, fns in work:
            result = _drive(reconcile_effect(plan, record), self.store, fns, self.clock, record.key)
            results.append(result)
            if progress:
                progress(result)
        return ReconcileReport(tuple(results), live, tuple(missing))

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
        record = self.find(key)
        change = self._resolution(record, Resolution(decision), reviewer, reason, result_ref)
        if change is None:
            return record
        new, event = change
        got = self.store.transition((record.status, record.fence), new, event)
        if got is None:
            raise InvalidTransition(f"effect {record.key[:16]} changed meanwhile; look again")
        return got

    def get(self, key: str) -> EffectRecord | None:
        """The current record under the full ``key``, or ``None``."""
        return self.store.get(key)

    def find(self, key_or_prefix: str) -> EffectRecord:
        """The record under a full key or a unique key prefix.

        Raises:
            UnknownEffect: nothing (or more than one effect) matches.
        """
        record = self.store.get(key_or_prefix)
        if record is not None:
            return record
        return _one(key_or_prefix, self.store.match_prefix(key_or_prefix, 2), self.store.get)

    def list(
        self, status: Status | str | None = None, *, kind: str | None = None, limit: int = 100
    ) -> builtins.list[EffectRecord]:
        """Effects, oldest change first, optionally of one status and kind."""
        statuses = None if status is None else [Status(status)]
        return self.store.select(statuses, limit, kind)

    def events(self, key: str) -> builtins.list[Event]:
        """The full history of an effect (key or unique prefix)."""
        return self.store.events(self.find(key).key)

    def counts(self) -> dict[Status, int]:
        """How many effects are in each status."""
        return self.store.counts()


class AsyncLedger(_Base):
    """The durable ledger of effects, asynchronous; same names as :class:`Ledger`.

    A synchronous store (SQLite) runs in one worker thread of its own.
    """

    def __init__(
        self,
        store: Store | AsyncStore,
        *,
        clock: Clock | None = None,
        registry: Registry | None = None,
    ) -> None:
        super().__init__(clock=clock, registry=registry)
        self.store = store
        self._executor: ThreadPoolExecutor | None = None
        if not isinstance(store, AsyncStore):
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="actonce-store")

    @classmethod
    def open(
        cls, url: str | None = None, *, clock: Clock | None = None, registry: Registry | None = None
    ) -> AsyncLedger:
        """Open the ledger at ``url`` (see :func:`actonce.open_ledger`)."""
        return cls(open_store(url, prefer_async=True), clock=clock, registry=registry)

    async def __aenter__(self) -> AsyncLedger:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the underlying store."""
        await self._call(Call("aclose" if isinstance(self.store, AsyncStore) else "close", ()))
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    async def _call(self, op: Call) -> Any:
        method = getattr(self.store, op.method)
        if self._executor is None:
            return await method(*op.args)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: method(*op.args))

    async def _salt_bytes(self) -> bytes:
        if self._salt is None:
            self._salt = await self._call(Call("salt", ()))
        return self._salt

    async def run(self, effect: Effect, *, run_id: str | None = None) -> RunResult:
        """Run ``effect`` under the protocol: perform at most once."""
        plan = self._plan(effect, await self._salt_bytes(), run_id)
        fns = _Callables(effect.verify, effect.perform, effect.precondition, effect.evidence)
        return await _adrive(run_effect(plan), self._call, fns, self.clock, plan.key)

    async def reconcile(
        self, *, limit: int = 10_000, progress: Callable[[RunResult], None] | None = None
    ) -> ReconcileReport:
        """Verify every unfinished effect and move it on (never performs)."""
        work, live, missing = self._triage(await self._call(Call("open_effects", (limit,))))
        results: builtins.list[RunResult] = []
        for plan, record, fns in work:
            steps = reconcile_effect(plan, record)
            result = await _adrive(steps, self._call, fns, self.clock, record.key)
            results.append(result)
            if progress:
                progress(result)
        return ReconcileReport(tuple(results), live, tuple(missing))

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
        record = await self.find(key)
        change = self._resolution(record, Resolution(decision), reviewer, reason, result_ref)
        if change is None:
            return record
        new, event = change
        got = await self._call(Call("transition", ((record.status, record.fence), new, event)))
        if got is None:
            raise InvalidTransition(f"effect {record.key[:16]} changed meanwhile; look again")
        return got  # type: ignore[no-any-return]

    async def get(self, key: str) -> EffectRecord | None:
        """The current record under the full ``key``, or ``None``."""
        return await self._call(Call("get", (key,)))  # type: ignore[no-any-return]

    async def find(self, key_or_prefix: str) -> EffectRecord:
        """The record under a full key or a unique key prefix."""
        record = await self.get(key_or_prefix)
        if record is not None:
            return record
        keys = await self._call(Call("match_prefix", (key_or_prefix, 2)))
        found = await self.get(keys[0]) if len(keys) == 1 else None
        return _one(key_or_prefix, keys, lambda _k: found)

    async def list(
        self, status: Status | str | None = None, *, kind: str | None = None, limit: int = 100
    ) -> builtins.list[EffectRecord]:
        """Effects, oldest change first, optionally of one status and kind."""
        statuses = None if status is None else [Status(status)]
        return await self._call(Call("select", (statuses, limit, kind)))  # type: ignore[no-any-return]

    async def events(self, key: str) -> builtins.list[Event]:
        """The full history of an effect (key or unique prefix)."""
        record = await self.find(key)
        return await self._call(Call("events", (record.key,)))  # type: ignore[no-any-return]

    async def counts(self) -> dict[Status, int]:
        """How many effects are in each status."""
        return await self._call(Call("counts", ()))  # type: ignore[no-any-return]


def _one(prefix: str, keys: list[str], get: Callable[[str], EffectRecord | None]) -> EffectRecord:
    if len(prefix) < 4 or not keys:
        raise UnknownEffect(f"no effect with key {prefix!r}")
    if len(keys) > 1:
        raise UnknownEffect(f"key prefix {prefix!r} is ambiguous; give more characters")
    record = get(keys[0])
    if record is None:  # pragma: no cover - rows are never deleted
        raise UnknownEffect(f"no effect with key {prefix!r}")
    return record
