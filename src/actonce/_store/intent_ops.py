"""Intents: versioned, written once for SQL stores (statement work).

Like every ``*_ops`` module of the store: generators of
:class:`~actonce._store.stmts.Stmt` run inside one transaction by the SQLite
store, the PostgreSQL stores and the memory store, with one event per change
under ``intent:<id>`` (:mod:`actonce._store.history`). A revision (a new
version superseding the current one) touches effects, holds and approvals
too: it is :func:`actonce._store.gated_ops.intent_revise`.
"""

from __future__ import annotations

import json
from typing import Any

from .._rules.intents import Intent, IntentRef, IntentStatus
from .._rules.model import EventType
from .history import event_stmt, intent_event_key
from .records import IntentRow
from .rows import json_text
from .stmts import Stmt, Work

__all__ = [
    "INTENT_COLUMNS",
    "intent_chain",
    "intent_create",
    "intent_get",
    "intent_is_current",
    "intent_list",
    "intent_touch",
]

INTENT_COLUMNS = "intent_id, version, kind, user_id, fields, status, created_at, superseded_at"


def _intent_row(row: tuple[Any, ...]) -> IntentRow:
    return IntentRow(
        intent=Intent.from_json(json.loads(row[4])),
        status=IntentStatus(row[5]),
        created_at=float(row[6]),
        superseded_at=None if row[7] is None else float(row[7]),
    )


def intent_get(intent_id: str, version: int | None = None) -> Work[IntentRow | None]:
    params: tuple[Any, ...]
    if version is None:
        where, params = "intent_id = ? AND status = 'current'", (intent_id,)
    else:
        where, params = "intent_id = ? AND version = ?", (intent_id, version)
    _, rows = yield Stmt(f"SELECT {INTENT_COLUMNS} FROM intents WHERE {where}", params)
    return _intent_row(rows[0]) if rows else None


def intent_list(status: IntentStatus | None, user: str | None, limit: int) -> Work[list[IntentRow]]:
    """Intent versions (of one status, one user), oldest first."""
    where: list[str] = []
    params: list[Any] = []
    if status is not None:
        where.append("status = ?")
        params.append(status.value)
    if user is not None:
        where.append("user_id = ?")
        params.append(user)
    text = f"SELECT {INTENT_COLUMNS} FROM intents"
    if where:
        text += " WHERE " + " AND ".join(where)
    text += " ORDER BY created_at, intent_id, version LIMIT ?"
    _, rows = yield Stmt(text, (*params, limit))
    return [_intent_row(r) for r in rows]


def intent_chain(intent_id: str) -> Work[list[IntentRow]]:
    sql_text = f"SELECT {INTENT_COLUMNS} FROM intents WHERE intent_id = ? ORDER BY version"
    _, rows = yield Stmt(sql_text, (intent_id,))
    return [_intent_row(r) for r in rows]


def intent_create(intent: Intent, now: float, run_id: str) -> Work[IntentRow]:
    """Insert version ``intent.version`` if the intent is new; answer the current row."""
    text = json_text(intent.as_json())
    won, _ = yield Stmt(
        f"INSERT INTO intents ({INTENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, 'current', ?, NULL) "
        "ON CONFLICT DO NOTHING",
        (intent.intent_id, intent.version, intent.kind, intent.user, text, now),
        True,
    )
    if won == 1:
        yield event_stmt(
            intent_event_key(intent.intent_id),
            EventType.INTENT_CREATED,
            now,
            run_id,
            f"{intent.ref} created",
            version=intent.version,
        )
    row = yield from intent_get(intent.intent_id)
    assert row is not None
    return row


def intent_touch(intent: Intent, changed: tuple[str, ...], now: float, run_id: str) -> Work[bool]:
    """A cosmetic change: the same version's fields, rewritten in place."""
    text = json_text(intent.as_json())
    done, _ = yield Stmt(
        "UPDATE intents SET fields = ? WHERE intent_id = ? AND version = ? AND status = 'current'",
        (text, intent.intent_id, intent.version),
        True,
    )
    if done == 1:
        yield event_stmt(
            intent_event_key(intent.intent_id),
            EventType.INTENT_REVISED,
            now,
            run_id,
            f"cosmetic change to {intent.ref}: {', '.join(changed)} (same version)",
            version=intent.version,
            changed=list(changed),
            material=False,
        )
    return done == 1


def intent_is_current(ref: IntentRef, *, lock: bool) -> Work[bool]:
    """Whether version ``ref`` is its intent's current one (``lock``: ``FOR UPDATE``)."""
    _, rows = yield Stmt(
        "SELECT status FROM intents WHERE intent_id = ? AND version = ?",
        (ref.intent_id, ref.version),
        lock=lock,
    )
    return bool(rows) and rows[0][0] == IntentStatus.CURRENT.value
