"""Ledger time and the owner's heartbeat, stated whole (issue 23 item 2).

The ``_run`` area's sample (dev-run-1) found two things no test of the area
reached: a :class:`SystemClock` anchored to a reference (PostgreSQL's server
clock) counts on from the anchor with the monotonic clock, and a
:class:`Beat` extends the owner's lease only when it is due or the ledger
clock was seen to step — not at its first look. Bounds, not timings: every
assertion brackets a reading between two monotonic readings.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from actonce import Absent, AsyncLedger, Effect, Ledger, MemoryStore, Policy, Status
from actonce._run import points
from actonce._run.clock import StepWatch, SystemClock
from actonce._run.heartbeat import STEP_CHECK, Beat
from actonce._run.ops import Perform
from actonce.testing import FrozenClock

SLACK = 1e-6


def test_an_anchored_clock_counts_on_from_its_reference() -> None:
    clock = SystemClock(offset=10.0)
    assert clock.anchored_for() is None
    m0 = time.monotonic()
    clock.anchor(5_000.0, mono=m0)
    before = time.monotonic()
    now = clock.now()
    after = time.monotonic()
    assert 5_010.0 + (before - m0) - SLACK <= now <= 5_010.0 + (after - m0) + SLACK
    tick = clock.read()
    assert tick.now == pytest.approx(5_010.0 + (tick.mono - m0), abs=SLACK)
    assert tick.trusted is True and clock.trusted() is True
    since = clock.anchored_for()
    assert since is not None and 0.0 <= since <= time.monotonic() - m0 + SLACK


def test_an_anchor_taken_in_the_past_counts_the_time_since() -> None:
    clock = SystemClock()
    m0 = time.monotonic() - 30.0
    clock.anchor(1_000.0, mono=m0)
    since = clock.anchored_for()
    assert since is not None and since >= 30.0
    assert clock.now() >= 1_030.0
    tick = clock.read()
    assert tick.now == pytest.approx(1_000.0 + (tick.mono - m0), abs=SLACK)


def test_an_unanchored_clock_is_the_wall_clock_plus_its_offset() -> None:
    clock = SystemClock(offset=-100.0)
    before = time.time()
    now = clock.now()
    after = time.time()
    assert before - 100.0 - SLACK <= now <= after - 100.0 + SLACK
    tick = clock.read()
    assert tick.trusted is True and clock.steps == 0


def test_an_anchor_that_disagrees_is_a_step_and_distrusted() -> None:
    clock = SystemClock(step_bound=1.0, distrust_seconds=600.0)
    m0 = time.monotonic()
    clock.anchor(5_000.0, mono=m0)
    clock.anchor(5_000.5, mono=m0)  # within the bound: no step
    assert clock.steps == 0 and clock.trusted() is True
    clock.anchor(5_010.0, mono=m0)  # ten seconds ahead at the same monotonic time
    assert clock.steps == 1
    assert clock.trusted() is False and clock.read().trusted is False
    tick = clock.read()
    assert tick.now == pytest.approx(5_010.0 + (tick.mono - m0), abs=SLACK)


def test_an_anchor_with_no_monotonic_reading_is_taken_now() -> None:
    clock = SystemClock()
    before = time.monotonic()
    clock.anchor(2_000.0)
    now = clock.now()
    later = time.monotonic()
    assert 2_000.0 - SLACK <= now <= 2_000.0 + (later - before) + SLACK


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"step_bound": 0.0}, "step_bound must be a positive number of seconds"),
        ({"step_bound": -1.0}, "step_bound must be a positive number of seconds"),
        ({"step_bound": float("inf")}, "step_bound must be a positive number of seconds"),
        ({"step_bound": float("nan")}, "step_bound must be a positive number of seconds"),
        ({"distrust_seconds": -0.5}, "distrust_seconds must be a non-negative number of seconds"),
        ({"distrust_seconds": float("inf")},
         "distrust_seconds must be a non-negative number of seconds"),
    ],
)  # fmt: skip
def test_a_step_watch_refuses_bounds_that_are_no_durations(
    kwargs: dict[str, float], message: str
) -> None:
    with pytest.raises(ValueError) as err:
        StepWatch(**kwargs)
    assert str(err.value) == message
    with pytest.raises(ValueError):
        SystemClock(**kwargs)  # type: ignore[arg-type]


def test_a_zero_distrust_is_allowed() -> None:
    watch = StepWatch(distrust_seconds=0.0)
    watch.feed(0.0, 0.0)
    assert watch.feed(50.0, 0.0) is True
    assert watch.trusted(0.0) is True


def test_a_step_is_a_disagreement_past_the_bound_and_the_slew_allowance() -> None:
    watch = StepWatch(step_bound=1.0, distrust_seconds=600.0)
    assert watch.feed(0.0, 0.0) is False  # the first reading reveals nothing
    assert watch.feed(1.0, 0.0) is False  # exactly the bound: no step
    assert watch.feed(0.0, 0.0) is False  # back by the bound: no step
    # after 1000 s the allowance is 1 s + 0.1 % of 1000 s = 2 s, either way
    assert watch.feed(1_002.0, 1_000.0) is False
    assert watch.feed(2_000.0, 2_000.0) is False  # back by 2 s after 1000 s
    assert watch.steps == 0 and watch.trusted(2_000.0) is True
    assert watch.feed(3_002.5, 3_000.0) is True  # 2.5 s ahead
    assert watch.steps == 1
    assert watch.trusted(3_000.0) is False
    assert watch.trusted(3_599.0) is False
    assert watch.trusted(3_600.0) is True  # distrusted for exactly 600 s of monotonic time
    assert watch.feed(3_600.0 - 10.0, 3_597.5) is True  # a step back counts too
    assert watch.steps == 2 and watch.trusted(4_000.0) is False
    assert watch.trusted(3_597.5 + 600.0) is True


# --- the heartbeat ----------------------------------------------------------------------


class BareClock:
    """A user's clock: the protocol's methods only, no ``steps`` counter."""

    def __init__(self, inner: FrozenClock) -> None:
        self.inner = inner

    def now(self) -> float:
        return self.inner.now()

    def monotonic(self) -> float:
        return self.inner.monotonic()

    def trusted(self) -> bool:
        return self.inner.trusted()

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def _executing(store: MemoryStore, clock: FrozenClock) -> str:
    """An effect left ``executing`` under attempt 1 (the process stopped after its mark)."""
    effect = Effect(key="beat-1", kind="pin", payload={}, perform=lambda: None,
                    verify=Absent)  # fmt: skip
    points.arm("after_mark_executing")
    try:
        with pytest.raises(points.SimulatedCrash):
            Ledger(store, clock=clock).run(effect)
    finally:
        points.disarm()
    record = store.get(effect.key)
    assert record is not None and record.status is Status.EXECUTING and record.fence == 1
    return record.key


def test_a_beat_extends_nothing_at_its_first_look() -> None:
    clock, store = FrozenClock(), MemoryStore()
    key = _executing(store, clock)
    lease = store.get(key).lease_expires_at  # type: ignore[union-attr]
    start = time.monotonic()
    beat = Beat(Perform(key, 1, 50.0, 100.0), store, clock)
    assert beat.steps == clock.steps == 0 and beat.lease == 50.0
    assert start + STEP_CHECK - SLACK <= beat.due <= time.monotonic() + STEP_CHECK + SLACK
    beat.beat()
    assert store.get(key).lease_expires_at == lease  # type: ignore[union-attr]
    assert (beat.overtaken, beat.cancelled) == (False, False)
    assert beat.due <= time.monotonic() + STEP_CHECK + SLACK


@pytest.mark.parametrize("bare", [False, True])
def test_a_beat_extends_at_once_when_the_ledger_clock_steps(bare: bool) -> None:
    clock, store = FrozenClock(), MemoryStore()
    key = _executing(store, clock)
    clock.step(5.0)  # before the beat starts: its own first look sees no step
    seen = BareClock(clock) if bare else clock
    beat = Beat(Perform(key, 1, 50.0, 100.0), store, seen)  # type: ignore[arg-type]
    assert beat.steps == (0 if bare else clock.steps)
    lease = store.get(key).lease_expires_at  # type: ignore[union-attr]
    if bare:  # a clock that counts no steps never looks stepped
        beat.beat()
        assert store.get(key).lease_expires_at == lease  # type: ignore[union-attr]
        return
    beat.beat()
    assert store.get(key).lease_expires_at == lease  # type: ignore[union-attr]
    clock.step(30.0)
    beat.beat()
    assert store.get(key).lease_expires_at == clock.now() + 50.0  # type: ignore[union-attr]
    assert beat.steps == clock.steps == 2
    assert (beat.overtaken, beat.cancelled) == (False, False)


def test_a_beat_that_finds_the_row_taken_is_overtaken_and_stops() -> None:
    clock, store = FrozenClock(), MemoryStore()
    key = _executing(store, clock)
    beat = Beat(Perform(key, 2, 50.0, 100.0), store, clock)  # not the row's attempt
    lease = store.get(key).lease_expires_at  # type: ignore[union-attr]
    clock.step(30.0)
    beat.beat()
    assert (beat.overtaken, beat.cancelled) == (True, True)
    assert store.get(key).lease_expires_at == lease  # type: ignore[union-attr]


def test_the_default_bounds_are_one_second_and_ten_minutes() -> None:
    clock = SystemClock()
    m0 = time.monotonic()
    clock.anchor(5_000.0, mono=m0)
    clock.anchor(5_001.0, mono=m0)  # one second: the bound itself, no step
    assert clock.steps == 0 and clock.trusted() is True
    clock.anchor(5_002.5, mono=m0)  # one and a half seconds more: a step
    assert clock.steps == 1 and clock.trusted() is False
    watch = StepWatch()
    assert (watch.step_bound, watch.distrust_seconds) == (1.0, 600.0)
    watch.feed(0.0, 0.0)
    assert watch.feed(1.5, 0.0) is True
    assert watch.trusted(599.9) is False and watch.trusted(600.0) is True


def test_the_system_clock_sleeps_as_asked() -> None:
    import asyncio

    clock = SystemClock()
    before = time.monotonic()
    clock.sleep(0.001)
    asyncio.run(clock.asleep(0.001))
    assert time.monotonic() - before >= 0.002
    assert clock.monotonic() >= before


def test_closing_a_ledger_stops_its_heartbeat_thread() -> None:
    """A perform starts the ledger's one heartbeat thread; ``close`` ends it (joined,
    not left running in the background)."""
    before = set(threading.enumerate())
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    effect = Effect(key="beat-close", kind="pin", payload={}, perform=lambda: None,
                    verify=Absent)  # fmt: skip
    ledger.run(effect)
    started = [
        t for t in threading.enumerate() if t not in before and t.name == "actonce-heartbeat"
    ]
    assert len(started) == 1 and started[0].is_alive()
    ledger.close()
    assert not started[0].is_alive()


class Extensions(MemoryStore):
    """Tells when an owner's lease is extended, and to what."""

    def __init__(self) -> None:
        super().__init__()
        self.leases: list[float] = []
        self.extended = threading.Event()

    def extend(self, key: str, expect: Any, lease_expires_at: float) -> bool:
        ok = super().extend(key, expect, lease_expires_at)
        self.leases.append(lease_expires_at)
        self.extended.set()
        return ok


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_clock_step_during_a_perform_extends_the_lease_at_once(is_async: bool) -> None:
    """The ledger clock steps an hour while the perform runs: the heartbeat (due only
    every 100 s) extends the owner's lease at its next look (within a second), from
    the stepped time, on both drivers."""
    clock, store = FrozenClock(start=1_000.0), Extensions()
    seen: list[bool] = []

    def perform() -> None:
        clock.step(3600.0)
        seen.append(store.extended.wait(5.0))

    async def aperform() -> None:
        clock.step(3600.0)
        seen.append(await asyncio.to_thread(store.extended.wait, 5.0))

    policy = Policy(lease_seconds=300.0, verify_attempts=1)
    effect = Effect(key="stepped", kind="pin", payload={}, verify=Absent, policy=policy,
                    perform=aperform if is_async else perform)  # fmt: skip

    async def arun() -> None:
        ledger = AsyncLedger(store, clock=clock)
        await ledger.run(effect)
        await ledger.aclose()

    if is_async:
        asyncio.run(arun())
    else:
        with Ledger(store, clock=clock) as ledger:
            ledger.run(effect)
    assert seen == [True]
    assert store.leases[0] == 1_000.0 + 3600.0 + 300.0
