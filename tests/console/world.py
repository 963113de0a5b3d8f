"""A real ledger with effects in every state, for the console's tests.

Every effect is made the way production makes one: ``Ledger.run`` against
``actonce.testing.FakeProvider`` (faults scripted, crash points armed for
the states a crash leaves behind), then ``Ledger.resolve`` for a human
decision. The unknown invoice has an evidence folder with a real PNG, the
page's HTML, ``meta.json`` and ``wire.json``. Secret canaries are planted
where a careless page would show them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import struct
import zlib
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from actonce import (
    Approvals,
    Clock,
    Effect,
    EffectRecord,
    Fact,
    Gate,
    Intent,
    Ledger,
    NotPerformed,
    Operation,
    OperationState,
    Policy,
    Registry,
    SigningKeys,
    Status,
    Step,
    Verdict,
    effect_key,
    intent_key,
)
from actonce.console import Reviewers, hash_password
from actonce.testing import FakeProvider, SimulatedCrash, crash_at

KEYS = SigningKeys((("k1", b"console-test-key" * 2),))
PASSWORDS = {"ana": "ana-password-1", "bo": "bo-password-22", "carol": "carol-password-3"}
#: Strings that must never appear on any page the console serves.
CANARIES = (
    "CANARY-PASSWORD-1",
    "CANARY-APIKEY-2",
    "CANARY-URLTOKEN-3",
    "CANARY-BEARER-4",
    "CANARY-WIRE-5",
    "CANARY-META-6",
    "CANARY-HTML-7",
    "CANARY-DETAIL-8",
    "CANARY-REASON-9",
    "CANARY-CARD-10",
)


def png(width: int = 320, height: int = 200) -> bytes:
    """A real PNG image (stripes), made by hand: no image library needed."""
    rows = b"".join(
        b"\x00" + b"".join(bytes((40 + x // 2, 90 + y // 2, 200)) for x in range(width))
        for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def write_evidence(folder: Path) -> str:
    """An evidence folder as the browser adapter writes one (with canaries inside)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "screenshot.png").write_bytes(png())
    (folder / "page.html").write_text(
        "<html><body><h1>Invoice form</h1><p>Submitting…</p>"
        '<a href="https://billing.example/next?token=CANARY-HTML-7">next</a></body></html>',
        encoding="utf-8",
    )
    meta = {
        "label": "invoice-perform-error",
        "url": "https://billing.example/invoices/new?session=CANARY-META-6",
        "actor": "billing-bot",
        "captured_at": 1_700_000_000.0,
    }
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    wire = {
        "wire": [
            {
                "method": "POST",
                "url": "https://billing.example/api/invoices?api_key=CANARY-WIRE-5",
                "at": 0.012,
                "outcome": "connection closed without a response",
                "took": 2.5,
            }
        ],
        "sent": 1,
        "refused": 0,
    }
    (folder / "wire.json").write_text(json.dumps(wire), encoding="utf-8")
    return str(folder)


@functools.cache
def _hashes() -> dict[str, str]:
    # scrypt is slow on purpose: hash the test passwords once per process.
    return {n: hash_password(p) for n, p in PASSWORDS.items()}


@dataclass
class World:
    """The ledger, its provider, and the keys of the interesting effects."""

    ledger: Ledger
    provider: FakeProvider
    registry: Registry
    root: Path
    keys: dict[str, str] = field(default_factory=dict)
    packets: dict[str, str] = field(default_factory=dict)
    operations: dict[str, str] = field(default_factory=dict)
    runs: dict[str, Operation] = field(default_factory=dict)  # operations with their callables
    refused: set[str] = field(default_factory=set)  # what the provider refuses now

    def reviewers(self) -> Reviewers:
        return Reviewers(_hashes())

    def close(self) -> None:
        self.ledger.close()
        self.provider.close()


def invoice(provider: FakeProvider, ref: str, amount: str = "120.00", **kw: object) -> Effect:
    payload = {"reference": ref, "amount": amount, "currency": "EUR"}
    payload.update(kw.pop("extra", {}))  # type: ignore[call-overload]
    return Effect(
        key=effect_key(
            tenant="acme", actor="billing-bot", kind="invoice", object=ref, operation="create"
        ),
        kind="invoice",
        payload=payload,
        perform=lambda: provider.submit(ref, payload),
        verify=lambda: provider.lookup(ref),
        **kw,  # type: ignore[arg-type]
    )


QUICK = Policy(settle_seconds=0.0, verify_attempts=1, verify_backoff=0.0)
SLOW_SETTLE = Policy(settle_seconds=600.0, verify_attempts=1, verify_backoff=0.0)


