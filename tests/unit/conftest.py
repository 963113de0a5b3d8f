"""Fixtures for the unit tests: stores, clocks, providers and a ledger facade.

``ledger`` is parametrized twice: over the store (memory, a real SQLite file)
and over the driver (``Ledger`` and ``AsyncLedger``). The facade gives both
drivers the same synchronous face so that one scenario runs four ways.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actonce import AsyncLedger, Effect, Ledger, Policy, Registry, RunResult, SQLiteStore, Store
from actonce.testing import FakeProvider, FrozenClock, MemoryStore

#: The policy the registry uses for the fake provider's kind in reconcile.
RECONCILE_POLICY = Policy(settle_seconds=5.0, verify_attempts=1)


def make_store(kind: str, tmp_path: Path) -> Store:
    if kind == "memory":
        return MemoryStore()
    return SQLiteStore(str(tmp_path / "ledger.db"), create=True)


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(store_kind: str, tmp_path: Path) -> Iterator[Store]:
    s = make_store(store_kind, tmp_path)
    yield s
    s.close()


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock()


@pytest.fixture
def provider(clock: FrozenClock) -> Iterator[FakeProvider]:
    p = FakeProvider(clock=clock)
    yield p
    p.close()


@pytest.fixture
def registry(provider: FakeProvider) -> Registry:
    reg = Registry()
    reg.register("fake", provider.verifier, policy=RECONCILE_POLICY)
    return reg


class Facade:
    """``Ledger`` or ``AsyncLedger`` behind the same synchronous methods."""

    def __init__(self, inner: Ledger | AsyncLedger) -> None:
        self.inner = inner
        self.is_async = isinstance(inner, AsyncLedger)
        self._loop = asyncio.new_event_loop() if self.is_async else None

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        result = getattr(self.inner, name)(*args, **kwargs)
        if self._loop is not None:
            return self._loop.run_until_complete(result)
        return result

    def run(self, effect: Effect, **kwargs: Any) -> RunResult:
        result: RunResult = self._call("run", effect, **kwargs)
        return result

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self._call(name, *args, **kwargs)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.run_until_complete(self.inner.aclose())  # type: ignore[union-attr]
            self._loop.close()
        else:
            self.inner.close()  # type: ignore[union-attr]


@pytest.fixture(params=["sync", "async"])
def ledger(
    request: pytest.FixtureRequest, store: Store, clock: FrozenClock, registry: Registry
) -> Iterator[Facade]:
    cls = Ledger if request.param == "sync" else AsyncLedger
    facade = Facade(cls(store, clock=clock, registry=registry))
    yield facade
    facade.close()


@pytest.fixture
def fresh_secret_rules() -> Iterator[None]:
    """The secret rules' caches emptied before and after a test.

    The name rule and the stored-text rules remember their answers
    (``lru_cache``): without this, a test would judge what an earlier test
    left in the cache, not the rules; under mutmut, whose forked run of a
    mutant inherits the caches of its clean run, a mutant of a cached rule
    would survive every test that asks what the clean run asked.
    """
    from actonce._rules import scrub, secrets

    def clear() -> None:
        secrets._is_secret_name.cache_clear()
        scrub._maybe_short.cache_clear()
        scrub._scrub_cached.cache_clear()

    clear()
    yield
    clear()
