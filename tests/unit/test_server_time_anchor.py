"""A ledger whose store tells the server's time counts on that time (issue 23 item 2,
the facades area): the first run, reconcile or operator run anchors the system clock to
it, and again once a minute (``ANCHOR_EVERY``); a clock given by the caller is never
anchored. A memory store that answers ``server_time`` (as PostgreSQL's does).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from actonce import (
    AsyncLedger,
    Confirmed,
    Effect,
    Hooks,
    Ledger,
    MemoryStore,
    Operator,
    SystemClock,
)
from actonce._ledger_base import ANCHOR_EVERY
from actonce.testing import FrozenClock

SERVER = 2_000_000_000.0


class ServerStore(MemoryStore):
    def __init__(self, value: Any = SERVER) -> None:
        super().__init__()
        self.asked = 0
        self.value = value

    def server_time(self) -> Any:
        self.asked += 1
        return self.value


def _effect() -> Effect:
    return Effect(key="k", kind="pin", payload={}, perform=lambda: None,
                  verify=lambda: Confirmed("x"))  # fmt: skip


def _near(clock: Any, value: float, since: float) -> bool:
    return value <= clock.now() <= value + (time.monotonic() - since) + 1e-6


class Nothing(Hooks[str]):
    def observe(self) -> list[str]:
        return []

    def plan(self, candidate: str) -> Any:
        return None


def test_a_run_anchors_the_clock_to_the_server_once_a_minute() -> None:
    store = ServerStore()
    ledger = Ledger(store)
    assert isinstance(ledger.clock, SystemClock) and ledger.clock.anchored_for() is None
    assert store.asked == 0  # nothing asked before the first run
    since = time.monotonic()
    ledger.run(_effect())
    assert store.asked == 1 and _near(ledger.clock, SERVER, since)
    ledger.reconcile()
    Operator(ledger, "ops", Nothing(), kinds=("pin",)).run()
    assert store.asked == 1  # anchored less than a minute ago
    ledger.clock.anchor(SERVER, mono=time.monotonic() - ANCHOR_EVERY)  # a minute ago
    store.value = SERVER + 100.0
    since = time.monotonic()
    ledger.reconcile()
    assert store.asked == 2 and _near(ledger.clock, SERVER + 100.0, since)
    ledger.clock.anchor(SERVER, mono=time.monotonic() - ANCHOR_EVERY)
    Operator(ledger, "ops", Nothing(), kinds=("pin",)).run()
    assert store.asked == 3
    assert ANCHOR_EVERY == 60.0


def test_a_clock_given_is_never_anchored() -> None:
    store = ServerStore()
    clock = FrozenClock(start=5.0)
    ledger = Ledger(store, clock=clock)
    ledger.run(_effect())
    ledger.reconcile()
    assert store.asked == 0 and clock.now() == 5.0
    own = SystemClock()
    Ledger(store, clock=own).run(_effect())
    assert store.asked == 0 and own.anchored_for() is None


def test_an_async_ledger_anchors_on_an_awaited_or_plain_server_time() -> None:
    class AsyncServer(ServerStore):
        def server_time(self) -> Any:
            self.asked += 1

            async def value() -> float:
                return SERVER + 7.0

            return value()

    async def main(store: ServerStore) -> tuple[Any, float]:
        ledger = AsyncLedger(store)
        since = time.monotonic()
        await ledger.run(_effect())
        await ledger.reconcile()
        return ledger.clock, since

    plain = ServerStore()
    clock, since = asyncio.run(main(plain))
    assert plain.asked == 1 and _near(clock, SERVER, since)
    awaited = AsyncServer()
    clock, since = asyncio.run(main(awaited))
    assert awaited.asked == 1 and _near(clock, SERVER + 7.0, since)