def build(root: Path, *, evidence_root: Path | None = None, clock: Clock | None = None) -> World:
    """Make the world under ``root`` (on ``clock``: the system's unless given)."""
    registry = Registry()
    ledger = Ledger.open(
        str(root / "ledger.db"), create=True, registry=registry, signing_keys=KEYS, clock=clock
    )
    provider = FakeProvider(str(root / "provider.db"))
    world = World(ledger, provider, registry, root)

    def verifier(record: EffectRecord) -> Verdict:
        return provider.lookup(str(record.data["reference"]))

    registry.register("invoice", verifier, policy=QUICK)
    k = world.keys

    done = invoice(provider, "ORDER-9100", policy=QUICK)
    ledger.run(done)
    k["confirmed"] = str(done.key)

    # The response is lost after the provider committed, and the result stays
    # invisible: unknown, with the evidence of the failed perform.
    provider.faults.lose_response = 1.0
    provider.faults.visibility_delay = 1e9
    folder = (evidence_root or root / "evidence") / "001-invoice-perform-error"
    lost = invoice(
        provider,
        "ORDER-9201",
        policy=SLOW_SETTLE,
        evidence=lambda label: write_evidence(folder),
    )
    assert ledger.run(lost).status is Status.UNKNOWN
    provider.faults.lose_response = 0.0
    provider.faults.visibility_delay = 0.0
    k["unknown"] = str(lost.key)

    provider.faults.fail_before_commit = 1.0
    review = invoice(provider, "ORDER-9202", amount="75.50", policy=QUICK)
    assert ledger.run(review).status is Status.NEEDS_REVIEW
    k["needs_review"] = str(review.key)

    absent = invoice(
        provider, "ORDER-9204", policy=Policy(settle_seconds=0.0, absence_authoritative=True,
                                             verify_attempts=1)
    )  # fmt: skip
    assert ledger.run(absent).status is Status.FAILED
    k["failed"] = str(absent.key)

    gone = invoice(provider, "ORDER-9205", policy=QUICK)
    ledger.run(gone)
    ledger.resolve(
        str(gone.key),
        "abandon",
        reviewer="bo",
        reason="customer cancelled; wrote password=CANARY-REASON-9",
    )
    k["abandoned"] = str(gone.key)
    provider.faults.fail_before_commit = 0.0

    # Two objects at the provider before anyone ran: a duplicate detected.
    provider.submit("ORDER-9203")
    provider.submit("ORDER-9203")
    twice = invoice(provider, "ORDER-9203", policy=QUICK)
    assert ledger.run(twice).status is Status.NEEDS_REVIEW
    k["duplicate"] = str(twice.key)

    for name, point in (("claimed", "after_claim"), ("executing", "after_mark_executing")):
        stuck = invoice(provider, f"ORDER-93{len(k):02d}", policy=QUICK)
        with crash_at(point), contextlib.suppress(SimulatedCrash):
            ledger.run(stuck)
        k[name] = str(stuck.key)

    # Secrets a page must never show: some redacted at rest by the core, some
    # only scrubbed on the way out (a token in a URL, a bearer in a note).
    provider.faults.fail_before_commit = 1.0
    canary = invoice(
        provider,
        "ORDER-9400",
        policy=QUICK,
        extra={
            "password": "CANARY-PASSWORD-1",
            "api_key": "CANARY-APIKEY-2",
            "callback": "https://hooks.example/cb?token=CANARY-URLTOKEN-3",
            "note": "Authorization: Bearer CANARY-BEARER-4",
        },
    )
    assert ledger.run(canary).status is Status.NEEDS_REVIEW
    provider.faults.fail_before_commit = 0.0
    k["canary"] = str(canary.key)

    _approvals(world)
    _operation(world)
    _booking_in_review(world)
    return world


def _operation(world: World) -> None:
    """A two-step operation that completed and wrote its receipt."""
    provider, k = world.provider, world.keys
    hold = invoice(
        provider,
        "TRIP-77-HOLD",
        amount="10.00",
        policy=QUICK,
        extra={"card_number": "CANARY-CARD-10"},
    )
    release = invoice(provider, "TRIP-77-RELEASE", amount="0.00", policy=QUICK)
    book = invoice(provider, "TRIP-77-BOOK", amount="240.00", policy=QUICK)
    op = Operation(world.ledger, "trip-77", [
        Step("hold", hold, "compensatable", undo=release),
        Step("book", book, "pivot"),
    ])  # fmt: skip
    assert op.run().state is OperationState.COMPLETE
    world.operations["complete"] = "trip-77"
    k["step"] = str(book.key)


