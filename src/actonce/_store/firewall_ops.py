"""The write firewall's refusals, written once for SQL stores (statement work).

Like the other ``*_ops`` modules: generators of
:class:`~actonce._store.stmts.Stmt` that the SQLite store, the PostgreSQL
stores and the memory store run in one transaction. A refusal is one row of
``firewall_refusals``, appended, never updated (see
:mod:`actonce._rules.firewall`); the rows are numbered in the order they
were written, which is how they are listed (newest first) and paged.
"""

from __future__ import annotations

from typing import Any

from .._rules.firewall import RefusalReason, WriteRefusal
from .stmts import Stmt, Work

__all__ = ["refusal_counts", "refusal_list", "refusal_put"]

_COLS = "id, at, actor, method, url, page, reason, effect_key, via"


def refusal_put(refusal: WriteRefusal, now: float) -> Work[WriteRefusal]:
    """Append ``refusal`` at ledger time ``now``; answer it with its ``id`` and ``at``."""
    _, rows = yield Stmt(
        "INSERT INTO firewall_refusals (at, actor, method, url, page, reason, effect_key, via) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (now, refusal.actor, refusal.method, refusal.url, refusal.page,
         refusal.reason.value, refusal.effect_key, refusal.via),
        True,
    )  # fmt: skip
    return _refusal((rows[0][0], now, refusal.actor, refusal.method, refusal.url, refusal.page,
                     refusal.reason.value, refusal.effect_key, refusal.via))  # fmt: skip


def _refusal(row: tuple[Any, ...]) -> WriteRefusal:
    id_, at, actor, method, url, page, reason, effect_key, via = row
    return WriteRefusal(
        actor=actor, method=method, url=url, reason=RefusalReason(reason), page=page,
        effect_key=effect_key, via=via, at=float(at), id=int(id_),
    )  # fmt: skip


def refusal_list(actor: str | None, limit: int, before: int | None) -> Work[list[WriteRefusal]]:
    """The newest refusals first (of one actor, or of all); ``before``: an id, to page on."""
    where: list[str] = []
    params: list[Any] = []
    if actor is not None:
        where.append("actor = ?")
        params.append(actor)
    if before is not None:
        where.append("id < ?")
        params.append(before)
    clause = f"WHERE {' AND '.join(where)} " if where else ""
    _, rows = yield Stmt(
        f"SELECT {_COLS} FROM firewall_refusals {clause}ORDER BY id DESC LIMIT ?",
        (*params, limit),
    )
    return [_refusal(r) for r in rows]


def refusal_counts() -> Work[dict[str, dict[RefusalReason, int]]]:
    """Refusals per actor, per reason."""
    _, rows = yield Stmt(
        "SELECT actor, reason, count(*) FROM firewall_refusals GROUP BY actor, reason "
        "ORDER BY actor, reason"
    )
    out: dict[str, dict[RefusalReason, int]] = {}
    for actor, reason, n in rows:
        out.setdefault(str(actor), {})[RefusalReason(reason)] = int(n)
    return out
