"""Issue 7, item 5: one unstorable answer from the world must not stop every reconcile pass.

A verifier's ``Unavailable`` reason, a ``Confirmed`` result reference, an
exception's message, a perform's ``details``: text from code and pages
actonce does not control. A lone surrogate has no UTF-8 form (SQLite raised
a raw ``UnicodeEncodeError``), a NUL is refused by PostgreSQL's text type
(and was misreported as "may have committed"). Such text is made storable
before any write; a record whose reconcile still fails is reported in
``ReconcileReport.errors`` and the pass settles the others.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from actonce import (
    Absent,
    Confirmed,
    Effect,
    EffectRecord,
    Ledger,
    Outcome,
    Policy,
    Registry,
    Status,
    Unavailable,
    effect_key,
)
from actonce.testing import FaultyStore, FrozenClock

QUICK = Policy(verify_backoff=0, verify_attempts=1, settle_seconds=1000)
SURROGATE, NUL = "\ud800", "\x00"


class Crash(BaseException):
    """The worker dies inside its perform: the ``executing`` mark is left, an orphan."""


def _raise(exc: Exception) -> Any:
    raise exc


#: kind -> the verifier's answer to reconcile (a verdict, or an exception it raises).
ANSWERS: dict[str, Any] = {
    "unavailable-surrogate": lambda r: Unavailable(f"page said {SURROGATE}"),
    "unavailable-nul": lambda r: Unavailable(f"page said {NUL} twice"),
    "confirmed-surrogate": lambda r: Confirmed(f"ref-{SURROGATE}"),
    "confirmed-nul": lambda r: Confirmed(f"ref-{NUL}"),
    "duplicate-refs": lambda r: Confirmed("a", count=2, refs=(f"a{SURROGATE}", f"b{NUL}")),
    "raises-surrogate": lambda r: _raise(RuntimeError(f"boom {SURROGATE}")),
    "raises-nul": lambda r: _raise(RuntimeError(f"boom {NUL}")),
    "healthy": lambda r: Confirmed("fine"),
}


def _key(kind: str) -> str:
    return effect_key(tenant="t", actor="a", kind=kind, object="o", operation="c").value


def _orphans(ledger: Ledger) -> None:
    def crash() -> None:
        raise Crash

    for kind in ANSWERS:
        with pytest.raises(Crash):
            ledger.run(Effect(_key(kind), kind, {"kind": kind}, crash, Absent, policy=QUICK))


def _clean(text: str | None) -> bool:
    if text is None:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return NUL not in text


def _assert_storable(ledger: Ledger, key: str) -> None:
    record = ledger.get(key)
    assert record is not None
    for text in (record.reason, record.result_ref):
        assert _clean(text), f"{text!r} was stored as is"
    for event in ledger.events(key):
        assert _clean(event.message), event
        assert _clean(json.dumps(event.data, ensure_ascii=False)), event


def test_unstorable_verifier_answers_are_repaired_and_every_orphan_settles(
    durable_url: str,
) -> None:
    clock = FrozenClock()
    registry = Registry()
    for kind, answer in ANSWERS.items():
        registry.register(kind, answer, policy=QUICK)
    with Ledger.open(durable_url, create=True, clock=clock, registry=registry) as ledger:
        _orphans(ledger)
        clock.advance(QUICK.lease_seconds + 1)
        report = ledger.reconcile()
        assert report.errors == ()
        status = {r.key: r.status for r in report.results}
        assert len(status) == len(ANSWERS)
        assert status[_key("healthy")] is Status.CONFIRMED
        assert status[_key("confirmed-surrogate")] is Status.CONFIRMED
        assert status[_key("confirmed-nul")] is Status.CONFIRMED
        assert status[_key("duplicate-refs")] is Status.NEEDS_REVIEW
        for kind in ("unavailable-surrogate", "unavailable-nul", "raises-surrogate", "raises-nul"):
            assert status[_key(kind)] is Status.UNKNOWN  # moved on from the orphaned mark
        for kind in ANSWERS:
            _assert_storable(ledger, _key(kind))
        # The answers handed back are storable text too (the CLI prints them).
        assert all(_clean(r.reason) and _clean(r.result_ref) for r in report.results)
        second = ledger.reconcile()  # and the next pass is not stopped either
        assert second.errors == ()


def test_a_record_whose_reconcile_fails_is_reported_and_the_pass_goes_on(
    durable_url: str,
) -> None:
    clock = FrozenClock()
    registry = Registry()
    for kind, answer in ANSWERS.items():
        registry.register(kind, answer, policy=QUICK)
    with Ledger.open(durable_url, create=True, clock=clock, registry=registry) as opened:
        _orphans(opened)
        faulty = FaultyStore(opened.store)
        unlucky = _key("confirmed-nul")
        faulty.fail("transition", match=lambda r: r.key == unlucky)
        ledger = Ledger(faulty, clock=clock, registry=registry)  # type: ignore[arg-type]
        clock.advance(QUICK.lease_seconds + 1)
        report = ledger.reconcile()
        assert [key for key, _ in report.errors] == [unlucky]
        assert "injected" in report.errors[0][1]
        by_key = {r.key: r for r in report.results}
        assert by_key[unlucky].outcome is Outcome.DEFERRED
        assert by_key[_key("healthy")].status is Status.CONFIRMED
        assert sum(r.status is not Status.EXECUTING for r in report.results) == len(ANSWERS) - 1
        record = opened.get(unlucky)
        assert isinstance(record, EffectRecord) and record.status is Status.EXECUTING


@pytest.mark.parametrize("bad", [SURROGATE, NUL], ids=["surrogate", "nul"])
def test_perform_details_and_messages_from_the_world_are_stored_repaired(
    durable_url: str, bad: str
) -> None:
    clock = FrozenClock()

    def perform() -> None:
        exc = RuntimeError(f"the page answered {bad}")
        exc.details = {f"head{bad}": [f"value{bad}", {"k": bad}], "n": 1}  # type: ignore[attr-defined]
        raise exc

    with Ledger.open(durable_url, create=True, clock=clock) as ledger:
        result = ledger.run(Effect(_key("details"), "details", {}, perform, Absent, policy=QUICK))
        assert result.status is Status.UNKNOWN
        _assert_storable(ledger, result.key)
        data = ledger.events(result.key)[-1].data
        assert data["perform"]["details"]["n"] == 1
