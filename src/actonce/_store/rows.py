"""Mapping between records/events and database rows, shared by the SQL stores.

Column order is the one in the migrations (``matches`` came with version 4,
``gated`` with version 5). Every backend converts values here, once; the SQL text they
share is in :mod:`actonce._store.sql`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._rules.errors import LedgerUnavailable
from .._rules.model import EffectRecord, Event, EventType, Status
from .records import ItemStatus, LeaseRecord, QueueItem

__all__ = [
    "EFFECT_COLUMNS",
    "EVENT_COLUMNS",
    "LEASE_COLUMNS",
    "QUEUE_COLUMNS",
    "counts_from_rows",
    "event_from_row",
    "event_params",
    "item_from_row",
    "json_text",
    "lease_from_row",
    "record_from_row",
    "record_params",
]

EFFECT_COLUMNS = (
    "key",
    "kind",
    "status",
    "fence",
    "owner",
    "lease_expires_at",
    "payload",
    "payload_hash",
    "scope",
    "result_ref",
    "reason",
    "created_at",
    "updated_at",
    "executing_at",
    "matches",
    "gated",
)
EVENT_COLUMNS = (
    "key",
    "type",
    "at",
    "fence",
    "run_id",
    "from_status",
    "to_status",
    "message",
    "data",
)


# ``json.dumps`` with options makes an encoder per call: these are made once.
_ROW_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
_EVENT_DATA = json.JSONEncoder(sort_keys=True)


def json_text(value: Any) -> str:
    """A domain object's JSON as stored in its row: sorted keys, no spaces."""
    return _ROW_JSON.encode(value)


def record_params(r: EffectRecord) -> tuple[Any, ...]:
    """Values of ``EFFECT_COLUMNS`` for ``r``."""
    return (
        r.key,
        r.kind,
        r.status._value_,  # the plain attribute: ``.value`` is a property, on the hot path
        r.fence,
        r.owner,
        r.lease_expires_at,
        r.payload,
        r.payload_hash,
        r.scope,
        r.result_ref,
        r.reason,
        r.created_at,
        r.updated_at,
        r.executing_at,
        r.matches,
        1 if r.gated else 0,
    )


_STATUS = {s.value: s for s in Status}  # a dict lookup is cheaper than Status(value)
# Reconcile reads every open effect at once, so building records is on its hot
# path. A frozen dataclass's __init__ goes through object.__setattr__ for each
# field; setting the slots through their descriptors does the same work at
# half the cost. The record stays frozen for everyone else.
_NEW = object.__new__
_SLOTS = tuple(getattr(EffectRecord, name).__set__ for name in EffectRecord.__slots__)
assert EffectRecord.__slots__ == EFFECT_COLUMNS


def record_from_row(row: Sequence[Any]) -> EffectRecord:
    """An ``EffectRecord`` from a row in ``EFFECT_COLUMNS`` order.

    Raises:
        LedgerUnavailable: the row does not hold a valid record.
    """
    try:
        return _record(row)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise LedgerUnavailable(f"the ledger holds a malformed effect row: {_why(exc)}") from None


# Text columns: a file edited by hand (or another program) can hold a blob or
# a number there; such a row is malformed, said once here, not a TypeError
# wherever the record is printed.
_TEXT = (0, 1, 4, 6, 7, 8)
_TEXT_OR_NULL = (9, 10)


def _record(row: Sequence[Any]) -> EffectRecord:
    for i in _TEXT:
        if type(row[i]) is not str:
            raise TypeError(f"{EFFECT_COLUMNS[i]} is {type(row[i]).__name__}, not text")
    for i in _TEXT_OR_NULL:
        if row[i] is not None and type(row[i]) is not str:
            raise TypeError(f"{EFFECT_COLUMNS[i]} is {type(row[i]).__name__}, not text")
    record: EffectRecord = _NEW(EffectRecord)
    values = (
        row[0],
        row[1],
        _STATUS[row[2]],
        int(row[3]),
        row[4],
        float(row[5]),
        row[6],
        row[7],
        row[8],
        row[9],
        row[10],
        float(row[11]),
        float(row[12]),
        None if row[13] is None else float(row[13]),
        int(row[14]),
        bool(row[15]),
    )
    for set_slot, value in zip(_SLOTS, values, strict=True):
        set_slot(record, value)
    return record


