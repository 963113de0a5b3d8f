"""The drivers: the only place where sync and async differ.

A driver runs one protocol generator to its end: it answers each operation
(:mod:`actonce._run.ops`) by calling the store, the clock or the user's
callables, and throws a store's :class:`~actonce.ActOnceError` back into the
generator. What the user's callables return is shaped here once for both
drivers (:func:`as_verdict`, :func:`perform_answer`, :func:`evidence_ref`):
an exception from a verifier becomes ``Unavailable``, a perform's exception
and its ``details`` become the :class:`~actonce._run.ops.Performed` answer.

While a perform runs, the driver extends the owner's lease (a fenced
compare-and-set on the ``executing`` row) every ``heartbeat`` seconds, and
at once when the ledger clock is seen to step: the sync driver from one
background thread per ledger (:class:`Heartbeats`), the async driver from a
task. A lease extension that finds the row no longer the owner's marks the
answer ``overtaken``.
"""

from __future__ import annotations

import asyncio
import heapq
import inspect
import itertools
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._rules.errors import ActOnceError, HardStop, LedgerError, UsageError
from .._rules.facts import Fact
from .._rules.model import Absent, Confirmed, RunResult, Status, Unavailable, Verdict
from .._store.base import AsyncEffectStore, EffectStore
from . import points
from .clock import Clock
from .effect import Plan, run_effect
from .ops import (
    AppendEvent,
    Claim,
    Evidence,
    Get,
    Hook,
    Hooked,
    Now,
    Perform,
    Performed,
    Point,
    Precondition,
    Refresh,
    Refreshed,
    RunEffect,
    Sleep,
    Steps,
    Tick,
    Transition,
    Verified,
    Verify,
)
from .telemetry import Telemetry, TelemetryRun, TelemetryScope, fingerprint, origin_of, step_of
from .telemetry import step_result as _step_result

__all__ = [
    "AsyncDriver",
    "Callables",
    "Driver",
    "Heartbeats",
    "as_verdict",
    "evidence_ref",
    "perform_answer",
    "tick",
]

_VERDICTS = (Confirmed, Absent, Unavailable)
_PLAIN = (bool, str, Confirmed, Absent, Unavailable)
_STEP_CHECK = 1.0  # seconds between two looks at the clock while a perform runs
_POLL = 0.2  # seconds the heartbeat thread sleeps at most between two looks at its queue


@dataclass(frozen=True, slots=True)
class Callables:
    """The user's callables of one effect (only ``verify`` for reconcile).

    ``host`` answers ``Hook`` operations (a loop's stages: the operator's).
    """

    verify: Callable[[], Any]
    perform: Callable[[], Any] | None = None
    precondition: Callable[[], Any] | None = None
    evidence: Callable[[str], Any] | None = None
    refresh: Callable[[], Any] | None = None
    host: Any = None


NO_CALLABLES = Callables(verify=lambda: Unavailable("no verifier for this operation"))


def tick(clock: Clock) -> Tick:
    """Read the clocks once."""
    return Tick(clock.now(), clock.monotonic(), clock.trusted())


def as_verdict(value: Any) -> Verdict:
    """A verifier's answer as a verdict; anything else is ``Unavailable``."""
    if isinstance(value, _VERDICTS):
        return value
    return Unavailable(f"verifier returned {type(value).__name__}, not a verdict")


def unavailable(exc: Exception) -> Unavailable:
    """What a verifier's exception means: the check could not be made."""
    return Unavailable(f"verifier raised {type(exc).__name__}: {exc}")


def stopped(exc: HardStop, now: Tick) -> Verified:
    """A verifier's ``HardStop``: unavailable, and a stop the protocol may act on."""
    return Verified(Unavailable(f"hard stop: {exc.reason}"), now, exc.reason)


def perform_answer(
    value: Any, error: Exception | None, started: float, clock: Clock, overtaken: bool
) -> Performed:
    """The ``Performed`` answer from what ``perform`` returned or raised."""
    source = getattr(error, "details", None) if error is not None else value
    details = dict(source) if isinstance(source, Mapping) else None
    ended = tick(clock)
    return Performed(error, details, ended, ended.mono - started, overtaken)


