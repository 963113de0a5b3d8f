"""``actonce chaos`` on PostgreSQL: the DSN, one schema per schedule, the connection killer.

Each schedule keeps its ledger in its own schema, ``actonce_chaos_<pid>_<i>``,
created through the store's migrations and dropped (``CASCADE``) when the
schedule ends, however it ends. Every connection carries an
``application_name`` naming its schema and worker, so the parent can find a
worker's backend in ``pg_stat_activity`` and end it with
``pg_terminate_backend``: the :class:`Killer` does so after a planned number
of crash-point passes reported by the workers (observed progress, no
sleeps). Workers open their stores after ``fork``, one connection each.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

__all__ = [
    "Killer",
    "app_name",
    "base_conninfo",
    "drop_leftovers",
    "open_store",
    "resolve_dsn",
    "schedule_schema",
]

#: Every schema a campaign makes starts with this.
PREFIX = "actonce_chaos_"
#: The parent's own connections (never terminated by the killer).
PARENT = "parent"


def resolve_dsn(dsn: str | None) -> str:
    """The DSN to use: ``dsn``, else a PostgreSQL URL in the environment.

    Raises:
        ValueError: no DSN given and none of ``$ACTONCE_TEST_POSTGRES_DSN``,
            ``$ACTONCE_LEDGER`` is a PostgreSQL URL.
    """
    if dsn:
        return dsn
    for name in ("ACTONCE_TEST_POSTGRES_DSN", "ACTONCE_LEDGER"):
        value = os.environ.get(name, "")
        if value.lower().startswith(("postgresql://", "postgres://")):
            return value
    raise ValueError(
        "--backend postgres needs --dsn (or a postgresql:// URL in "
        "$ACTONCE_TEST_POSTGRES_DSN or $ACTONCE_LEDGER)"
    )


def base_conninfo(dsn: str) -> str:
    """A libpq conninfo for ``dsn`` without actonce's own parameters; checked reachable.

    ``schema``, ``pool_min`` and ``pool_max`` are dropped: the campaign picks
    the schema and keeps each worker to one connection.

    Raises:
        ValueError: not a PostgreSQL DSN, or malformed.
        LedgerUnavailable: the server cannot be reached (one line).
    """
    import psycopg

    from actonce import BadLedgerURL, LedgerUnavailable, PostgresStore

    scheme = dsn.partition("://")[0].lower() if "://" in dsn else "postgresql"
    if scheme not in ("postgresql", "postgres"):
        raise ValueError(f"not a PostgreSQL DSN: {scheme}://...")
    try:
        conninfo = PostgresStore.conninfo(dsn)
    except BadLedgerURL as exc:
        raise ValueError(str(exc)) from exc
    try:
        psycopg.connect(conninfo, connect_timeout=5).close()
    except psycopg.Error as exc:
        raise LedgerUnavailable(f"PostgreSQL is unreachable: {_one_line(exc)}") from exc
    return conninfo


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def app_name(schema: str, who: str) -> str:
    """The ``application_name`` of one connection (at most 63 bytes, as the server keeps)."""
    return f"{schema}:{who}"[:63]


def open_store(conninfo: str, schema: str, app: str, *, create: bool = False) -> Any:
    """A :class:`PostgresStore` on ``schema`` with one connection named ``app``.

    Opened in the process that uses it (a worker opens its own after
    ``fork``). Migrations run here; they are a no-op once the parent has run
    them.
    """
    from psycopg.conninfo import make_conninfo

    from actonce import PostgresStore

    named = make_conninfo(conninfo, application_name=app)
    return PostgresStore(named, schema=schema, create=create, min_size=1, max_size=1, timeout=5.0)


def _admin(conninfo: str) -> Any:
    import psycopg
    from psycopg.conninfo import make_conninfo

    return psycopg.connect(
        make_conninfo(conninfo, application_name=f"{PREFIX}admin"[:63]),
        autocommit=True,
        connect_timeout=5,
    )


def _drop(conninfo: str, schemas: Sequence[str]) -> None:
    from psycopg import sql

    if not schemas:
        return
    with _admin(conninfo) as conn:
        for name in schemas:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def _patiently(patience: float, step: Callable[[], None]) -> None:
    """Run ``step``; while the server is away (restarting), again, for up to ``patience`` s."""
    import psycopg

    from actonce import LedgerError

    deadline = time.monotonic() + patience
    while True:
        try:
            step()
            return
        except (psycopg.OperationalError, LedgerError):
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)  # sync-ok: polling for a restarted server, with a deadline


@contextlib.contextmanager
def schedule_schema(conninfo: str, index: int, patience: float = 0.0) -> Iterator[str]:
    """The schema of schedule ``index``: made empty and migrated, dropped on the way out.

    With ``patience``, each step is tried again while the server restarts.
    """
    name = f"{PREFIX}{os.getpid()}_{index}"

    def make() -> None:
        _drop(conninfo, [name])  # a leftover of an earlier process with our pid
        # The store's migrations create the schema.
        open_store(conninfo, name, app_name(name, PARENT), create=True).close()

    _patiently(patience, make)
    try:
        yield name
    finally:
        _patiently(patience, lambda: _drop(conninfo, [name]))


def drop_leftovers(conninfo: str, pid: int | None = None) -> list[str]:
    """Drop the chaos schemas of process ``pid`` (default: this one); their names."""
    with _admin(conninfo) as conn:
        prefix = f"{PREFIX}{os.getpid() if pid is None else pid}_"
        rows = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s ORDER BY nspname",
            (prefix.replace("_", "\\_") + "%",),
        ).fetchall()
    names = [str(r[0]) for r in rows]
    _drop(conninfo, names)
    return names


class _Target(Protocol):
    """What the killer needs to know of a worker process (``_chaos_round.Child``)."""

    @property
    def app(self) -> str | None: ...
    @property
    def open(self) -> bool: ...
    @property
    def status(self) -> int | None: ...


class Killer:
    """Terminates random workers' connections after planned numbers of passes.

    Args:
        conninfo: where the workers' backends live.
        at: sorted pass counts (of this round) at which to strike.
        rng: picks the victim among the workers still running.
    """

    def __init__(self, conninfo: str, at: Sequence[int], rng: random.Random) -> None:
        self._conninfo = conninfo
        self._at = sorted(at)
        self._rng = rng
        self._conn: Any = None
        self.kills = 0

    def step(self, passes: int, children: Sequence[_Target]) -> None:
        """Strike once for every planned count that ``passes`` has reached."""
        while self._at and passes >= self._at[0]:
            self._at.pop(0)
            alive = [c for c in children if c.app and c.open and c.status is None]
            if alive:
                self._terminate(self._rng.choice(alive).app or "")

    def _terminate(self, app: str) -> None:
        import psycopg

        try:
            if self._conn is None:
                # Opened only now, after every worker of the round was forked: a
                # child never inherits this connection.
                self._conn = _admin(self._conninfo)
            rows = self._conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s AND pid <> pg_backend_pid()",
                (app,),
            ).fetchall()
        except psycopg.OperationalError:
            # The server restarted under us (``--restart-server``): this strike
            # missed; the next one opens a new connection.
            self.close()
            return
        self.kills += sum(1 for (done,) in rows if done)

    def close(self) -> None:
        """Close the parent's admin connection (if it was opened)."""
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None
