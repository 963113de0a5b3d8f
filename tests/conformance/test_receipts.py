"""Receipts listed newest first and operations found by step, on every backend."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actonce import Ledger, UsageError
from actonce.testing import FrozenClock


def _spec(*keys: tuple[str, str | None]) -> str:
    steps = [{"name": f"s{i}", "role": "pivot", "key": k, "undo": u, "attempts": 1}
             for i, (k, u) in enumerate(keys)]  # fmt: skip
    return json.dumps({"intent": None, "approval": None, "steps": steps})


def test_receipts_page_newest_first(store: Any) -> None:
    for i, at in enumerate((10.0, 30.0, 20.0)):
        store.operation_put(f"op-{i}", None, _spec((f"k{i}", None)), at, "run")
        assert store.receipt_put(f"op-{i}", "complete", f"text {i}", "{}", at, "run")
    rows = store.receipt_list(10, None)
    assert [(r[0], r[4]) for r in rows] == [("op-1", 30.0), ("op-2", 20.0), ("op-0", 10.0)]
    assert [r[0] for r in store.receipt_list(1, 30.0)] == ["op-2"]  # the next page
    assert store.receipt_list(10, 10.0) == []


def test_an_operation_is_found_by_its_step_or_undo_key(store: Any) -> None:
    # Keys that LIKE would misread if they were not escaped: _ and % and \\.
    store.operation_put("trip_1", None, _spec(("a_%b\\c", "undo_1"), ("plain", None)), 1.0, "r")
    store.operation_put("trip-2", None, _spec(("aXYb\\c", None)), 2.0, "r")
    assert store.operation_of("a_%b\\c") == "trip_1"
    assert store.operation_of("undo_1") == "trip_1"
    assert store.operation_of("plain") == "trip_1"
    assert store.operation_of("aXYb\\c") == "trip-2"
    assert store.operation_of("a") is None  # a substring of a key is no key
    assert store.operation_of("s0") is None  # nor is a step's name


def test_a_definition_naming_a_key_twice_and_a_later_one_taking_a_key(store: Any) -> None:
    # All step keys go in one statement: a key named twice is written once
    # (PostgreSQL refuses to update one row twice in a statement).
    assert store.operation_put("op-a", None, _spec(("k1", "k1"), ("k2", None)), 1.0, "r")
    assert store.operation_of("k1") == "op-a"
    assert store.operation_of("k2") == "op-a"
    store.operation_put("op-b", None, _spec(("k2", None), ("k3", None)), 2.0, "r")
    assert store.operation_of("k2") == "op-b"  # the newest operation of a key
    assert store.operation_of("k3") == "op-b"
    assert store.operation_of("k1") == "op-a"
    store.operation_put("op-a", None, _spec(("k1", "k1"), ("k2", None)), 3.0, "r")
    assert store.operation_of("k2") == "op-b"  # a definition already recorded writes nothing


def test_the_ledger_checks_what_it_is_asked(store: Any) -> None:
    ledger = Ledger(store, clock=FrozenClock())
    assert ledger.receipts() == []
    for bad in (0, -1, 1.5, True, "10"):
        with pytest.raises(UsageError):
            ledger.receipts(limit=bad)  # type: ignore[arg-type]
    for cursor in (float("nan"), "x", True):
        with pytest.raises(UsageError):
            ledger.receipts(before=cursor)  # type: ignore[arg-type]
    for key in ("", None, 7):
        with pytest.raises(UsageError):
            ledger.operation_of(key)  # type: ignore[arg-type]
    assert ledger.operation_of("no-such-key") is None