def as_facts(value: Any, now: float) -> tuple[Fact, ...]:
    """A refresher's answer as facts: ``Fact`` values, or a mapping name -> value.

    Raises:
        UsageError: anything else.
    """
    if isinstance(value, Mapping):
        return tuple(Fact(str(name), v, now) for name, v in value.items())
    if isinstance(value, Fact):
        return (value,)
    try:
        facts = tuple(value)
    except TypeError:
        raise UsageError(f"a refresher returns facts, not {type(value).__name__}") from None
    if not all(isinstance(f, Fact) for f in facts):
        raise UsageError("a refresher returns Fact values or a mapping of name -> value")
    return facts


def refreshed(fn: Callable[[], Any] | None, value: Any, error: Exception | None, now: Tick) -> Any:
    """The ``Refreshed`` answer from what a refresher returned or raised."""
    if error is not None:
        return Refreshed(None, f"{type(error).__name__}: {error}", now)
    try:
        return Refreshed(as_facts(value, now.now), None, now)
    except UsageError as exc:
        return Refreshed(None, str(exc), now)


def evidence_ref(ref: Any) -> str | None:
    """An evidence hook's answer as a reference (``None`` when it gave none)."""
    return None if ref is None else str(ref)


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


# --- heartbeats while a perform runs (sync) ------------------------------------------


class _Beat:
    __slots__ = ("cancelled", "clock", "due", "lease", "op", "overtaken", "steps", "store")

    def __init__(self, op: Perform, store: EffectStore, clock: Clock) -> None:
        self.op = op
        self.store = store
        self.clock = clock
        self.lease = op.lease_seconds
        self.due = time.monotonic() + min(op.heartbeat, _STEP_CHECK)
        self.steps = getattr(clock, "steps", 0)
        self.cancelled = False
        self.overtaken = False

    def beat(self) -> None:
        """Extend the lease if it is time (or the clock stepped); schedule the next look."""
        op = self.op
        now_mono = time.monotonic()
        ledger_now = self.clock.now()  # also lets the clock notice a step
        steps = getattr(self.clock, "steps", 0)
        stepped = steps != self.steps
        self.steps = steps
        if stepped or now_mono >= self.due - 1e-3:
            try:
                ok = self.store.extend(
                    op.key, (Status.EXECUTING, op.fence), ledger_now + self.lease
                )
            except LedgerError:
                ok = True  # the next beat tries again; the lease runs meanwhile
            if not ok:
                self.overtaken = True
                self.cancelled = True
                return
            self.due = now_mono + op.heartbeat
        self.due = min(self.due, now_mono + _STEP_CHECK)


