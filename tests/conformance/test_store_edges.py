"""Boundaries of the lease, queue and effect primitives, on every backend: a lease
or a take whose time is exactly up, a queue's order and limit, the open effects'
order and limit, a key prefix, a release and the SET clause of a partial
compare-and-set (``sql.py``, the stores' lease/queue code).
"""

from __future__ import annotations

from typing import Any

import pytest

from actonce import Status
from actonce._store.records import ItemStatus, LeaseRecord
from actonce._store.sql import EFFECT_COLUMNS, cas_set, pg

from .test_store import T0, event, record


def test_a_lease_whose_time_is_exactly_up_can_be_taken(store: Any) -> None:
    first = store.lease_acquire("op", "a", T0, T0 + 10)
    assert first.acquired and first.record == LeaseRecord("op", "a", 1, T0, T0, T0 + 10)
    early = store.lease_acquire("op", "b", T0 + 9.5, T0 + 20)
    assert not early.acquired and early.record == first.record  # the holder, as it stands
    taken = store.lease_acquire("op", "b", T0 + 10, T0 + 20)
    assert taken.acquired and taken.record == LeaseRecord("op", "b", 2, T0 + 10, T0 + 10, T0 + 20)
    assert store.lease_renew("op", 1, "a", T0 + 11, T0 + 30) is None  # fenced out
    renewed = store.lease_renew("op", 2, "b", T0 + 11, T0 + 30)
    assert renewed == LeaseRecord("op", "b", 2, T0 + 10, T0 + 11, T0 + 30)
    assert store.lease_renew("op", 2, "a", T0 + 11, T0 + 30) is None  # another owner
    assert store.lease_release("op", 2, "a", T0 + 12) is False
    assert store.lease_release("op", 2, "b", T0 + 12) is True
    assert store.lease_get("op") == LeaseRecord("op", "", 2, T0 + 10, T0 + 11, T0 + 12)
    # a released lease is free at once, whatever its time
    again = store.lease_acquire("op", "c", T0 + 12, T0 + 40)
    assert again.acquired and again.record.token == 3 and again.record.owner == "c"
    assert store.lease_get("nope") is None


def test_a_take_whose_lease_is_exactly_up_is_handed_out_again(store: Any) -> None:
    ids = [store.queue_put("mail", f'{{"n": {n}}}', T0 + n) for n in range(3)]
    assert ids == sorted(ids) and len(set(ids)) == 3
    two = store.queue_take("w1", T0 + 5, T0 + 35, 2)
    assert [(i.id, i.payload, i.attempts, i.created_at, i.updated_at) for i in two] == [
        (ids[0], {"n": 0}, 1, T0, T0 + 5),
        (ids[1], {"n": 1}, 1, T0 + 1, T0 + 5),
    ]
    # before the lease is up only the untaken item is handed out
    (third,) = store.queue_take("w2", T0 + 34.9, T0 + 60, 5)
    assert (third.id, third.taken_by, third.attempts) == (ids[2], "w2", 1)
    # at the lease's very end the first take is handed out again
    retaken = store.queue_take("w3", T0 + 35, T0 + 65, 5)
    assert [(i.id, i.taken_by, i.attempts, i.status) for i in retaken] == [
        (ids[0], "w3", 2, ItemStatus.TAKEN),
        (ids[1], "w3", 2, ItemStatus.TAKEN),
    ]
    assert store.queue_extend(ids[0], 1, "w1", T0 + 36, T0 + 90) is False  # fenced out
    assert store.queue_extend(ids[0], 2, "w3", T0 + 36, T0 + 90) is True
    assert store.queue_done(ids[0], 2, "w1", T0 + 37) is False
    assert store.queue_done(ids[0], 2, "w3", T0 + 37) is True
    assert store.queue_done(ids[0], 2, "w3", T0 + 38) is False  # done once
    assert store.queue_counts() == {"queued": 0, "taken": 2, "done": 1}
    assert store.queue_take("w4", T0 + 59.9, T0 + 90, 5) == []
    assert [i.id for i in store.queue_take("w4", T0 + 65, T0 + 120, 5)] == [ids[1], ids[2]]


def test_a_queue_hands_out_nothing_for_a_limit_of_zero_and_the_oldest_first(store: Any) -> None:
    a = store.queue_put("mail", "[]", T0)
    b = store.queue_put("sms", "{}", T0)
    assert store.queue_take("w", T0, T0 + 30, 0) == []
    assert store.queue_counts() == {"queued": 2, "taken": 0, "done": 0}
    (first,) = store.queue_take("w", T0, T0 + 30)
    assert (first.id, first.kind, first.payload) == (a, "mail", [])
    (second,) = store.queue_take("w", T0, T0 + 30)
    assert (second.id, second.kind, second.lease_expires_at) == (b, "sms", T0 + 30)


def test_open_effects_soonest_lease_first_up_to_the_limit(store: Any) -> None:
    for key, status, lease in (
        ("a", Status.EXECUTING, T0 + 50),
        ("b", Status.CLAIMED, T0 + 10),
        ("c", Status.CONFIRMED, T0 + 5),
        ("d", Status.UNKNOWN, T0 + 30),
        ("e", Status.NEEDS_REVIEW, T0 + 1),
        ("f", Status.FAILED, T0 + 2),
    ):
        new = record(key, status, lease_expires_at=lease)
        assert store.claim(new, None, event(new)).acquired
    assert [r.key for r in store.open_effects()] == ["b", "d", "a"]
    assert [r.key for r in store.open_effects(2)] == ["b", "d"]


def test_a_key_prefix_names_keys_in_order_up_to_the_limit(store: Any) -> None:
    for key in ("ab1", "ab2", "ab3", "abc", "b", "a"):
        new = record(key)
        store.claim(new, None, event(new))
    assert store.match_prefix("ab") == ["ab1", "ab2"]
    assert store.match_prefix("ab", 10) == ["ab1", "ab2", "ab3", "abc"]
    assert store.match_prefix("abc", 10) == ["abc"]
    assert store.match_prefix("a", 1) == ["a"]
    assert store.match_prefix("z", 10) == []


def test_releasing_a_new_claim_removes_the_row_only_if_still_that_claim(store: Any) -> None:
    new = record("k1")
    store.claim(new, None, event(new))
    assert store.release("k1", (Status.CLAIMED, 2), None, event(new)) is False
    assert store.release("k1", (Status.EXECUTING, 1), None, event(new)) is False
    assert store.get("k1") == new and len(store.events("k1")) == 1
    assert store.release("k1", (Status.CLAIMED, 1), None, event(new, Status.CLAIMED)) is True
    assert store.get("k1") is None and len(store.events("k1")) == 2


def test_the_set_clause_of_a_partial_compare_and_set() -> None:
    every = cas_set(None)
    assert every[0] == ", ".join(f"{c} = ?" for c in EFFECT_COLUMNS[1:])
    assert every[1] == tuple(range(1, 16))
    assert cas_set(("status", "reason", "status")) == ("status = ?, reason = ?", (2, 10))
    assert cas_set(()) == ("", ())
    for bad in (("key",), ("status", "nope")):
        with pytest.raises(ValueError) as refused:
            cas_set(bad)
        assert str(refused.value) == f"not a column one may set: {[bad[-1]]}"
    assert pg("a = ? AND b = ?") == "a = %s AND b = %s"
