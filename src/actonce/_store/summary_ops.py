"""Operator run summaries, written once for SQL stores (statement work).

Like the other ``*_ops`` modules of the store: generators of
:class:`~actonce._store.stmts.Stmt` run in one transaction by the SQLite
store, the PostgreSQL stores and the memory store. A summary is written once
(a second write of the same run id changes nothing) with one event in the
history under ``operator:<name>``.
"""

from __future__ import annotations

import json
from typing import Any

from .._rules.model import Event, EventType
from .._rules.operator import RunSummary
from . import sql as q
from .history import operator_event_key
from .rows import event_params, json_text
from .stmts import Stmt, Work

__all__ = ["summary_get", "summary_list", "summary_put"]

_COLS = "run_id, operator, status, started_at, ended_at, summary"


def summary_put(summary: RunSummary) -> Work[bool]:
    """Store ``summary`` (``False``: a summary of that run id is stored already)."""
    text = json_text(summary.as_json())
    won, _ = yield Stmt(
        f"INSERT INTO operator_runs ({_COLS}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (
            summary.run_id,
            summary.operator,
            summary.status.value,
            summary.started_at,
            summary.ended_at,
            text,
        ),
        True,
    )
    if won != 1:
        return False
    counts = summary.counts()
    event = Event(
        key=operator_event_key(summary.operator),
        type=EventType.OPERATOR_RUN,
        at=summary.ended_at,
        fence=summary.token,
        run_id=summary.run_id,
        message=f"run {summary.status.value}: done {counts['done']}, "
        f"failures {counts['failures']}, ambiguous {counts['ambiguous']}, "
        f"hard stops {counts['hard_stops']}",
        data={"status": summary.status.value, "counts": counts},
    )
    yield Stmt(q.EVENT, event_params(event), True)
    return True


def _summary(row: tuple[Any, ...]) -> RunSummary:
    return RunSummary.from_json(json.loads(row[5]))


def summary_get(run_id: str) -> Work[RunSummary | None]:
    """The stored summary of ``run_id``."""
    _, rows = yield Stmt(f"SELECT {_COLS} FROM operator_runs WHERE run_id = ?", (run_id,))
    return _summary(rows[0]) if rows else None


def summary_list(operator: str | None, limit: int) -> Work[list[RunSummary]]:
    """The newest summaries first (of one operator, or of all)."""
    where, params = ("WHERE operator = ? ", (operator,)) if operator is not None else ("", ())
    _, rows = yield Stmt(
        f"SELECT {_COLS} FROM operator_runs {where}ORDER BY ended_at DESC, run_id LIMIT ?",
        (*params, limit),
    )
    return [_summary(r) for r in rows]
