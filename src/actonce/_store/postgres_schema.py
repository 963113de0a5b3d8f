"""Where a PostgreSQL ledger lives, and its schema: URLs, pool sizes, migrations.

A ledger URL is split here once (:func:`parse_url`) into the libpq conninfo,
the schema (the connection's ``search_path``) and the pool sizes; the stores
of :mod:`actonce._store.postgres` open their pools on what :func:`target_of`
answers. :func:`open_schema` checks the ledger when a store opens, and
creates or migrates it when asked: migrations (``_store/schema/postgres``)
run inside one transaction that holds ``pg_advisory_xact_lock``, so
concurrent openers wait for each other; a schema newer than this code raises
:class:`~actonce.SchemaTooNew`; ``readonly`` never creates or migrates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from .._rules.errors import BadLedgerURL, LedgerNotFound, LedgerUnavailable, SchemaTooOld
from .._rules.secrets import mask_url
from . import migrations as _migrations

__all__ = ["Target", "open_schema", "parse_url", "target_of"]

SQL_META = "SELECT name, value FROM actonce_meta WHERE name IN ('schema_version', 'ledger_id')"
SQL_SET_VERSION = (
    "INSERT INTO actonce_meta (name, value) VALUES ('schema_version', %s) "
    "ON CONFLICT (name) DO UPDATE SET value = excluded.value"
)
# One lock for every opener of every schema: migrations are rare and short.
SQL_MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(hashtext('actonce.migrate'))"
_SCHEMA = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


@dataclass(frozen=True, slots=True)
class Target:
    """Where a store connects: conninfo, schema, pool sizes, and the URL fit to print."""

    conninfo: str
    schema: str | None
    min_size: int
    max_size: int
    display: str

    @property
    def where(self) -> str:
        """The ledger as messages name it: the masked URL, and its schema if any."""
        return self.display + (f" (schema {self.schema})" if self.schema else "")


def parse_url(
    url: str, *, schema: str | None = None, keep_schema: bool = True
) -> tuple[str, str | None, dict[str, int]]:
    """Split a ledger URL into a libpq conninfo, a schema and pool sizes.

    actonce reads ``schema``, ``pool_min`` and ``pool_max`` from the query
    string and passes everything else to libpq. The schema becomes the
    connection's ``search_path`` (unless ``keep_schema`` is False: then the
    conninfo is the server's alone). The client encoding is always UTF-8: a
    ledger holds text from anywhere, and another encoding would refuse some
    of it only once it is written (``PGCLIENTENCODING`` is overridden too).

    Raises:
        BadLedgerURL: a malformed URL, schema name, pool size or a client
            encoding other than UTF-8 (the message never shows the password).
    """
    shown = mask_url(url)
    try:
        parts = urlsplit(url)
        # As libpq reads a URI's query: %XX escapes decoded, "+" kept as "+"
        # (parse_qsl would read it as a space, and urlencode write a space as "+").
        query = [
            (unquote(n, errors="strict"), unquote(v, errors="strict"))
            for n, _, v in (p.partition("=") for p in parts.query.split("&") if p)
        ]
    except ValueError as exc:
        raise BadLedgerURL(f"malformed PostgreSQL URL {shown!r}: {exc}") from None
    if parts.scheme.lower() == "postgres":
        parts = parts._replace(scheme="postgresql")
    kept, pool = [], {}
    for name, value in query:
        if name == "schema":
            schema = schema or value
        elif name == "client_encoding":
            if value.replace("-", "").lower() not in ("utf8", "unicode"):
                raise BadLedgerURL(
                    f"client_encoding={value!r:.40}: a ledger talks UTF-8 to its server "
                    f"(drop the parameter from {shown!r})"
                )
        elif name in ("pool_min", "pool_max"):
            if not value.isdigit() or int(value) < (0 if name == "pool_min" else 1):
                raise BadLedgerURL(f"{name} must be a whole number in {shown!r}")
            pool[name] = int(value)
        else:
            kept.append((name, value))
    if schema is not None and not _SCHEMA.match(schema):
        raise BadLedgerURL(f"schema name {schema!r} must be a plain identifier")
    try:
        params = conninfo_to_dict(
            urlunsplit(parts._replace(query=urlencode(kept, quote_via=quote)))
        )
    except (psycopg.Error, ValueError):
        raise BadLedgerURL(f"malformed PostgreSQL URL {shown!r}") from None
    if schema is not None and keep_schema:
        options = str(params.get("options") or "")
        params["options"] = f"{options} -c search_path={schema}".strip()
    params["client_encoding"] = "UTF8"
    return make_conninfo("", **params), schema, pool


def target_of(url: str, schema: str | None, min_size: int | None, max_size: int | None) -> Target:
    """The target of ``url`` (``schema``, ``min_size``, ``max_size`` override the URL's)."""
    conninfo, schema, pool = parse_url(url, schema=schema)
    high = max_size or pool.get("pool_max", 10)
    low = min(min_size if min_size is not None else pool.get("pool_min", 1), high)
    return Target(conninfo, schema, low, high, mask_url(url))


def _meta(conn: psycopg.Connection[Any]) -> dict[str, str]:
    if conn.execute("SELECT to_regclass('actonce_meta')").fetchone() == (None,):
        return {}
    return {str(n): str(v) for n, v in conn.execute(SQL_META).fetchall()}


def _has_tables(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
    ).fetchone()
    return bool(row and row[0])


def open_schema(target: Target, connect_timeout: float, *, create: bool, readonly: bool) -> str:
    """Check (and when asked, create or migrate) the ledger; return its id."""
    where = target.where
    try:
        with psycopg.connect(
            target.conninfo, autocommit=True, connect_timeout=max(1, int(connect_timeout))
        ) as conn:
            meta = _meta(conn)
            current = _migrations.parse_version(meta.get("schema_version"), where)
            head = _migrations.head("postgres")
            _migrations.check_version("postgres", current)
            if current == 0 and not create:
                why = "another application's tables" if _has_tables(conn) else "no ledger"
                raise LedgerNotFound(
                    f"{where} holds {why}: create a ledger with `actonce init --ledger URL` "
                    "or open_ledger(url, create=True)"
                )
            if current < head and readonly:
                raise SchemaTooOld(
                    f"the ledger at {where} has schema version {current}, this actonce needs "
                    f"{head}: open it for writing once (e.g. `actonce migrate`) to upgrade it"
                )
            if current < head:
                with conn.transaction():
                    conn.execute(SQL_MIGRATION_LOCK)
                    if target.schema is not None:
                        conn.execute(
                            sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                                sql.Identifier(target.schema)
                            )
                        )
                    current = _migrations.parse_version(
                        _meta(conn).get("schema_version"), where
                    )  # another opener may have migrated meanwhile
                    for m in _migrations.pending("postgres", current):
                        conn.execute(m.sql.encode())
                        conn.execute(SQL_SET_VERSION, (str(m.version),))
                meta = _meta(conn)
    except psycopg.Error as exc:
        raise LedgerUnavailable(f"cannot open the PostgreSQL ledger {where}: {exc}") from exc
    return meta.get("ledger_id", "")
