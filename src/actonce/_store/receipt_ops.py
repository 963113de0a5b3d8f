"""Receipts listed and operations found by step, written once for SQL stores.

Statement work like :mod:`actonce._store.summary_ops`: generators of
:class:`~actonce._store.stmts.Stmt` run by the SQLite store, the PostgreSQL
stores and the memory store. Both are reads for the review console: the
receipts newest first, and the operation an effect is a step (or an undo) of.
"""

from __future__ import annotations

import json

from .stmts import Stmt, Work

__all__ = ["operation_of", "receipt_list"]


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
