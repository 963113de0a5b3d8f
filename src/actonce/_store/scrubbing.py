"""Where every store write passes: the connections and cursors that scrub bound values.

One place per backend, below every table's code: the SQLite store (and the
memory store, which is the SQLite store on ``:memory:``) opens its
connection with :class:`ScrubbingConnection`; both PostgreSQL pools make
their connections with :class:`ScrubbingCursor` / :class:`AsyncScrubbingCursor`
as cursor factory (:mod:`actonce._store.pg_scrubbing`: psycopg is optional). Whatever a statement binds (effects, events, intents,
approvals, operations, receipts, budgets, the queue, operator runs, firewall
refusals — and any table added later) is scrubbed by the one rule set of
:mod:`actonce._rules.scrub` before it reaches the database. Lookups are
scrubbed by the same rules, so that a value stored scrubbed is found again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from .._rules import scrub

__all__ = ["ScrubbingConnection"]


class ScrubbingConnection(sqlite3.Connection):
    """A SQLite connection whose statements bind scrubbed values."""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        return super().execute(sql, scrub.scrub_params(parameters))

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        return super().executemany(sql, (scrub.scrub_params(p) for p in parameters))
