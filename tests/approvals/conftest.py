"""A purchase/booking world over every backend: memory, SQLite, PostgreSQL.

``world`` is a ledger on a frozen clock, a fake provider (its ground truth:
what was accepted, for which packet and amount) and the volatile facts a
refresher reads (price, session, availability), which a test changes the way
the world would. Everything goes through the public API.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from actonce import (
    ApprovalRequest,
    Approvals,
    Effect,
    EffectKey,
    Fact,
    Intent,
    Ledger,
    MemoryStore,
    Packet,
    Policy,
    SigningKeys,
    SQLiteStore,
    intent_key,
)
from actonce.testing import FakeProvider, FrozenClock
from pgtest import drop_schema, postgres_dsn

#: The signing key of every test ledger (a canary: it must never reach the ledger).
KEY_HEX = "c0ffee5ec2e7" * 4
KEYS = SigningKeys((("k1", bytes.fromhex(KEY_HEX)),))
OTHER_KEYS = SigningKeys((("k1", bytes.fromhex("0badc0de" * 6)),))

POLICY = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1, verify_backoff=0)


@dataclass
class World:
    """A ledger, its clock, a provider, and the facts a refresher reads."""

    ledger: Ledger
    clock: FrozenClock
    provider: FakeProvider
    backend: str
    facts: dict[str, Any] = field(
        default_factory=lambda: {"price": "110", "session": True, "availability": True}
    )

    def intent(self, intent_id: str = "trip", **fields: Any) -> Intent:
        base: dict[str, Any] = {
            "user": "ana",
            "provider": "Hotel Ibis",
            "items": ("double room",),
            "quantity": 1,
            "when": "2026-12-24",
            "price_ceiling": Decimal("120"),
            "currency": "EUR",
        }
        base.update(fields)
        return self.ledger.intents.put(Intent(intent_id, "booking", **base))

    @staticmethod
    def key(intent: Intent, action: str = "book") -> EffectKey:
        return intent_key(intent, action, tenant="t1", actor="agent")

    def request(self, intent: Intent, amount: str | None = "110", **kw: Any) -> ApprovalRequest:
        kw.setdefault("details", {"date": intent.when, "item": intent.items[0]})
        kw.setdefault("facts", [Fact("price", self.facts["price"], self.clock.now())])
        return self.ledger.approvals.request(intent, "book", self.key(intent), amount=amount, **kw)

    def approved(self, intent_id: str = "trip", **request: Any) -> tuple[Intent, Packet]:
        """An intent and its approval packet, approved by ana."""
        trip = self.intent(intent_id)
        req = self.request(trip, **request)
        self.ledger.approvals.answer(req.packet.packet_id, "approve", by="ana")
        return trip, self.ledger.approvals.get(req.packet.packet_id)

    def refresher(self) -> Callable[[], list[Fact]]:
        def refresh() -> list[Fact]:
            now = self.clock.now()
            return [Fact(name, value, now) for name, value in self.facts.items()]

        return refresh

    def effect(
        self,
        intent: Intent,
        packet: Packet | str,
        *,
        refresh: bool = True,
        policy: Policy = POLICY,
        gate_intent: Intent | None = None,
        perform: Callable[[], Any] | None = None,
    ) -> Effect:
        """The booking of ``intent``'s version under the approval ``packet``."""
        ref = str(intent.ref)
        packet_id = packet if isinstance(packet, str) else packet.packet_id
        shown = self.ledger.approvals.get(packet_id)
        gate = Approvals.gate(shown)
        if gate_intent is not None:
            from dataclasses import replace

            gate = replace(gate, intent=gate_intent.ref)

        def book() -> str:
            # The provider records what it charged and under which approval.
            return self.provider.submit(
                ref, {"packet": packet_id, "amount": str(self.facts["price"])}
            )

        return Effect(
            key=self.key(intent),
            kind="book",
            payload={"intent": intent.intent_id, "version": intent.version},
            perform=perform or book,
            verify=lambda: self.provider.lookup(ref),
            gate=gate,
            refresh=self.refresher() if refresh else None,
            policy=policy,
        )

    def approval_events(self, packet_id: str) -> list[str]:
        return [e.type.value for e in self.ledger.approvals.history(packet_id)]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def pg_schema() -> Iterator[tuple[str, str]]:
    """(dsn, schema): a fresh schema on the test server, dropped afterwards."""
    dsn = postgres_dsn()
    schema = f"actonce_apv_{uuid.uuid4().hex[:10]}"
    try:
        yield dsn, schema
    finally:
        drop_schema(dsn, schema)


def make_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    if backend == "memory":
        return MemoryStore()
    if backend == "sqlite":
        return SQLiteStore(str(tmp_path / "ledger.db"), create=True)
    from actonce import PostgresStore

    dsn, schema = request.getfixturevalue("pg_schema")
    return PostgresStore(dsn, schema=schema, max_size=8, create=True)


@pytest.fixture
def world(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[World]:
    clock = FrozenClock()
    store = make_store(backend, tmp_path, request)
    provider = FakeProvider(clock=clock)
    ledger = Ledger(store, clock=clock, signing_keys=KEYS)
    try:
        yield World(ledger, clock, provider, backend)
    finally:
        ledger.close()
        provider.close()


@pytest.fixture
def mem_world() -> Iterator[World]:
    """The world on the memory store only (for tests that need no second backend)."""
    clock = FrozenClock()
    provider = FakeProvider(clock=clock)
    ledger = Ledger(MemoryStore(), clock=clock, signing_keys=KEYS)
    try:
        yield World(ledger, clock, provider, "memory")
    finally:
        ledger.close()
        provider.close()
