"""A withdrawn operation whose pivot ran anyway is not "compensated" while it is in doubt.

Operation passes take no lease: a pass that chose the pivot before a person
withdrew the operation may run it after another pass began the undos. If
that pivot's outcome is then unknown, the booking may have happened: the
operation must stop for a person (``needs_review``), not report itself
compensated with "nothing more is done" (invariant 10: a step whose outcome
is unknown goes to review).
"""

from __future__ import annotations

from typing import Any

from actonce import (
    Absent,
    Confirmed,
    Effect,
    Ledger,
    Operation,
    OperationState,
    Policy,
    Step,
    Unavailable,
)
from actonce.testing import FrozenClock, MemoryStore

POLICY = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1, verify_backoff=0)


def test_a_pivot_run_by_a_stale_pass_after_the_undos_stops_the_operation_for_review() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    world: dict[str, Any] = {"hold": False, "book": False, "site_down": True}

    def effect(name: str, perform: Any, look: Any) -> Effect:
        return Effect(f"op1-{name}", name, {"n": name}, perform, look, policy=POLICY)

    def book_look() -> Any:
        if world["site_down"]:
            return Unavailable("the hotel's site is down")
        return Confirmed("B-1") if world["book"] else Absent()

    def book() -> None:
        world["book"], world["site_down"] = True, True  # sent; then the site is down again

    hold = effect("hold", lambda: world.update(hold=True),
                  lambda: Confirmed("H-1") if world["hold"] else Absent())  # fmt: skip
    release = effect("release", lambda: world.update(hold=False),
                     lambda: Absent() if world["hold"] else Confirmed("R-1"))  # fmt: skip
    steps = [Step("hold", hold, "compensatable", undo=release),
             Step("book", effect("book", book, book_look), "pivot")]  # fmt: skip
    op = Operation(ledger, "op1", steps)
    first = op.run()  # the hold is made; the booking's look is unavailable: deferred
    assert [(n, r.outcome.value) for n, r in first.runs] == [
        ("hold", "completed"), ("book", "deferred"),
    ]  # fmt: skip
    op.withdraw(by="ana", reason="we stay home")
    assert op.run().state is OperationState.COMPENSATED  # the hold is undone
    # The pass that had chosen the booking before the withdrawal runs it now.
    world["site_down"] = False
    stale = ledger.run(effect("book", book, book_look))
    assert stale.performed and stale.status is not None and stale.status.value == "unknown"
    view = ledger.operations.get("op1")
    assert (view.state, view.assessment.reason) == (
        OperationState.NEEDS_REVIEW, "book is unknown: it cannot be compensated blindly",
    )  # fmt: skip
    receipt = ledger.receipt("op1")
    assert receipt is not None and receipt.text.splitlines()[0] == (
        "Operation op1 is stopped: a person checks it before anything else is done."
    )
