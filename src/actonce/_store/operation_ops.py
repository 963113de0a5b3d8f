"""Operations and their receipts, written once for SQL stores (statement work).

An operation's definition is recorded once (the first definition of an op id
wins, and every later run reads it back); its receipt is rewritten only when
the ledger has more to say. Both append one event under ``operation:<op id>``
(:mod:`actonce._store.history`). Two reads serve the review console: the
receipts newest first (:func:`receipt_list`), and the operation an effect is
a step (or an undo) of (:func:`operation_of`).
"""

from __future__ import annotations

import json

from .._rules.intents import IntentRef
from .._rules.model import EventType
from .history import event_stmt, operation_event_key
from .stmts import Stmt, Work

__all__ = [
    "operation_get",
    "operation_of",
    "operation_put",
    "receipt_get",
    "receipt_list",
    "receipt_put",
]


def operation_put(
    op_id: str, intent: IntentRef | None, spec: str, now: float, run_id: str
) -> Work[str]:
    """Record an operation's definition once; answer the recorded one."""
    won, _ = yield Stmt(
        "INSERT INTO operations (op_id, intent_id, version, spec, created_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (op_id, None if intent is None else intent.intent_id,
         None if intent is None else intent.version, spec, now),
        True,
    )  # fmt: skip
    if won == 1:
        yield event_stmt(
            operation_event_key(op_id), EventType.OPERATION_STARTED, now, run_id,
            f"operation {op_id} defined", intent=None if intent is None else str(intent),
        )  # fmt: skip
    _, rows = yield Stmt("SELECT spec FROM operations WHERE op_id = ?", (op_id,))
    return str(rows[0][0])


def operation_get(op_id: str) -> Work[str | None]:
    _, rows = yield Stmt("SELECT spec FROM operations WHERE op_id = ?", (op_id,))
    return str(rows[0][0]) if rows else None


def receipt_put(
    op_id: str, state: str, text: str, data: str, now: float, run_id: str
) -> Work[bool]:
    """Write (or rewrite, when the ledger has more to say) an operation's receipt."""
    _, rows = yield Stmt("SELECT state, text FROM receipts WHERE op_id = ?", (op_id,), lock=True)
    if rows and (rows[0][0], rows[0][1]) == (state, text):
        return False
    yield Stmt(
        "INSERT INTO receipts (op_id, state, text, data, written_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (op_id) DO UPDATE SET state = excluded.state, text = excluded.text, "
        "data = excluded.data, written_at = excluded.written_at",
        (op_id, state, text, data, now),
        True,
    )
    yield event_stmt(
        operation_event_key(op_id), EventType.RECEIPT_WRITTEN, now, run_id, f"receipt: {state}",
        state=state,
    )  # fmt: skip
    return True


def receipt_get(op_id: str) -> Work[tuple[str, str, str, float] | None]:
    _, rows = yield Stmt(
        "SELECT state, text, data, written_at FROM receipts WHERE op_id = ?", (op_id,)
    )
    if not rows:
        return None
    r = rows[0]
    return str(r[0]), str(r[1]), str(r[2]), float(r[3])


def receipt_list(limit: int, before: float | None) -> Work[list[tuple[str, str, str, str, float]]]:
    """Receipts newest first: ``(op_id, state, text, data, written_at)``.

    ``before`` pages on: only receipts written strictly before that time.
    """
    where, params = ("WHERE written_at < ? ", (before,)) if before is not None else ("", ())
    _, rows = yield Stmt(
        "SELECT op_id, state, text, data, written_at FROM receipts "
        f"{where}ORDER BY written_at DESC, op_id LIMIT ?",
        (*params, limit),
    )
    return [(str(r[0]), str(r[1]), str(r[2]), str(r[3]), float(r[4])) for r in rows]


def _like(text: str) -> str:
    """``text`` as a LIKE pattern that matches it literally (escape ``\\``)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def operation_of(key: str) -> Work[str | None]:
    """The id of the newest operation that has ``key`` as a step or an undo."""
    # The spec is JSON written by one function (OperationPlan.spec): a key
    # appears as the JSON string after "key": or "undo":. The LIKE narrows,
    # the JSON check decides.
    needle = json.dumps(key)
    _, rows = yield Stmt(
        "SELECT op_id, spec FROM operations WHERE spec LIKE ? ESCAPE '\\' "
        "ORDER BY created_at DESC, op_id",
        (f"%{_like(needle)}%",),
    )
    for op_id, spec in rows:
        try:
            steps = json.loads(str(spec)).get("steps", [])
        except (ValueError, AttributeError):
            continue
        if any(key in (s.get("key"), s.get("undo")) for s in steps if isinstance(s, dict)):
            return str(op_id)
    return None
