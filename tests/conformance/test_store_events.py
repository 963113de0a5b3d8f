"""Every event the stores write for intents, approvals, budgets, operations and
operator runs, whole: type, time, fence, run id, message and data (every backend).

A history is what an operator reads later ("who changed what, when, why"); the
conformance tests asserted their types and a field or two. Here one ledger's
life is written through the store primitives and each history read back exactly.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from actonce import ApprovalStatus
from actonce._rules.budgets import Pool

from .test_gates import NOW, intent, packet
from .test_store_pins import _summary


def _history(store: Any, key: str) -> list[tuple[Any, ...]]:
    return [
        (e.type.value, e.at, e.fence, e.run_id, e.from_status, e.to_status, e.message, e.data)
        for e in store.events(key)
    ]


def _life(store: Any) -> None:
    store.intent_create(intent(), NOW, "r-create")
    assert store.intent_touch(intent(), ("label", "notes"), NOW + 1, "r-touch") is True
    store.approval_put(packet("k1", ApprovalStatus.PENDING), None, "r-put")
    assert store.approval_set_code("p1", "d" * 64, NOW + 2, "r-code") is True
    pending = store.approval_get("p1")[0]
    expired = store.approval_update(pending, ApprovalStatus.EXPIRED, NOW + 3, "r-exp", "too late")
    assert expired is not None and expired.status is ApprovalStatus.EXPIRED
    store.pool_define(Pool("trips", Decimal("500"), "EUR", "week"), NOW + 4, "r-pool")
    assert store.operation_put("op-1", intent().ref, '{"steps":[]}', NOW + 5, "r-op") == (
        '{"steps":[]}'
    )
    assert store.receipt_put("op-1", "running", "text", "{}", NOW + 6, "r-rec", due_at=NOW + 60)
    assert store.decision_put("op-1", 1, "retry_undo", "pay", 2, "bob", NOW + 7, "card ok", "r-d1")
    assert store.decision_put("op-1", 2, "abandon", None, 0, "bob", NOW + 8, "give up", "r-d2")
    revised = store.intent_revise(
        intent().ref, intent(version=2), ("price_ceiling", "currency"), NOW + 9, "r-rev"
    )
    assert revised.applied and revised.operations == ("op-1",)
    withdrawn = store.intent_withdraw(
        intent(version=2).ref, "ana", "changed plans", NOW + 10, "r-wd"
    )
    assert withdrawn.applied and withdrawn.operations == ()
    assert store.summary_put(_summary("op-9", NOW + 11)) is True


def test_an_intents_history_says_each_change_whole(store: Any) -> None:
    _life(store)
    assert _history(store, "intent:trip") == [
        ("intent_created", 1000.0, 0, "r-create", None, None, "trip@v1 created", {"version": 1}),
        (
            "intent_revised", 1001.0, 0, "r-touch", None, None,
            "cosmetic change to trip@v1: label, notes (same version)",
            {"changed": ["label", "notes"], "material": False, "version": 1},
        ),
        (
            "intent_revised", 1009.0, 0, "r-rev", None, None,
            "trip@v1 superseded by v2 (changed: price_ceiling, currency)",
            {"changed": ["price_ceiling", "currency"], "from_version": 1, "version": 2},
        ),
        (
            "intent_revised", 1010.0, 0, "r-wd", None, None,
            "trip@v2 withdrawn by ana: changed plans",
            {"by": "ana", "version": 2, "withdrawn": True},
        ),
    ]  # fmt: skip


def test_a_packets_history_says_each_change_whole(store: Any) -> None:
    _life(store)
    assert _history(store, "approval:p1") == [
        (
            "approval_requested", 1000.0, 0, "r-put", None, None, "book for 110 EUR (trip@v1)",
            {"effect_key": "k1", "replaces": None, "revision": 1, "status": "pending"},
        ),
        (
            "approval_requested", 1002.0, 0, "r-code", None, None,
            "a new reply code was issued (the old one stops working)", {"status": "pending"},
        ),
        (
            "approval_expired", 1003.0, 0, "r-exp", None, None, "too late",
            {"previous": "pending", "status": "expired"},
        ),
    ]  # fmt: skip


def test_a_pools_and_an_operations_history_say_each_change_whole(store: Any) -> None:
    _life(store)
    assert _history(store, "budget:trips") == [
        (
            "budget_defined", 1004.0, 0, "r-pool", None, None, "trips: 500 EUR per week",
            {"limit": "500", "name": "trips", "unit": "EUR", "window": "week"},
        ),
    ]  # fmt: skip
    assert _history(store, "operation:op-1") == [
        ("operation_started", 1005.0, 0, "r-op", None, None, "operation op-1 defined",
         {"intent": "trip@v1"}),
        ("receipt_written", 1006.0, 0, "r-rec", None, None, "receipt: running",
         {"state": "running"}),
        (
            "operation_decided", 1007.0, 0, "r-d1", None, None,
            "retry undo (pay, attempt 2) by bob: card ok",
            {"attempt": 2, "by": "bob", "decision": "retry_undo", "n": 1, "step": "pay"},
        ),
        (
            "operation_decided", 1008.0, 0, "r-d2", None, None, "abandon by bob: give up",
            {"attempt": 0, "by": "bob", "decision": "abandon", "n": 2, "step": None},
        ),
        (
            "operation_decided", 1009.0, 0, "r-rev", None, None,
            "withdraw by system: trip@v1 superseded by v2",
            {"attempt": 0, "by": "system", "decision": "withdraw", "n": 3, "step": None},
        ),
    ]  # fmt: skip


def test_an_operator_runs_history_says_its_counts(store: Any) -> None:
    _life(store)
    assert _history(store, "operator:alice") == [
        (
            "operator_run", 1011.0, 3, "op-9", None, None,
            "run completed: done 1, failures 0, ambiguous 0, hard stops 0",
            {
                "counts": {"ambiguous": 0, "done": 1, "failures": 0, "hard_stops": 0,
                           "quality_skips": 0, "skipped": {}},
                "status": "completed",
            },
        ),
    ]  # fmt: skip


def test_decisions_and_receipts_read_back_whole(store: Any) -> None:
    _life(store)
    assert store.decisions_of("op-1") == [
        (1, "retry_undo", "pay", 2, "bob", 1007.0, "card ok"),
        (2, "abandon", None, 0, "bob", 1008.0, "give up"),
        (3, "withdraw", None, 0, "system", 1009.0, "trip@v1 superseded by v2"),
    ]
    assert store.decisions_of("op-2") == []
    assert store.receipt_get("op-1") == ("running", "text", "{}", 1006.0)
    assert store.receipt_get("op-2") is None
    # the same state and text again: nothing written, no event
    assert store.receipt_put("op-1", "running", "text", '{"new":1}', NOW + 30, "r-same") is False
    assert store.receipt_get("op-1") == ("running", "text", "{}", 1006.0)
    assert [e.run_id for e in store.events("operation:op-1")][-1] == "r-rev"
    # a new text in the same state is a new receipt
    assert store.receipt_put("op-1", "running", "text 2", "[]", NOW + 31, "r-new") is True
    assert store.receipt_get("op-1") == ("running", "text 2", "[]", 1031.0)


def _receipts(store: Any) -> None:
    for i, (op, due) in enumerate(
        [("b", 50.0), ("a", 50.0), ("c", 10.0), ("d", None), ("e", 70.0)]
    ):
        store.operation_put(op, None, "{}", NOW, "r")
        store.receipt_put(op, "waiting", "t", "{}", NOW + i, "r", due_at=due)
    store.receipt_put("e", "done", "t", "{}", NOW + 9, "r", due_at=None)


def test_operations_due_are_oldest_due_first_up_to_now(store: Any) -> None:
    _receipts(store)
    assert store.operations_due(60.0, 10) == ["c", "a", "b"]
    assert store.operations_due(60.0, 2) == ["c", "a"]
    assert store.operations_due(50.0, 10) == ["c", "a", "b"]  # due at now is due
    assert store.operations_due(49.9, 10) == ["c"]
    assert store.operations_due(9.9, 10) == []
    assert store.operations_due(1e9, 10) == ["c", "a", "b"]  # "e" has no work due any more


def test_operations_in_a_state_and_receipts_newest_first(store: Any) -> None:
    _receipts(store)
    assert store.operations_in("waiting", 10) == [
        ("b", 1000.0), ("a", 1001.0), ("c", 1002.0), ("d", 1003.0),
    ]  # fmt: skip
    assert store.operations_in("waiting", 2) == [("b", 1000.0), ("a", 1001.0)]
    assert store.operations_in("done", 10) == [("e", 1009.0)]
    assert store.operations_in("running", 10) == []
    assert store.receipt_list(3, None) == [
        ("e", "done", "t", "{}", 1009.0),
        ("d", "waiting", "t", "{}", 1003.0),
        ("c", "waiting", "t", "{}", 1002.0),
    ]
    assert store.receipt_list(10, 1002.0) == [
        ("a", "waiting", "t", "{}", 1001.0),
        ("b", "waiting", "t", "{}", 1000.0),
    ]  # strictly before
    assert store.receipt_list(10, 1000.0) == []


def test_receipts_written_at_one_time_are_listed_by_operation(store: Any) -> None:
    for op in ("z", "m", "a"):
        store.operation_put(op, None, "{}", NOW, "r")
        store.receipt_put(op, "waiting", "t", "{}", NOW, "r", due_at=NOW)
    assert [r[0] for r in store.receipt_list(10, None)] == ["a", "m", "z"]
    assert [r[0] for r in store.operations_in("waiting", 10)] == ["a", "m", "z"]
    assert store.operations_due(NOW, 10) == ["a", "m", "z"]
