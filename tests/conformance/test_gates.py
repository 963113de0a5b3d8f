"""Intents, approvals and gated claims: one conformance suite over every backend.

The holds a claim takes are taken in the claim's transaction or not at all;
the verdict settles them in its own transaction (consume on confirmed,
release on failed/abandoned, keep otherwise); a revision supersedes a version
in one transaction.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import Any

import pytest

from actonce import (
    ApprovalStatus,
    Event,
    EventType,
    Gate,
    Intent,
    IntentStatus,
    Packet,
    Status,
)
from actonce._rules.holds import Settle
from actonce._rules.model import EffectRecord

NOW = 1_000.0


def record(key: str, status: Status = Status.CLAIMED, fence: int = 1) -> EffectRecord:
    return EffectRecord(
        key=key,
        kind="book",
        status=status,
        fence=fence,
        owner="w",
        lease_expires_at=NOW + 60,
        payload="{}",
        payload_hash="h",
        created_at=NOW,
        updated_at=NOW,
        gated=True,
    )


def event(key: str, status: Status, fence: int = 1, run_id: str = "w") -> Event:
    return Event(key=key, type=EventType(status.value), at=NOW, fence=fence, run_id=run_id,
                 to_status=status)  # fmt: skip


def intent(version: int = 1, **fields: Any) -> Intent:
    return Intent("trip", "booking", user="ana", price_ceiling=Decimal("120"), currency="EUR",
                  version=version, **fields)  # fmt: skip


def packet(key: str, status: ApprovalStatus = ApprovalStatus.APPROVED, pid: str = "p1") -> Packet:
    return Packet(
        packet_id=pid,
        intent=intent().ref,
        action="book",
        effect_key=key,
        user="ana",
        amount=Decimal("110"),
        ceiling=Decimal("120"),
        currency="EUR",
        created_at=NOW,
        expires_at=NOW + 3600,
        status=status,
    )


def prepared(store: Any, status: ApprovalStatus = ApprovalStatus.APPROVED) -> Packet:
    store.intent_create(intent(), NOW, "setup")
    p = packet("k1", status)
    store.approval_put(p, None, "setup")
    return p


def test_a_gated_claim_holds_the_approval_in_its_transaction(store: Any) -> None:
    p = prepared(store)
    gate = Gate(intent().ref, p.packet_id, Decimal("110"))
    won = store.claim(record("k1"), None, event("k1", Status.CLAIMED), gate=gate)
    assert won.acquired and won.refused is None
    assert store.approval_get(p.packet_id)[0].status is ApprovalStatus.HELD
    # A second claim of another key under the same approval is refused: nothing written.
    other = store.claim(record("k2"), None, event("k2", Status.CLAIMED), gate=gate)
    assert not other.acquired and other.refused is not None
    assert store.get("k2") is None
    kinds = {(h.kind, h.status) for h in store.holds_of("k1")}
    assert kinds == {("intent", "held"), ("approval", "held")}


@pytest.mark.parametrize(
    ("to", "settle", "approval", "hold"),
    [
        (Status.CONFIRMED, Settle.CONSUME, ApprovalStatus.CONSUMED, "consumed"),
        (Status.FAILED, Settle.RELEASE, ApprovalStatus.APPROVED, "released"),
    ],
)
def test_the_verdict_settles_the_holds(
    store: Any, to: Status, settle: Settle, approval: ApprovalStatus, hold: str
) -> None:
    p = prepared(store)
    gate = Gate(intent().ref, p.packet_id, Decimal("110"))
    new = record("k1")
    assert store.claim(new, None, event("k1", Status.CLAIMED), gate=gate).acquired
    from dataclasses import replace

    done = store.transition(
        (Status.CLAIMED, 1), replace(new, status=to), event("k1", to), settle=settle
    )
    assert done is not None
    assert store.approval_get(p.packet_id)[0].status is approval
    assert {h.status for h in store.holds_of("k1")} == {hold}


def test_a_refused_gate_writes_nothing(store: Any) -> None:
    p = prepared(store, ApprovalStatus.PENDING)
    gate = Gate(intent().ref, p.packet_id, Decimal("110"))
    result = store.claim(record("k1"), None, event("k1", Status.CLAIMED), gate=gate)
    assert not result.acquired and result.refused is not None and result.refused.waiting
    assert store.get("k1") is None and store.holds_of("k1") == []
    assert store.events("k1") == []


def test_an_amount_above_the_ceiling_is_refused(store: Any) -> None:
    p = prepared(store)
    gate = Gate(intent().ref, p.packet_id, Decimal("121"))
    result = store.claim(record("k1"), None, event("k1", Status.CLAIMED), gate=gate)
    assert result.refused is not None and "above the approved" in result.refused.reason


def test_a_revision_supersedes_closes_claimed_effects_and_voids_approvals(store: Any) -> None:
    p = prepared(store)
    gate = Gate(intent().ref, p.packet_id, Decimal("110"))
    assert store.claim(record("k1"), None, event("k1", Status.CLAIMED), gate=gate).acquired
    store.approval_put(packet("k9", pid="p2"), None, "setup")
    result = store.intent_revise(intent().ref, intent(2, when="2026-12-25"), ("when",), NOW, "r")
    assert result.applied and result.current.intent.version == 2
    assert result.closed == ("k1",) and set(result.voided) == {"p2"}
    assert store.get("k1").status is Status.FAILED
    assert store.approval_get(p.packet_id)[0].status is ApprovalStatus.VOIDED
    assert [r.status for r in store.intent_chain("trip")] == [
        IntentStatus.SUPERSEDED,
        IntentStatus.CURRENT,
    ]
    # The old version is gone for every new claim.
    again = store.claim(record("k3"), None, event("k3", Status.CLAIMED), gate=Gate(intent().ref))
    assert again.refused is not None and "superseded" in again.refused.reason
    # A second revision of v1 loses: v2 is current.
    lost = store.intent_revise(intent().ref, intent(2, when="2027-01-01"), ("when",), NOW, "r")
    assert not lost.applied and lost.current.intent.version == 2


def test_concurrent_claims_hold_one_approval_once(store: Any) -> None:
    p = prepared(store)
    gate = Gate(intent().ref, p.packet_id, Decimal("110"))
    results: list[Any] = []
    barrier = threading.Barrier(8)

    def go(i: int) -> None:
        barrier.wait()
        results.append(
            store.claim(record(f"k{i}"), None, event(f"k{i}", Status.CLAIMED), gate=gate)
        )

    threads = [threading.Thread(target=go, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(1 for r in results if r.acquired) <= 1  # only k1 matches the packet's effect key
    assert [r.acquired for r in results].count(True) == (
        1 if any(r.acquired for r in results) else 0
    )
    held = [r for r in results if r.acquired]
    assert all(r.record.key == "k1" for r in held)
