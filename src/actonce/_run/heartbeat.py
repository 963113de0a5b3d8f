"""Heartbeats: the sync driver extends the owner's lease while a perform runs.

One background thread per ledger (:class:`Heartbeats`) keeps a heap of the
running performs (:class:`Beat`) and, for each, extends the lease (a fenced
compare-and-set on the ``executing`` row) every ``heartbeat`` seconds, and at
once when the ledger clock is seen to step. A lease extension that finds the
row no longer the owner's marks the beat ``overtaken``. Stopping a beat
waits for its store call if one is under way (only then): a refusal that
reached the owner before its perform ended is never lost. The async driver
beats from a task of its own (:meth:`actonce._run.drive.AsyncDriver._beat`).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time

from .._rules.errors import LedgerError
from .._rules.model import Status
from .._store.base import EffectStore
from .clock import Clock
from .ops import Perform

__all__ = ["STEP_CHECK", "Beat", "Heartbeats"]

STEP_CHECK = 1.0  # seconds between two looks at the clock while a perform runs
_POLL = 0.2  # seconds the heartbeat thread sleeps at most between two looks at its queue


class Beat:
    __slots__ = (
        "busy", "cancelled", "clock", "due", "lease", "op", "overtaken", "steps", "store",
    )  # fmt: skip

    def __init__(self, op: Perform, store: EffectStore, clock: Clock) -> None:
        self.op = op
        self.store = store
        self.clock = clock
        self.lease = op.lease_seconds
        self.due = time.monotonic() + min(op.heartbeat, STEP_CHECK)
        self.steps = getattr(clock, "steps", 0)
        self.cancelled = False
        self.overtaken = False
        self.busy = False  # a store call of this beat is under way

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
        self.due = min(self.due, now_mono + STEP_CHECK)


class Heartbeats:
    """One background thread that extends the leases of running performs."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Beat]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False

    def start(self, op: Perform, store: EffectStore, clock: Clock) -> Beat:
        beat = Beat(op, store, clock)
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

    def stop(self, beat: Beat) -> bool:
        """Stop beating for ``beat``; True when a beat found the row overtaken."""
        with self._cond:
            beat.cancelled = True
            while beat.busy:  # its extension is under way: its answer counts
                self._cond.wait()
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
                # The store call happens outside the lock; stop() waits for it only
                # when it is this beat's (its answer may be the refusal).
                beat.busy = True
                self._cond.release()
                try:
                    beat.beat()
                finally:
                    self._cond.acquire()
                    beat.busy = False
                    self._cond.notify_all()
                if not beat.cancelled:
                    heapq.heappush(self._heap, (beat.due, next(self._seq), beat))
