"""An operator's pass over its operations' due work, when the ``resume`` hook fails
(issue 23 item 2, the ``_run`` area's sample dev-run-1).

A hook that hard-stops stops the run, naming the operation; one that raises
anything else fails that operation's item and the run goes on. The world of
``test_operation_endings`` (a message dropped once, sent again after its backoff).
"""

from __future__ import annotations

from actonce import HardStop, ItemClass, Operator, RunStage, RunStatus

from .test_operation_endings import Notifier, World, _complete_with_a_dropped_message


class Failing(Notifier):
    def __init__(self, error: BaseException) -> None:
        super().__init__({})
        self.error = error

    def resume(self, op_id: str) -> None:
        raise self.error


def _due(w: World) -> str:
    op = _complete_with_a_dropped_message(w, drops=1)
    w.clock.advance(30)
    assert w.ledger.operations.due() == [op.op_id]
    return op.op_id


def test_a_resume_that_hard_stops_stops_the_run_naming_the_operation() -> None:
    w = World()
    op_id = _due(w)
    summary = Operator(w.ledger, "trips", Failing(HardStop("the gateway asks to log in")),
                       kinds=("notify",)).run()  # fmt: skip
    assert summary.status is RunStatus.HARD_STOP
    (stop,) = summary.stops
    assert (stop.stage, stop.reason) == (
        RunStage.OPERATIONS,
        f"{op_id}: the gateway asks to log in",
    )
    assert summary.items == ()


def test_a_resume_that_raises_fails_its_item_and_the_run_goes_on() -> None:
    w = World()
    op_id = _due(w)
    summary = Operator(w.ledger, "trips", Failing(RuntimeError("no such trip")),
                       kinds=("notify",)).run()  # fmt: skip
    assert summary.status is RunStatus.COMPLETED and summary.stops == ()
    (item,) = summary.items
    assert (item.label, item.cls, item.stage, item.reason) == (
        op_id, ItemClass.FAILED, RunStage.OPERATIONS,
        "its pass raised: RuntimeError: no such trip",
    )  # fmt: skip
    assert summary.operations == {"in_review": 0}


def test_a_resume_that_answers_none_leaves_the_operation_alone() -> None:
    w = World()
    _due(w)
    summary = Operator(w.ledger, "trips", Notifier({}), kinds=("notify",)).run()
    assert summary.status is RunStatus.COMPLETED
    assert summary.items == () and summary.operations == {"in_review": 0}
