"""An operation's view, step by step, as the ledger holds it (issue 23 item 2).

Each step's state is read from its effect's record (status, attempts = the
record's fence, since = its last change, reason) and its undo's (status,
attempts), with what the definition says (role, attempts allowed, backoff,
whether it has an undo); the step in question is named with its attempt,
whether it is the undo, and since when it stands. Memory store, a frozen
clock that moves one second per perform.
"""

from __future__ import annotations

from actonce import (
    Absent,
    Confirmed,
    Effect,
    Ledger,
    MemoryStore,
    Operation,
    OperationState,
    Policy,
    Status,
    Step,
    Unavailable,
)
from actonce._rules.operations import Role, StepState
from actonce.testing import FrozenClock

POLICY = Policy(verify_attempts=1, lease_seconds=30.0, settle_seconds=0.0,
                absence_authoritative=True)  # fmt: skip


class World:
    def __init__(self) -> None:
        self.clock = FrozenClock(start=1_000.0)
        self.ledger = Ledger(MemoryStore(), clock=self.clock)
        self.made: list[str] = []

    def effect(self, key: str, *, ok: bool = True, lost: bool = False) -> Effect:
        def perform() -> None:
            self.clock.advance(1.0)
            if ok:
                self.made.append(key)
            if lost:
                raise TimeoutError("the response was lost")

        def verify() -> object:
            if lost and key in self.made:
                return Unavailable("the page times out")
            return Confirmed(key) if key in self.made else Absent()

        return Effect(key=key, kind="pin", payload={}, perform=perform, verify=verify,
                      policy=POLICY)  # fmt: skip


def test_a_compensated_operation_s_steps() -> None:
    w = World()
    steps = [Step("hold", w.effect("k-hold"), "compensatable", undo=w.effect("k-unhold")),
             Step("book", w.effect("k-book", ok=False), "pivot")]  # fmt: skip
    result = Operation(w.ledger, "op-1", steps).run()
    assert (result.state, result.reason) == (OperationState.COMPENSATED, "book failed; undone")
    assert [(n, r.status, r.attempt) for n, r in result.runs] == [
        ("hold", Status.CONFIRMED, 1), ("book", Status.FAILED, 1),
        ("undo hold", Status.CONFIRMED, 1),
    ]  # fmt: skip
    view = w.ledger.operations.get("op-1")
    assert (view.op_id, view.intent, view.state, view.reason) == (
        "op-1", None, OperationState.COMPENSATED, "book failed; undone",
    )  # fmt: skip
    assert (view.step, view.attempt, view.undo, view.since, view.decisions) == (
        None, 0, False, None, (),
    )  # fmt: skip
    assert view.states == (
        StepState("hold", Role.COMPENSATABLE, Status.CONFIRMED, 1, 1, Status.CONFIRMED, True, 1,
                  1001.0, None, 30.0, False),
        StepState("book", Role.PIVOT, Status.FAILED, 1, 1, None, False, 0, 1002.0,
                  "verified absent after the settle window", 30.0, False),
    )  # fmt: skip


def test_an_undo_in_doubt_is_the_step_in_question() -> None:
    w = World()
    steps = [Step("hold", w.effect("k-hold"), "compensatable",
                  undo=w.effect("k-unhold", lost=True), backoff=12.0),
             Step("book", w.effect("k-book", ok=False), "pivot", attempts=2)]  # fmt: skip
    result = Operation(w.ledger, "op-2", steps).run()
    assert (result.state, result.reason) == (
        OperationState.NEEDS_REVIEW, "the undo of hold is unknown",
    )  # fmt: skip
    assert [(n, r.status, r.attempt) for n, r in result.runs] == [
        ("hold", Status.CONFIRMED, 1), ("book", Status.FAILED, 1), ("book", Status.FAILED, 2),
        ("undo hold", Status.UNKNOWN, 1),
    ]  # fmt: skip
    view = w.ledger.operations.get("op-2")
    undo = w.ledger.get("k-unhold")
    assert undo is not None and undo.updated_at == 1004.0
    assert (view.state, view.step, view.attempt, view.undo, view.since) == (
        OperationState.NEEDS_REVIEW, "hold", 1, True, 1004.0,
    )  # fmt: skip
    assert view.states == (
        StepState("hold", Role.COMPENSATABLE, Status.CONFIRMED, 1, 1, Status.UNKNOWN, True, 1,
                  1001.0, None, 12.0, False),
        StepState("book", Role.PIVOT, Status.FAILED, 2, 2, None, False, 0, 1003.0,
                  "verified absent after the settle window", 30.0, False),
    )  # fmt: skip
    assert [s.name for s in view.steps] == ["hold", "book"]
    assert view.steps[0].undo_key == "k-unhold" and view.steps[1].undo_key is None