def event_params(e: Event) -> tuple[Any, ...]:
    """Values of ``EVENT_COLUMNS`` for ``e``."""
    return (
        e.key,
        e.type._value_,
        e.at,
        e.fence,
        e.run_id,
        None if e.from_status is None else e.from_status._value_,
        None if e.to_status is None else e.to_status._value_,
        e.message,
        _EVENT_DATA.encode(e.data) if e.data else None,
    )


def event_from_row(seq: int, row: Sequence[Any]) -> Event:
    """An ``Event`` from ``seq`` and a row in ``EVENT_COLUMNS`` order.

    Raises:
        LedgerUnavailable: the row does not hold a valid event.
    """
    try:
        return _event(seq, row)
    except (KeyError, TypeError, ValueError, IndexError, RecursionError) as exc:
        raise LedgerUnavailable(f"the ledger holds a malformed event row: {_why(exc)}") from None


def _why(exc: Exception) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:200]


def _event(seq: int, row: Sequence[Any]) -> Event:
    for i in (0, 1, 4):
        if type(row[i]) is not str:
            raise TypeError(f"{EVENT_COLUMNS[i]} is {type(row[i]).__name__}, not text")
    if row[7] is not None and type(row[7]) is not str:
        raise TypeError(f"message is {type(row[7]).__name__}, not text")
    data = json.loads(row[8]) if row[8] else {}
    return Event(
        key=row[0],
        type=EventType(row[1]),
        at=float(row[2]),
        fence=int(row[3]),
        run_id=row[4],
        from_status=None if row[5] is None else Status(row[5]),
        to_status=None if row[6] is None else Status(row[6]),
        message=row[7],
        data=data if isinstance(data, dict) else {"value": data},
        seq=seq,
    )


LEASE_COLUMNS = ("name", "owner", "token", "acquired_at", "heartbeat_at", "expires_at")
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


def counts_from_rows(rows: Sequence[Sequence[Any]]) -> dict[Status, int]:
    """``{status: n}`` from ``(status, count)`` rows.

    Raises:
        LedgerUnavailable: a row names a status this code does not know.
    """
    try:
        return {_STATUS[r[0]]: int(r[1]) for r in rows}
    except (KeyError, TypeError, ValueError) as exc:
        raise LedgerUnavailable(f"the ledger holds a malformed effect row: {_why(exc)}") from None


def lease_from_row(row: Sequence[Any]) -> LeaseRecord:
    """A ``LeaseRecord`` from a row in ``LEASE_COLUMNS`` order.

    Raises:
        LedgerUnavailable: the row does not hold a valid lease.
    """
    try:
        return LeaseRecord(
            name=str(row[0]),
            owner=str(row[1]),
            token=int(row[2]),
            acquired_at=float(row[3]),
            heartbeat_at=float(row[4]),
            expires_at=float(row[5]),
        )
    except (TypeError, ValueError, IndexError) as exc:
        raise LedgerUnavailable(f"the ledger holds a malformed lease row: {_why(exc)}") from None


def item_from_row(row: Sequence[Any]) -> QueueItem:
    """A ``QueueItem`` from a row in ``QUEUE_COLUMNS`` order.

    Raises:
        LedgerUnavailable: the row does not hold a valid queue item.
    """
    try:
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
    except (TypeError, ValueError, IndexError, RecursionError) as exc:
        raise LedgerUnavailable(f"the ledger holds a malformed queue row: {_why(exc)}") from None
