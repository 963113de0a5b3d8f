"""Operations and their receipts, written once for SQL stores (statement work).

An operation's definition is recorded once (the first definition of an op id
wins, and every later run reads it back); its receipt is rewritten only when
the ledger has more to say. Both append one event under ``operation:<op id>``
(:mod:`actonce._store.history`). Two reads serve the review console: the
receipts newest first (:func:`receipt_list`), and the operation an effect is
a step (or an undo) of (:func:`operation_of`).

People's decisions about an operation are rows of their own, numbered per
operation and never updated (:func:`decision_put`, :func:`decisions_of`); a
withdrawal is one of them (:func:`withdraw_operations`, run inside an intent
revision's transaction). ``operations.due_at`` says when an operation next
has work nobody else starts (a notification's retry, an undo a withdrawal
queued): each receipt write and each decision sets it, :func:`operations_due`
reads it.
"""

from __future__ import annotations

import json
from typing import Any

from .._rules.intents import IntentRef
from .._rules.model import EventType
from .history import event_stmt, operation_event_key
from .stmts import Stmt, Work

__all__ = [
    "DECISION_COLUMNS",
    "decision_put",
    "decisions_of",
    "operation_get",
    "operation_of",
    "operation_put",
    "operations_due",
    "operations_in",
    "receipt_get",
    "receipt_list",
    "receipt_put",
    "withdraw_operations",
]

DECISION_COLUMNS = "n, decision, step, attempt, decided_by, at, reason"


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
        # The newest operation of a key is the one it answers to; one statement
        # for all of them (a key named twice is written once: PostgreSQL refuses
        # to update one row twice in a statement).
        keys = list(dict.fromkeys(_keys(spec)))
        if keys:
            yield Stmt(
                "INSERT INTO operation_steps (key, op_id) VALUES "
                + ", ".join(["(?, ?)"] * len(keys))
                + " ON CONFLICT (key) DO UPDATE SET op_id = excluded.op_id",
                tuple(v for key in keys for v in (key, op_id)),
                True,
            )
    _, rows = yield Stmt("SELECT spec FROM operations WHERE op_id = ?", (op_id,))
    return str(rows[0][0])


def operation_get(op_id: str) -> Work[str | None]:
    _, rows = yield Stmt("SELECT spec FROM operations WHERE op_id = ?", (op_id,))
    return str(rows[0][0]) if rows else None


def receipt_put(
    op_id: str,
    state: str,
    text: str,
    data: str,
    now: float,
    run_id: str,
    due_at: float | None = None,
    update_only: bool = False,
) -> Work[bool]:
    """Write (or rewrite, when the ledger has more to say) an operation's receipt.

    ``due_at``: when the operation next has work nobody else starts (``None``: none).
    """
    yield Stmt(
        "UPDATE operations SET due_at = ? WHERE op_id = ?",
        (due_at, op_id),
        True,
    )
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


def _keys(spec: str) -> list[str]:
    """The step and undo keys of a definition (``OperationPlan.spec``'s JSON)."""
    try:
        steps = json.loads(spec).get("steps", [])
    except (ValueError, AttributeError):
        return []
    keys = []
    for s in steps if isinstance(steps, list) else []:
        if isinstance(s, dict):
            keys += [str(s[k]) for k in ("key", "undo") if s.get(k) is not None]
    return keys


def operation_of(key: str) -> Work[str | None]:
    """The id of the newest operation that has ``key`` as a step or an undo."""
    _, rows = yield Stmt("SELECT op_id FROM operation_steps WHERE key = ?", (key,))
    return str(rows[0][0]) if rows else None


def operations_in(state: str, limit: int) -> Work[list[tuple[str, float]]]:
    """Operations whose receipt last stood in ``state``, oldest first: ``(op_id, written_at)``."""
    _, rows = yield Stmt(
        "SELECT op_id, written_at FROM receipts WHERE state = ? ORDER BY written_at, op_id LIMIT ?",
        (state, limit),
    )
    return [(str(r[0]), float(r[1])) for r in rows]


def operations_due(now: float, limit: int) -> Work[list[str]]:
    """Operations with work due at ``now`` (a retry after its backoff, a queued undo)."""
    _, rows = yield Stmt(
        "SELECT op_id FROM operations WHERE due_at IS NOT NULL AND due_at <= ? "
        "ORDER BY due_at, op_id LIMIT ?",
        (now, limit),
    )
    return [str(r[0]) for r in rows]


def decisions_of(op_id: str) -> Work[list[tuple[Any, ...]]]:
    """An operation's decisions, oldest first (rows of :data:`DECISION_COLUMNS`)."""
    _, rows = yield Stmt(
        f"SELECT {DECISION_COLUMNS} FROM operation_decisions WHERE op_id = ? ORDER BY n",
        (op_id,),
    )
    return [tuple(r) for r in rows]


def decision_put(
    op_id: str,
    n: int,
    decision: str,
    step: str | None,
    attempt: int,
    by: str,
    now: float,
    reason: str,
    run_id: str,
) -> Work[bool]:
    """Record decision number ``n`` (False: another decision took that number first).

    The operation has work due at once afterwards (a retried undo runs at its
    next pass); its event goes under ``operation:<op id>``.
    """
    _, known = yield Stmt("SELECT 1 FROM operations WHERE op_id = ?", (op_id,), lock=True)
    if not known:
        return False
    won, _ = yield Stmt(
        f"INSERT INTO operation_decisions (op_id, {DECISION_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (op_id, n, decision, step, attempt, by, now, reason),
        True,
    )
    if won != 1:
        return False
    yield Stmt("UPDATE operations SET due_at = ? WHERE op_id = ?", (now, op_id), True)
    what = decision.replace("_", " ") + (f" ({step}, attempt {attempt})" if step else "")
    yield event_stmt(
        operation_event_key(op_id), EventType.OPERATION_DECIDED, now, run_id,
        f"{what} by {by}: {reason}", decision=decision, step=step, attempt=attempt, by=by, n=n,
    )  # fmt: skip
    return True


def withdraw_operations(
    ref: IntentRef, by: str, reason: str, now: float, run_id: str
) -> Work[list[str]]:
    """Withdraw every operation of the intent version ``ref`` not withdrawn yet.

    Runs inside the caller's transaction (a revision's or a withdrawal's):
    the operations are closed together with the version. Answers their ids.
    """
    _, rows = yield Stmt(
        "SELECT op_id FROM operations WHERE intent_id = ? AND version = ? ORDER BY op_id",
        (ref.intent_id, ref.version),
        lock=True,
    )
    closed = []
    for (op_id,) in rows:
        _, seen = yield Stmt(
            "SELECT n, decision FROM operation_decisions WHERE op_id = ? ORDER BY n",
            (str(op_id),),
        )
        if any(d == "withdraw" for _, d in seen):
            continue
        n = max((int(k) for k, _ in seen), default=0) + 1
        done = yield from decision_put(str(op_id), n, "withdraw", None, 0, by, now, reason, run_id)
        if done:
            closed.append(str(op_id))
    return closed
