"""The PostgreSQL half of :mod:`actonce._store.scrubbing`: cursors that bind scrubbed values.

Both pools of :mod:`actonce._store.postgres` make their connections with
these cursor factories, so every statement of every table is scrubbed by
the one rule set of :mod:`actonce._rules.scrub`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg.abc import Params

from .._rules import scrub

__all__ = ["AsyncScrubbingCursor", "ScrubbingCursor"]


class ScrubbingCursor(psycopg.Cursor[Any]):
    """A PostgreSQL cursor whose statements bind scrubbed values."""

    def execute(
        self,
        query: Any,
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> ScrubbingCursor:
        super().execute(query, scrub.scrub_params(params), prepare=prepare, binary=binary)
        return self

    def executemany(
        self, query: Any, params_seq: Iterable[Params], *, returning: bool = False
    ) -> None:
        seq = (scrub.scrub_params(p) for p in params_seq)
        super().executemany(query, seq, returning=returning)


class AsyncScrubbingCursor(psycopg.AsyncCursor[Any]):
    """An async PostgreSQL cursor whose statements bind scrubbed values."""

    async def execute(
        self,
        query: Any,
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> AsyncScrubbingCursor:
        await super().execute(query, scrub.scrub_params(params), prepare=prepare, binary=binary)
        return self

    async def executemany(
        self, query: Any, params_seq: Iterable[Params], *, returning: bool = False
    ) -> None:
        seq = (scrub.scrub_params(p) for p in params_seq)
        await super().executemany(query, seq, returning=returning)