def _booking_in_review(world: World) -> None:
    """A booking stopped at the void its provider refused: 240.00 EUR held, no booking."""
    ledger, provider = world.ledger, world.provider
    intent = ledger.intents.put(
        Intent("trip-b3", "booking", user="bo", provider="Harbor Hotel", items=("double room",),
               when="2030-05-01", price_ceiling=Decimal("250"), currency="EUR")
    )  # fmt: skip
    world.refused.update({"book", "void"})

    def step(name: str, gate: Gate | None = None) -> Effect:
        def perform() -> None:
            if name in world.refused:
                raise NotPerformed(f"the provider refused the {name}")
            provider.submit(f"TRIP-B3-{name.upper()}")

        return Effect(
            intent_key(intent, name, tenant="acme", actor="bo"), name,
            {"trip": "trip-b3", "step": name}, perform,
            lambda: provider.lookup(f"TRIP-B3-{name.upper()}"), policy=QUICK, gate=gate,
        )  # fmt: skip

    pay_key = intent_key(intent, "pay", tenant="acme", actor="bo")
    asked = ledger.approvals.request(intent, "pay", pay_key, amount="240.00",
                                     terms="free cancellation until 48 h before check-in")  # fmt: skip
    ledger.approvals.answer(asked.packet.packet_id, "approve", by="bo")
    op = Operation(ledger, "booking:trip-b3@v1", [
        Step("hold", step("hold"), "compensatable", undo=step("release")),
        Step("pay", step("pay", Gate(intent.ref, asked.packet.packet_id, Decimal("240.00"))),
             "compensatable", undo=step("void")),
        Step("book", step("book"), "pivot"),
        Step("notify", step("notify"), "retriable"),
    ], intent=intent.ref, approval=asked.packet.packet_id,
       contact="trips@agent.example")  # fmt: skip
    assert op.run().state is OperationState.NEEDS_REVIEW
    world.operations["review"] = op.op_id
    world.runs[op.op_id] = op
    world.keys["pay"] = str(pay_key)


def _approvals(world: World) -> None:
    ledger, provider, clock = world.ledger, world.provider, world.ledger.clock
    trip = ledger.intents.put(
        Intent("trip-paris", "booking", user="ana", provider="Hotel Adlon",
               when="2026-12-01", price_ceiling=Decimal("120"), currency="EUR")
    )  # fmt: skip
    stay = Effect(
        key=effect_key(tenant="ana", actor="ana-agent", kind="book", object="trip-paris",
                       operation="commit", intent_version=1),
        kind="book",
        payload={"hotel": "Hotel Adlon", "amount": "110", "currency": "EUR"},
        perform=lambda: provider.submit("BOOK-1"),
        verify=lambda: provider.lookup("BOOK-1"),
        policy=QUICK,
    )  # fmt: skip
    asked = ledger.approvals.request(
        trip, "book", stay.key, destination="Hotel Adlon", amount="110", currency="EUR",
        details={"date": "2026-12-01", "voucher": "https://v.example/?token=CANARY-DETAIL-8"},
        terms="free cancellation until 2026-11-28",
        facts=[Fact("price", "110", observed_at=clock.now(), source="https://hotel.example/rates")],
    )  # fmt: skip
    first = asked.packet.packet_id
    ledger.approvals.answer(first, "approve", by="ana")
    ledger.approvals.answer(first, "approve", by="ana")  # delivered twice
    provider.faults.fail_before_commit = 1.0
    ledger.run(Effect(**{**_fields(stay), "gate": Approvals.gate(asked.packet)}))
    provider.faults.fail_before_commit = 0.0
    world.keys["gated"] = str(stay.key)
    world.packets["approved"] = first

    for user, what in (("ana", "dinner"), ("carol", "flowers")):
        intent = ledger.intents.put(
            Intent(f"{what}-1", "purchase", user=user, provider="Shop",
                   price_ceiling=Decimal("50"), currency="EUR")
        )  # fmt: skip
        key = effect_key(tenant=user, actor=f"{user}-agent", kind="buy", object=f"{what}-1",
                         operation="commit", intent_version=1)  # fmt: skip
        old = Fact("price", "42", observed_at=clock.now() - 3600)  # stale by now
        req = ledger.approvals.request(
            intent, "buy", key, destination="Shop", amount="42", currency="EUR",
            details={"item": what}, facts=[old],
        )  # fmt: skip
        world.packets[f"pending-{user}"] = req.packet.packet_id


def _fields(effect: Effect) -> dict[str, object]:
    return {name: getattr(effect, name) for name in Effect.__dataclass_fields__}


__all__ = ["CANARIES", "KEYS", "PASSWORDS", "World", "build", "png", "write_evidence"]
