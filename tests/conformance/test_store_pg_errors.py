"""How the PostgreSQL stores word a driver error (``postgres_ops.translate``):
whose fault it is (the caller's value: ``UsageError``), whether a write may have
committed (``LedgerOutcomeUnknown``) or surely did not (``LedgerUnavailable``),
by SQLSTATE class, for a write and for a read, first line only. And what a
store says when its pool has no connection to give.
"""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")
E = psycopg.errors

from actonce import LedgerOutcomeUnknown, LedgerUnavailable, UsageError  # noqa: E402
from actonce._store.postgres_ops import closed, translate  # noqa: E402
from actonce._store.stmts import Stmt  # noqa: E402

WRITE, READ = Stmt("x", (), True), Stmt("x")
UNKNOWN, GONE, CALLERS = LedgerOutcomeUnknown, LedgerUnavailable, UsageError
NOT_SENT = "the ledger cannot hold a value of this {} (nothing was sent): "
REFUSED = "the ledger refused a value (nothing was written): "
MAYBE = "ledger write may or may not have committed: "


@pytest.mark.parametrize(
    ("exc", "write", "read"),
    [
        (ValueError("bad\nmore"), (CALLERS, NOT_SENT.format("write") + "bad"),
         (CALLERS, NOT_SENT.format("read") + "bad")),
        (psycopg.DataError("nul"), (CALLERS, NOT_SENT.format("write") + "nul"),
         (CALLERS, NOT_SENT.format("read") + "nul")),
        (E.NumericValueOutOfRange("out of range\nDETAIL: d"), (CALLERS, REFUSED + "out of range"),
         (CALLERS, REFUSED + "out of range")),
        (E.ProgramLimitExceeded("too big"), (CALLERS, REFUSED + "too big"),
         (CALLERS, REFUSED + "too big")),
        (psycopg.OperationalError("gone"), (UNKNOWN, MAYBE + "gone"),
         (GONE, "ledger read failed: gone")),
        (psycopg.InterfaceError("iface"), (UNKNOWN, MAYBE + "iface"),
         (GONE, "ledger read failed: iface")),
        (psycopg.OperationalError(""), (UNKNOWN, MAYBE + "OperationalError"),
         (GONE, "ledger read failed: OperationalError")),
        (E.AdminShutdown("shut"), (UNKNOWN, MAYBE + "shut"), (GONE, "ledger read failed: shut")),
        (E.ConnectionFailure("cf"), (UNKNOWN, MAYBE + "cf"), (GONE, "ledger read failed: cf")),
        (E.InternalError_("xx"), (UNKNOWN, MAYBE + "xx"), (GONE, "ledger read failed: xx")),
        (E.IoError("io"), (UNKNOWN, MAYBE + "io"), (GONE, "ledger read failed: io")),
        (E.UniqueViolation("dup\nDETAIL: k"), (GONE, "ledger write failed: dup"),
         (GONE, "ledger read failed: dup")),
        (E.SerializationFailure("ser"), (GONE, "ledger write failed: ser"),
         (GONE, "ledger read failed: ser")),
        (E.LockNotAvailable("lock"), (GONE, "ledger write failed: lock"),
         (GONE, "ledger read failed: lock")),
    ],
)  # fmt: skip
def test_a_driver_error_is_translated_by_its_class_and_the_statement(
    exc: Exception, write: tuple[type, str], read: tuple[type, str]
) -> None:
    for stmt, (kind, text) in ((WRITE, write), (READ, read)):
        got = translate(exc, stmt)
        assert (type(got), str(got)) == (kind, text)


def test_a_closed_connection_sent_nothing() -> None:
    assert (type(closed(WRITE)), str(closed(WRITE))) == (
        LedgerUnavailable, "ledger connection closed before the write",
    )  # fmt: skip
    assert str(closed(READ)) == "ledger connection closed before the read"


