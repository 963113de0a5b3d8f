"""Mapping between records/events and database rows, shared by the SQL stores.

Column order is the one in the migrations; each backend keeps its own SQL
text but converts values here, once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ._model import EffectRecord, Event, EventType, Status

__all__ = [
    "EFFECT_COLUMNS",
    "EVENT_COLUMNS",
    "event_from_row",
    "event_params",
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


def record_params(r: EffectRecord) -> tuple[Any, ...]:
    """Values of ``EFFECT_COLUMNS`` for ``r``."""
    return (
        r.key,
        r.kind,
        r.status.value,
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
    """An ``EffectRecord`` from a row in ``EFFECT_COLUMNS`` order."""
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
    )
    for set_slot, value in zip(_SLOTS, values, strict=True):
        set_slot(record, value)
    return record


def event_params(e: Event) -> tuple[Any, ...]:
    """Values of ``EVENT_COLUMNS`` for ``e``."""
    return (
        e.key,
        e.type.value,
        e.at,
        e.fence,
        e.run_id,
        None if e.from_status is None else e.from_status.value,
        None if e.to_status is None else e.to_status.value,
        e.message,
        json.dumps(e.data, sort_keys=True) if e.data else None,
    )


def event_from_row(seq: int, row: Sequence[Any]) -> Event:
    """An ``Event`` from ``seq`` and a row in ``EVENT_COLUMNS`` order."""
    return Event(
        key=row[0],
        type=EventType(row[1]),
        at=float(row[2]),
        fence=int(row[3]),
        run_id=row[4],
        from_status=None if row[5] is None else Status(row[5]),
        to_status=None if row[6] is None else Status(row[6]),
        message=row[7],
        data=json.loads(row[8]) if row[8] else {},
        seq=seq,
    )
