"""The drivers: the only place where sync and async differ.

A driver runs one protocol generator to its end: it answers each operation
(:mod:`actonce._run.ops`) by calling the store, the clock or the user's
callables, and throws a store's :class:`~actonce.ActOnceError` back into the
generator. What the user's callables return is shaped once for both drivers
(:mod:`actonce._run.callables`): an exception from a verifier becomes
``Unavailable``, a perform's exception and its ``details`` become the
:class:`~actonce._run.ops.Performed` answer.

While a perform runs, the driver extends the owner's lease (a fenced
compare-and-set on the ``executing`` row) every ``heartbeat`` seconds, and
at once when the ledger clock is seen to step: the sync driver from one
background thread per ledger (:class:`~actonce._run.heartbeat.Heartbeats`),
the async driver from a task. A lease extension that finds the row no longer
the owner's marks the answer ``overtaken``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator
from typing import Any, Protocol, TypeVar

from .._rules.errors import ActOnceError, HardStop, LedgerError
from .._rules.model import RunResult, Status
from .._store.base import AsyncEffectStore, EffectStore
from . import points
from .callables import (
    NO_CALLABLES,
    Callables,
    as_verdict,
    evidence_ref,
    maybe_await,
    no_await,
    perform_answer,
    refreshed,
    stopped,
    tick,
    unavailable,
)
from .clock import Clock
from .effect import run_effect
from .heartbeat import STEP_CHECK, Heartbeats
from .ops import (
    AppendEvent,
    Claim,
    Evidence,
    Get,
    Hook,
    Hooked,
    Now,
    Op,
    Perform,
    Performed,
    Point,
    Precondition,
    Refresh,
    RunEffect,
    Sleep,
    Steps,
    Transition,
    Verified,
    Verify,
)
from .plan import Plan
from .telemetry import Telemetry, TelemetryRun, TelemetryScope, fingerprint, origin_of, step_of
from .telemetry import step_result as _step_result

__all__ = ["AsyncDriver", "AsyncDrives", "Driver", "Drives"]

T = TypeVar("T")


class Drives(Protocol):
    """What a facade over a ledger (``ledger.intents``, ``ledger.budgets``) needs of it."""

    def _drive(self, steps: Generator[Op, Any, T]) -> T: ...


class AsyncDrives(Protocol):
    """:class:`Drives`, of an async ledger."""

    async def _drive(self, steps: Generator[Op, Any, T]) -> T: ...


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
            return tick(self.clock)
        if kind is Get:
            return store.get(op.key)
        if kind is Verify:
            try:
                verdict = as_verdict(no_await(fns.verify()))
            except HardStop as exc:
                return stopped(exc, tick(self.clock))
            except Exception as exc:
                verdict = unavailable(exc)
            return Verified(verdict, tick(self.clock))
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
            return bool(no_await(fns.precondition()))
        if kind is Evidence:
            try:
                return evidence_ref(no_await(fns.evidence(op.label)) if fns.evidence else None)
            except Exception:
                return None
        if kind is RunEffect:
            return self.run(run_effect(op.plan), op.fns, op.plan)
        if kind is Refresh:
            assert fns.refresh is not None
            value: Any = None
            error: Exception | None = None
            try:
                value = no_await(fns.refresh())
            except Exception as exc:
                error = exc
            return refreshed(fns.refresh, value, error, tick(self.clock))
        if kind is Hook:
            try:
                return Hooked(no_await(getattr(fns.host, op.name)(*op.args)))
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
            value = no_await(fns.perform())
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
                verdict = as_verdict(await maybe_await(fns.verify()))
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
            return bool(await maybe_await(fns.precondition()))
        if kind is Evidence:
            try:
                return evidence_ref(
                    await maybe_await(fns.evidence(op.label)) if fns.evidence else None
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
                value = await maybe_await(fns.refresh())
            except Exception as exc:
                error = exc
            return refreshed(fns.refresh, value, error, tick(self.clock))
        if kind is Hook:
            try:
                return Hooked(await maybe_await(getattr(fns.host, op.name)(*op.args)))
            except BaseException as exc:  # handed to the loop, which re-raises a crash
                return Hooked(None, exc)
        return await getattr(store, op.primitive)(*op.args())

    async def _perform(self, op: Perform, fns: Callables) -> Performed:
        assert fns.perform is not None
        clock = self.clock
        started = clock.monotonic()
        overtaken, stop = asyncio.Event(), asyncio.Event()
        beat = asyncio.create_task(self._beat(op, overtaken, stop)) if op.heartbeat > 0 else None
        value: Any = None
        error: Exception | None = None
        try:
            value = await maybe_await(fns.perform())
        except Exception as exc:
            error = exc
        except BaseException:  # cancelled: the beat goes too
            if beat is not None:
                beat.cancel()
                await asyncio.gather(beat, return_exceptions=True)
            raise
        if beat is not None:
            # The beat ends at once, or after its store call under way: a
            # refusal that call brings still counts.
            stop.set()
            await asyncio.gather(beat, return_exceptions=True)
        answer = perform_answer(value, error, started, clock, overtaken.is_set())
        if op.after is not None:
            points.hit(op.after)
        return answer

    async def _beat(self, op: Perform, overtaken: asyncio.Event, stop: asyncio.Event) -> None:
        clock = self.clock
        steps = getattr(clock, "steps", 0)
        due = time.monotonic() + op.heartbeat
        while True:
            # Real time, not the ledger clock's sleep: a test's frozen clock
            # must not move because a perform is slow.
            wait = max(0.0, min(due - time.monotonic(), STEP_CHECK))
            try:
                await asyncio.wait_for(stop.wait(), wait)
                return  # the perform ended
            except TimeoutError:
                pass
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
