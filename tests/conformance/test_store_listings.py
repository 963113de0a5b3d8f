"""Intents and operator runs listed and looked up, whole, on every backend
(``intent_ops``, ``summary_ops``): which rows a filter keeps, the order (and
its tie-breaks), the limit, the current version against a named one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from actonce import IntentStatus

from .test_gates import NOW, intent
from .test_store_pins import _summary


def _intents(store: Any) -> None:
    # created in this order; "b" and "a" at one time: the id breaks the tie
    store.intent_create(replace(intent(), intent_id="c"), NOW, "r")
    store.intent_create(replace(intent(), intent_id="b"), NOW + 1, "r")
    store.intent_create(replace(intent(), intent_id="a"), NOW + 1, "r")
    store.intent_create(replace(intent(), intent_id="d", user="bob"), NOW + 2, "r")
    revised = store.intent_revise(
        replace(intent(), intent_id="c").ref, replace(intent(version=2), intent_id="c"),
        ("price_ceiling",), NOW + 3, "r",
    )  # fmt: skip
    assert revised.applied


def _ids(rows: list[Any]) -> list[tuple[str, int, str]]:
    return [(r.intent.intent_id, r.intent.version, r.status.value) for r in rows]


def test_intents_are_listed_oldest_first_by_status_and_user(store: Any) -> None:
    _intents(store)
    assert _ids(store.intent_list(None, None, 10)) == [
        ("c", 1, "superseded"), ("a", 1, "current"), ("b", 1, "current"),
        ("d", 1, "current"), ("c", 2, "current"),
    ]  # fmt: skip
    assert _ids(store.intent_list(None, None, 2)) == [("c", 1, "superseded"), ("a", 1, "current")]
    assert _ids(store.intent_list(IntentStatus.CURRENT, None, 10)) == [
        ("a", 1, "current"), ("b", 1, "current"), ("d", 1, "current"), ("c", 2, "current"),
    ]  # fmt: skip
    assert _ids(store.intent_list(None, "bob", 10)) == [("d", 1, "current")]
    assert _ids(store.intent_list(IntentStatus.SUPERSEDED, "ana", 10)) == [("c", 1, "superseded")]
    assert _ids(store.intent_list(IntentStatus.SUPERSEDED, "bob", 10)) == []


def test_an_intent_is_looked_up_current_or_by_version(store: Any) -> None:
    _intents(store)
    current = store.intent_get("c")
    assert (current.intent.version, current.status, current.created_at, current.superseded_at) == (
        2, IntentStatus.CURRENT, NOW + 3, None,
    )  # fmt: skip
    old = store.intent_get("c", 1)
    assert (old.intent.version, old.status, old.created_at, old.superseded_at) == (
        1, IntentStatus.SUPERSEDED, NOW, NOW + 3,
    )  # fmt: skip
    assert store.intent_get("c", 3) is None and store.intent_get("zz") is None
    assert [(r.intent.version, r.status.value) for r in store.intent_chain("c")] == [
        (1, "superseded"), (2, "current"),
    ]  # fmt: skip
    assert store.intent_chain("zz") == []
    # creating an intent that exists answers the current row, unchanged
    again = store.intent_create(replace(intent(version=1), intent_id="c"), NOW + 9, "r")
    assert again == current


def test_operator_runs_are_listed_newest_first(store: Any) -> None:
    for run_id, ended in (("r1", 10.0), ("r3", 30.0), ("r2b", 20.0), ("r2a", 20.0)):
        assert store.summary_put(_summary(run_id, ended)) is True
    other = replace(_summary("x1", 40.0), operator="bob")
    assert store.summary_put(other) is True
    assert [s.run_id for s in store.summary_list(None, 10)] == ["x1", "r3", "r2a", "r2b", "r1"]
    assert [s.run_id for s in store.summary_list("alice", 10)] == ["r3", "r2a", "r2b", "r1"]
    assert [s.run_id for s in store.summary_list("alice", 2)] == ["r3", "r2a"]
    assert store.summary_list("carol", 10) == []
    assert store.summary_get("x1") == other and store.summary_get("nope") is None
    assert [e.run_id for e in store.events("operator:bob")] == ["x1"]
