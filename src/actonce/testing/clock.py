"""A clock for tests: time moves only when told, and can be made to step."""

from __future__ import annotations

import threading

from .._run.clock import StepWatch

__all__ = ["FrozenClock"]


class FrozenClock:
    """Ledger and monotonic time that stand still until :meth:`advance` moves them.

    :meth:`sleep` advances both. :meth:`step` moves *ledger time only*, as an
    NTP step or a resumed virtual machine moves a wall clock: durations
    measured on the monotonic clock do not change, and the clock distrusts
    itself for ``distrust_seconds`` (of monotonic time) afterwards, exactly
    as :class:`~actonce.SystemClock` does.
    """

    def __init__(self, start: float = 1_700_000_000.0, *, distrust_seconds: float = 600.0) -> None:
        self._now = start
        self._mono = 1_000.0
        self._lock = threading.Lock()
        self._watch = StepWatch(distrust_seconds=distrust_seconds)
        self._watch.feed(self._now, self._mono)

    def now(self) -> float:
        with self._lock:
            self._watch.feed(self._now, self._mono)
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def trusted(self) -> bool:
        with self._lock:
            self._watch.feed(self._now, self._mono)
            return self._watch.trusted(self._mono)

    @property
    def steps(self) -> int:
        """How many steps of ledger time this clock has seen."""
        return self._watch.steps

    def advance(self, seconds: float) -> None:
        """Move ledger time and monotonic time forward together."""
        with self._lock:
            self._now += seconds
            self._mono += seconds

    def step(self, seconds: float) -> None:
        """Jump ledger time by ``seconds`` (either way); monotonic time stays."""
        with self._lock:
            self._now += seconds

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    async def asleep(self, seconds: float) -> None:
        self.advance(seconds)
