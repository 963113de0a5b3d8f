"""The embedded ledger: one SQLite file shared by the processes of one machine.

WAL journal; the ``executing`` mark (and a reviewer's decision) is committed
with ``synchronous=FULL``, so it is on stable storage before any perform
starts; other writes use ``NORMAL`` and reach the disk with the next full
commit (see :func:`actonce._store.must_sync` for why that is safe; pass
``sync="all"``, or ``?sync=all`` in the URL, to fsync every commit);
``BEGIN IMMEDIATE`` for every write (writers queue on the busy timeout instead
of failing half-way), a partial index on open statuses. One connection per
store object, guarded by a lock, so a store may be shared by threads.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from . import _migrations
from ._errors import BadLedgerURL, LedgerOutcomeUnknown, LedgerUnavailable
from ._leases import LEASE_COLUMNS, LeaseRecord, LeaseResult, lease_from_row
from ._model import OPEN_STATUSES, EffectRecord, Event, Status
from ._queue import QUEUE_COLUMNS, ItemStatus, QueueItem, item_from_row
from ._rows import (
    EFFECT_COLUMNS,
    EVENT_COLUMNS,
    event_from_row,
    event_params,
    record_from_row,
    record_params,
)
from ._store import ClaimResult, Expect, must_sync

__all__ = ["SQLiteStore"]

T = TypeVar("T")

_COLS = ", ".join(EFFECT_COLUMNS)
_MARKS = ", ".join("?" for _ in EFFECT_COLUMNS)
_SET = ", ".join(f"{c} = ?" for c in EFFECT_COLUMNS[1:])
_EV_COLS = ", ".join(EVENT_COLUMNS)
_EV_MARKS = ", ".join("?" for _ in EVENT_COLUMNS)

SQL_GET = f"SELECT {_COLS} FROM effects WHERE key = ?"
SQL_INSERT = f"INSERT INTO effects ({_COLS}) VALUES ({_MARKS}) ON CONFLICT (key) DO NOTHING"
SQL_CAS = f"UPDATE effects SET {_SET} WHERE key = ? AND status = ? AND fence = ?"
SQL_EVENT = f"INSERT INTO events ({_EV_COLS}) VALUES ({_EV_MARKS})"
SQL_EVENTS = f"SELECT seq, {_EV_COLS} FROM events WHERE key = ? ORDER BY seq"
SQL_OPEN = (
    f"SELECT {_COLS} FROM effects WHERE status IN ('claimed', 'executing', 'unknown') "
    "ORDER BY lease_expires_at LIMIT ?"
)
SQL_COUNTS = "SELECT status, count(*) FROM effects GROUP BY status"
SQL_PREFIX = "SELECT key FROM effects WHERE key >= ? AND key < ? ORDER BY key LIMIT ?"

_L_COLS = ", ".join(LEASE_COLUMNS)
SQL_LEASE_GET = f"SELECT {_L_COLS} FROM leases WHERE name = ?"
SQL_LEASE_ACQUIRE = (
    f"INSERT INTO leases ({_L_COLS}) VALUES (?, ?, 1, ?, ?, ?) "
    "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, token = leases.token + 1, "
    "acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at, "
    "expires_at = excluded.expires_at "
    f"WHERE leases.owner = '' OR leases.expires_at <= ? RETURNING {_L_COLS}"
)
SQL_LEASE_RENEW = (
    "UPDATE leases SET heartbeat_at = ?, expires_at = ? "
    f"WHERE name = ? AND token = ? AND owner = ? RETURNING {_L_COLS}"
)
SQL_LEASE_RELEASE = (
    "UPDATE leases SET owner = '', expires_at = ? WHERE name = ? AND token = ? AND owner = ?"
)
_Q_COLS = ", ".join(QUEUE_COLUMNS)
SQL_QUEUE_PUT = (
    "INSERT INTO queue (kind, payload, status, created_at, updated_at) "
    "VALUES (?, ?, 'queued', ?, ?) RETURNING id"
)
SQL_QUEUE_TAKE = (
    "UPDATE queue SET status = 'taken', taken_by = ?, lease_expires_at = ?, "
    "attempts = attempts + 1, updated_at = ? WHERE id IN ("
    "SELECT id FROM queue WHERE status IN ('queued', 'taken') "
    "AND (status = 'queued' OR lease_expires_at <= ?) ORDER BY id LIMIT ?) "
    f"RETURNING {_Q_COLS}"
)
SQL_QUEUE_EXTEND = (
    "UPDATE queue SET lease_expires_at = ?, updated_at = ? "
    "WHERE id = ? AND status = 'taken' AND attempts = ? AND taken_by = ?"
)
SQL_QUEUE_DONE = (
    "UPDATE queue SET status = 'done', updated_at = ? "
    "WHERE id = ? AND status = 'taken' AND attempts = ? AND taken_by = ?"
)
SQL_QUEUE_COUNTS = "SELECT status, count(*) FROM queue GROUP BY status"
assert {s.value for s in OPEN_STATUSES} == {"claimed", "executing", "unknown"}


class SQLiteStore:
    """A ledger in one SQLite file (``path``), or in memory for ``":memory:"``."""

    dialect = "sqlite"

    def __init__(self, path: str, *, busy_timeout: float = 30.0, sync: str = "marks") -> None:
        if sync not in ("marks", "all"):
            raise BadLedgerURL(f"sync must be 'marks' or 'all', not {sync!r}")
        self.path = path
        self.sync_all = sync == "all"
        self._synchronous = "FULL"
        self._lock = threading.Lock()
        try:
            if path != ":memory:":
                parent = os.path.dirname(os.path.abspath(path))
                if not os.path.isdir(parent):
                    raise LedgerUnavailable(f"cannot open ledger {path}: no folder {parent}")
            self._conn = sqlite3.connect(
                path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = FULL")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise LedgerUnavailable(f"cannot open ledger {path}: {exc}") from exc
        self._salt = bytes.fromhex(self._meta("salt") or "")

    # --- schema -------------------------------------------------------------

    def _meta(self, name: str) -> str | None:
        row = self._conn.execute(
            "SELECT value FROM actonce_meta WHERE name = ?", (name,)
        ).fetchone()
        return None if row is None else str(row[0])

    def schema_version(self) -> int:
        """The schema version recorded in the file (0 for an empty file)."""
        exists = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'actonce_meta'"
        ).fetchone()
        if not exists:
            return 0
        return int(self._meta("schema_version") or 0)

    def _migrate(self) -> None:
        current = self.schema_version()
        _migrations.check_version(self.dialect, current)
        if current == _migrations.head(self.dialect):
            return
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            current = self.schema_version()  # another process may have migrated meanwhile
            for m in _migrations.pending(self.dialect, current):
                for statement in _split(m.sql):
                    self._conn.execute(statement)
                self._conn.execute(
                    "INSERT INTO actonce_meta (name, value) VALUES ('schema_version', ?) "
                    "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    (str(m.version),),
                )
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

    # --- plumbing -------------------------------------------------------------

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            try:
                return fn(self._conn)
            except sqlite3.Error as exc:
                raise LedgerUnavailable(f"ledger read failed: {exc}") from exc

    def _write(
        self, fn: Callable[[sqlite3.Connection], tuple[bool, T]], *, durable: bool = True
    ) -> T:
        """Run ``fn`` in one IMMEDIATE transaction; commit if it says so.

        ``durable`` commits are fsynced before this returns.
        """
        with self._lock:
            conn = self._conn
            try:
                wanted = "FULL" if durable or self.sync_all else "NORMAL"
                if wanted != self._synchronous:
                    conn.execute(f"PRAGMA synchronous = {wanted}")
                    self._synchronous = wanted
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise LedgerUnavailable(f"ledger busy or unwritable: {exc}") from exc
            try:
                keep, result = fn(conn)
            except BaseException as exc:
                _rollback(conn)
                if isinstance(exc, sqlite3.Error):
                    raise LedgerUnavailable(f"ledger write failed: {exc}") from exc
                raise
            if not keep:
                _rollback(conn)
                return result
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(conn)
                raise LedgerOutcomeUnknown(f"ledger commit failed: {exc}") from exc
            return result

    # --- primitives -----------------------------------------------------------

    def get(self, key: str) -> EffectRecord | None:
        row = self._read(lambda c: c.execute(SQL_GET, (key,)).fetchone())
        return None if row is None else record_from_row(row)

    def match_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        upper = prefix + "\U0010ffff"
        rows = self._read(lambda c: c.execute(SQL_PREFIX, (prefix, upper, limit)).fetchall())
        return [str(r[0]) for r in rows]

    def claim(self, new: EffectRecord, expect: Expect, event: Event) -> ClaimResult:
        def fn(c: sqlite3.Connection) -> tuple[bool, ClaimResult]:
            if expect is None:
                won = c.execute(SQL_INSERT, record_params(new)).rowcount == 1
            else:
                won = c.execute(SQL_CAS, _cas_params(new, expect)).rowcount == 1
            if won:
                c.execute(SQL_EVENT, event_params(event))
                return True, ClaimResult(True, new)
            row = c.execute(SQL_GET, (new.key,)).fetchone()
            return False, ClaimResult(False, record_from_row(row))

        return self._write(fn, durable=must_sync(new, event))

    def transition(
        self, expect: tuple[Status, int], new: EffectRecord, event: Event
    ) -> EffectRecord | None:
        def fn(c: sqlite3.Connection) -> tuple[bool, EffectRecord | None]:
            if c.execute(SQL_CAS, _cas_params(new, expect)).rowcount != 1:
                return False, None
            c.execute(SQL_EVENT, event_params(event))
            return True, new

        return self._write(fn, durable=must_sync(new, event))

    def append_event(self, event: Event) -> None:
        self._write(lambda c: (True, c.execute(SQL_EVENT, event_params(event))), durable=False)

    def events(self, key: str) -> list[Event]:
        rows = self._read(lambda c: c.execute(SQL_EVENTS, (key,)).fetchall())
        return [event_from_row(int(r[0]), r[1:]) for r in rows]

    def select(
        self, statuses: Iterable[Status] | None = None, limit: int = 100, kind: str | None = None
    ) -> list[EffectRecord]:
        where, params = [], []
        if statuses is not None:
            wanted = [s.value for s in statuses]
            where.append(f"status IN ({', '.join('?' for _ in wanted)})")
            params.extend(wanted)
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        sql = f"SELECT {_COLS} FROM effects"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated_at, key LIMIT ?"
        all_params: list[Any] = [*params, limit]
        rows = self._read(lambda c: c.execute(sql, all_params).fetchall())
        return [record_from_row(r) for r in rows]

    def open_effects(self, limit: int = 1000) -> list[EffectRecord]:
        rows = self._read(lambda c: c.execute(SQL_OPEN, (limit,)).fetchall())
        return [record_from_row(r) for r in rows]

    def counts(self) -> dict[Status, int]:
        rows = self._read(lambda c: c.execute(SQL_COUNTS).fetchall())
        return {Status(r[0]): int(r[1]) for r in rows}

    def salt(self) -> bytes:
        return self._salt

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # --- operator leases (see _leases) ------------------------------------------

    def lease_acquire(self, name: str, owner: str, now: float, expires_at: float) -> LeaseResult:
        def fn(c: sqlite3.Connection) -> tuple[bool, LeaseResult]:
            row = c.execute(SQL_LEASE_ACQUIRE, (name, owner, now, now, expires_at, now)).fetchone()
            if row is not None:
                return True, LeaseResult(True, lease_from_row(row))
            held = c.execute(SQL_LEASE_GET, (name,)).fetchone()
            return False, LeaseResult(False, lease_from_row(held))

        return self._write(fn)

    def lease_renew(
        self, name: str, token: int, owner: str, now: float, expires_at: float
    ) -> LeaseRecord | None:
        def fn(c: sqlite3.Connection) -> tuple[bool, LeaseRecord | None]:
            row = c.execute(SQL_LEASE_RENEW, (now, expires_at, name, token, owner)).fetchone()
            return row is not None, None if row is None else lease_from_row(row)

        return self._write(fn)

    def lease_release(self, name: str, token: int, owner: str, now: float) -> bool:
        def fn(c: sqlite3.Connection) -> tuple[bool, bool]:
            done = c.execute(SQL_LEASE_RELEASE, (now, name, token, owner)).rowcount == 1
            return done, done

        return self._write(fn)

    def lease_get(self, name: str) -> LeaseRecord | None:
        row = self._read(lambda c: c.execute(SQL_LEASE_GET, (name,)).fetchone())
        return None if row is None else lease_from_row(row)

    # --- work hand-out (see _queue) ----------------------------------------------

    def queue_put(self, kind: str, payload: str, now: float) -> int:
        def fn(c: sqlite3.Connection) -> tuple[bool, int]:
            return True, int(c.execute(SQL_QUEUE_PUT, (kind, payload, now, now)).fetchone()[0])

        return self._write(fn)

    def queue_take(
        self, worker: str, now: float, lease_expires_at: float, limit: int = 1
    ) -> list[QueueItem]:
        # BEGIN IMMEDIATE serialises takers: the UPDATE ... RETURNING below is
        # what FOR UPDATE SKIP LOCKED gives on PostgreSQL.
        def fn(c: sqlite3.Connection) -> tuple[bool, list[QueueItem]]:
            params = (worker, lease_expires_at, now, now, limit)
            rows = c.execute(SQL_QUEUE_TAKE, params).fetchall()
            return bool(rows), sorted((item_from_row(r) for r in rows), key=lambda i: i.id)

        return self._write(fn)

    def queue_extend(
        self, item_id: int, attempt: int, worker: str, now: float, lease_expires_at: float
    ) -> bool:
        def fn(c: sqlite3.Connection) -> tuple[bool, bool]:
            params = (lease_expires_at, now, item_id, attempt, worker)
            done = c.execute(SQL_QUEUE_EXTEND, params).rowcount == 1
            return done, done

        return self._write(fn)

    def queue_done(self, item_id: int, attempt: int, worker: str, now: float) -> bool:
        def fn(c: sqlite3.Connection) -> tuple[bool, bool]:
            done = c.execute(SQL_QUEUE_DONE, (now, item_id, attempt, worker)).rowcount == 1
            return done, done

        return self._write(fn)

    def queue_counts(self) -> dict[str, int]:
        rows = self._read(lambda c: c.execute(SQL_QUEUE_COUNTS).fetchall())
        out = {s.value: 0 for s in ItemStatus}
        out.update({str(r[0]): int(r[1]) for r in rows})
        return out


def _cas_params(new: EffectRecord, expect: tuple[Status, int]) -> tuple[Any, ...]:
    values = record_params(new)
    return (*values[1:], new.key, expect[0].value, expect[1])


def _rollback(conn: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):  # no transaction left to roll back
        conn.execute("ROLLBACK")


def _split(sql: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    statements, buf = [], ""
    for line in sql.splitlines(keepends=True):
        if line.lstrip().startswith("--") and not buf:
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            statements.append(buf.strip())
            buf = ""
    if buf.strip():
        statements.append(buf.strip())
    return statements
