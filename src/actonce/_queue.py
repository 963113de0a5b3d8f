"""Work hand-out: intents queued in the ledger, taken by many workers.

An item is ``queued``, then ``taken`` by one worker until its hand-out lease
expires, then ``done``. Each take adds one to ``attempts``, which is the
item's fencing token: only the latest taker may heartbeat it or mark it done.
A taken item whose taker went silent past its lease may be taken again; the
effects it runs stay protected by the effect ledger (one effect key, at most
one perform), so a second taker repeats no side effect.

Store primitives (memory, SQLite, PostgreSQL; PostgreSQL hands out with
``FOR UPDATE SKIP LOCKED``, SQLite with ``BEGIN IMMEDIATE`` + ``UPDATE ...
RETURNING``):

- ``queue_put(kind, payload_json, now)`` -> item id;
- ``queue_take(worker, now, lease_expires_at, limit)`` -> taken items, oldest
  first (never one that another live taker holds);
- ``queue_extend(item_id, attempt, worker, now, lease_expires_at)`` -> bool;
- ``queue_done(item_id, attempt, worker, now)`` -> bool;
- ``queue_counts()`` -> ``{"queued": n, "taken": n, "done": n}``.
"""

from __future__ import annotations

import math
from typing import Any

from ._effect import fingerprint_key_from_env
from ._leases import default_owner, store_and_clock
from ._rules.errors import InvalidKey, LeaseLost, UsageError
from ._rules.keys import check_name, stored_payload
from ._rules.secrets import FingerprintKey, check_secret_fields
from ._run.clock import Clock
from ._store.base import AsyncQueueStore, QueueStore
from ._store.records import QueueItem
from ._store.threads import threaded

__all__ = ["AsyncWorkQueue", "WorkQueue"]


def _payload_json(payload: Any, key: FingerprintKey | None, secret_fields: Any) -> str:
    # Secrets never reach the queue table (invariant 8): a worker gets its
    # credentials out of band (its browser profile, the environment).
    try:
        return stored_payload(payload, key=key, secret_fields=check_secret_fields(secret_fields))[0]
    except InvalidKey as exc:
        raise UsageError(f"a queued payload must be JSON-able: {exc}") from exc


def _item(item: Any) -> None:
    if not isinstance(item, QueueItem):
        raise UsageError(f"expected a QueueItem from take(), not {type(item).__name__}")


class _QueueBase:
    def __init__(
        self,
        target: Any,
        *,
        worker: str | None = None,
        lease_seconds: float = 60.0,
        clock: Clock | None = None,
    ) -> None:
        ok = isinstance(lease_seconds, int | float) and not isinstance(lease_seconds, bool)
        if not ok or not math.isfinite(lease_seconds) or lease_seconds <= 0:
            raise UsageError(f"lease_seconds must be a positive number, not {lease_seconds!r}")
        self.store, self.clock = store_and_clock(target, clock, QueueStore | AsyncQueueStore)
        found = getattr(target, "fingerprint_key", None)
        self.fingerprint_key = found if found is not None else fingerprint_key_from_env()
        self.worker = default_owner() if worker is None else check_name(worker, "a worker's name")
        self.lease_seconds = lease_seconds

    def _put_args(self, kind: str, payload: Any, secret_fields: Any) -> tuple[Any, ...]:
        check_name(kind, "a queued item's kind")
        text = _payload_json(payload, self.fingerprint_key, secret_fields)
        return (kind, text, self.clock.now())

    def _take_args(self, limit: int) -> tuple[Any, ...]:
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 10_000:
            raise UsageError(f"take from 1 to 10,000 items, not {limit!r}")
        now = self.clock.now()
        return (self.worker, now, now + self.lease_seconds, limit)

    def _extend_args(self, item: QueueItem) -> tuple[Any, ...]:
        _item(item)
        now = self.clock.now()
        return (item.id, item.attempts, self.worker, now, now + self.lease_seconds)

    def _done_args(self, item: QueueItem) -> tuple[Any, ...]:
        _item(item)
        return (item.id, item.attempts, self.worker, self.clock.now())

    def _check(self, ok: bool, item: QueueItem) -> None:
        if not ok:
            raise LeaseLost(
                f"queue item {item.id} was taken over after attempt {item.attempts}; "
                "its effects stay protected by the ledger"
            )


class WorkQueue(_QueueBase):
    """Hand work out to many workers through the ledger, synchronously.

    ``target`` is a :class:`~actonce.Ledger` or a store. ``worker`` names
    this taker; ``lease_seconds`` is how long a taken item stays this
    worker's without a :meth:`heartbeat`.
    """

    def put(self, kind: str, payload: Any, *, secret_fields: tuple[str, ...] = ()) -> int:
        """Queue one item; returns its id.

        The payload is stored like an effect's: secret-named fields (and the
        ``secret_fields`` named here) only redacted, or fingerprinted under
        the ledger's fingerprint key.
        """
        return int(self.store.queue_put(*self._put_args(kind, payload, secret_fields)))

    def take(self, limit: int = 1) -> list[QueueItem]:
        """Take up to ``limit`` items nobody else holds (oldest first)."""
        items: list[QueueItem] = self.store.queue_take(*self._take_args(limit))
        return items

    def heartbeat(self, item: QueueItem) -> None:
        """Keep a taken item ours ``lease_seconds`` longer (raises :class:`LeaseLost`)."""
        self._check(self.store.queue_extend(*self._extend_args(item)), item)

    def done(self, item: QueueItem) -> None:
        """Mark a taken item done (raises :class:`LeaseLost` if taken over)."""
        self._check(self.store.queue_done(*self._done_args(item)), item)

    def counts(self) -> dict[str, int]:
        """How many items are queued, taken and done."""
        counts: dict[str, int] = self.store.queue_counts()
        return counts


class AsyncWorkQueue(_QueueBase):
    """Hand work out through the ledger, asynchronously; same names as :class:`WorkQueue`."""

    @property
    def _astore(self) -> Any:
        if getattr(self, "_threaded", None) is None:
            self._threaded = threaded(self.store)
        return self._threaded

    async def put(self, kind: str, payload: Any, *, secret_fields: tuple[str, ...] = ()) -> int:
        """Queue one item; returns its id (secrets redacted: see :meth:`WorkQueue.put`)."""
        return int(await self._astore.queue_put(*self._put_args(kind, payload, secret_fields)))

    async def take(self, limit: int = 1) -> list[QueueItem]:
        """Take up to ``limit`` items nobody else holds (oldest first)."""
        items: list[QueueItem] = await self._astore.queue_take(*self._take_args(limit))
        return items

    async def heartbeat(self, item: QueueItem) -> None:
        """Keep a taken item ours ``lease_seconds`` longer (raises :class:`LeaseLost`)."""
        self._check(await self._astore.queue_extend(*self._extend_args(item)), item)

    async def done(self, item: QueueItem) -> None:
        """Mark a taken item done (raises :class:`LeaseLost` if taken over)."""
        self._check(await self._astore.queue_done(*self._done_args(item)), item)

    async def counts(self) -> dict[str, int]:
        """How many items are queued, taken and done."""
        counts: dict[str, int] = await self._astore.queue_counts()
        return counts