def test_a_store_whose_pool_is_exhausted_says_it_has_no_connection(
    pg_schema: tuple[str, str],
) -> None:
    from actonce import PostgresStore

    dsn, schema = pg_schema
    store = PostgresStore(dsn, schema=schema, create=True, min_size=1, max_size=1, timeout=0.2)
    taken = store._pool.getconn()
    try:
        for call in (lambda: store.queue_counts(), lambda: store.pool_get("p")):
            with pytest.raises(LedgerUnavailable, match=r"^no PostgreSQL connection: "):
                call()
        from .test_gates import NOW, intent

        with pytest.raises(LedgerUnavailable, match=r"^no PostgreSQL connection: "):
            store.intent_create(intent(), NOW, "r")  # a transaction
    finally:
        store._pool.putconn(taken)
    assert store.queue_counts()["queued"] == 0
    store.close()


def test_an_async_store_whose_pool_is_exhausted_says_it_has_no_connection(
    pg_schema: tuple[str, str],
) -> None:
    import asyncio

    from actonce import PostgresStore
    from actonce._store.postgres import AsyncPostgresStore

    from .test_gates import NOW, intent

    dsn, schema = pg_schema
    PostgresStore(dsn, schema=schema, create=True, max_size=1).close()

    async def go() -> list[str]:
        store = AsyncPostgresStore(dsn, schema=schema, min_size=1, max_size=1, timeout=0.2)
        seen: list[str] = []
        await store.queue_counts()  # opens the pool
        assert store._pool is not None
        taken = await store._pool.getconn()
        try:
            for call in (store.queue_counts, lambda: store.intent_create(intent(), NOW, "r")):
                try:
                    await call()
                except LedgerUnavailable as exc:
                    seen.append(str(exc).split(":")[0])
        finally:
            await store._pool.putconn(taken)
        await store.aclose()
        return seen

    assert asyncio.run(go()) == ["no PostgreSQL connection", "no PostgreSQL connection"]


def _trigger(dsn: str, schema: str, when: str) -> None:
    """A trigger on ``pools`` that refuses every insert, at once or at COMMIT."""
    late = "DEFERRABLE INITIALLY DEFERRED" if when == "commit" else ""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            f"CREATE FUNCTION {schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN RAISE EXCEPTION 'refused at {when}'; END $$"
        )
        conn.execute(
            f"CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON {schema}.pools {late} "
            f"FOR EACH ROW EXECUTE FUNCTION {schema}.refuse()"
        )


@pytest.mark.parametrize(
    ("when", "kind", "said"),
    [
        ("commit", LedgerOutcomeUnknown, "ledger commit may or may not have happened: refused at commit"),
        ("once", LedgerUnavailable, "ledger transaction failed: refused at once"),
    ],
)  # fmt: skip
def test_a_transaction_failing_in_its_body_or_at_its_commit(
    pg_schema: tuple[str, str], when: str, kind: type, said: str
) -> None:
    """Refused before COMMIT: surely not written. Refused by COMMIT itself: the
    store cannot tell (the caller must look before retrying)."""
    import asyncio
    from decimal import Decimal

    from actonce import PostgresStore
    from actonce._rules.budgets import Pool
    from actonce._store.postgres import AsyncPostgresStore

    dsn, schema = pg_schema
    store = PostgresStore(dsn, schema=schema, create=True, max_size=1)
    _trigger(dsn, schema, when)
    with pytest.raises((LedgerUnavailable, LedgerOutcomeUnknown)) as refused:
        store.pool_define(Pool("p", Decimal(1)), 1.0, "r")
    assert type(refused.value) is kind and str(refused.value).splitlines()[0] == said
    assert store.pool_get("p") is None and store.events("budget:p") == []

    async def go() -> BaseException:
        other = AsyncPostgresStore(dsn, schema=schema, max_size=1)
        try:
            await other.pool_define(Pool("p", Decimal(1)), 1.0, "r")
        except (LedgerUnavailable, LedgerOutcomeUnknown) as exc:
            return exc
        finally:
            await other.aclose()
        raise AssertionError("not refused")

    got = asyncio.run(go())
    assert type(got) is kind and str(got).splitlines()[0] == said
    assert store.pool_get("p") is None
    store.close()
