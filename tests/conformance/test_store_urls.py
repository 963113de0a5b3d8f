"""Which store a ledger URL names, and how a PostgreSQL URL becomes a connection.

Pure functions every backend's opening goes through (``_store/urls.py``,
``_store/postgres_schema.py``): the URL chosen (argument, environment,
default), the SQLite file a URL names, each scheme's store, the options read
and refused, and the exact libpq conninfo, schema and pool sizes of a
PostgreSQL URL. Every refusal is stated with its whole message: the password
never appears in one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from actonce import BadLedgerURL, LedgerNotFound, MemoryStore, SQLiteStore, UsageError, open_store
from actonce._store.postgres_schema import Target, parse_url, target_of
from actonce._store.urls import DEFAULT_LEDGER, resolve_url, sqlite_path

# --- resolve_url: the argument, else ACTONCE_LEDGER, else the default ------------------------


def test_the_url_given_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACTONCE_LEDGER", "sqlite:///env.db")
    assert resolve_url("sqlite:///given.db") == "sqlite:///given.db"
    assert resolve_url(None) == "sqlite:///env.db"
    assert resolve_url("") == "sqlite:///env.db"  # an empty URL is no URL


def test_without_url_or_environment_the_ledger_is_actonce_db(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ACTONCE_LEDGER", raising=False)
    assert DEFAULT_LEDGER == "sqlite:///actonce.db"
    assert resolve_url(None) == "sqlite:///actonce.db"
    monkeypatch.setenv("ACTONCE_LEDGER", "")
    assert resolve_url(None) == "sqlite:///actonce.db"


def test_a_url_that_is_not_a_string_is_refused_with_its_type() -> None:
    with pytest.raises(BadLedgerURL, match=r"^a ledger URL is a string, not bytes$"):
        resolve_url(b"sqlite:///x.db")  # type: ignore[arg-type]
    with pytest.raises(BadLedgerURL, match=r"^a ledger URL is a string, not int$"):
        open_store(3)  # type: ignore[arg-type]


def test_a_url_holding_nul_is_refused() -> None:
    with pytest.raises(BadLedgerURL, match=r"^a ledger URL cannot contain a NUL character$"):
        resolve_url("sqlite:///a\x00b.db")
    with pytest.raises(BadLedgerURL, match=r"^a ledger URL cannot contain a NUL character$"):
        open_store("memory://\x00")


# --- sqlite_path: the file a URL names ----------------------------------------------------


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///rel/led.db", "rel/led.db"),
        ("sqlite:////abs/led.db", "/abs/led.db"),
        ("SQLite:///up.db", "up.db"),
        ("sqlite:///led.db?sync=all", "led.db"),
        ("sqlite:///:memory:", None),
        ("sqlite:///:memory:?sync=all", None),
        ("sqlite://", None),
        ("sqlite:///", None),
        ("sqlite://host/x.db", None),
        ("memory://", None),
        ("postgresql://u@h/db", None),
        ("plain/file.db", "plain/file.db"),
        ("C", "C"),
    ],
)
def test_the_file_a_url_names(url: str, path: str | None) -> None:
    assert sqlite_path(url) == path


def test_a_plain_path_looking_like_a_url_is_refused() -> None:
    with pytest.raises(BadLedgerURL) as refused:
        sqlite_path("postgresql:u@h/db")
    assert str(refused.value) == "malformed ledger URL 'postgresql:u@h/db': expected SCHEME://..."
    with pytest.raises(BadLedgerURL, match=r"^empty ledger URL$"):
        sqlite_path("   ")
    with pytest.raises(BadLedgerURL, match=r"^empty ledger URL$"):
        open_store(" \t")
    # one letter and a colon is a drive, not a scheme
    assert sqlite_path("C:/ledger.db") == "C:/ledger.db"
    for url in ("ab:x", "a1:x", "a+b:x", "a.b:x", "a-b:x"):
        with pytest.raises(BadLedgerURL, match=r"^malformed ledger URL "):
            sqlite_path(url)


# --- open_store: each scheme's store ----------------------------------------------------


def test_the_flags_must_be_bools() -> None:
    for name in ("create", "readonly", "prefer_async"):
        with pytest.raises(UsageError) as refused:
            open_store("memory://", **{name: 1})  # type: ignore[arg-type]
        assert str(refused.value) == f"{name} must be True or False, not 1"
    with pytest.raises(UsageError, match=r"^create must be True or False, not 'xxxxx"):
        open_store("memory://", create="x" * 100)  # type: ignore[arg-type]
    with pytest.raises(UsageError) as cut:
        open_store("memory://", readonly="y" * 100)  # type: ignore[arg-type]
    assert str(cut.value) == "readonly must be True or False, not '" + "y" * 39


def test_memory_urls_open_a_memory_store_in_any_case() -> None:
    assert isinstance(open_store("memory://"), MemoryStore)
    assert isinstance(open_store("MEMORY://anything", create=False), MemoryStore)


def test_a_memory_ledger_cannot_be_opened_read_only() -> None:
    with pytest.raises(LedgerNotFound) as refused:
        open_store("memory://", readonly=True)
    assert str(refused.value) == (
        "a memory:// ledger lives inside one process and starts empty: there is nothing "
        "to read (give the URL of a file or a server)"
    )


def test_sqlite_urls_open_the_file_they_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rel = open_store("sqlite:///rel.db", create=True)
    assert isinstance(rel, SQLiteStore)
    assert (rel.path, rel.readonly, rel.sync_all) == ("rel.db", False, False)
    rel.close()
    absolute = tmp_path / "abs.db"
    full = open_store(f"Sqlite:///{absolute}?sync=all", create=True)
    assert (full.path, full.sync_all) == (str(absolute), True)
    full.close()
    marks = open_store(f"sqlite:///{absolute}?sync=marks")
    assert marks.sync_all is False
    marks.close()
    ro = open_store(f"sqlite:///{absolute}", readonly=True)
    assert ro.readonly is True
    ro.close()
    plain = open_store("plain.db", create=True)
    assert isinstance(plain, SQLiteStore) and plain.path == "plain.db"
    plain.close()
    with pytest.raises(LedgerNotFound):
        open_store("missing.db")  # create defaults to False
    with pytest.raises(LedgerNotFound):
        open_store("sqlite:///missing.db")
    mem = open_store("sqlite:///:memory:")
    assert isinstance(mem, SQLiteStore) and mem.path == ":memory:"
    mem.close()


def test_a_sqlite_url_without_a_path_is_refused() -> None:
    for url in ("sqlite://", "sqlite:///", "sqlite://host/x.db", "SQLITE://u:secret@h/x.db"):
        with pytest.raises(BadLedgerURL) as refused:
            open_store(url, create=True)
        shown = url.replace("secret", "***").replace("SQLITE", "sqlite")
        assert str(refused.value) == (
            f"malformed SQLite URL {shown!r}: use sqlite:///relative.db or sqlite:////abs/path.db"
        )


def test_a_sqlite_url_takes_only_the_sync_option(tmp_path: Path) -> None:
    with pytest.raises(BadLedgerURL) as refused:
        open_store(f"sqlite:///{tmp_path}/x.db?sync=all&mode=ro&cache=shared", create=True)
    assert str(refused.value) == "unknown SQLite URL option(s): cache, mode"
    with pytest.raises(BadLedgerURL, match=r"^sync must be 'marks' or 'all', not 'some'$"):
        open_store(f"sqlite:///{tmp_path}/x.db?sync=some", create=True)
    with pytest.raises(BadLedgerURL, match=r"^sync must be 'marks' or 'all', not ''$"):
        open_store(f"sqlite:///{tmp_path}/x.db?sync", create=True)
    s = open_store(f"sqlite:///{tmp_path}/x.db?&sync=all&", create=True)
    assert s.sync_all is True
    s.close()


def test_an_unknown_scheme_is_refused_with_the_url_masked() -> None:
    with pytest.raises(BadLedgerURL) as refused:
        open_store("mysql://u:secret@h/db")
    assert str(refused.value) == (
        "unknown ledger scheme 'mysql' in 'mysql://u:***@h/db' (sqlite, postgresql, memory)"
    )
    with pytest.raises(BadLedgerURL, match=r"^unknown ledger scheme 'redis' in "):
        open_store("REDIS://h")


# --- parse_url / target_of: a PostgreSQL URL as libpq gets it ------------------------------


def test_a_postgresql_url_becomes_a_utf8_conninfo() -> None:
    assert parse_url("postgresql://u:pw@h:5433/db") == (
        "user=u password=pw dbname=db host=h port=5433 client_encoding=UTF8",
        None,
        {},
    )
    assert parse_url("postgres://u@h/db") == (
        "user=u dbname=db host=h client_encoding=UTF8",
        None,
        {},
    )
    assert parse_url("POSTGRES://u@h/db")[0] == "user=u dbname=db host=h client_encoding=UTF8"


def test_schema_and_pool_sizes_are_read_and_the_rest_goes_to_libpq() -> None:
    url = "postgres://u@h/db?schema=s1&pool_min=2&pool_max=5&sslmode=disable"
    assert parse_url(url) == (
        "user=u dbname=db host=h sslmode=disable options='-c search_path=s1' client_encoding=UTF8",
        "s1",
        {"pool_min": 2, "pool_max": 5},
    )
    assert parse_url(url, keep_schema=False) == (
        "user=u dbname=db host=h sslmode=disable client_encoding=UTF8",
        "s1",
        {"pool_min": 2, "pool_max": 5},
    )
    # the schema argument overrides the URL's
    assert parse_url(url, schema="other")[:2] == (
        "user=u dbname=db host=h sslmode=disable options='-c search_path=other' "
        "client_encoding=UTF8",
        "other",
    )
    # the first schema given wins; the search path joins options of the URL's own
    assert parse_url("postgresql://u@h/db?schema=a&schema=b&options=-c%20x%3Dy")[:2] == (
        "user=u dbname=db host=h options='-c x=y -c search_path=a' client_encoding=UTF8",
        "a",
    )


def test_a_url_parameter_reaches_libpq_as_libpq_reads_it() -> None:
    """``%20`` is a space and ``+`` is a plus, in libpq's URIs: a space was written
    ``+`` and libpq read ``-c+statement_timeout=5000``, refusing the connection."""
    conninfo = parse_url(
        "postgresql://u@h/db?options=-c%20statement_timeout%3D5000&application_name=a+b%20c"
    )[0]
    assert conninfo == (
        "user=u dbname=db host=h options='-c statement_timeout=5000' "
        "application_name='a+b c' client_encoding=UTF8"
    )
    assert parse_url("postgresql://u@h/db?sslmode")[0] == (
        "user=u dbname=db host=h sslmode='' client_encoding=UTF8"
    )
    assert parse_url("postgresql://u@h/db?&&sslmode=require&")[0] == (
        "user=u dbname=db host=h sslmode=require client_encoding=UTF8"
    )


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("pool_min=x", "pool_min must be a whole number in 'postgresql://u:***@h/db?pool_min=x'"),
        ("pool_min=-1", "pool_min must be a whole number in 'postgresql://u:***@h/db?pool_min=-1'"),
        ("pool_max=0", "pool_max must be a whole number in 'postgresql://u:***@h/db?pool_max=0'"),
        ("pool_max=", "pool_max must be a whole number in 'postgresql://u:***@h/db?pool_max='"),
        ("schema=1bad", "schema name '1bad' must be a plain identifier"),
        ("schema=a-b", "schema name 'a-b' must be a plain identifier"),
        ("schema=" + "s" * 64, f"schema name {'s' * 64!r} must be a plain identifier"),
        ("bogus=1", "malformed PostgreSQL URL 'postgresql://u:***@h/db?bogus=1'"),
    ],
)
def test_a_bad_postgresql_url_is_refused_whole(query: str, message: str) -> None:
    with pytest.raises(BadLedgerURL) as refused:
        parse_url(f"postgresql://u:secret@h/db?{query}")
    assert str(refused.value) == message


def test_the_edges_of_what_a_postgresql_url_may_hold() -> None:
    assert parse_url("postgresql://u@h/db?pool_min=0&pool_max=1")[2] == {
        "pool_min": 0,
        "pool_max": 1,
    }
    assert parse_url("postgresql://u@h/db?schema=_" + "s" * 62)[1] == "_" + "s" * 62
    assert parse_url("postgresql://u@h/db?schema=Ab_9")[1] == "Ab_9"
    with pytest.raises(BadLedgerURL) as refused:
        parse_url("postgresql://u:secret@[h/db")
    assert str(refused.value) == "malformed PostgreSQL URL '***': Invalid IPv6 URL"
    with pytest.raises(BadLedgerURL, match=r"^malformed PostgreSQL URL .*: 'utf-8' codec"):
        parse_url("postgresql://u@h/db?application_name=%ff")


def test_the_target_takes_the_urls_pool_sizes_unless_given() -> None:
    assert target_of("postgresql://u:pw@h/db", None, None, None) == Target(
        "user=u password=pw dbname=db host=h client_encoding=UTF8",
        None,
        1,
        10,
        "postgresql://u:***@h/db",
    )
    url = "postgresql://u@h/db?pool_min=3&pool_max=4&schema=s"
    read = target_of(url, None, None, None)
    assert (read.schema, read.min_size, read.max_size) == ("s", 3, 4)
    given = target_of(url, "t", 0, 6)
    assert (given.schema, given.min_size, given.max_size) == ("t", 0, 6)
    assert (
        given.conninfo == "user=u dbname=db host=h options='-c search_path=t' client_encoding=UTF8"
    )
    # the minimum never exceeds the maximum
    low = target_of("postgresql://u@h/db?pool_min=3&pool_max=2", None, None, None)
    assert (low.min_size, low.max_size) == (2, 2)
    capped = target_of("postgresql://u@h/db", None, 5, 3)
    assert (capped.min_size, capped.max_size) == (3, 3)
    only_max = target_of("postgresql://u@h/db?pool_max=4", None, None, None)
    assert (only_max.min_size, only_max.max_size) == (1, 4)
    only_min = target_of("postgresql://u@h/db?pool_min=0", None, None, None)
    assert (only_min.min_size, only_min.max_size) == (0, 10)


def test_a_url_splits_at_its_first_scheme_mark_query_mark_and_equals_sign(
    tmp_path: Path,
) -> None:
    """``://``, ``?`` and ``=`` may come again in what follows them: the first one splits."""
    assert sqlite_path("sqlite:///a://b.db") == "a://b.db"
    assert sqlite_path("sqlite:///a.db?x=y?z") == "a.db"
    assert isinstance(open_store("memory://x://y"), MemoryStore)
    (tmp_path / "d:").mkdir()
    s = open_store(f"sqlite:///{tmp_path}/d://x.db", create=True)
    assert isinstance(s, SQLiteStore) and s.path == f"{tmp_path}/d://x.db"
    s.close()
    for query, value in (("sync=all?x", "all?x"), ("sync=all=x", "all=x")):
        with pytest.raises(BadLedgerURL) as refused:
            open_store(f"sqlite:///{tmp_path}/y.db?{query}", create=True)
        assert str(refused.value) == f"sync must be 'marks' or 'all', not '{value}'"


def test_a_postgresql_url_opens_the_async_store_when_asked() -> None:
    import asyncio
    import uuid

    from actonce import AsyncPostgresStore, PostgresStore
    from pgtest import drop_schema, postgres_dsn

    dsn = postgres_dsn()
    schema = f"t_urls_{uuid.uuid4().hex[:8]}"
    url = f"{dsn}?schema={schema}"
    try:
        sync = open_store(url, create=True)
        assert type(sync) is PostgresStore
        sync.close()
        store = open_store(url, prefer_async=True)
        assert type(store) is AsyncPostgresStore
        asyncio.run(store.aclose())
    finally:
        drop_schema(dsn, schema)
