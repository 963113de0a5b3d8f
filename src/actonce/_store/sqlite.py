"""The embedded ledger: one SQLite file shared by the processes of one machine.

WAL journal; the ``executing`` mark (and a reviewer's decision) is committed
with ``synchronous=FULL``, so it is on stable storage before any perform
starts; other writes use ``NORMAL`` and reach the disk with the next full
commit (see :data:`actonce._rules.lifecycle.DURABLE` for why that is safe;
pass ``sync="all"``, or ``?sync=all`` in the URL, to fsync every commit);
``BEGIN IMMEDIATE`` for every write (writers queue on the busy timeout
instead of failing half-way), a partial index on open statuses. One
connection per store object, guarded by a lock, so a store may be shared by
threads.

A ledger has an identity. Opening a path where no ledger exists is refused
unless ``create=True``; a file that holds another application's tables is
refused always; ``readonly=True`` never creates, never migrates and never
writes. Every write first checks that the file it opened is still the file
at its path: a ledger deleted or replaced under a running worker stops it
with :class:`~actonce.LedgerUnavailable` instead of committing into an
unlinked file while a new, empty ledger appears beside it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeVar, overload

from .._rules.errors import (
    BadLedgerURL,
    LedgerNotFound,
    LedgerOutcomeUnknown,
    LedgerUnavailable,
    SchemaTooOld,
    UsageError,
)
from .._rules.holds import Gate, Settle
from .._rules.model import EffectRecord, Event, Status
from . import (
    approval_ops,
    budget_ops,
    firewall_ops,
    gated_ops,
    intent_ops,
    listing,
    operation_ops,
    summary_ops,
)
from . import migrations as _migrations
from . import sql as q
from .base import Expect
from .records import ClaimResult, ItemStatus, LeaseRecord, LeaseResult, QueueItem
from .rows import (
    event_from_row,
    event_params,
    item_from_row,
    lease_from_row,
    record_from_row,
    record_params,
)
from .scrubbing import ScrubbingConnection
from .stmts import Work, run_sqlite

__all__ = ["SQLiteStore"]

T = TypeVar("T")
P = ParamSpec("P")

INSERT = f"INSERT INTO effects ({q.COLS}) VALUES ({q.MARKS}) ON CONFLICT (key) DO NOTHING"
CAS = f"UPDATE effects SET {q.SET} WHERE key = ? AND status = ? AND fence = ?"
# BEGIN IMMEDIATE serialises takers: this UPDATE ... RETURNING is what
# FOR UPDATE SKIP LOCKED gives on PostgreSQL.
QUEUE_TAKE = (
    "UPDATE queue SET status = 'taken', taken_by = ?, lease_expires_at = ?, "
    "attempts = attempts + 1, updated_at = ? WHERE id IN ("
    "SELECT id FROM queue WHERE status IN ('queued', 'taken') "
    "AND (status = 'queued' OR lease_expires_at <= ?) ORDER BY id LIMIT ?) "
    f"RETURNING {q.Q_COLS}"
)
_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"


class _reads(Generic[P, T]):
    """A read primitive written as statement work (see ``stmts``)."""

    def __init__(self, work: Callable[P, Work[T]]) -> None:
        self.work = work

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _reads[P, T]: ...

    @overload
    def __get__(self, obj: SQLiteStore, owner: type[Any]) -> Callable[P, T]: ...

    def __get__(self, obj: SQLiteStore | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        work, run = self.work, obj._read_work

        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            return run(work(*args, **kwargs))

        return call


class _writes(_reads[P, T]):
    """A write primitive written as statement work: one IMMEDIATE transaction."""

    def __get__(self, obj: SQLiteStore | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        work, run = self.work, obj._write_work

        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            return run(work(*args, **kwargs))

        return call


class SQLiteStore:
    """A ledger in one SQLite file (``path``), or in memory for ``":memory:"``.

    Args:
        path: the file.
        create: make a new ledger when none exists at ``path`` (never on top
            of another application's database).
        readonly: open for reading only: never create, migrate or write.
        busy_timeout: seconds a write waits for another process's lock.
        sync: ``"marks"`` (fsync the ``executing`` marks and reviewers'
            decisions) or ``"all"`` (fsync every commit).
    """

    dialect = "sqlite"

    def __init__(
        self,
        path: str,
        *,
        create: bool = False,
        readonly: bool = False,
        busy_timeout: float = 30.0,
        sync: str = "marks",
    ) -> None:
        if sync not in ("marks", "all"):
            raise BadLedgerURL(f"sync must be 'marks' or 'all', not {sync!r}")
        if "\x00" in path:
            raise BadLedgerURL("a ledger path cannot contain a NUL character")
        self.path = path
        self.readonly = readonly
        self.sync_all = sync == "all"
        self._synchronous = "FULL"
        self._lock = threading.Lock()
        self._identity: tuple[int, int] | None = None
        memory = path == ":memory:"
        if not memory:
            parent = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(parent):
                raise LedgerNotFound(f"no ledger at {path} (there is no folder {parent})")
            if not os.path.exists(path) and (readonly or not create):
                raise LedgerNotFound(
                    f"no ledger at {path}: create it with `actonce init --ledger {path}` "
                    "or open_ledger(url, create=True)"
                )
        try:
            if readonly:
                uri = "file:" + _quote(os.path.abspath(path)) + "?mode=ro"
                self._conn = sqlite3.connect(
                    uri, uri=True, timeout=busy_timeout, isolation_level=None,
                    check_same_thread=False, factory=ScrubbingConnection,
                )  # fmt: skip
            else:
                # Every value bound into any table is scrubbed there (see scrubbing).
                self._conn = sqlite3.connect(
                    path, timeout=busy_timeout, isolation_level=None,
                    check_same_thread=False, factory=ScrubbingConnection,
                )  # fmt: skip
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            if not readonly:
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA synchronous = FULL")
                # What is deleted is overwritten, not left in free pages: the one
                # delete actonce makes is the old fingerprint salt (migration 4).
                self._conn.execute("PRAGMA secure_delete = ON")
            self._open_schema(create=create or memory)
            self.ledger_id = self._meta("ledger_id") or ""
        except sqlite3.DatabaseError as exc:
            self._close_quietly()
            raise LedgerUnavailable(f"cannot open ledger {path}: {exc}") from exc
        except BaseException:
            self._close_quietly()
            raise
        if not memory:
            self._identity = _file_identity(path)

    def _close_quietly(self) -> None:
        conn = getattr(self, "_conn", None)
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

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
        return _migrations.parse_version(self._meta("schema_version"), self.path)

    def _open_schema(self, *, create: bool) -> None:
        current = self.schema_version()
        head = _migrations.head(self.dialect)
        _migrations.check_version(self.dialect, current)
        if current == head:
            return
        if current == 0:
            tables = [str(r[0]) for r in self._conn.execute(_TABLES).fetchall()]
            if tables:
                raise LedgerUnavailable(
                    f"{self.path} is not an actonce ledger (it holds the tables "
                    f"{', '.join(sorted(tables)[:5])}); refusing to use it"
                )
            if not create:
                raise LedgerNotFound(
                    f"no ledger in {self.path} (an empty database): create it with "
                    f"`actonce init --ledger {self.path}` or open_ledger(url, create=True)"
                )
        if self.readonly:
            raise SchemaTooOld(
                f"the ledger {self.path} has schema version {current}, this actonce needs "
                f"{head}: open it for writing once (e.g. `actonce migrate`) to upgrade it"
            )
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            current = self.schema_version()  # another process may have migrated meanwhile
            for m in _migrations.pending(self.dialect, current):
                for statement in _migrations.split_sqlite(m.sql):
                    self._conn.execute(statement)
                self._conn.execute(
                    "INSERT INTO actonce_meta (name, value) VALUES ('schema_version', ?) "
                    "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    (str(m.version),),
                )
            self._conn.execute("COMMIT")
        except BaseException:
            _rollback(self._conn)
            raise
        if current > 0:
            # An upgraded file may hold the old salt in pages and WAL frames
            # written before the migration: copy the new pages back and empty
            # the WAL, so that the file alone cannot test guesses of a PIN
            # against an old fingerprint. (Best effort: a reader of another
            # process may hold the WAL; the next checkpoint finishes the job.)
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    # --- plumbing -------------------------------------------------------------

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            try:
                return fn(self._conn)
            except sqlite3.Error as exc:
                raise LedgerUnavailable(f"ledger read failed: {exc}") from exc
            except (UnicodeError, ValueError, OverflowError) as exc:
                raise UsageError(f"the ledger cannot look up that value: {exc}") from exc

    def _check_identity(self) -> None:
        if self._identity is None:
            return
        try:
            now = _file_identity(self.path)
        except FileNotFoundError:
            now = None
        if now != self._identity:
            what = "deleted" if now is None else "replaced by another file"
            raise LedgerUnavailable(
                f"the ledger {self.path} was {what} after it was opened; nothing was "
                "written (restore it, or reconcile against the ledger that holds the marks)"
            )

    def _write(
        self, fn: Callable[[sqlite3.Connection], tuple[bool, T]], *, durable: bool = False
    ) -> T:
        """Run ``fn`` in one IMMEDIATE transaction; commit if it says so.

        ``durable`` commits are fsynced before this returns.
        """
        if self.readonly:
            raise LedgerUnavailable(f"the ledger {self.path} is open read-only")
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
                self._check_identity()
                keep, result = fn(conn)
            except BaseException as exc:
                _rollback(conn)
                if isinstance(exc, sqlite3.Error):
                    raise LedgerUnavailable(f"ledger write failed: {exc}") from exc
                if isinstance(exc, UnicodeError | ValueError | OverflowError):
                    # Refused while binding the values: nothing reached the file,
                    # and trying again will not help. The caller's to fix.
                    raise UsageError(
                        f"the ledger refused a value (nothing was written): {exc}"
                    ) from exc
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

    # --- effects --------------------------------------------------------------

    def get(self, key: str) -> EffectRecord | None:
        row = self._read(lambda c: c.execute(q.GET, (key,)).fetchone())
        return None if row is None else record_from_row(row)

    def match_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        upper = prefix + "\U0010ffff"
        rows = self._read(lambda c: c.execute(q.PREFIX, (prefix, upper, limit)).fetchall())
        return [str(r[0]) for r in rows]

    def claim(
        self,
        new: EffectRecord,
        expect: Expect,
        event: Event,
        *,
        durable: bool = False,
        gate: Gate | None = None,
    ) -> ClaimResult:
        gated = gate is not None and not gate.empty

        def fn(c: sqlite3.Connection) -> tuple[bool, ClaimResult]:
            if gated:
                assert gate is not None
                check = gated_ops.check_gate(gate, new.key, expect, new.updated_at)
                refusal = run_sqlite(c, check)
                if refusal is not None:
                    row = c.execute(q.GET, (new.key,)).fetchone()
                    current = None if row is None else record_from_row(row)
                    return False, ClaimResult(False, current, refusal)
            if expect is None:
                won = c.execute(INSERT, record_params(new)).rowcount == 1
            else:
                won = c.execute(CAS, _cas_params(new, expect)).rowcount == 1
            if won:
                c.execute(q.EVENT, event_params(event))
                if gated:
                    assert gate is not None
                    work = gated_ops.take_holds(
                        gate, new.key, new.fence, new.updated_at, event.run_id
                    )
                    run_sqlite(c, work)
                return True, ClaimResult(True, new)
            row = c.execute(q.GET, (new.key,)).fetchone()
            return False, ClaimResult(False, None if row is None else record_from_row(row))

        return self._write(fn, durable=durable)

    def release(
        self, key: str, expect: tuple[Status, int], restore: EffectRecord | None, event: Event
    ) -> bool:
        """Give back an unperformed claim: the row it replaced, or no row (one event)."""
        text, params = (q.DELETE, (key, expect[0]._value_, expect[1])) if restore is None else (
            CAS, _cas_params(restore, expect))  # fmt: skip

        def fn(c: sqlite3.Connection) -> tuple[bool, bool]:
            if c.execute(text, params).rowcount != 1:
                return False, False
            c.execute(q.EVENT, event_params(event))
            return True, True

        return self._write(fn)

    def transition(
        self,
        expect: tuple[Status, int],
        new: EffectRecord,
        event: Event,
        *,
        durable: bool = False,
        settle: Settle | None = None,
        fields: tuple[str, ...] | None = None,
    ) -> EffectRecord | None:
        text, params = _cas(new, expect, fields)

        def fn(c: sqlite3.Connection) -> tuple[bool, EffectRecord | None]:
            if c.execute(text, params).rowcount != 1:
                return False, None
            c.execute(q.EVENT, event_params(event))
            if settle is not None:
                work = gated_ops.settle(new.key, expect[1], settle, new.updated_at, event.run_id)
                run_sqlite(c, work)
            return True, new

        return self._write(fn, durable=durable)

    def _read_work(self, work: Work[T]) -> T:
        return self._read(lambda c: run_sqlite(c, work))

    def _write_work(self, work: Work[T]) -> T:
        return self._write(lambda c: (True, run_sqlite(c, work)))

    # --- intents, approvals, holds, budgets, operations (the *_ops modules) ------

    intent_get = _reads(intent_ops.intent_get)
    intent_chain = _reads(intent_ops.intent_chain)
    intent_list = _reads(intent_ops.intent_list)
    intent_create = _writes(intent_ops.intent_create)
    intent_revise = _writes(gated_ops.intent_revise)
    intent_touch = _writes(intent_ops.intent_touch)
    intent_withdraw = _writes(gated_ops.intent_withdraw)
    approval_get = _reads(approval_ops.approval_get)
    approval_list = _reads(approval_ops.approval_list)
    approval_put = _writes(approval_ops.approval_put)
    approval_update = _writes(approval_ops.approval_update)
    approval_replace = _writes(approval_ops.approval_replace)
    approval_answer = _writes(approval_ops.approval_answer)
    approval_set_code = _writes(approval_ops.approval_set_code)
    code_failures = _writes(approval_ops.code_failures)
    code_packets = _reads(approval_ops.code_packets)
    holds_of = _reads(gated_ops.holds_of)
    pool_define = _writes(budget_ops.pool_define)
    pool_get = _reads(budget_ops.pool_get)
    budget_usage = _reads(budget_ops.budget_usage)
    operation_put = _writes(operation_ops.operation_put)
    operation_get = _reads(operation_ops.operation_get)
    receipt_put = _writes(operation_ops.receipt_put)
    receipt_get = _reads(operation_ops.receipt_get)
    receipt_list = _reads(operation_ops.receipt_list)
    operation_of = _reads(operation_ops.operation_of)
    operations_in = _reads(operation_ops.operations_in)
    operations_due = _reads(operation_ops.operations_due)
    decisions_of = _reads(operation_ops.decisions_of)
    decision_put = _writes(operation_ops.decision_put)

    # --- listings (see listing) -------------------------------------------------

    select = _reads(listing.select)
    counts = _reads(listing.counts)
    summary_put = _writes(summary_ops.summary_put)
    summary_get = _reads(summary_ops.summary_get)
    summary_list = _reads(summary_ops.summary_list)
    refusal_put = _writes(firewall_ops.refusal_put)
    refusal_list = _reads(firewall_ops.refusal_list)
    refusal_counts = _reads(firewall_ops.refusal_counts)

    def extend(self, key: str, expect: tuple[Status, int], lease_expires_at: float) -> bool:
        params = (lease_expires_at, lease_expires_at, key, expect[0].value, expect[1])

        def fn(c: sqlite3.Connection) -> tuple[bool, bool]:
            done = c.execute(q.EXTEND, params).rowcount == 1
            return done, done

        return self._write(fn)

    def append_event(self, event: Event) -> None:
        self._write(lambda c: (True, c.execute(q.EVENT, event_params(event))))

    def events(self, key: str) -> list[Event]:
        rows = self._read(lambda c: c.execute(q.EVENTS, (key,)).fetchall())
        return [event_from_row(int(r[0]), r[1:]) for r in rows]

    def open_effects(self, limit: int = 1000) -> list[EffectRecord]:
        rows = self._read(lambda c: c.execute(q.OPEN, (limit,)).fetchall())
        return [record_from_row(r) for r in rows]

    def duplicates(self) -> int:
        return int(self._read(lambda c: c.execute(q.DUPLICATES).fetchone()[0]))

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # --- operator leases (see _leases) ------------------------------------------

    def lease_acquire(self, name: str, owner: str, now: float, expires_at: float) -> LeaseResult:
        def fn(c: sqlite3.Connection) -> tuple[bool, LeaseResult]:
            row = c.execute(q.LEASE_ACQUIRE, (name, owner, now, now, expires_at, now)).fetchone()
            if row is not None:
                return True, LeaseResult(True, lease_from_row(row))
            held = c.execute(q.LEASE_GET, (name,)).fetchone()
            return False, LeaseResult(False, lease_from_row(held))

        return self._write(fn)

    def lease_renew(
        self, name: str, token: int, owner: str, now: float, expires_at: float
    ) -> LeaseRecord | None:
        def fn(c: sqlite3.Connection) -> tuple[bool, LeaseRecord | None]:
            row = c.execute(q.LEASE_RENEW, (now, expires_at, name, token, owner)).fetchone()
            return row is not None, None if row is None else lease_from_row(row)

        return self._write(fn)

    def lease_release(self, name: str, token: int, owner: str, now: float) -> bool:
        def fn(c: sqlite3.Connection) -> tuple[bool, bool]:
            done = c.execute(q.LEASE_RELEASE, (now, name, token, owner)).rowcount == 1
            return done, done

        return self._write(fn)

    def lease_get(self, name: str) -> LeaseRecord | None:
        row = self._read(lambda c: c.execute(q.LEASE_GET, (name,)).fetchone())
        return None if row is None else lease_from_row(row)

    # --- work hand-out (see _queue) ----------------------------------------------

    def queue_put(self, kind: str, payload: str, now: float) -> int:
        def fn(c: sqlite3.Connection) -> tuple[bool, int]:
            return True, int(c.execute(q.QUEUE_PUT, (kind, payload, now, now)).fetchone()[0])

        return self._write(fn)

    def queue_take(
        self, worker: str, now: float, lease_expires_at: float, limit: int = 1
    ) -> list[QueueItem]:
        def fn(c: sqlite3.Connection) -> tuple[bool, list[QueueItem]]:
            rows = c.execute(QUEUE_TAKE, (worker, lease_expires_at, now, now, limit)).fetchall()
            return bool(rows), sorted((item_from_row(r) for r in rows), key=lambda i: i.id)

        return self._write(fn)

    def queue_extend(
        self, item_id: int, attempt: int, worker: str, now: float, lease_expires_at: float
    ) -> bool:
        def fn(c: sqlite3.Connection) -> tuple[bool, bool]:
            params = (lease_expires_at, now, item_id, attempt, worker)
            done = c.execute(q.QUEUE_EXTEND, params).rowcount == 1
            return done, done

        return self._write(fn)

    def queue_done(self, item_id: int, attempt: int, worker: str, now: float) -> bool:
        def fn(c: sqlite3.Connection) -> tuple[bool, bool]:
            done = c.execute(q.QUEUE_DONE, (now, item_id, attempt, worker)).rowcount == 1
            return done, done

        return self._write(fn)

    def queue_counts(self) -> dict[str, int]:
        rows = self._read(lambda c: c.execute(q.QUEUE_COUNTS).fetchall())
        out = {s.value: 0 for s in ItemStatus}
        out.update({str(r[0]): int(r[1]) for r in rows})
        return out


def _cas_params(new: EffectRecord, expect: tuple[Status, int]) -> tuple[Any, ...]:
    values = record_params(new)
    return (*values[1:], new.key, expect[0]._value_, expect[1])


def _cas(
    new: EffectRecord, expect: tuple[Status, int], fields: tuple[str, ...] | None
) -> tuple[str, tuple[Any, ...]]:
    if fields is None:
        return CAS, _cas_params(new, expect)
    clause, positions = q.cas_set(fields)
    values = record_params(new)
    text = f"UPDATE effects SET {clause} WHERE key = ? AND status = ? AND fence = ?"
    return text, (*(values[i] for i in positions), new.key, expect[0]._value_, expect[1])


def _rollback(conn: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):  # no transaction left to roll back
        conn.execute("ROLLBACK")


def _file_identity(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino)


def _quote(path: str) -> str:
    from urllib.parse import quote

    return quote(path, safe="/")
