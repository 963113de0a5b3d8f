"""What a driver tells an observer, step by step, with both drivers (issue 23 item 2).

The ``_run`` area's sample (dev-run-1) found the traced loops loose: the
origin a reconcile links to, the error that escapes a step or a run, the
attributes of each step's end. A plain recording observer (the
:class:`actonce.Telemetry` protocol, no OpenTelemetry) writes down every call;
the same scenarios run under ``Ledger`` and ``AsyncLedger`` and must tell the
same story. Memory store, a frozen clock.
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
    Registry,
    RunResult,
    TelemetryRun,
    Unavailable,
)
from actonce._run import points
from actonce._run.telemetry import fingerprint
from actonce.testing import FrozenClock

POLICY = Policy(settle_seconds=0.0, verify_attempts=1, lease_seconds=30.0)


class Scope:
    def __init__(self, log: list[tuple[Any, ...]], n: int) -> None:
        self.log, self.n, self.steps = log, n, 0

    def traceparent(self) -> str | None:
        return f"tp-{self.n}"

    def step(self, name: str, attributes: dict[str, Any]) -> Any:
        self.steps += 1
        handle = f"{self.n}.{self.steps}"
        self.log.append(("step", handle, name, dict(attributes)))
        return handle

    def step_end(
        self, handle: Any, attributes: dict[str, Any], error: BaseException | None
    ) -> None:
        self.log.append(("step_end", handle, dict(attributes), error))

    def end(self, result: RunResult | None, error: BaseException | None) -> None:
        self.log.append(("end", result, error))


class Recorder:
    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.runs: list[TelemetryRun] = []

    def begin(self, run: TelemetryRun) -> Scope:
        self.runs.append(run)
        self.log.append(("begin", run.operation, run.origin))
        return Scope(self.log, len(self.runs))


class World:
    def __init__(self) -> None:
        self.made = 0
        self.lose = False
        self.seen = True

    def perform(self) -> None:
        self.made += 1
        if self.lose:
            self.seen = False  # the page times out from now on
            raise TimeoutError("the response was lost")

    def verify(self) -> Any:
        if not self.seen:
            return Unavailable("the search page times out")
        return Confirmed("r-1") if self.made else Absent()


def _effect(world: World) -> Effect:
    return Effect(key="traced-1", kind="pin", payload={"n": 1}, perform=world.perform,
                  verify=world.verify, policy=POLICY)  # fmt: skip


class Both:
    """A sync or async ledger behind one synchronous face."""

    def __init__(self, is_async: bool, store: Any, clock: FrozenClock, world: World) -> None:
        self.store = store
        registry = Registry()
        registry.register("pin", lambda record: world.verify(), policy=POLICY)
        cls = AsyncLedger if is_async else Ledger
        self.inner: Any = cls(store, clock=clock, registry=registry)
        self.loop = asyncio.new_event_loop() if is_async else None

    def call(self, name: str, *args: Any) -> Any:
        got = getattr(self.inner, name)(*args)
        return self.loop.run_until_complete(got) if self.loop is not None else got

    def close(self) -> None:
        if self.loop is not None:
            self.loop.close()


@pytest.fixture(params=["sync", "async"])
def both(request: pytest.FixtureRequest) -> Any:
    def make(store: Any, clock: FrozenClock, world: World) -> Both:
        return Both(request.param == "async", store, clock, world)

    return make


def test_a_run_tells_every_step_and_its_result(both: Any) -> None:
    world, clock = World(), FrozenClock(start=1_000.0)
    ledger = both(MemoryStore(), clock, world)
    recorder = Recorder()
    ledger.inner.telemetry = recorder
    result = ledger.call("run", _effect(world))
    [run] = recorder.runs
    assert run == TelemetryRun("run", "pin", fingerprint(result.key), run.run_id, None)
    claim = next(e for e in ledger.store.events(result.key) if e.type.value == "claimed")
    assert claim.data["traceparent"] == "tp-1" and claim.run_id == run.run_id
    assert recorder.log == [
        ("begin", "run", None),
        ("step", "1.1", "claim", {"actonce.attempt": 1, "actonce.status.to": "claimed"}),
        ("step_end", "1.1", {"actonce.claim.acquired": True}, None),
        ("step", "1.2", "verify", {}),
        ("step_end", "1.2", {"actonce.verdict": "absent"}, None),
        ("step", "1.3", "mark_executing", {"actonce.attempt": 1,
         "actonce.status.from": "claimed", "actonce.status.to": "executing"}),
        ("step_end", "1.3", {"actonce.cas.won": True}, None),
        ("step", "1.4", "perform", {"actonce.attempt": 1}),
        ("step_end", "1.4", {"actonce.perform.seconds": 0.0}, None),
        ("step", "1.5", "verify", {}),
        ("step_end", "1.5", {"actonce.verdict": "confirmed", "actonce.verdict.count": 1}, None),
        ("step", "1.6", "record", {"actonce.attempt": 1,
         "actonce.status.from": "executing", "actonce.status.to": "confirmed"}),
        ("step_end", "1.6", {"actonce.cas.won": True, "actonce.settle.seconds": 0.0}, None),
        ("end", result, None),
    ]  # fmt: skip
    ledger.close()


def test_a_reconcile_links_to_the_attempt_it_settles(both: Any) -> None:
    world, clock, store = World(), FrozenClock(start=1_000.0), MemoryStore()
    ledger = both(store, clock, world)
    recorder = Recorder()
    ledger.inner.telemetry = recorder
    world.lose = True
    lost = ledger.call("run", _effect(world))
    assert lost.status.value == "unknown"
    perform_end = next(e for e in recorder.log if e[0] == "step_end" and e[1] == "1.4")
    assert perform_end[2] == {"actonce.perform.seconds": 0.0, "error.type": "TimeoutError"}
    clock.advance(60.0)
    world.seen = True
    recorder.log.clear()
    settled = ledger.call("reconcile")
    assert [r.status.value for r in settled.results] == ["confirmed"]
    second = recorder.runs[1]
    assert second == TelemetryRun("reconcile", "pin", fingerprint(lost.key), second.run_id, "tp-1")
    assert recorder.log[0] == ("begin", "reconcile", "tp-1")
    assert recorder.log[-1][0] == "end" and recorder.log[-1][2] is None
    assert isinstance(recorder.log[-1][1], RunResult)
    assert recorder.log[-1][1].status.value == "confirmed"
    ledger.close()


def test_a_crash_inside_a_step_ends_the_step_and_the_run_with_it(both: Any) -> None:
    world, clock = World(), FrozenClock(start=1_000.0)
    ledger = both(MemoryStore(), clock, world)
    recorder = Recorder()
    ledger.inner.telemetry = recorder
    points.arm("after_claim")
    try:
        with pytest.raises(points.SimulatedCrash) as crash:
            ledger.call("run", _effect(world))
    finally:
        points.disarm()
    assert recorder.log == [
        ("begin", "run", None),
        ("step", "1.1", "claim", {"actonce.attempt": 1, "actonce.status.to": "claimed"}),
        ("step_end", "1.1", {"error.type": "SimulatedCrash"}, crash.value),
        ("end", None, crash.value),
    ]
    assert world.made == 0
    ledger.close()


class FailingMark(MemoryStore):
    """A store whose ``executing`` mark cannot be written."""

    def transition(self, expect: Any, new: Any, event: Any, **kw: Any) -> Any:
        if new.status.value == "executing":
            raise LedgerError("disk full")
        return super().transition(expect, new, event, **kw)


def test_a_ledger_error_in_a_step_is_told_then_handed_to_the_protocol(both: Any) -> None:
    world, clock = World(), FrozenClock(start=1_000.0)
    ledger = both(FailingMark(), clock, world)
    recorder = Recorder()
    ledger.inner.telemetry = recorder
    with pytest.raises(LedgerError) as err:
        ledger.call("run", _effect(world))
    assert world.made == 0  # marker first: nothing was performed
    mark = [e for e in recorder.log if e[0] == "step" and e[2] == "mark_executing"]
    assert len(mark) == 1
    handle = mark[0][1]
    [ended] = [e for e in recorder.log if e[0] == "step_end" and e[1] == handle]
    assert ended[2] == {"error.type": "LedgerError"}
    assert isinstance(ended[3], LedgerError) and str(ended[3]) == "disk full"
    assert recorder.log[-1] == ("end", None, err.value)
    ledger.close()
