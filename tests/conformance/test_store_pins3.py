"""Pins for the stores' survivors of the dev samples of round 1208
(``python tests/mutants/areas.py --area _store --sample 40 --seed dev-1208-store-N``),
every backend unless said: a lost claim answers the row as it stands (none when
there is none) and writes nothing; a verdict settles the approval whatever order
PostgreSQL reads the holds in; a value PostgreSQL cannot hold, in any write
statement of a transaction, is named a write (each statement's ``write`` flag) and
rolls the whole transaction back; the ledger check connects with a timeout of
whole seconds, at least one; a ledger without a recorded schema version says 0, a
corrupt one is refused (PostgreSQL raised a bare ``ValueError``: fixed); a
connection handed out closed sends nothing and says so, sync and async. Each was checked to fail on its mutant.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from actonce import ApprovalStatus, Gate, LedgerUnavailable, Status, UsageError
from actonce._rules.budgets import Draw, Pool
from actonce._rules.holds import HoldStatus, Settle

from .test_gates import NOW, intent, packet
from .test_gates import event as gated_event
from .test_gates import record as gated_record
from .test_store import event, record


@pytest.mark.parametrize("gated", [False, True])
def test_a_claim_expecting_a_row_that_is_not_there_loses_and_answers_none(
    store: Any, gated: bool
) -> None:
    if gated:
        store.intent_create(intent(), NOW, "setup")
        new = gated_record("k1", fence=2)
        got = store.claim(new, (Status.FAILED, 1), gated_event("k1", Status.CLAIMED, 2),
                          gate=Gate(intent().ref))  # fmt: skip
    else:
        new = record("k1", fence=2)
        got = store.claim(new, (Status.FAILED, 1), event(new, Status.FAILED))
    assert (got.acquired, got.record, got.refused) == (False, None, None), got
    assert store.get("k1") is None and store.events("k1") == []
    assert store.holds_of("k1") == []


SETTLED = {Settle.CONSUME: HoldStatus.CONSUMED, Settle.RELEASE: HoldStatus.RELEASED}
SEQ_SCANS = "options=-c%20enable_indexscan%3Doff%20-c%20enable_bitmapscan%3Doff"


@pytest.mark.parametrize(
    ("to", "how", "packet_after"),
    [
        (Status.CONFIRMED, Settle.CONSUME, ApprovalStatus.CONSUMED),
        (Status.FAILED, Settle.RELEASE, ApprovalStatus.APPROVED),
    ],
)
def test_a_verdict_settles_the_approval_whatever_order_the_holds_come_in(
    pg_schema: tuple[str, str], to: Status, how: Settle, packet_after: ApprovalStatus
) -> None:
    # Without indexes the server reads the holds in the order they were written
    # (the intent's first, the approval's after it), not in key order.
    from actonce import PostgresStore

    dsn, schema = pg_schema
    store = PostgresStore(f"{dsn}?{SEQ_SCANS}", schema=schema, max_size=2, create=True)
    try:
        store.intent_create(intent(), NOW, "setup")
        store.pool_define(Pool("a", Decimal(9)), NOW, "setup")
        store.approval_put(packet("k1"), None, "setup")
        gate = Gate(intent().ref, "p1", Decimal("110"), draws=(Draw("a", Decimal(1)),))
        new = gated_record("k1")
        assert store.claim(new, None, gated_event("k1", Status.CLAIMED), gate=gate).acquired
        done = store.transition((Status.CLAIMED, 1), replace(new, status=to),
                                gated_event("k1", to), settle=how)  # fmt: skip
        assert done is not None
        assert store.approval_get("p1")[0].status is packet_after
        assert {h.status for h in store.holds_of("k1")} == {SETTLED[how]}
    finally:
        store.close()


def _nul_writes(store: Any) -> dict[str, Any]:
    """Transactions whose one refused statement is the first, or a later, write."""
    store.operation_put("op-r", None, "{}", NOW, "setup")
    return {
        "operation row": lambda: store.operation_put("op-1", None, "{\x00}", NOW, "r"),
        "operation event": lambda: store.operation_put("op-1", None, "{}", NOW, "r\x00"),
        "operation steps": lambda: store.operation_put(
            "op-1", None, '{"steps": [{"key": "k\\u0000"}]}', NOW, "r"
        ),
        "receipt due": lambda: store.receipt_put("op-\x00", "complete", "t", "{}", NOW, "r"),
        "receipt row": lambda: store.receipt_put("op-r", "complete", "t\x00", "{}", NOW, "r"),
        "pool event": lambda: store.pool_define(Pool("a", Decimal(9)), NOW, "r\x00"),
    }


def test_a_value_postgresql_cannot_hold_in_any_write_of_a_transaction_is_named_a_write(
    backend: str, store: Any
) -> None:
    if backend != "postgres":
        pytest.skip("PostgreSQL's text refuses NUL; SQLite's holds it")
    refused = {}
    for name, write in _nul_writes(store).items():
        with pytest.raises(UsageError) as exc:
            write()
        refused[name] = str(exc.value).partition(":")[0]
    words = "the ledger cannot hold a value of this write (nothing was sent)"
    assert refused == dict.fromkeys(refused, words)
    # Each transaction was rolled back whole: nothing of it is in the ledger.
    assert store.operation_get("op-1") is None and store.events("operation:op-1") == []
    assert store.operation_of("k") is None and store.receipt_get("op-r") is None
    assert store.pool_get("a") is None and store.events("budget:a") == []


def test_the_ledger_check_connects_within_the_timeout_in_whole_seconds_at_least_one(
    pg_schema: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """libpq takes whole seconds and reads 0 as "wait for ever": a timeout under a
    second is one second, not none."""
    psycopg = pytest.importorskip("psycopg")
    from actonce import PostgresStore

    dsn, schema = pg_schema
    real, asked = psycopg.connect, []

    def connect(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs.get("connect_timeout"))
        return real(*args, **kwargs)

    monkeypatch.setattr(psycopg, "connect", connect)
    for timeout in (0.2, 2.7, 10.0):
        PostgresStore(dsn, schema=schema, create=True, min_size=0, max_size=1,
                      timeout=timeout).close()  # fmt: skip
    assert asked == [1, 2, 10]


def _set_version(store: Any, backend: str, value: str | None) -> None:
    """Record (``None``: delete) the schema version behind the store's back."""
    text, params = (
        ("DELETE FROM actonce_meta WHERE name = 'schema_version'", ())
        if value is None
        else ("INSERT INTO actonce_meta (name, value) VALUES ('schema_version', %s)", (value,))
    )
    if backend == "sqlite":
        store._conn.execute(text.replace("%s", "?"), params)
        return
    import psycopg

    with psycopg.connect(store._target.conninfo, autocommit=True) as conn:
        conn.execute(text, params)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_ledger_without_a_recorded_version_says_0_and_a_corrupt_one_is_refused(
    store: Any, backend: str
) -> None:
    _set_version(store, backend, None)
    assert store.schema_version() == 0
    _set_version(store, backend, "x9")
    with pytest.raises(LedgerUnavailable) as corrupt:
        store.schema_version()
    assert str(corrupt.value).endswith(" has a corrupt schema_version 'x9'; refusing to use it")


