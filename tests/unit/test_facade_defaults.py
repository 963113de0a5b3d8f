"""What the facades do when an argument is left out, and what they hand on.

A listing's default page (receipts 50, effects and packets 100, summaries
20), an answer's ``via``, the operator's owner, the ledger's fingerprint key
in an operation's steps, a reconcile told to telemetry as ``reconcile``, a
server clock that answers asynchronously: each is what a user relies on
without writing it, so each is pinned through the public API, sync and
async alike.
"""

from __future__ import annotations

from typing import Any

import pytest

from actonce import (
    AsyncLedger,
    AsyncOperator,
    Confirmed,
    Effect,
    Hooks,
    Intent,
    Lease,
    LeaseHeld,
    Ledger,
    MemoryStore,
    Operation,
    Policy,
    Registry,
    SigningKeys,
    Step,
    intent_key,
)
from actonce._rules.secrets import FingerprintKey
from actonce.testing import FrozenClock

from .open_effects import left_open

POLICY = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1)
KEYS = SigningKeys((("k1", b"0123456789abcdef0123"),))


def _done(key: str, payload: Any = None) -> Effect:
    made: list[str] = []
    return Effect(key, "step", payload if payload is not None else {}, lambda: made.append(key),
                  lambda: Confirmed() if made else _absent(), policy=POLICY)  # fmt: skip


def _absent() -> Any:
    from actonce import Absent

    return Absent()


def _receipted(n: int) -> tuple[MemoryStore, FrozenClock]:
    store, clock = MemoryStore(), FrozenClock()
    ledger = Ledger(store, clock=clock)
    for i in range(n):
        clock.advance(1)
        Operation(ledger, f"op-{i:03d}", [Step("s", _done(f"k-{i}"), "pivot")]).run()
    return store, clock


async def test_receipts_default_to_a_page_of_fifty_newest_first() -> None:
    store, clock = _receipted(51)
    sync = Ledger(store, clock=clock)
    page = sync.receipts()
    assert len(page) == 50
    assert page[0][0].operation_id == "op-050" and page[-1][0].operation_id == "op-001"
    aledger = AsyncLedger(store, clock=clock)
    assert [r.operation_id for r, _ in await aledger.receipts()] == [
        r.operation_id for r, _ in page
    ]
    await aledger.aclose()


async def test_listings_default_to_a_page_of_one_hundred() -> None:
    clock = FrozenClock()
    store = MemoryStore()
    ledger = Ledger(store, clock=clock, signing_keys=KEYS)
    trip = ledger.intents.put(Intent("trip", "booking", user="ana"))
    for i in range(101):
        clock.advance(1)
        ledger.run(_done(f"e-{i:03d}"))
        ledger.approvals.request(
            trip,
            "book",
            intent_key(trip, f"book-{i}", tenant="t", actor="a"),
            amount="1",
            currency="EUR",
        )
    aledger = AsyncLedger(store, clock=clock, signing_keys=KEYS)
    assert len(ledger.list()) == len(await aledger.list()) == 100
    assert len(ledger.approvals.list()) == len(await aledger.approvals.list()) == 100
    await aledger.aclose()


def test_an_answer_repeated_is_noted_as_given_through_the_api_unless_said() -> None:
    # The accepted answer's event names its channel too (since 74933bf), then
    # the duplicate's, then the one given through the console.
    clock = FrozenClock()
    ledger = Ledger(MemoryStore(), clock=clock, signing_keys=KEYS)
    trip = ledger.intents.put(Intent("trip", "booking", user="ana"))
    one = ledger.approvals.request(
        trip, "book", intent_key(trip, "book", tenant="t", actor="a"), amount="1", currency="EUR"
    )
    packet = one.packet.packet_id
    ledger.approvals.answer(packet, "approve", by="ana")
    ledger.approvals.answer(packet, "approve", by="ana")
    ledger.approvals.answer(packet, "approve", by="ana", via="console")
    vias = [e.data["via"] for e in ledger.approvals.history(packet) if "via" in e.data]
    assert vias == ["api", "api", "console"]


