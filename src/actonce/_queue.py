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

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._clock import Clock
from ._errors import LeaseLost, UsageError
from ._leases import call_store, default_owner, store_and_clock

__all__ = [
    "QUEUE_COLUMNS",
    "AsyncWorkQueue",
    "ItemStatus",
    "QueueItem",
    "WorkQueue",
    "item_from_row",
]

QUEUE_COLUMNS = (
    "id",
    "kind",
    "payload",
    "status",
    "taken_by",
    "lease_expires_at",
    "attempts",
    "created_at",
    "updated_at",
)


class ItemStatus(enum.StrEnum):
    """Where one queued item stands. The values are the stored strings."""

    QUEUED = "queued"
    TAKEN = "taken"
    DONE = "done"


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One unit of work as the ledger holds it.

    ``payload`` is the JSON value given to ``put``; ``attempts`` counts the
    takes and fences the current taker.
    """

    id: int
    kind: str
    payload: Any
    status: ItemStatus
    taken_by: str | None
    lease_expires_at: float | None
    attempts: int
    created_at: float
    updated_at: float


def item_from_row(row: Sequence[Any]) -> QueueItem:
    """A ``QueueItem`` from a row in ``QUEUE_COLUMNS`` order."""
    return QueueItem(
        id=int(row[0]),
        kind=str(row[1]),
        payload=json.loads(row[2]),
        status=ItemStatus(row[3]),
        taken_by=row[4],
        lease_expires_at=None if row[5] is None else float(row[5]),
        attempts=int(row[6]),
        created_at=float(row[7]),
        updated_at=float(row[8]),
    )


def _payload_json(payload: Any) -> str:
    try:
        return json.dumps(payload, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"a queued payload must be JSON-able: {exc}") from exc


class _QueueBase:
    def __init__(
        self,
        target: Any,
        *,
        worker: str | None = None,
        lease_seconds: float = 60.0,
        clock: Clock | None = None,
    ) -> None:
        if lease_seconds <= 0:
            raise UsageError("lease_seconds must be positive")
        self.store, self.clock = store_and_clock(target, clock)
        self.worker = worker or default_owner()
        self.lease_seconds = lease_seconds

    def _put_args(self, kind: str, payload: Any) -> tuple[Any, ...]:
        if not kind:
            raise UsageError("a queued item needs a kind")
        return (kind, _payload_json(payload), self.clock.now())

    def _take_args(self, limit: int) -> tuple[Any, ...]:
        if limit < 1:
            raise UsageError("take at least one item")
        now = self.clock.now()
        return (self.worker, now, now + self.lease_seconds, limit)

    def _extend_args(self, item: QueueItem) -> tuple[Any, ...]:
        now = self.clock.now()
        return (item.id, item.attempts, self.worker, now, now + self.lease_seconds)

    def _done_args(self, item: QueueItem) -> tuple[Any, ...]:
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

    def put(self, kind: str, payload: Any) -> int:
        """Queue one item; returns its id."""
        return int(self.store.queue_put(*self._put_args(kind, payload)))

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

    async def put(self, kind: str, payload: Any) -> int:
        """Queue one item; returns its id."""
        return int(await call_store(self.store, "queue_put", *self._put_args(kind, payload)))

    async def take(self, limit: int = 1) -> list[QueueItem]:
        """Take up to ``limit`` items nobody else holds (oldest first)."""
        items: list[QueueItem] = await call_store(self.store, "queue_take", *self._take_args(limit))
        return items

    async def heartbeat(self, item: QueueItem) -> None:
        """Keep a taken item ours ``lease_seconds`` longer (raises :class:`LeaseLost`)."""
        self._check(await call_store(self.store, "queue_extend", *self._extend_args(item)), item)

    async def done(self, item: QueueItem) -> None:
        """Mark a taken item done (raises :class:`LeaseLost` if taken over)."""
        self._check(await call_store(self.store, "queue_done", *self._done_args(item)), item)

    async def counts(self) -> dict[str, int]:
        """How many items are queued, taken and done."""
        counts: dict[str, int] = await call_store(self.store, "queue_counts")
        return counts
