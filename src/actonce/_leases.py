"""Operator leases: one named run at a time, fenced.

Idempotency protects one effect; a lease keeps two scheduled runs from
driving the same browser workflow at once (seed 000, section 3). A lease
row has an owner, a heartbeat, an expiry and a fencing ``token`` that grows
with every acquisition and is never reused (released rows stay, with an
empty owner).

Store primitives (memory, SQLite, PostgreSQL; all atomic, all given the
time by the caller so that a frozen clock drives them in tests):

- ``lease_acquire(name, owner, now, expires_at)``: take the lease if it is
  free, released or expired (token + 1). A lost race is a value:
  ``LeaseResult(acquired=False, record=<the holder>)``.
- ``lease_renew(name, token, owner, now, expires_at)``: heartbeat; a
  compare-and-set on the token, ``None`` once another owner took over.
- ``lease_release(name, token, owner, now)``: ``False`` once taken over.
- ``lease_get(name)`` (:meth:`Lease.current`: who holds it now, for anyone).

:class:`Lease` and :class:`AsyncLease` wrap them: context managers that
release in ``finally`` and raise :class:`LeaseLost` when fenced out.
"""

from __future__ import annotations

import math
import os
import socket
import uuid
from types import TracebackType
from typing import Any

from ._rules.errors import LeaseHeld, LeaseLost, UsageError
from ._rules.keys import check_name
from ._run.clock import Clock, SystemClock
from ._store.base import AsyncLeaseStore, LeaseStore
from ._store.records import LeaseRecord, LeaseResult
from ._store.threads import threaded

__all__ = ["AsyncLease", "Lease", "default_owner", "store_and_clock"]


