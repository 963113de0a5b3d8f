"""What a run reports after each action, for every combination (issue 23, item 2).

``decision.outcome_of`` turns the last action of a run into its outcome. Its
rules, as its docstring states them, are written out here as an independent
table and compared with it over every action, situation, status and flag:
a released stale claim is claimed next in a run and ends a reconcile as
``failed``; a claim ends only a reconcile or a run that performed (``failed``)
or one that hard-stopped; ``finished`` on an abandoned effect is
``abandoned``; a run that performed says ``completed`` for ``skipped``; a
hard stop turns every move that ends the run into ``hard_stop``.
"""

from __future__ import annotations

import itertools

import pytest

from actonce._rules.decision import (
    MOVES,
    OUTCOMES,
    REFUSAL_OUTCOMES,
    Action,
    Situation,
    outcome_of,
)
from actonce._rules.errors import ProtocolError
from actonce._rules.model import Outcome, Status

A, OUT = Action, Outcome
ENDS = {
    A.FINISHED: OUT.SKIPPED, A.RECORD_CONFIRMED: OUT.SKIPPED, A.RECORD_DUPLICATE: OUT.NEEDS_REVIEW,
    A.HOLD: OUT.NEEDS_REVIEW, A.DEFER: OUT.DEFERRED, A.RELEASE: OUT.DEFERRED, A.MARK_FAILED: OUT.FAILED,
    A.MARK_UNKNOWN: OUT.NEEDS_REVIEW, A.NEEDS_REVIEW: OUT.NEEDS_REVIEW, A.ALARM: OUT.NEEDS_REVIEW,
    A.STOP: OUT.FAILED,
}  # fmt: skip
#: Moves a hard stop reports as such (a release is nothing done: it stays deferred).
STOPPED = {A.MARK_FAILED, A.MARK_UNKNOWN, A.NEEDS_REVIEW, A.RECORD_DUPLICATE, A.ALARM}


def expected(action: Action, sit: Situation, reconcile: bool, performed: bool, hard_stop: bool,
             status: Status | None) -> Outcome | type[ProtocolError] | None:  # fmt: skip
    if action is A.RELEASE and reconcile:
        return OUT.FAILED
    if action is A.RELEASE and sit is Situation.STALE_CLAIM:
        return None
    if action is A.CLAIM:
        if hard_stop:
            return OUT.HARD_STOP
        return OUT.FAILED if reconcile or performed else ProtocolError
    if action is A.FINISHED and status is Status.ABANDONED:
        return OUT.ABANDONED
    if action not in ENDS:
        return ProtocolError
    if ENDS[action] is OUT.SKIPPED:
        return OUT.COMPLETED if performed else OUT.SKIPPED
    if hard_stop and action in STOPPED:
        return OUT.HARD_STOP
    return ENDS[action]


COMBOS = list(itertools.product(
    Action, (Situation.NEW, Situation.STALE_CLAIM, Situation.OWNED, Situation.DONE),
    (False, True), (False, True), (False, True), (None, Status.ABANDONED, Status.CONFIRMED),
))  # fmt: skip


@pytest.mark.parametrize("action", list(Action))
def test_the_outcome_after_each_action(action: Action) -> None:
    for act, sit, reconcile, performed, hard_stop, status in COMBOS:
        if act is not action:
            continue
        want = expected(act, sit, reconcile, performed, hard_stop, status)
        flags = {"reconcile": reconcile, "performed": performed, "hard_stop": hard_stop}
        if want is ProtocolError:
            with pytest.raises(ProtocolError):
                outcome_of(act, sit, status=status, **flags)
        else:
            got = outcome_of(act, sit, status=status, **flags)
            assert got is want, (act, sit, flags, status, got)


def test_the_tables_behind_it() -> None:
    assert OUTCOMES == {**ENDS, A.CLAIM: OUT.FAILED}
    assert set(MOVES) == STOPPED | {A.RELEASE}
    assert {a: s.value for a, s in MOVES.items()} == {
        A.RELEASE: "failed", A.MARK_FAILED: "failed", A.MARK_UNKNOWN: "unknown",
        A.NEEDS_REVIEW: "needs_review", A.RECORD_DUPLICATE: "needs_review",
        A.ALARM: "needs_review",
    }  # fmt: skip
    assert REFUSAL_OUTCOMES == {"intent": OUT.REFUSED, "approval": OUT.REFUSED,
                                "budget": OUT.OVER_BUDGET}  # fmt: skip
    # Without its status, a finished effect is a skip.
    assert outcome_of(A.FINISHED, Situation.DONE, reconcile=False, performed=False,
                      hard_stop=False) is OUT.SKIPPED  # fmt: skip
