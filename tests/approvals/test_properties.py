"""Property: no sequence of moves lets a commit exceed what was approved.

A Hypothesis state machine plays the user, the agent and the world against
one ledger: revise the intent (material or cosmetic), ask for approvals,
answer them (either user, on any carrier, forged or not), move the price,
the session and the availability, commit (with or without a refresh, under
any packet, even one of an older version), crash a commit at any point, let
time pass, reconcile. The perform itself checks, at the moment it crosses the
boundary, that the commit is authorized; the ground truth is checked after
every step:

- no commit runs with an amount above its packet's approved ceiling;
- no commit runs on a superseded intent version, or under a packet its user
  did not approve, or under a packet held by another effect;
- no approval is used by two accepted effects, no effect key is accepted
  twice (the provider never holds a duplicate).
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from actonce import (
    Approvals,
    ApprovalStatus,
    Effect,
    Intent,
    Ledger,
    MemoryStore,
    Policy,
    Registry,
    intent_key,
)
from actonce.testing import FakeProvider, Faults, FrozenClock, SimulatedCrash, crash_at

from .conftest import KEYS
from .test_tampering import forge

USERS = ("ana", "bob")
CARRIERS = ("api", "link", "code", "forged-link", "wrong-code")
POINTS = ("after_claim", "after_mark_executing", "provider_committed", "after_perform")
#: Prices around the ceilings that matter (120 and a little above), not only small ones.
PRICES = st.sampled_from(["50", "110", "119.99", "120", "120.01", "125", "135", "150", "170"]).map(
    Decimal
)
POLICY = Policy(
    settle_seconds=0, absence_authoritative=True, verify_attempts=1, verify_backoff=0,
    lease_seconds=30,
)  # fmt: skip

#: Examples run by the last machine run, for the report (see the test below).
RUNS: dict[str, int] = {"examples": 0, "steps": 0, "commits": 0, "performs": 0}


class Booking(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FrozenClock()
        self.provider = FakeProvider(clock=self.clock)
        self.registry = Registry()
        self.registry.register("book", self._verifier)
        self.ledger = Ledger(
            MemoryStore(), clock=self.clock, registry=self.registry, signing_keys=KEYS
        )
        self.ledger.intents.put(
            Intent("trip", "booking", user="ana", provider="Hotel", when="2026-12-24",
                   price_ceiling=Decimal(120), currency="EUR")
        )  # fmt: skip
        self.price = Decimal(110)
        self.session = True
        self.available = True
        self.carriers: dict[str, tuple[str, str]] = {}  # packet id -> (link, code)
        self.violations: list[str] = []
        self.performed: list[tuple[str, str]] = []  # (packet id, effect key) per perform
        RUNS["examples"] += 1

    def teardown(self) -> None:
        self.ledger.close()
        self.provider.close()

    # --- helpers ------------------------------------------------------------------------

    def _verifier(self, record: Any) -> Any:
        return self.provider.lookup(record.key)

    def _packets(self) -> list[str]:
        return [p.packet_id for p in self.ledger.approvals.list(limit=10_000)]

    def _pick(self, index: int) -> str | None:
        packets = self._packets()
        return packets[index % len(packets)] if packets else None

    def _effect(self, packet_id: str, *, refresh: bool, cross: bool) -> Effect:
        packet = self.ledger.approvals.get(packet_id)
        ref = packet.intent
        gate = Approvals.gate(packet)
        if cross:  # present the packet for the current version, whatever it was made for
            ref = self.ledger.intents.get("trip").ref
            gate = replace(gate, intent=ref)
        key = intent_key(ref, "book", tenant="t", actor="agent")
        amount = packet.amount

        def perform() -> str:
            charged = self.price if refresh else amount
            self._check(packet_id, key.value, ref.version, charged)
            self.performed.append((packet_id, key.value))
            RUNS["performs"] += 1
            return self.provider.submit(key.value, {"packet": packet_id, "amount": str(charged)})

        def facts() -> dict[str, Any]:
            return {"price": str(self.price), "session": self.session,
                    "availability": self.available}  # fmt: skip

        return Effect(
            key=key,
            kind="book",
            payload={"version": ref.version},
            perform=perform,
            verify=lambda: self.provider.lookup(key.value),
            gate=gate,
            refresh=facts if refresh else None,
            policy=POLICY,
        )

    def _check(self, packet_id: str, key: str, version: int, charged: Decimal | None) -> None:
        """At the boundary: is this commit authorized, exactly?"""
        packet = self.ledger.approvals.get(packet_id)
        current = self.ledger.intents.get("trip").version
        problems = []
        if packet.status is not ApprovalStatus.HELD or packet.held_by != key:
            problems.append(f"packet {packet.status.value}, held by {packet.held_by}")
        if packet.decided_by != packet.user:
            problems.append(f"approved by {packet.decided_by}, not {packet.user}")
        if version != current or packet.intent.version != current:
            problems.append(
                f"commit of v{version} (packet v{packet.intent.version}), v{current} current"
            )
        if packet.effect_key != key:
            problems.append("packet for another effect")
        if charged is not None and packet.ceiling is not None and charged > packet.ceiling:
            problems.append(f"charged {charged} above the approved {packet.ceiling}")
        if problems:
            self.violations.append(f"{packet_id}: " + "; ".join(problems))

    # --- the user ---------------------------------------------------------------------------

    @rule(material=st.booleans(), day=st.integers(1, 28))
    def revise(self, material: bool, day: int) -> None:
        if material:
            self.ledger.intents.revise("trip", when=f"2027-01-{day:02d}")
        else:
            self.ledger.intents.revise("trip", notes={"day": day})

    @rule(
        index=st.integers(0, 1000),
        decision=st.sampled_from(["approve", "deny"]),
        user=st.sampled_from(USERS),
        carrier=st.sampled_from(CARRIERS),
    )
    def answer(self, index: int, decision: str, user: str, carrier: str) -> None:
        pid = self._pick(index)
        if pid is None:
            return
        ap = self.ledger.approvals
        link, code = self.carriers.get(pid, (ap.link(pid), ""))
        if carrier == "api":
            ap.answer(pid, decision, by=user)
        elif carrier == "link":
            ap.answer_link(link, decision, by=user)
        elif carrier == "forged-link":
            ap.answer_link(forge(link, 5, "9999"), decision, by=user)
        elif carrier == "code" and code:
            ap.answer_code(code, decision, by=user)
        else:
            ap.answer_code("WRONG234", decision, by=user)

    @rule(index=st.integers(0, 1000), carrier=st.sampled_from(["api", "link", "code"]))
    def user_approves(self, index: int, carrier: str) -> None:
        # The common case, so that runs reach the boundary (answer() covers every other).
        self.answer(index, "approve", "ana", carrier)

    # --- the agent ----------------------------------------------------------------------------

    @initialize()
    def first_packet(self) -> None:
        self.request(Decimal(110), 0, 3600.0)

    @rule(
        amount=PRICES,
        raise_ceiling=st.integers(0, 30),
        ttl=st.sampled_from([60.0, 3600.0]),
    )
    def request(self, amount: Decimal, raise_ceiling: int, ttl: float) -> None:
        trip = self.ledger.intents.get("trip")
        key = intent_key(trip, "book", tenant="t", actor="agent")
        ceiling = max(amount, Decimal(120)) + raise_ceiling
        from actonce import Fact

        req = self.ledger.approvals.request(
            trip, "book", key, amount=amount, ceiling=ceiling, ttl=ttl,
            facts=[Fact("price", str(self.price), self.clock.now())],
        )  # fmt: skip
        self.carriers[req.packet.packet_id] = (req.link, req.code)

    @rule(index=st.integers(0, 1000))
    def resend(self, index: int) -> None:
        pid = self._pick(index)
        if pid is not None and self.ledger.approvals.get(pid).status is ApprovalStatus.PENDING:
            again = self.ledger.approvals.resend(pid)
            self.carriers[pid] = (again.link, again.code)

    @rule(index=st.integers(0, 1000), refresh=st.booleans(), cross=st.booleans())
    def commit(self, index: int, refresh: bool, cross: bool) -> None:
        pid = self._pick(index)
        if pid is None:
            return
        RUNS["commits"] += 1
        self.ledger.run(self._effect(pid, refresh=refresh, cross=cross))

    @rule(index=st.integers(0, 1000), refresh=st.booleans(), cross=st.booleans())
    def commit_approved(self, index: int, refresh: bool, cross: bool) -> None:
        # The agent commits under an approved packet (commit() tries any packet).
        approved = self.ledger.approvals.list(ApprovalStatus.APPROVED, limit=10_000)
        if approved:
            RUNS["commits"] += 1
            pid = approved[index % len(approved)].packet_id
            self.ledger.run(self._effect(pid, refresh=refresh, cross=cross))

    @rule(index=st.integers(0, 1000), point=st.sampled_from(POINTS))
    def commit_and_crash(self, index: int, point: str) -> None:
        pid = self._pick(index)
        if pid is None:
            return
        RUNS["commits"] += 1
        try:
            with crash_at(point):
                self.ledger.run(self._effect(pid, refresh=True, cross=False))
        except SimulatedCrash:
            pass

    @rule()
    def reconcile(self) -> None:
        self.ledger.reconcile()

    # --- the world --------------------------------------------------------------------------

    @rule(price=PRICES)
    def move_price(self, price: Decimal) -> None:
        self.price = price

    @rule(
        session=st.sampled_from([True, True, False]),
        available=st.sampled_from([True, True, False]),
    )
    def flip(self, session: bool, available: bool) -> None:
        self.session, self.available = session, available

    @rule(fault=st.sampled_from(["fail_before_commit", "lose_response", None]))
    def provider_fault(self, fault: str | None) -> None:
        self.provider.faults = Faults(script=[fault])

    @rule(seconds=st.sampled_from([1.0, 45.0, 301.0, 3601.0]))
    def wait(self, seconds: float) -> None:
        self.clock.sleep(seconds)

    # --- what must hold after every step ------------------------------------------------------

    @invariant()
    def every_commit_was_authorized(self) -> None:
        RUNS["steps"] += 1
        assert not self.violations, self.violations

    @invariant()
    def one_accepted_effect_per_key_and_per_approval(self) -> None:
        assert self.provider.duplicates() == {}
        accepted = {key for key, n in self.provider.accepted().items() if n}
        by_packet: dict[str, set[str]] = {}
        for pid, key in self.performed:
            if key in accepted:
                by_packet.setdefault(pid, set()).add(key)
        assert all(len(keys) == 1 for keys in by_packet.values()), by_packet
        consumed = [p for p in self.ledger.approvals.list(ApprovalStatus.CONSUMED, limit=10_000)]
        assert all(self.provider.count(p.effect_key) == 1 for p in consumed)


SETTINGS = settings(
    max_examples=200,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    derandomize=True,
)

TestBooking = Booking.TestCase
TestBooking.settings = SETTINGS


def test_the_machine_ran_and_committed() -> None:
    # Runs after TestBooking in this module: the machine did commit (a property
    # that never reaches the boundary proves nothing).
    if RUNS["examples"] == 0:  # run alone (-k): run the machine here
        from hypothesis.stateful import run_state_machine_as_test

        run_state_machine_as_test(Booking, settings=SETTINGS)
    assert RUNS["examples"] >= SETTINGS.max_examples
    assert RUNS["performs"] >= 20, RUNS
    print(f"\nbooking machine: {RUNS}")
