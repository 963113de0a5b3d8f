"""Operations and budget pools beyond their events, on every backend
(``operation_ops``, ``budget_ops``): which operation a key answers to, a
definition kept once, a decision number taken once (and what it makes due),
and a pool redefined with its history.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from actonce._rules.budgets import Pool

from .test_gates import NOW, intent


def _spec(*steps: Any) -> str:
    return json.dumps({"steps": list(steps)})


def test_a_key_answers_to_the_newest_operation_that_names_it(store: Any) -> None:
    first = _spec({"key": "k1", "undo": "u1"}, {"key": "k2"}, {"key": "k2"})
    assert store.operation_put("op-1", None, first, NOW, "r") == first
    assert (store.operation_of("k1"), store.operation_of("u1"), store.operation_of("k2")) == (
        "op-1", "op-1", "op-1",
    )  # fmt: skip
    store.operation_put("op-2", None, _spec({"key": "k2", "undo": None}, "junk", 5), NOW + 1, "r")
    assert (store.operation_of("k1"), store.operation_of("k2")) == ("op-1", "op-2")
    assert store.operation_of("None") is None and store.operation_of("junk") is None
    # a definition without steps, or not JSON, names no key
    for op, spec in (("op-3", "{}"), ("op-4", "not json"), ("op-5", '{"steps": {"key": "k9"}}'),
                     ("op-6", "[1, 2]")):  # fmt: skip
        assert store.operation_put(op, None, spec, NOW + 2, "r") == spec
    assert store.operation_of("k9") is None and store.operation_of("k2") == "op-2"


def test_a_definition_is_kept_once_and_answered_as_first_written(store: Any) -> None:
    spec = _spec({"key": "k1"})
    assert store.operation_put("op-1", intent().ref, spec, NOW, "r1") == spec
    assert store.operation_put("op-1", None, _spec({"key": "k7"}), NOW + 1, "r2") == spec
    assert store.operation_get("op-1") == spec and store.operation_get("nope") is None
    assert store.operation_of("k7") is None
    assert [e.run_id for e in store.events("operation:op-1")] == ["r1"]


def test_a_decision_number_is_taken_once_and_makes_the_operation_due(store: Any) -> None:
    store.operation_put("op-1", None, "{}", NOW, "r")
    assert store.operations_due(NOW + 100, 10) == []
    assert store.decision_put("op-1", 1, "accept", None, 0, "ana", NOW + 5, "fine", "r1") is True
    assert store.operations_due(NOW + 4.9, 10) == []
    assert store.operations_due(NOW + 5, 10) == ["op-1"]
    assert store.decision_put("op-1", 1, "abandon", None, 0, "bob", NOW + 6, "no", "r2") is False
    assert store.decisions_of("op-1") == [(1, "accept", None, 0, "ana", NOW + 5, "fine")]
    assert [e.message for e in store.events("operation:op-1")][-1] == "accept by ana: fine"
    assert store.decision_put("op-x", 1, "accept", None, 0, "ana", NOW, "x", "r") is False
    assert store.events("operation:op-x") == []


def test_a_pool_redefined_keeps_its_history(store: Any) -> None:
    assert store.pool_get("trips") is None
    first = Pool("trips", Decimal("500"), "EUR", "week")
    assert store.pool_define(first, NOW, "r1") == first
    second = Pool("trips", Decimal("650.50"), "EUR", 3600.0)
    assert store.pool_define(second, NOW + 1, "r2") == second
    assert store.pool_get("trips") == second
    assert [(e.message, e.data) for e in store.events("budget:trips")] == [
        ("trips: 500 EUR per week", {"limit": "500", "name": "trips", "unit": "EUR", "window": "week"}),
        ("trips: 650.50 EUR per 3600.0",
         {"limit": "650.50", "name": "trips", "unit": "EUR", "window": 3600.0}),
    ]  # fmt: skip
    store.pool_define(Pool("a-pool", Decimal("1")), NOW, "r")
    assert [u.pool.name for u in store.budget_usage(None, NOW)] == ["a-pool", "trips"]
    assert [u.pool.name for u in store.budget_usage(["trips", "nope", "a-pool"], NOW)] == [
        "trips", "a-pool",
    ]  # fmt: skip
    (hourly,) = store.budget_usage(["trips"], NOW + 7300)
    assert (hourly.start, hourly.end) == (7200.0, 10800.0)
