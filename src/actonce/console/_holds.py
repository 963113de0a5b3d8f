"""A reviewer holds an item while deciding: an operator lease named after the effect.

The lease ``review:<effect key>`` is owned by the reviewer's name, so every
console on the same ledger (and ``actonce`` itself) sees "held by ana until
12:05". Only the holder is offered the decision; a decision first renews
the hold (a compare-and-set on the lease's fencing token: a hold that
expired and was taken by someone else is refused with
:class:`~actonce.LeaseLost`), then resolves, then lets the hold go. The
resolve itself is a compare-and-set on the effect's status and fence, so
even a decision racing a hold's expiry cannot settle an effect twice.

Holds expire by themselves (``ttl``); the console keeps the
:class:`~actonce.Lease` objects of the holds it took. A hold taken by a
console that has since stopped stays visible until it expires; then
anyone may take the item.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

from actonce import Lease, LeaseLost, LeaseRecord, Ledger

__all__ = ["HoldState", "ReviewHolds", "hold_name"]


def hold_name(key: str) -> str:
    """The lease name of the review hold on ``key``."""
    return f"review:{key}"


@dataclass(frozen=True, slots=True)
class HoldState:
    """Who holds an item now, as one reviewer sees it."""

    holder: str | None
    until: float | None
    mine: bool
    here: bool  # held through this console process (it can renew and release it)

    @property
    def free(self) -> bool:
        """True when nobody holds the item."""
        return self.holder is None


class ReviewHolds:
    """The review holds of one console."""

    def __init__(self, ledger: Ledger, ttl: float) -> None:
        self._ledger = ledger
        self.ttl = ttl
        self._mine: dict[tuple[str, str], Lease] = {}
        self._lock = threading.Lock()

    def _reader(self, key: str) -> Lease:
        # A reader never acquires: a fixed owner name spares making a unique one.
        return Lease(self._ledger, hold_name(key), owner="console-reader", ttl=self.ttl)

    def state(self, key: str, reviewer: str) -> HoldState:
        """Who holds ``key`` now (a read)."""
        record: LeaseRecord | None = self._reader(key).current()
        now = self._ledger.clock.now()
        if record is None or not record.live(now):
            return HoldState(None, None, False, False)
        with self._lock:
            lease = self._mine.get((record.owner, key))
        here = lease is not None and lease.token == record.token
        return HoldState(record.owner, record.expires_at, record.owner == reviewer, here)

    def take(self, key: str, reviewer: str) -> HoldState:
        """Hold ``key`` for ``reviewer`` (or hold it longer); answers who holds it now."""
        with self._lock:
            lease = self._mine.get((reviewer, key))
        if lease is not None:
            try:
                lease.heartbeat()
                return self.state(key, reviewer)
            except LeaseLost:
                with self._lock:
                    self._mine.pop((reviewer, key), None)
        lease = Lease(self._ledger, hold_name(key), owner=reviewer, ttl=self.ttl)
        if lease.acquire():
            with self._lock:
                self._mine[(reviewer, key)] = lease
        return self.state(key, reviewer)

    def confirm(self, key: str, reviewer: str) -> bool:
        """Renew ``reviewer``'s hold on ``key`` before a decision; False if not held."""
        with self._lock:
            lease = self._mine.get((reviewer, key))
        if lease is None:
            return False
        try:
            lease.heartbeat()
        except LeaseLost:
            with self._lock:
                self._mine.pop((reviewer, key), None)
            return False
        return True

    def release(self, key: str, reviewer: str) -> None:
        """Let ``reviewer``'s hold on ``key`` go (nothing if it is not held here)."""
        with self._lock:
            lease = self._mine.pop((reviewer, key), None)
        if lease is not None and lease.record is not None:
            # Lost: it had expired and someone took it; nothing of ours to release.
            with contextlib.suppress(LeaseLost):
                lease.release()
