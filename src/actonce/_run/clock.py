"""Time, passed in: the protocol never reads a clock itself.

Two clocks matter, and they are never mixed:

- **ledger time** (:meth:`Clock.now`, seconds since the epoch): what records,
  leases and settle windows are stamped with and compared against *between*
  processes. There is one such clock per ledger: the machine's wall clock for
  SQLite (every process on one machine reads the same one), the database
  server's clock for PostgreSQL (see :meth:`SystemClock.anchor`).
- **monotonic time** (:meth:`Clock.monotonic`): durations *inside* one
  process, such as "how long ago did my perform end". A wall-clock step (an
  NTP step, a VM resumed) never changes a duration.

A step of ledger time is detected by comparing it with monotonic time: when
the two disagree by more than ``step_bound`` seconds between two readings,
:meth:`Clock.trusted` answers False for ``distrust_seconds``, and windows
*between* processes (another owner's lease, a settle window counted from
someone else's mark) count as not passed meanwhile. See docs/clocks.md for
the assumptions (skew between machines, what stays uncovered).
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Protocol, runtime_checkable

from .ops import Tick

__all__ = ["Clock", "StepWatch", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """Where a ledger gets its times, and how it waits."""

    def now(self) -> float:
        """Ledger time, seconds since the epoch."""
        ...

    def monotonic(self) -> float:
        """This process's monotonic seconds (for durations only)."""
        ...

    def trusted(self) -> bool:
        """False for a while after ledger time was seen to step."""
        ...

    def sleep(self, seconds: float) -> None: ...

    async def asleep(self, seconds: float) -> None: ...


class StepWatch:
    """Notices when ledger time jumps against monotonic time.

    Feed it pairs of readings (ledger, monotonic); it keeps the last pair and
    distrusts the clock for ``distrust_seconds`` of monotonic time after any
    reading that disagrees with the previous one by more than
    ``step_bound`` (plus 0.1 % of the elapsed time, which slewing may take).
    """

    def __init__(self, *, step_bound: float = 1.0, distrust_seconds: float = 600.0) -> None:
        if not (math.isfinite(step_bound) and step_bound > 0):
            raise ValueError("step_bound must be a positive number of seconds")
        if not (math.isfinite(distrust_seconds) and distrust_seconds >= 0):
            raise ValueError("distrust_seconds must be a non-negative number of seconds")
        self.step_bound = step_bound
        self.distrust_seconds = distrust_seconds
        self._last: tuple[float, float] | None = None
        self._distrust_until = -math.inf
        self.steps = 0
        """How many steps were seen."""

    def feed(self, ledger: float, mono: float) -> bool:
        """Record a reading; True when it reveals a step."""
        last = self._last
        self._last = (ledger, mono)
        if last is None:
            return False
        elapsed = mono - last[1]
        drift = ledger - (last[0] + elapsed)
        if abs(drift) <= self.step_bound + 0.001 * abs(elapsed):
            return False
        self.steps += 1
        self._distrust_until = mono + self.distrust_seconds
        return True

    def trusted(self, mono: float) -> bool:
        """Whether windows between processes may be trusted at ``mono``."""
        return mono >= self._distrust_until


class SystemClock:
    """The real clocks: ledger time and ``time.monotonic``.

    Args:
        offset: seconds added to ledger time (campaigns run in virtual time).
        step_bound: disagreement between ledger and monotonic time that
            counts as a step.
        distrust_seconds: how long windows between processes count as not
            passed after a step.

    By default ledger time is this machine's wall clock, read at every call
    (SQLite: every process on the machine reads the same clock). A ledger on
    PostgreSQL *anchors* it instead to the database server's clock
    (:meth:`anchor`), and between anchors counts on from the anchor with the
    monotonic clock: a step of the local wall clock then changes nothing.
    """

    def __init__(
        self,
        offset: float = 0.0,
        *,
        step_bound: float = 1.0,
        distrust_seconds: float = 600.0,
    ) -> None:
        self.offset = offset
        self._watch = StepWatch(step_bound=step_bound, distrust_seconds=distrust_seconds)
        self._anchor: tuple[float, float] | None = None  # (reference, monotonic)

    def now(self) -> float:
        return self._at(time.monotonic())

    def _at(self, mono: float) -> float:
        """Ledger time at the monotonic reading ``mono`` (fed to the step watch)."""
        anchor = self._anchor
        if anchor is None:
            base = time.time()
            self._watch.feed(base, mono)
        else:
            base = anchor[0] + (mono - anchor[1])
        return base + self.offset

    def monotonic(self) -> float:
        return time.monotonic()

    def trusted(self) -> bool:
        return self._watch.trusted(time.monotonic())

    def read(self) -> Tick:
        """``now()``, ``monotonic()`` and ``trusted()`` at once, on one monotonic reading."""
        mono = time.monotonic()
        return Tick(self._at(mono), mono, self._watch.trusted(mono))

    @property
    def steps(self) -> int:
        """How many steps of ledger time this clock has seen."""
        return self._watch.steps

    def anchor(self, reference: float, mono: float | None = None) -> None:
        """Take ``reference`` (e.g. the database server's time) as ledger time.

        ``mono`` is the monotonic time the reference was read at (default:
        now). From then on :meth:`now` counts on from it with the monotonic
        clock; a later anchor that disagrees is a step.
        """
        at = time.monotonic() if mono is None else mono
        self._watch.feed(reference, at)
        self._anchor = (reference, at)

    def anchored_for(self) -> float | None:
        """Seconds since the last anchor (``None`` when not anchored)."""
        return None if self._anchor is None else time.monotonic() - self._anchor[1]

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
