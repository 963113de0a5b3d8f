"""A packet's compare-and-set moves, reply codes and the code-attempt counter,
whole, on every backend (``_store/approval_ops.py``): each move's event with
its data, which moves are refused (the status moved, not pending, not
approved), and the counter's window at its exact edge.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from actonce import ApprovalStatus

from .test_gates import NOW, intent, packet


def _history(store: Any, key: str) -> list[tuple[Any, ...]]:
    return [(e.type.value, e.at, e.run_id, e.message, e.data) for e in store.events(key)]


def test_a_packets_moves_are_compare_and_set_with_their_events(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    store.approval_put(packet("k1", ApprovalStatus.PENDING), "c" * 64, "r0")
    pending = store.approval_get("p1")[0]
    assert store.approval_get("p1")[1:] == ("c" * 64, False)
    # expected another status: nothing moves, no event
    moved = store.approval_update(
        pending, ApprovalStatus.APPROVED, NOW + 1, "rx", "no", expect=ApprovalStatus.DENIED
    )
    assert moved is None
    approved = store.approval_update(
        pending, ApprovalStatus.APPROVED, NOW + 1, "r1", "yes", use_code=True,
        decided_by="ana", decided_at=NOW + 1, note=None, details={"x": 1},
    )  # fmt: skip
    assert approved == replace(
        pending, status=ApprovalStatus.APPROVED, decided_by="ana", decided_at=NOW + 1,
        details={"x": 1},
    )  # fmt: skip
    assert store.approval_get("p1") == (approved, "c" * 64, True)  # the code is used up
    assert store.approval_set_code("p1", "e" * 64, NOW + 2, "r2") is False  # not pending
    assert store.approval_get("p1")[1] == "c" * 64
    held = store.approval_update(approved, ApprovalStatus.HELD, NOW + 3, "r3", "held", held_by="k1")
    assert held is not None and held.held_by == "k1"
    # a stale copy (still "approved") no longer matches the row
    assert store.approval_update(approved, ApprovalStatus.VOIDED, NOW + 3, "rx", "x") is None
    back = store.approval_update(
        held, ApprovalStatus.APPROVED, NOW + 4, "r4", "let go", held_by=None
    )
    assert back is not None and back.held_by is None
    assert _history(store, "approval:p1") == [
        ("approval_requested", 1000.0, "r0", "book for 110 EUR (trip@v1)",
         {"effect_key": "k1", "replaces": None, "revision": 1, "status": "pending"}),
        ("approval_answered", 1001.0, "r1", "yes",
         {"decided_at": 1001.0, "decided_by": "ana", "note": None, "previous": "pending",
          "status": "approved"}),  # the details dict is not copied into the event
        ("approval_held", 1003.0, "r3", "held",
         {"held_by": "k1", "previous": "approved", "status": "held"}),
        ("approval_released", 1004.0, "r4", "let go",
         {"held_by": None, "previous": "held", "status": "approved"}),
    ]  # fmt: skip


def test_a_new_reply_code_only_for_a_pending_packet(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    store.approval_put(packet("k1", ApprovalStatus.PENDING), "c" * 64, "r0")
    assert store.approval_set_code("p1", "d" * 64, NOW + 1, "r1") is True
    assert store.approval_get("p1")[1:] == ("d" * 64, False)
    assert store.approval_set_code("nope", "d" * 64, NOW + 1, "r1") is False
    assert store.events("approval:nope") == []
    assert [e.run_id for e in store.events("approval:p1")] == ["r0", "r1"]


def test_only_an_approved_packet_is_replaced(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    store.approval_put(packet("k1", ApprovalStatus.PENDING), None, "r0")
    pending = store.approval_get("p1")[0]
    fresh = replace(
        packet("k1", ApprovalStatus.PENDING, pid="p2"), revision=2, replaces="p1",
        created_at=NOW + 5,
    )  # fmt: skip
    assert store.approval_replace(pending, "stale", fresh, "f" * 64, "r5") is None
    assert store.approval_get("p2") is None
    approved = store.approval_update(pending, ApprovalStatus.APPROVED, NOW + 1, "r1", "ok")
    assert store.approval_replace(approved, "stale", fresh, "f" * 64, "r5") == fresh
    assert store.approval_get("p1")[0] == replace(
        approved, status=ApprovalStatus.INVALIDATED, replaced_by="p2"
    )
    assert store.approval_get("p2") == (fresh, "f" * 64, False)
    assert _history(store, "approval:p1")[-1] == (
        "approval_invalidated", 1005.0, "r5", "stale",
        {"previous": "approved", "replaced_by": "p2", "status": "invalidated"},
    )  # fmt: skip
    assert _history(store, "approval:p2") == [
        ("approval_requested", 1005.0, "r5", "book for 110 EUR (trip@v1)",
         {"effect_key": "k1", "replaces": "p1", "revision": 2, "status": "pending"}),
    ]  # fmt: skip
    assert store.approval_replace(approved, "again", fresh, None, "r6") is None


def test_the_packets_with_a_code_are_the_users_newest_first(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    for pid, at, code in (("p1", NOW, "a" * 64), ("p2", NOW + 2, "b" * 64), ("p3", NOW + 1, None)):
        p = replace(packet(f"k-{pid}", ApprovalStatus.PENDING, pid=pid), created_at=at)
        store.approval_put(p, code, "r")
    got = [(p.packet_id, code, used) for p, code, used in store.code_packets("ana")]
    assert got == [("p2", "b" * 64, False), ("p1", "a" * 64, False)]
    assert store.code_packets("bob") == []


def test_code_attempts_count_in_a_window_and_never_below_zero(store: Any) -> None:
    steps = [
        (0.0, 0, 0),  # only reads: no row yet
        (0.0, 1, 1),
        (5.0, 1, 2),
        (9.9, 0, 2),
        (10.0, 0, 0),  # the window (10 s from 0.0) has passed: read as a new one
        (9.0, -1, 1),
        (9.0, -1, 0),
        (9.0, -1, 0),  # never below zero
        (20.0, 1, 1),  # a new window
        (25.0, 0, 1),
    ]
    got = [store.code_failures("ana", now, 10.0, add) for now, add, _ in steps]
    assert got == [want for _, _, want in steps]
    assert store.code_failures("bob", 25.0, 10.0, 0) == 0  # one counter per user
