"""The ledger's reads: what each accepts, and each refusal in its own words (issue 23 item 2).

The ``_run`` area's reads (``reads.py``) check what a caller asks before
any backend sees it: a status filter, a page cursor, a limit, a key, a
receipt time, a run id, an operator's name. Each refusal names the value;
each accepted form answers as the others do. Memory store, a frozen clock.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from actonce import (
    Absent,
    Confirmed,
    Effect,
    Ledger,
    MemoryStore,
    OperationState,
    Policy,
    Status,
    UnknownEffect,
    UsageError,
)
from actonce.testing import FrozenClock

POLICY = Policy(verify_attempts=1, lease_seconds=30.0, settle_seconds=0.0,
                absence_authoritative=True)  # fmt: skip
CHOICES = ", ".join(s.value for s in Status)


def _ledger() -> tuple[Ledger, FrozenClock]:
    clock = FrozenClock(start=1_000.0)
    ledger = Ledger(MemoryStore(), clock=clock)
    for key, verify in (("done-1", Confirmed), ("gone-1", Absent), ("done-2", Confirmed)):
        made: list[int] = []
        ledger.run(Effect(key=key, kind="pin" if key != "done-2" else "other", payload={},
                          perform=lambda m=made: m.append(1),
                          verify=lambda m=made, v=verify: v("r") if m and v is Confirmed
                          else Absent(), policy=POLICY))  # fmt: skip
        clock.advance(1.0)
    return ledger, clock


def _refused(call: Any, message: str) -> None:
    with pytest.raises(UsageError) as err:
        call()
    assert str(err.value) == message


def test_a_status_filter_is_one_status_several_or_none() -> None:
    ledger, _ = _ledger()
    assert [r.key for r in ledger.list()] == ["done-1", "gone-1", "done-2"]
    assert [r.key for r in ledger.list("confirmed")] == ["done-1", "done-2"]
    assert [r.key for r in ledger.list(Status.FAILED)] == ["gone-1"]
    assert [r.key for r in ledger.list(["failed", Status.CONFIRMED])] == [
        "done-1", "gone-1", "done-2",
    ]  # fmt: skip
    assert [r.key for r in ledger.list(("failed",))] == ["gone-1"]
    assert ledger.counts() == {Status.CONFIRMED: 2, Status.FAILED: 1}
    assert ledger.counts("failed") == {Status.FAILED: 1}
    assert [r.key for r in ledger.list(kind="other")] == ["done-2"]


@pytest.mark.parametrize("status", [[], ()])
def test_an_empty_filter_is_refused(status: Any) -> None:
    ledger, _ = _ledger()
    _refused(lambda: ledger.list(status), "give at least one status, or None for all")
    _refused(lambda: ledger.counts(status), "give at least one status, or None for all")


@pytest.mark.parametrize("status", ["done", ["failed", "nope"], "CONFIRMED"])
def test_a_filter_names_statuses_only(status: Any) -> None:
    ledger, _ = _ledger()
    message = f"a status is one of {CHOICES}, not {status!r}"
    _refused(lambda: ledger.list(status), message)
    _refused(lambda: ledger.counts(status), message)


def test_a_page_starts_after_a_record_or_its_cursor() -> None:
    ledger, _ = _ledger()
    first = ledger.list(limit=2)
    assert [r.key for r in first] == ["done-1", "gone-1"]
    assert [r.key for r in ledger.list(limit=2, after=first[-1])] == ["done-2"]
    cursor = (first[-1].updated_at, first[-1].key)
    assert [r.key for r in ledger.list(after=cursor)] == ["done-2"]
    assert first[0].updated_at == int(first[0].updated_at)  # a whole number is a time too
    whole = (int(first[0].updated_at), "done-1")
    assert [r.key for r in ledger.list(after=whole)] == ["gone-1", "done-2"]


@pytest.mark.parametrize(
    "after",
    [(1.0,), (1.0, "k", 2), ("1", "k"), (True, "k"), (float("nan"), "k"), (float("inf"), "k"),
     (1.0, 2), [1.0, "k"], "k"],
)  # fmt: skip
def test_a_cursor_is_an_updated_at_and_a_key(after: Any) -> None:
    ledger, _ = _ledger()
    _refused(
        lambda: ledger.list(after=after),
        f"after is the last record of a page or its (updated_at, key), not {after!r}",
    )


@pytest.mark.parametrize("limit", [0, -1, 1_000_001, 1.5, True, "10", None])
def test_a_limit_is_a_whole_number_up_to_a_million(limit: Any) -> None:
    ledger, _ = _ledger()
    message = f"limit must be a whole number from 1 to 1,000,000, not {limit!r}"
    _refused(lambda: ledger.list(limit=limit), message)
    _refused(lambda: ledger.receipts(limit=limit), message)
    _refused(lambda: ledger.summaries(limit=limit), message)
    _refused(lambda: ledger.reconcile(limit=limit), message)


def test_limits_at_their_bounds_are_taken() -> None:
    ledger, _ = _ledger()
    assert len(ledger.list(limit=1)) == 1
    assert len(ledger.list(limit=1_000_000)) == 3


def test_a_key_is_a_string_and_a_name() -> None:
    ledger, _ = _ledger()
    _refused(lambda: ledger.get(5), "a key is a string, not int")  # type: ignore[arg-type]
    _refused(lambda: ledger.get(b"done-1"), "a key is a string, not bytes")  # type: ignore[arg-type]
    assert ledger.get("") is None and ledger.get("a\x00b") is None
    assert ledger.get("nope") is None
    record = ledger.get("done-1")
    assert record is not None and record.status is Status.CONFIRMED


@pytest.mark.parametrize("before", ["5", True, float("nan")])
def test_a_receipt_page_starts_before_a_ledger_time(before: Any) -> None:
    ledger, _ = _ledger()
    _refused(
        lambda: ledger.receipts(before=before),
        f"before is a ledger time (a number), not {before!r}",
    )
    assert ledger.receipts(before=5) == [] and ledger.receipts(before=5.5) == []


@pytest.mark.parametrize("key", ["", None, 3])
def test_an_effect_key_for_its_operation_is_a_non_empty_string(key: Any) -> None:
    ledger, _ = _ledger()
    _refused(
        lambda: ledger.operation_of(key),
        f"an effect key is a non-empty string, not {key!r}",
    )
    assert ledger.operation_of("done-1") is None


@pytest.mark.parametrize("run_id", ["", None, 7])
def test_a_summary_is_asked_by_its_run_id(run_id: Any) -> None:
    ledger, _ = _ledger()
    _refused(lambda: ledger.summary(run_id), f"a run id is a non-empty string, not {run_id!r}")
    assert ledger.summary("no-such-run") is None


def test_summaries_are_of_an_operator_by_name() -> None:
    ledger, _ = _ledger()
    _refused(lambda: ledger.summaries(5), "an operator's name is a string, not int")  # type: ignore[arg-type]
    assert ledger.summaries("nobody") == [] and ledger.summaries() == []


def test_events_by_key_or_prefix_and_a_miss_says_so() -> None:
    ledger, _ = _ledger()
    assert [e.type.value for e in ledger.events("gone")] == ["claimed", "executing", "failed"]
    assert ledger.events("gone-1") == ledger.events("gone")
    with pytest.raises(UnknownEffect) as err:
        ledger.events("zzzz")
    assert str(err.value) == "no effect with key 'zzzz'"


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("", "kind must be a non-empty string, not ''"),
        (" ", "kind must be a non-empty string, not ' '"),
        ("x\x00", "kind cannot contain a NUL character"),
    ],
)
def test_a_kind_filter_is_a_name(kind: str, message: str) -> None:
    ledger, _ = _ledger()
    _refused(lambda: ledger.list(kind=kind), message)


def _receipts(store: MemoryStore) -> None:
    for i, at in enumerate((5.0, 6.0, 7.0)):
        data = json.dumps({"n": i, "written_at": at})
        assert store.receipt_put(f"op-{i}", "complete", f"receipt {i}", data, at, "run-1")


def test_receipts_page_newest_first_before_a_time() -> None:
    store = MemoryStore()
    _receipts(store)
    ledger = Ledger(store, clock=FrozenClock(start=100.0))
    page = ledger.receipts(limit=2)
    assert [(r.operation_id, at) for r, at in page] == [("op-2", 7.0), ("op-1", 6.0)]
    rest = ledger.receipts(limit=2, before=page[-1][1])
    assert [(r.operation_id, at) for r, at in rest] == [("op-0", 5.0)]
    assert ledger.receipts(before=5.0) == []
    assert [r.operation_id for r, _ in ledger.receipts(before=6.5)] == ["op-1", "op-0"]
    ((receipt, _),) = ledger.receipts(limit=1)
    assert (receipt.state, receipt.text, receipt.data) == (
        OperationState.COMPLETE, "receipt 2", {"n": 2, "written_at": 7.0},
    )  # fmt: skip


def test_a_receipt_without_a_definition_is_the_one_stored() -> None:
    store = MemoryStore()
    _receipts(store)
    ledger = Ledger(store, clock=FrozenClock(start=100.0))
    receipt = ledger.receipt("op-1")
    assert receipt is not None
    assert (receipt.operation_id, receipt.state, receipt.text, receipt.data) == (
        "op-1", OperationState.COMPLETE, "receipt 1", {"n": 1, "written_at": 6.0},
    )  # fmt: skip
    assert ledger.receipt("op-9") is None
    assert ledger.receipt("  ") is None and ledger.receipt("") is None