def default_owner() -> str:
    """An owner id naming this host and process, unique per call."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def store_and_clock(target: Any, clock: Clock | None, needs: Any) -> tuple[Any, Clock]:
    """The store behind ``target`` (a ledger or a store) and the clock to use.

    Raises:
        UsageError: the store lacks the primitives ``needs`` (a store protocol) names.
    """
    store = getattr(target, "store", target)
    if not isinstance(store, needs):
        raise UsageError(f"expected a ledger or a store, not {type(target).__name__}")
    return store, clock or getattr(target, "clock", None) or SystemClock()


class _LeaseBase:
    """What both lease classes share: arguments out, answers in. No I/O."""

    def __init__(
        self,
        target: Any,
        name: str,
        *,
        owner: str | None = None,
        ttl: float = 60.0,
        clock: Clock | None = None,
    ) -> None:
        check_name(name, "a lease's name")
        if not isinstance(ttl, int | float) or isinstance(ttl, bool) or not math.isfinite(ttl):
            raise UsageError(f"a lease's ttl must be a finite number of seconds, not {ttl!r}")
        if ttl <= 0:
            raise UsageError("a lease needs a positive ttl")
        self.store, self.clock = store_and_clock(target, clock, LeaseStore | AsyncLeaseStore)
        self.name = name
        self.owner = default_owner() if owner is None else check_name(owner, "a lease's owner")
        self.ttl = ttl
        self.record: LeaseRecord | None = None
        """The lease as last written by this holder (``None`` when not held)."""
        self._last: LeaseRecord | None = None

    @property
    def token(self) -> int:
        """The fencing token of the current acquisition (0 when not held)."""
        return 0 if self.record is None else self.record.token

    def _acquire_args(self) -> tuple[Any, ...]:
        now = self.clock.now()
        return (self.name, self.owner, now, now + self.ttl)

    def _acquired(self, result: LeaseResult) -> bool:
        self.record = result.record if result.acquired else None
        return result.acquired

    def _held(self) -> LeaseRecord:
        if self.record is None:
            raise UsageError(f"lease {self.name!r} is not held by {self.owner}")
        return self.record

    def _renew_args(self) -> tuple[Any, ...]:
        held = self._held()
        now = self.clock.now()
        return (self.name, held.token, self.owner, now, now + self.ttl)

    def _renewed(self, record: LeaseRecord | None) -> LeaseRecord:
        if record is None:
            self.record = None
            raise self._lost()
        self.record = record
        return record

    def _release_args(self) -> tuple[Any, ...]:
        held = self._held()
        return (self.name, held.token, self.owner, self.clock.now())

    def _released(self, ok: bool) -> None:
        self.record = None
        if not ok:
            raise self._lost()

    def _lost(self) -> LeaseLost:
        return LeaseLost(f"lease {self.name!r} expired and was taken over; stop this run")

    def _held_error(self, result_record: LeaseRecord | None) -> LeaseHeld:
        holder = result_record.owner if result_record else "another owner"
        return LeaseHeld(f"lease {self.name!r} is held by {holder}")


class Lease(_LeaseBase):
    """A named operator lease, synchronous.

    ``target`` is a :class:`~actonce.Ledger` or a store. Use it as a context
    manager (raises :class:`LeaseHeld` when someone else holds it, releases
    in ``finally``), or call :meth:`acquire` / :meth:`release` yourself.
    Call :meth:`heartbeat` during long rounds, well within ``ttl`` seconds.
    """

    def current(self) -> LeaseRecord | None:
        """The lease as the ledger holds it now, whoever holds it (``None``: never taken).

        A read: it neither takes nor renews anything. ``record.live(now)``
        says whether someone holds it, ``record.owner`` who.
        """
        record: LeaseRecord | None = self.store.lease_get(self.name)
        return record

    def acquire(self) -> bool:
        """Take the lease if it is free or expired; ``False`` if it is held."""
        result: LeaseResult = self.store.lease_acquire(*self._acquire_args())
        self._last = result.record
        return self._acquired(result)

    def heartbeat(self) -> LeaseRecord:
        """Push the expiry ``ttl`` seconds ahead.

        Raises:
            LeaseLost: the lease expired and another owner took it over.
        """
        return self._renewed(self.store.lease_renew(*self._renew_args()))

    def release(self) -> None:
        """Give the lease up now (expiry would free it anyway).

        Raises:
            LeaseLost: the lease had already been taken over.
        """
        self._released(self.store.lease_release(*self._release_args()))

    def __enter__(self) -> Lease:
        if not self.acquire():
            raise self._held_error(self._last)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.record is None:
            return  # released by hand, or already reported lost by heartbeat()
        try:
            self.release()
        except LeaseLost:
            if exc is None:
                raise  # the round ran (partly) without its lease: say so


class AsyncLease(_LeaseBase):
    """A named operator lease, asynchronous; same names as :class:`Lease`.

    ``target`` is an :class:`~actonce.AsyncLedger`, a ledger or a store (a
    synchronous store runs in a worker thread). Use ``async with``.
    """

    @property
    def _astore(self) -> Any:
        if getattr(self, "_threaded", None) is None:
            self._threaded = threaded(self.store)
        return self._threaded

    async def current(self) -> LeaseRecord | None:
        """The lease as the ledger holds it now; see :meth:`Lease.current`."""
        record: LeaseRecord | None = await self._astore.lease_get(self.name)
        return record

    async def acquire(self) -> bool:
        """Take the lease if it is free or expired; ``False`` if it is held."""
        result: LeaseResult = await self._astore.lease_acquire(*self._acquire_args())
        self._last = result.record
        return self._acquired(result)

    async def heartbeat(self) -> LeaseRecord:
        """Push the expiry ``ttl`` seconds ahead (raises :class:`LeaseLost`)."""
        return self._renewed(await self._astore.lease_renew(*self._renew_args()))

    async def release(self) -> None:
        """Give the lease up now (raises :class:`LeaseLost` if taken over)."""
        self._released(await self._astore.lease_release(*self._release_args()))

    async def __aenter__(self) -> AsyncLease:
        if not await self.acquire():
            raise self._held_error(self._last)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.record is None:
            return
        try:
            await self.release()
        except LeaseLost:
            if exc is None:
                raise
