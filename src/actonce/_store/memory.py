"""A store in memory: for tests, for trying things out, and for the explorer.

It keeps the same atomicity as the durable stores (one lock around each
primitive) but nothing survives the process.
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from .._rules.model import OPEN_STATUSES, EffectRecord, Event, Status, evolve
from .base import Expect
from .records import ClaimResult, ItemStatus, LeaseRecord, LeaseResult, QueueItem

__all__ = ["MemoryStore"]


class MemoryStore:
    """A thread-safe store in memory: for tests and for trying things out.

    It keeps the same atomicity as the durable stores (one lock around each
    primitive) but nothing survives the process.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ledger_id = uuid.uuid4().hex
        self._rows: dict[str, EffectRecord] = {}
        self._events: list[Event] = []
        self._leases: dict[str, LeaseRecord] = {}
        self._queue: dict[int, QueueItem] = {}
        self.fail_next_write: BaseException | None = None
        """Testing hook: the next write primitive raises this instead of writing."""

    def _maybe_fail(self) -> None:
        exc, self.fail_next_write = self.fail_next_write, None
        if exc is not None:
            raise exc

    def _append(self, e: Event) -> None:
        seq = len(self._events) + 1
        event = Event(
            e.key,
            e.type,
            e.at,
            e.fence,
            e.run_id,
            e.from_status,
            e.to_status,
            e.message,
            e.data,
            seq,
        )
        self._events.append(event)

    def get(self, key: str) -> EffectRecord | None:
        with self._lock:
            return self._rows.get(key)

    def match_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        with self._lock:
            return sorted(k for k in self._rows if k.startswith(prefix))[:limit]

    def claim(
        self, new: EffectRecord, expect: Expect, event: Event, *, durable: bool = False
    ) -> ClaimResult:
        with self._lock:
            self._maybe_fail()
            current = self._rows.get(new.key)
            if expect is None:
                if current is not None:
                    return ClaimResult(False, current)
            elif current is None or (current.status, current.fence) != expect:
                if current is None:  # pragma: no cover - rows are never deleted
                    raise AssertionError("expected a row to replace")
                return ClaimResult(False, current)
            self._rows[new.key] = new
            self._append(event)
            return ClaimResult(True, new)

    def transition(
        self, expect: tuple[Status, int], new: EffectRecord, event: Event, *, durable: bool = False
    ) -> EffectRecord | None:
        with self._lock:
            self._maybe_fail()
            current = self._rows.get(new.key)
            if current is None or (current.status, current.fence) != expect:
                return None
            self._rows[new.key] = new
            self._append(event)
            return new

    def extend(self, key: str, expect: tuple[Status, int], lease_expires_at: float) -> bool:
        with self._lock:
            self._maybe_fail()
            current = self._rows.get(key)
            if current is None or (current.status, current.fence) != expect:
                return False
            if current.lease_expires_at < lease_expires_at:
                self._rows[key] = evolve(current, lease_expires_at=lease_expires_at)
            return True

    def append_event(self, event: Event) -> None:
        with self._lock:
            self._append(event)

    def events(self, key: str) -> list[Event]:
        with self._lock:
            return [copy.copy(e) for e in self._events if e.key == key]

    def select(
        self, statuses: Iterable[Status] | None = None, limit: int = 100, kind: str | None = None
    ) -> list[EffectRecord]:
        wanted = None if statuses is None else set(statuses)
        with self._lock:
            rows: Sequence[EffectRecord] = sorted(
                (
                    r
                    for r in self._rows.values()
                    if (wanted is None or r.status in wanted) and (kind is None or r.kind == kind)
                ),
                key=lambda r: (r.updated_at, r.key),
            )
            return list(rows[:limit])

    def open_effects(self, limit: int = 1000) -> list[EffectRecord]:
        return self.select(OPEN_STATUSES, limit)

    def counts(self) -> dict[Status, int]:
        with self._lock:
            out: dict[Status, int] = {}
            for r in self._rows.values():
                out[r.status] = out.get(r.status, 0) + 1
            return out

    def duplicates(self) -> int:
        with self._lock:
            return sum(1 for r in self._rows.values() if r.matches > 1)

    def close(self) -> None:
        pass

    # --- operator leases (see _leases) ------------------------------------------

    def lease_acquire(self, name: str, owner: str, now: float, expires_at: float) -> LeaseResult:
        with self._lock:
            self._maybe_fail()
            current = self._leases.get(name)
            if current is not None and current.live(now):
                return LeaseResult(False, current)
            token = 1 if current is None else current.token + 1
            new = LeaseRecord(name, owner, token, now, now, expires_at)
            self._leases[name] = new
            return LeaseResult(True, new)

    def lease_renew(
        self, name: str, token: int, owner: str, now: float, expires_at: float
    ) -> LeaseRecord | None:
        with self._lock:
            self._maybe_fail()
            current = self._leases.get(name)
            if current is None or (current.token, current.owner) != (token, owner):
                return None
            new = replace(current, heartbeat_at=now, expires_at=expires_at)
            self._leases[name] = new
            return new

    def lease_release(self, name: str, token: int, owner: str, now: float) -> bool:
        with self._lock:
            self._maybe_fail()
            current = self._leases.get(name)
            if current is None or (current.token, current.owner) != (token, owner):
                return False
            self._leases[name] = replace(current, owner="", expires_at=now)
            return True

    def lease_get(self, name: str) -> LeaseRecord | None:
        with self._lock:
            return self._leases.get(name)

    # --- work hand-out (see _queue) ----------------------------------------------

    def queue_put(self, kind: str, payload: str, now: float) -> int:
        with self._lock:
            self._maybe_fail()
            item_id = len(self._queue) + 1
            self._queue[item_id] = QueueItem(
                item_id, kind, json.loads(payload), ItemStatus.QUEUED, None, None, 0, now, now
            )
            return item_id

    def queue_take(
        self, worker: str, now: float, lease_expires_at: float, limit: int = 1
    ) -> list[QueueItem]:
        with self._lock:
            self._maybe_fail()
            taken: list[QueueItem] = []
            for item in sorted(self._queue.values(), key=lambda i: i.id):
                if len(taken) >= limit:
                    break
                free = item.status is ItemStatus.QUEUED or (
                    item.status is ItemStatus.TAKEN
                    and item.lease_expires_at is not None
                    and item.lease_expires_at <= now
                )
                if free:
                    new = replace(
                        item,
                        status=ItemStatus.TAKEN,
                        taken_by=worker,
                        lease_expires_at=lease_expires_at,
                        attempts=item.attempts + 1,
                        updated_at=now,
                    )
                    self._queue[item.id] = new
                    taken.append(new)
            return taken

    def _queue_cas(self, item_id: int, attempt: int, worker: str, **changes: Any) -> bool:
        item = self._queue.get(item_id)
        if item is None or (item.status, item.attempts, item.taken_by) != (
            ItemStatus.TAKEN,
            attempt,
            worker,
        ):
            return False
        self._queue[item_id] = replace(item, **changes)
        return True

    def queue_extend(
        self, item_id: int, attempt: int, worker: str, now: float, lease_expires_at: float
    ) -> bool:
        with self._lock:
            self._maybe_fail()
            return self._queue_cas(
                item_id, attempt, worker, lease_expires_at=lease_expires_at, updated_at=now
            )

    def queue_done(self, item_id: int, attempt: int, worker: str, now: float) -> bool:
        with self._lock:
            self._maybe_fail()
            return self._queue_cas(item_id, attempt, worker, status=ItemStatus.DONE, updated_at=now)

    def queue_counts(self) -> dict[str, int]:
        with self._lock:
            out = {s.value: 0 for s in ItemStatus}
            for item in self._queue.values():
                out[item.status.value] += 1
            return out
