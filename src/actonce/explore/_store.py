"""The one in-memory ledger every actor shares, with its states interned.

Every store operation runs against a real :class:`MemoryStore` (the SQLite
store in memory: the same compare-and-set, the same SQL). What the explorer
keeps of a store state is small: the effect's record and its history. A
state is loaded into the store (an empty database, then the row and the
events, through the store's own primitives) only when an operation has to run
on it, and the result of each (store state, actor position, fault) is kept:
the same operation on the same state is answered from memory the next time.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from .._rules.errors import LedgerError, LedgerOutcomeUnknown, LedgerUnavailable
from .._rules.model import EffectRecord, Event
from .._run.ops import AppendEvent, Claim, Get, Release, StoreOp, Transition
from .._store.memory import MemoryStore
from ._trie import Answer

__all__ = ["FAIL_AFTER", "FAIL_BEFORE", "OK", "Ledger", "Snapshot", "event_key"]

OK, FAIL_BEFORE, FAIL_AFTER = "ok", "fail_before", "fail_after"


def event_key(e: Event) -> tuple[Any, ...]:
    """What of a status change the state keeps: its type, fence, run, from and to."""
    return (e.type.value, e.fence, e.run_id, e.from_status, e.to_status)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One store state: the record (or none) and the history, oldest first."""

    record: EffectRecord | None
    events: tuple[Event, ...]

    @property
    def changes(self) -> tuple[tuple[Any, ...], ...]:
        """The events that change the status (a release back to no record, too)."""
        return tuple(
            event_key(e)
            for e in self.events
            if e.to_status is not None or e.from_status is not None
        )


@dataclass(frozen=True, slots=True)
class Result:
    """What one store operation did."""

    answer: Answer
    store: int
    committed: bool


class Ledger:
    """Interned store states and the one memory store operations run on."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.store = MemoryStore()
        self._empty = self.store._conn.serialize()
        self._snaps: list[Snapshot] = []
        self._ids: dict[Hashable, int] = {}
        self._loaded = -1
        self._cache: dict[tuple[int, int, str], Result] = {}
        self.loads = 0
        self.ops = 0
        self.empty = self.intern(Snapshot(None, ()))

    def __len__(self) -> int:
        return len(self._snaps)

    def intern(self, snap: Snapshot) -> int:
        # Only the events that change the status are part of a state: nothing
        # in the protocol reads the history, so two states that differ in an
        # observation (``held by``, ``verification unavailable``) behave alike.
        key = (snap.record, snap.changes)
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._snaps)
            self._snaps.append(snap)
        return found

    def snapshot(self, sid: int) -> Snapshot:
        return self._snaps[sid]

    def record(self, sid: int) -> EffectRecord | None:
        return self._snaps[sid].record

    def _load(self, sid: int) -> None:
        if self._loaded == sid:
            return
        self.loads += 1
        store = self.store
        store._conn.deserialize(self._empty)
        snap = self._snaps[sid]
        events = list(snap.events)
        if snap.record is not None:
            first = events.pop(0)
            store.claim(snap.record, None, first)
        for e in events:
            store.append_event(e)
        self._loaded = sid

    def run(self, sid: int, nid: int, op: Any, mode: str) -> Result:
        """Run ``op`` (at actor position ``nid``) on store state ``sid``.

        ``mode``: ``ok``, ``fail_before`` (raises ``LedgerUnavailable``, nothing
        written) or ``fail_after`` (commits, then raises ``LedgerOutcomeUnknown``).
        """
        ckey = (sid, nid, mode)
        found = self._cache.get(ckey)
        if found is not None:
            return found
        result = self._run(sid, op, mode)
        self._cache[ckey] = result
        return result

    def _run(self, sid: int, op: Any, mode: str) -> Result:
        if mode == FAIL_BEFORE:
            text = "explorer: the write failed before commit"
            return Result(
                Answer(("throw", LedgerUnavailable), None, LedgerUnavailable, text), sid, False
            )
        self._load(sid)
        self.ops += 1
        store = self.store
        snap = self._snaps[sid]
        event: Event | None = None
        value: Any
        try:
            if isinstance(op, Get):
                value = store.get(op.key)
            elif isinstance(op, Claim):
                value = store.claim(op.new, op.expect, op.event, durable=op.durable, gate=op.gate)
                event = op.event if value.acquired else None
            elif isinstance(op, Transition):
                value = store.transition(
                    op.expect, op.new, op.event, durable=op.durable, settle=op.settle,
                    fields=op.fields,
                )  # fmt: skip
                event = op.event if value is not None else None
            elif isinstance(op, Release):
                value = store.release(op.key, op.expect, op.restore, op.event)
                event = op.event if value else None
            elif isinstance(op, AppendEvent):
                store.append_event(op.event)
                value, event = None, op.event
            elif isinstance(op, StoreOp):
                value = getattr(store, op.primitive)(*op.args())
                if isinstance(value, list):
                    value = tuple(value)
            else:  # pragma: no cover - the machine sends only store operations here
                raise TypeError(f"not a store operation: {op!r}")
        except LedgerError as exc:  # pragma: no cover - a memory store does not fail
            self._loaded = -1
            return Result(Answer(("throw", type(exc)), None, type(exc), str(exc)), sid, False)
        if event is None:
            return Result(Answer(("send", value), value), sid, False)
        new = self.intern(Snapshot(store.get(self.key), (*snap.events, event)))
        self._loaded = new
        if mode == FAIL_AFTER:
            text = "explorer: the write committed, its acknowledgement was lost"
            answer = Answer(("throw", LedgerOutcomeUnknown), None, LedgerOutcomeUnknown, text)
            return Result(answer, new, True)
        return Result(Answer(("send", value), value), new, True)
