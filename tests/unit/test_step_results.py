"""The secret-free attributes a traced step ends with, every branch (issue 23 item 2).

``step_result`` names a verification's verdict (a duplicate by its count, a
hard stop by a flag), a perform's duration, error type and overtaking, a
claim's acquisition or refusal, a transition's compare-and-set, and the
settle time of a settled record that was executing; ``step_of`` names the
step an operation is and hands a claim the scope's trace context. Records
come from a real run on a memory store with a frozen clock.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from actonce import Absent, Confirmed, Effect, Ledger, MemoryStore, Status, Unavailable
from actonce._rules.approvals import Refusal
from actonce._run.ops import Claim, Performed, Tick, Transition, Verified, Verify
from actonce._run.telemetry import STEPS, fingerprint, origin_of, step_of, step_result
from actonce._store.records import ClaimResult
from actonce.testing import FrozenClock

TICK = Tick(1_000.0, 5.0, True)


def _history() -> tuple[Any, list[Any]]:
    clock = FrozenClock(start=1_000.0)
    ledger = Ledger(MemoryStore(), clock=clock)
    made: list[int] = []

    def perform() -> None:
        clock.advance(4.0)
        made.append(1)

    ledger.run(Effect(key="k", kind="pin", payload={}, perform=perform,
                      verify=lambda: Confirmed("r") if made else Absent()))  # fmt: skip
    record = ledger.get("k")
    assert record is not None and record.status is Status.CONFIRMED
    return record, ledger.events("k")


def test_verdicts_by_name() -> None:
    assert step_result("verify", Verified(Absent(), TICK)) == {"actonce.verdict": "absent"}
    assert step_result("verify", Verified(Unavailable("x"), TICK)) == {
        "actonce.verdict": "unavailable"
    }
    assert step_result("verify", Verified(Unavailable("x"), TICK, "login wall")) == {
        "actonce.verdict": "unavailable", "actonce.verdict.hard_stop": True,
    }  # fmt: skip
    assert step_result("verify", Verified(Confirmed("r", count=3, refs=("a", "b", "c")), TICK)) == {
        "actonce.verdict": "duplicate", "actonce.verdict.count": 3,
    }  # fmt: skip


def test_a_perform_by_duration_error_type_and_overtaking() -> None:
    plain = Performed(None, None, TICK, 1.23456789, False)
    assert step_result("perform", plain) == {"actonce.perform.seconds": 1.234568}
    failed = Performed(TimeoutError("secret text"), None, TICK, 0.5, True)
    assert step_result("perform", failed) == {
        "actonce.perform.seconds": 0.5, "error.type": "TimeoutError",
        "actonce.perform.overtaken": True,
    }  # fmt: skip


def test_a_claim_and_a_transition_by_what_they_won_and_settled() -> None:
    record, _ = _history()
    assert record.executing_at is not None and record.updated_at - record.executing_at == 4.0
    assert step_result("claim", ClaimResult(True, record)) == {
        "actonce.claim.acquired": True, "actonce.settle.seconds": 4.0,
    }  # fmt: skip
    assert step_result("claim", ClaimResult(False, record)) == {"actonce.claim.acquired": False}
    refused = ClaimResult(False, None, Refusal("no budget", kind="budget"))
    assert step_result("claim", refused) == {
        "actonce.claim.acquired": False, "actonce.claim.refused": "budget",
    }  # fmt: skip
    assert step_result("record", None) == {"actonce.cas.won": False}
    assert step_result("record", record) == {"actonce.cas.won": True, "actonce.settle.seconds": 4.0}
    early = replace(record, updated_at=record.executing_at - 1.0)
    assert step_result("record", early)["actonce.settle.seconds"] == 0.0
    for status in (Status.FAILED, Status.NEEDS_REVIEW, Status.ABANDONED):
        assert "actonce.settle.seconds" in step_result("record", replace(record, status=status))
    for status in (Status.UNKNOWN, Status.EXECUTING, Status.CLAIMED):
        assert step_result("record", replace(record, status=status)) == {"actonce.cas.won": True}
    never = replace(record, executing_at=None)
    assert step_result("record", never) == {"actonce.cas.won": True}


class Scope:
    def __init__(self, parent: str | None) -> None:
        self.parent = parent

    def traceparent(self) -> str | None:
        return self.parent


def test_each_operation_is_its_step() -> None:
    record, events = _history()
    claimed = replace(record, status=Status.CLAIMED)
    event = replace(events[0], data={"a": 1})
    claim = Claim(claimed, None, event)
    name, attrs, op = step_of(claim, Scope("tp-9"))  # type: ignore[misc, arg-type]
    assert (name, attrs) == ("claim", {"actonce.attempt": 1, "actonce.status.to": "claimed"})
    assert op.event.data == {"a": 1, "traceparent": "tp-9"} and event.data == {"a": 1}
    name, attrs, op = step_of(claim, Scope(None))  # type: ignore[misc, arg-type]
    assert name == "claim" and op is claim
    direct = Claim(replace(record, status=Status.EXECUTING), None, event)
    assert step_of(direct, Scope("tp"))[0] == "claim"  # type: ignore[arg-type, index]
    found = Claim(record, None, event)
    name, attrs, op = step_of(found, Scope("tp"))  # type: ignore[misc, arg-type]
    assert (name, attrs, op) == (
        "record", {"actonce.attempt": 1, "actonce.status.to": "confirmed"}, found,
    )  # fmt: skip
    mark = Transition((Status.CLAIMED, 1), replace(record, status=Status.EXECUTING), event)
    assert step_of(mark, Scope("tp")) == ("mark_executing", {  # type: ignore[arg-type]
        "actonce.attempt": 1, "actonce.status.from": "claimed", "actonce.status.to": "executing",
    }, mark)  # fmt: skip
    settle = Transition((Status.EXECUTING, 1), record, event)
    assert step_of(settle, Scope("tp"))[0] == "record"  # type: ignore[arg-type, index]
    assert step_of(Verify(), Scope("tp")) == ("verify", {}, Verify())  # type: ignore[arg-type]
    assert step_of("anything else", Scope("tp")) is None  # type: ignore[arg-type]
    assert STEPS == ("claim", "mark_executing", "perform", "verify", "record")


def test_the_origin_is_the_latest_claim_s_trace_context() -> None:
    _, events = _history()
    assert origin_of(events) is None
    first = replace(events[0], data={"traceparent": "tp-1"})
    second = replace(events[0], data={"traceparent": "tp-2"})
    other = replace(events[1], data={"traceparent": 5})
    assert origin_of([first, events[1], second, other]) == "tp-2"
    assert origin_of([replace(events[0], data=None)]) is None  # type: ignore[arg-type]
    assert fingerprint("k") == "8254c329a92850f6"
    assert len(fingerprint("x" * 1000)) == 16
