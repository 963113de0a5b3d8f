"""What a driver tells a telemetry observer, and how a run's scope ends, on both drivers.

One scope per run (``operation`` "run") or reconcile ("reconcile"), one step
per claim, mark, perform, verification and recorded verdict; the scope ends
with the run's result, or with the error that escaped it (a ledger that could
not write the ``executing`` mark: the run raises, nothing is performed, and
the observer is told which error ended it). A plain recording observer (the
``Telemetry`` protocol), memory store, frozen clock.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from actonce import (
    Absent,
    AsyncLedger,
    Confirmed,
    Effect,
    Ledger,
    LedgerError,
    MemoryStore,
    Policy,
    RunResult,
    Status,
)
from actonce._run.telemetry import TelemetryRun, fingerprint
from actonce.testing import FrozenClock

POLICY = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1)


class Scope:
    def __init__(self, log: list[Any]) -> None:
        self.log = log

    def traceparent(self) -> str | None:
        return None

    def step(self, name: str, attributes: dict[str, Any]) -> str:
        return name

    def step_end(
        self, handle: str, attributes: dict[str, Any], error: BaseException | None
    ) -> None:
        self.log.append((handle, None if error is None else type(error).__name__))

    def end(self, result: RunResult | None, error: BaseException | None) -> None:
        self.log.append(("end", result, error))


class Recorder:
    def __init__(self) -> None:
        self.runs: list[TelemetryRun] = []
        self.log: list[Any] = []

    def begin(self, run: TelemetryRun) -> Scope:
        self.runs.append(run)
        return Scope(self.log)


class NoMark(MemoryStore):
    """A ledger that cannot write the ``executing`` mark."""

    def transition(self, expect: Any, new: Any, *args: Any, **kwargs: Any) -> Any:
        if new.status is Status.EXECUTING:
            raise LedgerError("disk full")
        return super().transition(expect, new, *args, **kwargs)


def _effect(key: str, made: list[str]) -> Effect:
    return Effect(key=key, kind="pin", payload={}, perform=lambda: made.append(key),
                  verify=lambda: Confirmed("r") if key in made else Absent(),
                  policy=POLICY)  # fmt: skip


async def _call(value: Any) -> Any:
    return await value if asyncio.iscoroutine(value) else value


async def _script(is_async: bool, store: MemoryStore) -> tuple[Recorder, Any, list[str]]:
    made: list[str] = []
    recorder = Recorder()
    ledger: Any = (AsyncLedger if is_async else Ledger)(store, clock=FrozenClock())
    ledger.telemetry = recorder
    try:
        try:
            got: Any = await _call(ledger.run(_effect("k", made), run_id="run-1"))
        except LedgerError as exc:
            got = exc
    finally:
        await _call(ledger.aclose() if is_async else ledger.close())
    return recorder, got, made


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_run_s_scope_names_its_steps_and_ends_with_its_result(is_async: bool) -> None:
    recorder, result, made = asyncio.run(_script(is_async, MemoryStore()))
    assert made == ["k"] and isinstance(result, RunResult)
    assert recorder.runs == [TelemetryRun("run", "pin", fingerprint("k"), "run-1", None)]
    assert recorder.log == [
        ("claim", None), ("verify", None), ("mark_executing", None), ("perform", None),
        ("verify", None), ("record", None), ("end", result, None),
    ]  # fmt: skip


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_run_the_ledger_cannot_mark_ends_its_scope_with_that_error(is_async: bool) -> None:
    recorder, error, made = asyncio.run(_script(is_async, NoMark()))
    assert made == [] and isinstance(error, LedgerError)
    assert recorder.log == [
        ("claim", None), ("verify", None), ("mark_executing", "LedgerError"), ("end", None, error),
    ]  # fmt: skip