class _ClosingPool:
    """A psycopg pool that hands out its connections closed (as a dead server leaves them)."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    def getconn(self) -> Any:
        conn = self.pool.getconn()
        conn.close()
        return conn

    def putconn(self, conn: Any) -> None:
        self.pool.putconn(conn)

    async def agetconn(self) -> Any:
        conn = await self.pool.getconn()
        await conn.close()
        return conn

    async def aputconn(self, conn: Any) -> None:
        await self.pool.putconn(conn)


def test_a_connection_handed_out_closed_sends_nothing_and_says_so(
    pg_schema: tuple[str, str],
) -> None:
    import asyncio

    from actonce import PostgresStore
    from actonce._store.postgres import AsyncPostgresStore

    dsn, schema = pg_schema
    store = PostgresStore(dsn, schema=schema, create=True, min_size=0, max_size=2)
    real, store._pool = store._pool, _ClosingPool(store._pool)
    said = []
    for call in (store.queue_counts, lambda: store.queue_put("mail", "{}", NOW)):
        with pytest.raises(LedgerUnavailable) as refused:
            call()
        said.append(str(refused.value))

    async def go() -> None:
        other = AsyncPostgresStore(dsn, schema=schema, min_size=0, max_size=2)
        pool = _ClosingPool(await other._get_pool())
        other._pool = pool
        pool.getconn, pool.putconn = pool.agetconn, pool.aputconn  # type: ignore[method-assign]
        try:
            for call in (other.queue_counts, lambda: other.queue_put("mail", "{}", NOW)):
                with pytest.raises(LedgerUnavailable) as refused:
                    await call()
                said.append(str(refused.value))
        finally:
            await pool.pool.close()  # or asyncio.run waits for its workers

    asyncio.run(go())
    assert said == [f"ledger connection closed before the {w}" for w in ("read", "write")] * 2
    store._pool = real
    assert store.queue_counts()["queued"] == 0
    store.close()
