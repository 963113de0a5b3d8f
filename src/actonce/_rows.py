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


def record_from_row(row: Sequence[Any]) -> EffectRecord:
    """An ``EffectRecord`` from a row in ``EFFECT_COLUMNS`` order."""
    return EffectRecord(
        key=row[0],
        kind=row[1],
        status=Status(row[2]),
        fence=int(row[3]),
        owner=row[4],
        lease_expires_at=float(row[5]),
        payload=row[6],
        payload_hash=row[7],
        scope=row[8],
        result_ref=row[9],
        reason=row[10],
        created_at=float(row[11]),
        updated_at=float(row[12]),
        executing_at=None if row[13] is None else float(row[13]),
    )


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