def test_a_lease_held_by_another_says_by_whom() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    first = Lease(ledger, "nightly", owner="w1", ttl=60)
    assert first.acquire()
    with pytest.raises(LeaseHeld) as caught, Lease(ledger, "nightly", owner="w2", ttl=60):
        pass
    assert str(caught.value) == "lease 'nightly' is held by w1"


def test_an_operations_steps_are_fingerprinted_with_the_ledgers_key() -> None:
    key = FingerprintKey("fp1", bytes(range(16)))
    ledger = Ledger(MemoryStore(), clock=FrozenClock(), fingerprint_key=key)
    Operation(ledger, "op", [Step("pay", _done("k-pay", {"password": "hunter2"}), "pivot")]).run()
    record = ledger.get("k-pay")
    assert record is not None and "hunter2" not in record.payload
    assert "fp1" in record.payload  # the redaction carries the key's fingerprint
    plain = Ledger(MemoryStore(), clock=FrozenClock())
    plain.run(_done("k-pay", {"password": "hunter2"}))
    stored = plain.get("k-pay")
    assert stored is not None and "fp1" not in stored.payload


class _Nothing(Hooks[str]):
    def observe(self) -> list[str]:
        return []

    def plan(self, candidate: str) -> Any:
        return None


async def test_an_async_operator_runs_as_the_owner_it_was_given() -> None:
    aledger = AsyncLedger(MemoryStore(), clock=FrozenClock())
    op = AsyncOperator(aledger, "poster", _Nothing(), kinds=("post",), owner="me@host")
    assert op.config.owner == "me@host"
    summary = await op.run()
    assert summary.owner == "me@host"
    await aledger.aclose()


class _Scope:
    def __init__(self, seen: list[str], operation: str) -> None:
        seen.append(operation)

    def traceparent(self) -> str | None:
        return None

    def step(self, name: str, attributes: dict[str, Any]) -> Any:
        return None

    def step_end(self, handle: Any, attributes: dict[str, Any], error: Any) -> None:
        return None

    def end(self, result: Any, error: Any) -> None:
        return None


class _Telemetry:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def begin(self, run: Any) -> _Scope:
        return _Scope(self.seen, run.operation)


async def test_a_reconcile_is_told_to_telemetry_as_a_reconcile_sync_and_async() -> None:
    for kind in ("sync", "async"):
        clock, store = FrozenClock(), MemoryStore()
        left_open(Ledger(store, clock=clock))
        clock.advance(3600)
        registry = Registry()
        registry.register("post", lambda record: Confirmed())
        telemetry = _Telemetry()
        if kind == "sync":
            ledger = Ledger(store, clock=clock, registry=registry)
            ledger.telemetry = telemetry
            report = ledger.reconcile()
        else:
            aledger = AsyncLedger(store, clock=clock, registry=registry)
            aledger.telemetry = telemetry
            report = await aledger.reconcile()
            await aledger.aclose()
        assert [r.status.value for r in report.results if r.status] == ["confirmed"], kind
        assert telemetry.seen == ["reconcile"], kind


class _AsyncServerStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def server_time(self) -> float:
        self.reads += 1
        return 2_000_000_000.0


async def test_an_async_ledger_awaits_a_server_clock_that_answers_asynchronously() -> None:
    store = _AsyncServerStore()
    aledger = AsyncLedger(store)
    await aledger.run(_done("p1"))
    record = await aledger.get("p1")
    assert store.reads == 1
    assert record is not None and 2_000_000_000.0 <= record.created_at < 2_000_000_060.0
    await aledger.aclose()


async def test_an_intent_withdrawn_through_either_facade_keeps_who_and_why() -> None:
    histories = []
    for kind in ("sync", "async"):
        store, clock = MemoryStore(), FrozenClock()
        Ledger(store, clock=clock).intents.put(Intent("gift", "purchase", user="bo"))
        if kind == "sync":
            Ledger(store, clock=clock).intents.withdraw("gift", by="bo", reason="bought elsewhere")
        else:
            aledger = AsyncLedger(store, clock=clock)
            await aledger.intents.withdraw("gift", by="bo", reason="bought elsewhere")
        events = Ledger(store, clock=clock).intents.history("gift")
        histories.append([(e.type, e.message, e.data) for e in events])
    assert histories[0] == histories[1]
    assert histories[0][-1][1] == "gift@v1 withdrawn by bo: bought elsewhere"