class Heartbeats:
    """One background thread that extends the leases of running performs."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _Beat]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False

    def start(self, op: Perform, store: EffectStore, clock: Clock) -> _Beat:
        beat = _Beat(op, store, clock)
        with self._cond:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._run, name="actonce-heartbeat", daemon=True
                )
                self._thread.start()
            # No notify: waking the thread for every perform would cost more
            # than most performs take. It looks every _POLL seconds instead.
            heapq.heappush(self._heap, (beat.due, next(self._seq), beat))
        return beat

    def stop(self, beat: _Beat) -> bool:
        """Stop beating for ``beat``; True when a beat found the row overtaken."""
        with self._cond:
            beat.cancelled = True
            return beat.overtaken

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                while self._heap and self._heap[0][2].cancelled:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait(_POLL)
                    continue
                due, _, beat = self._heap[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self._cond.wait(min(wait, _POLL))
                    continue
                heapq.heappop(self._heap)
                # The store call happens outside the lock: stop() never waits for it.
                self._cond.release()
                try:
                    beat.beat()
                finally:
                    self._cond.acquire()
                if not beat.cancelled:
                    heapq.heappush(self._heap, (beat.due, next(self._seq), beat))


# --- the sync driver ---------------------------------------------------------------


def _begin(telemetry: Telemetry, plan: Plan, operation: str, origin: str | None) -> TelemetryScope:
    return telemetry.begin(
        TelemetryRun(operation, plan.kind, fingerprint(plan.key), plan.run_id, origin)
    )


class Driver:
    """Runs protocol generators against a synchronous store.

    ``telemetry``: an observer of effect attempts (see ``_run.telemetry``);
    ``None`` (the default) costs one attribute check per run.
    """

    def __init__(self, store: EffectStore, clock: Clock, heartbeats: Heartbeats) -> None:
        self.store = store
        self.clock = clock
        self.heartbeats = heartbeats
        self.telemetry: Telemetry | None = None

    def run(
        self,
        steps: Steps,
        fns: Callables = NO_CALLABLES,
        plan: Plan | None = None,
        operation: str = "run",
    ) -> Any:
        """Drive ``steps`` to its end; returns what the generator returns.

        ``plan``: the effect the steps run (or reconcile: ``operation``), for
        telemetry when it is on.
        """
        if self.telemetry is not None and plan is not None:
            return self._traced(steps, fns, plan, operation, self.telemetry)
        send: Any = None
        throw: BaseException | None = None
        answer = self._answer
        while True:
            try:
                op = steps.throw(throw) if throw is not None else steps.send(send)
            except StopIteration as stop:
                return stop.value
            send, throw = None, None
            try:
                send = answer(op, fns)
            except ActOnceError as exc:
                throw = exc

    def _traced(
        self, steps: Steps, fns: Callables, plan: Plan, operation: str, telemetry: Telemetry
    ) -> Any:
        """``run`` with telemetry: the same loop, each step told to the scope."""
        origin = origin_of(self.store.events(plan.key)) if operation == "reconcile" else None
        scope = _begin(telemetry, plan, operation, origin)
        result: Any = None
        failure: BaseException | None = None
        send: Any = None
        throw: BaseException | None = None
        try:
            while True:
                try:
                    op = steps.throw(throw) if throw is not None else steps.send(send)
                except StopIteration as stop:
                    result = stop.value
                    return result
                send, throw = None, None
                step = step_of(op, scope)
                if step is None:
                    try:
                        send = self._answer(op, fns)
                    except ActOnceError as exc:
                        throw = exc
                    continue
                name, attributes, op = step
                handle = scope.step(name, attributes)
                try:
                    send = self._answer(op, fns)
                except ActOnceError as exc:
                    throw = exc
                    scope.step_end(handle, {"error.type": type(exc).__name__}, exc)
                except BaseException as exc:
                    scope.step_end(handle, {"error.type": type(exc).__name__}, exc)
                    raise
                else:
                    scope.step_end(handle, _step_result(name, send), None)
        except BaseException as exc:
            failure = exc
            raise
        finally:
            scope.end(result if isinstance(result, RunResult) else None, failure)

    def _answer(self, op: Any, fns: Callables) -> Any:
        store = self.store
        kind = type(op)
        if kind is Now:
            clock = self.clock
            return Tick(clock.now(), clock.monotonic(), clock.trusted())
        if kind is Get:
            return store.get(op.key)
        if kind is Verify:
            try:
                verdict = as_verdict(_no_await(fns.verify()))
            except HardStop as exc:
                return stopped(exc, tick(self.clock))
            except Exception as exc:
                verdict = unavailable(exc)
            clock = self.clock
            return Verified(verdict, Tick(clock.now(), clock.monotonic(), clock.trusted()))
        if kind is Transition:
            if op.before is not None:
                points.hit(op.before)
            if op.settle is None:
                got = store.transition(
                    op.expect, op.new, op.event, durable=op.durable, fields=op.fields
                )
            else:
                got = store.transition(
                    op.expect, op.new, op.event, durable=op.durable, settle=op.settle,
                    fields=op.fields,
                )  # fmt: skip
            if got is not None:
                for point in op.after:
                    points.hit(point)
            return got
        if kind is Claim:
            if op.before is not None:
                points.hit(op.before)
            if op.gate is None:
                claim = store.claim(op.new, op.expect, op.event, durable=op.durable)
            else:
                claim = store.claim(op.new, op.expect, op.event, durable=op.durable, gate=op.gate)
            if claim.acquired:
                for point in op.after:
                    points.hit(point)
            return claim
        if kind is Point:
            points.hit(op.point)
            return None
        if kind is Perform:
            return self._perform(op, fns)
        if kind is AppendEvent:
            store.append_event(op.event)
            return None
        if kind is Sleep:
            self.clock.sleep(op.seconds)
            return None
        if kind is Precondition:
            assert fns.precondition is not None
            return bool(_no_await(fns.precondition()))
        if kind is Evidence:
            try:
                return evidence_ref(_no_await(fns.evidence(op.label)) if fns.evidence else None)
            except Exception:
                return None
        if kind is RunEffect:
            return self.run(run_effect(op.plan), op.fns, op.plan)
        if kind is Refresh:
            assert fns.refresh is not None
            value: Any = None
            error: Exception | None = None
            try:
                value = _no_await(fns.refresh())
            except Exception as exc:
                error = exc
            return refreshed(fns.refresh, value, error, tick(self.clock))
        if kind is Hook:
            try:
                return Hooked(_no_await(getattr(fns.host, op.name)(*op.args)))
            except BaseException as exc:  # handed to the loop, which re-raises a crash
                return Hooked(None, exc)
        return getattr(store, op.primitive)(*op.args())

    def _perform(self, op: Perform, fns: Callables) -> Performed:
        assert fns.perform is not None
        clock = self.clock
        started = clock.monotonic()
        beat = self.heartbeats.start(op, self.store, clock) if op.heartbeat > 0 else None
        value: Any = None
        error: Exception | None = None
        try:
            value = _no_await(fns.perform())
        except Exception as exc:
            error = exc
        finally:
            overtaken = self.heartbeats.stop(beat) if beat is not None else False
        answer = perform_answer(value, error, started, clock, overtaken)
        if op.after is not None:
            points.hit(op.after)
        return answer


# --- the async driver ------------------------------------------------------------------


class AsyncDriver:
    """Runs protocol generators against an asynchronous store (``telemetry``: see ``Driver``)."""

    def __init__(self, store: AsyncEffectStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.telemetry: Telemetry | None = None

    async def run(
        self,
        steps: Steps,
        fns: Callables = NO_CALLABLES,
        plan: Plan | None = None,
        operation: str = "run",
    ) -> Any:
        """Drive ``steps`` to its end; returns what the generator returns."""
        if self.telemetry is not None and plan is not None:
            return await self._traced(steps, fns, plan, operation, self.telemetry)
        send: Any = None
        throw: BaseException | None = None
        while True:
            try:
                op = steps.throw(throw) if throw is not None else steps.send(send)
            except StopIteration as stop:
                return stop.value
            send, throw = None, None
            try:
                send = await self._answer(op, fns)
            except ActOnceError as exc:
                throw = exc

    async def _traced(
        self, steps: Steps, fns: Callables, plan: Plan, operation: str, telemetry: Telemetry
    ) -> Any:
        """``run`` with telemetry (see ``Driver._traced``)."""
        origin = None
        if operation == "reconcile":
            origin = origin_of(await self.store.events(plan.key))
        scope = _begin(telemetry, plan, operation, origin)
        result: Any = None
        failure: BaseException | None = None
        send: Any = None
        throw: BaseException | None = None
        try:
            while True:
                try:
                    op = steps.throw(throw) if throw is not None else steps.send(send)
                except StopIteration as stop:
                    result = stop.value
                    return result
                send, throw = None, None
                step = step_of(op, scope)
                if step is None:
                    try:
                        send = await self._answer(op, fns)
                    except ActOnceError as exc:
                        throw = exc
                    continue
                name, attributes, op = step
                handle = scope.step(name, attributes)
                try:
                    send = await self._answer(op, fns)
                except ActOnceError as exc:
                    throw = exc
                    scope.step_end(handle, {"error.type": type(exc).__name__}, exc)
                except BaseException as exc:
                    scope.step_end(handle, {"error.type": type(exc).__name__}, exc)
                    raise
                else:
                    scope.step_end(handle, _step_result(name, send), None)
        except BaseException as exc:
            failure = exc
            raise
        finally:
            scope.end(result if isinstance(result, RunResult) else None, failure)

    async def _answer(self, op: Any, fns: Callables) -> Any:
        store = self.store
        kind = type(op)
        if kind is Now:
            return tick(self.clock)
        if kind is Get:
            return await store.get(op.key)
        if kind is Verify:
            try:
                verdict = as_verdict(await _maybe_await(fns.verify()))
            except HardStop as exc:
                return stopped(exc, tick(self.clock))
            except Exception as exc:
                verdict = unavailable(exc)
            return Verified(verdict, tick(self.clock))
        if kind is Transition:
            if op.before is not None:
                points.hit(op.before)
            if op.settle is None:
                got = await store.transition(
                    op.expect, op.new, op.event, durable=op.durable, fields=op.fields
                )
            else:
                got = await store.transition(
                    op.expect, op.new, op.event, durable=op.durable, settle=op.settle,
                    fields=op.fields,
                )  # fmt: skip
            if got is not None:
                for point in op.after:
                    points.hit(point)
            return got
        if kind is Claim:
            if op.before is not None:
                points.hit(op.before)
            if op.gate is None:
                claim = await store.claim(op.new, op.expect, op.event, durable=op.durable)
            else:
                claim = await store.claim(
                    op.new, op.expect, op.event, durable=op.durable, gate=op.gate
                )
            if claim.acquired:
                for point in op.after:
                    points.hit(point)
            return claim
        if kind is Point:
            points.hit(op.point)
            return None
        if kind is Perform:
            return await self._perform(op, fns)
        if kind is AppendEvent:
            await store.append_event(op.event)
            return None
        if kind is Sleep:
            await self.clock.asleep(op.seconds)
            return None
        if kind is Precondition:
            assert fns.precondition is not None
            return bool(await _maybe_await(fns.precondition()))
        if kind is Evidence:
            try:
                return evidence_ref(
                    await _maybe_await(fns.evidence(op.label)) if fns.evidence else None
                )
            except Exception:
                return None
        if kind is RunEffect:
            return await self.run(run_effect(op.plan), op.fns, op.plan)
        if kind is Refresh:
            assert fns.refresh is not None
            value: Any = None
            error: Exception | None = None
            try:
                value = await _maybe_await(fns.refresh())
            except Exception as exc:
                error = exc
            return refreshed(fns.refresh, value, error, tick(self.clock))
        if kind is Hook:
            try:
                return Hooked(await _maybe_await(getattr(fns.host, op.name)(*op.args)))
            except BaseException as exc:  # handed to the loop, which re-raises a crash
                return Hooked(None, exc)
        return await getattr(store, op.primitive)(*op.args())

    async def _perform(self, op: Perform, fns: Callables) -> Performed:
        assert fns.perform is not None
        clock = self.clock
        started = clock.monotonic()
        overtaken = asyncio.Event()
        beat = asyncio.create_task(self._beat(op, overtaken)) if op.heartbeat > 0 else None
        value: Any = None
        error: Exception | None = None
        try:
            value = await _maybe_await(fns.perform())
        except Exception as exc:
            error = exc
        finally:
            if beat is not None:
                beat.cancel()
                await asyncio.gather(beat, return_exceptions=True)
        answer = perform_answer(value, error, started, clock, overtaken.is_set())
        if op.after is not None:
            points.hit(op.after)
        return answer

    async def _beat(self, op: Perform, overtaken: asyncio.Event) -> None:
        clock = self.clock
        steps = getattr(clock, "steps", 0)
        due = time.monotonic() + op.heartbeat
        while True:
            # Real time, not the ledger clock's sleep: a test's frozen clock
            # must not move because a perform is slow.
            await asyncio.sleep(max(0.0, min(due - time.monotonic(), _STEP_CHECK)))
            ledger_now = clock.now()
            now_steps = getattr(clock, "steps", 0)
            if now_steps == steps and time.monotonic() < due - 1e-3:
                continue
            steps = now_steps
            try:
                ok = await self.store.extend(
                    op.key, (Status.EXECUTING, op.fence), ledger_now + op.lease_seconds
                )
            except LedgerError:
                ok = True
            if not ok:
                overtaken.set()
                return
            due = time.monotonic() + op.heartbeat
