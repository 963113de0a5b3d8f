"""Fixtures of the hardening tests: populated ledgers on SQLite and PostgreSQL (see ``_kit``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from actonce import Ledger, Status
from pgtest import drop_schema, postgres_dsn

from ._kit import World, populate, with_schema


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A populated SQLite ledger, built once per module; copy it, never change it."""
    folder = tmp_path_factory.mktemp("template")
    populate(str(folder / "ledger.db"), folder)
    return folder / "ledger.db"


@pytest.fixture(scope="module")
def template_keys(template: Path) -> World:
    with Ledger.open(str(template), readonly=True) as ledger:
        by_status = {r.status: r.key for r in ledger.list()}
    return World(
        str(template),
        by_status[Status.CONFIRMED],
        by_status[Status.UNKNOWN],
        by_status[Status.NEEDS_REVIEW],
        template.parent,
    )


@pytest.fixture(scope="module")
def pg_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, str, str]]:
    """A populated ledger in a schema of its own: (world, dsn, schema), dropped afterwards."""
    dsn = postgres_dsn()
    schema = f"actonce_harden_{uuid.uuid4().hex[:10]}"
    folder = tmp_path_factory.mktemp("pg")
    try:
        yield populate(with_schema(dsn, schema), folder), dsn, schema
    finally:
        drop_schema(dsn, schema)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where a new ledger goes, on each backend (``memory://`` lives in one object)."""
    if request.param == "memory":
        yield "memory://"
    elif request.param == "sqlite":
        yield str(tmp_path / "ledger.db")
    else:
        dsn = postgres_dsn()
        schema = f"actonce_harden_{uuid.uuid4().hex[:10]}"
        try:
            yield with_schema(dsn, schema)
        finally:
            drop_schema(dsn, schema)


@pytest.fixture(params=["sqlite", "postgres"])
def durable_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A new ledger's URL on each backend that stores text in a file or a server."""
    if request.param == "sqlite":
        yield str(tmp_path / "ledger.db")
    else:
        dsn = postgres_dsn()
        schema = f"actonce_harden_{uuid.uuid4().hex[:10]}"
        try:
            yield with_schema(dsn, schema)
        finally:
            drop_schema(dsn, schema)
