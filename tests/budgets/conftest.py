"""Budget tests over every backend: memory, SQLite, PostgreSQL.

``world`` is a tiny external system whose ground truth the tests compare
with the ledger: ``perform`` records an object, ``verify`` looks it up (or
answers what the test told it to). ``ledger`` is a synchronous ledger on a
:class:`~actonce.testing.FrozenClock` over the chosen backend.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from actonce import (
    Absent,
    Confirmed,
    Effect,
    EffectRecord,
    Gate,
    Ledger,
    MemoryStore,
    Policy,
    Registry,
    SQLiteStore,
    Unavailable,
    Verdict,
    effect_key,
)
from actonce.testing import FrozenClock
from pgtest import drop_schema, postgres_dsn

#: Verified at once: absence after the perform is proof (no settle window).
PROVEN = Policy(settle_seconds=0.0, absence_authoritative=True, verify_attempts=2,
                verify_backoff=0.1)  # fmt: skip
#: Absence proves nothing: a human decides.
DOUBTFUL = Policy(settle_seconds=0.0, absence_authoritative=False, verify_attempts=2,
                  verify_backoff=0.1)  # fmt: skip


class World:
    """The ground truth: which refs were performed, and what verification says."""

    def __init__(self) -> None:
        self.performed: dict[str, int] = {}
        self.answer: dict[str, Verdict] = {}
        """Forced verdicts per ref once it was performed (``Unavailable`` ...)."""
        self.tried: set[str] = set()
        self.perform_error: dict[str, BaseException] = {}
        """Refs whose perform raises this (after committing unless it is NotPerformed)."""
        self.commit: dict[str, bool] = {}
        """Refs whose perform commits nothing (returns as if it had)."""

    def perform(self, ref: str) -> None:
        from actonce import NotPerformed

        self.tried.add(ref)
        error = self.perform_error.get(ref)
        if isinstance(error, NotPerformed):
            raise error
        if self.commit.get(ref, True):
            self.performed[ref] = self.performed.get(ref, 0) + 1
        if error is not None:
            raise error

    def verify(self, ref: str) -> Verdict:
        if ref in self.answer and ref in self.tried:
            return self.answer[ref]
        n = self.performed.get(ref, 0)
        return Confirmed(f"obj-{ref}", count=n) if n else Absent()

    def verifier(self, record: EffectRecord) -> Verdict:
        return self.verify(str(record.data["ref"]))

    def effect(
        self, ref: str, gate: Gate | None, *, kind: str = "post", policy: Policy = PROVEN
    ) -> Effect:
        return Effect(
            key=effect_key(tenant="t", actor="a", kind=kind, object=ref, operation="create"),
            kind=kind,
            payload={"ref": ref},
            perform=lambda: self.perform(ref),
            verify=lambda: self.verify(ref),
            policy=policy,
            gate=gate,
        )


@pytest.fixture
def world() -> World:
    return World()


@pytest.fixture
def clock() -> FrozenClock:
    # Monday 2026-11-30 10:00:00 UTC: inside a day, an hour and a week.
    return FrozenClock(1_796_032_800.0)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(backend: str, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """A factory of stores on one ledger (several are several processes' views)."""
    made: list[Any] = []
    schema = f"actonce_btest_{uuid.uuid4().hex[:10]}"
    dsn = postgres_dsn() if backend == "postgres" else ""
    memory = MemoryStore() if backend == "memory" else None

    def make() -> Any:
        if memory is not None:
            return memory
        if backend == "sqlite":
            store: Any = SQLiteStore(str(tmp_path / "ledger.db"), create=True)
        else:
            from actonce import PostgresStore

            store = PostgresStore(dsn, schema=schema, max_size=4, min_size=0, create=True)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()
    if memory is not None:
        memory.close()
    if backend == "postgres":
        drop_schema(dsn, schema)


@pytest.fixture
def registry(world: World) -> Registry:
    reg = Registry()
    reg.register("post", world.verifier, policy=PROVEN)
    reg.register("doubt", world.verifier, policy=DOUBTFUL)
    return reg


@pytest.fixture
def ledger(
    make_store: Callable[[], Any], clock: FrozenClock, registry: Registry
) -> Iterator[Ledger]:
    with Ledger(make_store(), clock=clock, registry=registry) as led:
        yield led


def unavailable(why: str = "the site is slow") -> Unavailable:
    return Unavailable(why)
