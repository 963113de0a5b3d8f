"""People's decisions about an operation, ruled on whole (issue 23, item 2).

``operation_review.judge`` answers a decision like an approval's answer:
accepted (about which step, on which attempt, and what the undo's own
effect must record first), the same again, or refused with the reason in
words. ``choices`` lists what a person may decide where the operation
stands, and ``in_question`` names the step and attempt. Each case states the
whole ``Ruling``.
"""

from __future__ import annotations

from typing import Any

import pytest

from actonce._rules.approvals import Answered
from actonce._rules.model import Resolution, Status
from actonce._rules.operation_review import Ruling, choices, decision_of, in_question, judge
from actonce._rules.operations import (
    Assessment,
    DecisionRecord,
    Next,
    OperationDecision,
    OperationState,
    Role,
    StepState,
    assess,
)

S, R, D = Status, Role, OperationDecision
OK, SAME, NO = Answered.ACCEPTED, Answered.SAME, Answered.REFUSED


def st(name: str, role: Role, status: Status | None = None, attempts: int = 0,
       **kw: Any) -> StepState:  # fmt: skip
    if role is R.COMPENSATABLE:
        kw.setdefault("has_undo", True)
    return StepState(name, role, status, attempts, **kw)


UNDO_REFUSED = [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1, undo=S.FAILED, undo_attempts=2),
                st("book", R.PIVOT, S.FAILED, 3)]  # fmt: skip
UNDO_IN_DOUBT = [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1, undo=S.UNKNOWN, undo_attempts=2),
                 st("book", R.PIVOT, S.FAILED, 3)]  # fmt: skip
STEP_IN_DOUBT = [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1), st("book", R.PIVOT, S.UNKNOWN, 3)]
ON_ITS_WAY = [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1), st("book", R.PIVOT)]
MAIL_IN_DOUBT = [st("book", R.PIVOT, S.CONFIRMED, 1), st("mail", R.RETRIABLE, S.UNKNOWN, 2)]
COMPLETE = [st("book", R.PIVOT, S.CONFIRMED, 1), st("mail", R.RETRIABLE, S.CONFIRMED, 1)]
MAIL_DUE = [st("book", R.PIVOT, S.CONFIRMED, 1), st("mail", R.RETRIABLE)]
COMPENSATED = [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1, undo=S.CONFIRMED, undo_attempts=1),
               st("book", R.PIVOT, S.FAILED, 1)]  # fmt: skip
UNDOING = [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1), st("book", R.PIVOT, S.FAILED, 1)]

ALL = (D.RETRY_UNDO, D.UNDONE_BY_HAND, D.ACCEPT, D.ABANDON)
CHOICES = [
    ("an-undo-refused", UNDO_REFUSED, (), ("hold", 2), ALL),
    ("an-undo-in-doubt", UNDO_IN_DOUBT, (), ("hold", 2), ALL),
    ("a-step-in-doubt", STEP_IN_DOUBT, (), ("book", 3), (D.ACCEPT, D.ABANDON)),
    ("on-its-way", ON_ITS_WAY, (), ("book", 0), (D.WITHDRAW, D.ABANDON)),
    ("being-undone", UNDOING, (), ("hold", 1), (D.WITHDRAW, D.ABANDON)),
    ("withdrawn", ON_ITS_WAY, (DecisionRecord(D.WITHDRAW, "ana", 1.0, "no"),), ("hold", 1),
     (D.ABANDON,)),
    ("complete-a-message-in-doubt", MAIL_IN_DOUBT, (), ("mail", 2), (D.ACCEPT,)),
    ("complete-a-message-due", MAIL_DUE, (), ("mail", 0), ()),
    ("complete", COMPLETE, (), (None, 0), ()),
    ("compensated", COMPENSATED, (), (None, 0), ()),
    ("accepted", UNDO_REFUSED, (DecisionRecord(D.ACCEPT, "bo", 1.0, "ok"),), (None, 0), ()),
    ("abandoned", UNDO_REFUSED, (DecisionRecord(D.ABANDON, "bo", 1.0, "no"),), (None, 0), ()),
]  # fmt: skip


@pytest.mark.parametrize(("steps", "decisions", "where", "expected"), [c[1:] for c in CHOICES],
                         ids=[c[0] for c in CHOICES])  # fmt: skip
def test_what_a_person_may_decide_where_the_operation_stands(
    steps: list[StepState],
    decisions: tuple[DecisionRecord, ...],
    where: tuple[str | None, int],
    expected: tuple[OperationDecision, ...],
) -> None:
    a = assess(steps, decisions=decisions)
    assert in_question(a, steps) == where
    assert choices(a, steps) == expected


def test_choices_in_each_state_of_an_assessment() -> None:
    steps = [st("book", R.PIVOT, S.UNKNOWN, 1)]
    for state in (OperationState.ACCEPTED, OperationState.ABANDONED, OperationState.COMPENSATED):
        assert choices(Assessment(state, Next.STOP, 0, undo=True), steps) == ()
    for state in (OperationState.IN_PROGRESS, OperationState.NEEDS_COMPENSATION,
                  OperationState.COMPENSATING):  # fmt: skip
        assert choices(Assessment(state, Next.RUN, 0), steps) == (D.WITHDRAW, D.ABANDON)
        assert choices(Assessment(state, Next.RUN, 0, closed=True), steps) == (D.ABANDON,)
    assert choices(Assessment(OperationState.COMPLETE, Next.STOP, 0), steps) == (D.ACCEPT,)
    assert choices(Assessment(OperationState.COMPLETE, Next.WAIT, 0), steps) == ()
    assert choices(Assessment(OperationState.COMPLETE, Next.STOP, None), steps) == ()


def ruling(answer: Answered, reason: str = "", step: str | None = None, attempt: int = 0,
           resolve: Resolution | None = None) -> Ruling:  # fmt: skip
    return Ruling(answer, reason, step, attempt, resolve)


def refused_here(decision: str, state: str, why: str) -> Ruling:
    return ruling(NO, f"'{decision}' does not apply: the operation is {state} ({why})")


REFUSED_WHY = "the undo of hold was refused: hold still stands"
RULINGS = [
    ("retry-a-refused-undo", UNDO_REFUSED, "retry_undo", {}, ruling(OK, "", "hold", 2)),
    ("retry-naming-the-step-and-attempt", UNDO_REFUSED, "retry-undo",
     {"step": "hold", "attempt": 2}, ruling(OK, "", "hold", 2)),
    ("retry-naming-another-step", UNDO_REFUSED, D.RETRY_UNDO, {"step": "book"},
     ruling(NO, "the operation stands at hold, not at book")),
    ("retry-of-an-attempt-moved-past", UNDO_REFUSED, D.RETRY_UNDO, {"attempt": 1},
     ruling(NO, "hold is on attempt 2 now, not the attempt 1 that was decided on; look again")),
    ("by-hand-after-a-refusal", UNDO_REFUSED, "undone_by_hand", {}, ruling(OK, "", "hold", 2)),
    ("accept-an-undo-refused", UNDO_REFUSED, "accept", {}, ruling(OK, "", "hold", 2)),
    ("abandon-naming-its-step", UNDO_REFUSED, "abandon", {"step": "hold"},
     ruling(OK, "", "hold", 2)),
    ("withdraw-in-review", UNDO_REFUSED, "withdraw", {},
     refused_here("withdraw", "needs_review", REFUSED_WHY)),
    ("retry-an-undo-in-doubt", UNDO_IN_DOUBT, "retry_undo", {},
     ruling(OK, "", "hold", 2, Resolution.NOT_HAPPENED)),
    ("by-hand-an-undo-in-doubt", UNDO_IN_DOUBT, "undone_by_hand", {"attempt": 2},
     ruling(OK, "", "hold", 2, Resolution.HAPPENED)),
    ("accept-an-undo-in-doubt", UNDO_IN_DOUBT, "accept", {}, ruling(OK, "", "hold", 2)),
    ("by-hand-of-an-attempt-moved-past", UNDO_IN_DOUBT, "undone_by_hand", {"attempt": 3},
     ruling(NO, "hold is on attempt 2 now, not the attempt 3 that was decided on; look again")),
    ("accept-a-step-in-doubt", STEP_IN_DOUBT, "accept", {"attempt": 3},
     ruling(OK, "", "book", 3)),
    ("abandon-a-step-in-doubt", STEP_IN_DOUBT, "abandon", {"step": "book"},
     ruling(OK, "", "book", 3)),
    ("retry-where-no-undo-is-in-question", STEP_IN_DOUBT, "retry_undo", {},
     refused_here("retry_undo", "needs_review", "book is unknown: a human decides")),
    ("by-hand-where-no-undo-is-in-question", STEP_IN_DOUBT, "undone_by_hand", {},
     refused_here("undone_by_hand", "needs_review", "book is unknown: a human decides")),
    ("withdraw-on-its-way", ON_ITS_WAY, "withdraw", {}, ruling(OK, "", "book", 0)),
    ("abandon-on-its-way", ON_ITS_WAY, "abandon", {"attempt": 0}, ruling(OK, "", "book", 0)),
    ("withdraw-of-an-attempt-moved-past", ON_ITS_WAY, "withdraw", {"attempt": 2},
     ruling(NO, "book is on attempt 0 now, not the attempt 2 that was decided on; look again")),
    ("accept-on-its-way", ON_ITS_WAY, "accept", {},
     refused_here("accept", "in_progress", "book runs next")),
    ("accept-a-message-in-doubt", MAIL_IN_DOUBT, "accept", {}, ruling(OK, "", "mail", 2)),
    ("accept-complete", COMPLETE, "accept", {}, refused_here("accept", "complete", "complete")),
    ("attempt-of-an-operation-standing-nowhere", COMPLETE, "accept", {"attempt": 1},
     refused_here("accept", "complete", "complete")),
]  # fmt: skip


@pytest.mark.parametrize(("steps", "decision", "kw", "expected"), [c[1:] for c in RULINGS],
                         ids=[c[0] for c in RULINGS])  # fmt: skip
def test_a_decision_is_ruled_on_whole(
    steps: list[StepState], decision: Any, kw: dict[str, Any], expected: Ruling
) -> None:
    a = assess(steps)
    assert judge(decision, a=a, steps=steps, decisions=[], **kw) == expected


def test_an_attempt_named_where_the_operation_stands_nowhere_says_the_operation() -> None:
    a = Assessment(OperationState.IN_PROGRESS, Next.RUN, None, "starting")
    steps = [st("book", R.PIVOT)]
    assert judge("abandon", a=a, steps=steps, decisions=[], attempt=1) == ruling(
        NO, "the operation is on attempt 0 now, not the attempt 1 that was decided on; look again"
    )
    assert judge("abandon", a=a, steps=steps, decisions=[]) == ruling(OK, "", None, 0)


def test_the_same_decision_again_changes_nothing() -> None:
    a = assess(UNDO_REFUSED)
    retry = DecisionRecord(D.RETRY_UNDO, "bo", 1.0, "again", "hold", 2, 1)
    same = ruling(SAME, "the same decision again: nothing changed", "hold", 2)
    for kw in ({}, {"step": "hold"}, {"attempt": 2}, {"step": "hold", "attempt": 2}):
        assert judge("retry_undo", a=a, steps=UNDO_REFUSED, decisions=[retry], **kw) == same
    # About another attempt it is a new decision, ruled on where the operation stands.
    assert judge("retry_undo", a=a, steps=UNDO_REFUSED, decisions=[retry], attempt=1) == ruling(
        NO, "hold is on attempt 2 now, not the attempt 1 that was decided on; look again"
    )
    assert judge("retry_undo", a=a, steps=UNDO_REFUSED, decisions=[retry], step="book") == (
        ruling(NO, "the operation stands at hold, not at book")
    )
    # Only the latest decision can be repeated: an older one is ruled on anew.
    later = DecisionRecord(D.ACCEPT, "cy", 2.0, "fine", "hold", 2, 2)
    assert judge("retry_undo", a=a, steps=UNDO_REFUSED, decisions=[retry, later]) == ruling(
        OK, "", "hold", 2
    )
    # A withdrawal is one for good: repeated about any step or attempt, and it does not
    # hide the decision before it.
    w = DecisionRecord(D.WITHDRAW, "ana", 3.0, "no", "book", 0, 3)
    on_way = assess(ON_ITS_WAY, decisions=[w])
    assert judge("withdraw", a=on_way, steps=ON_ITS_WAY, decisions=[w], step="hold",
                 attempt=5) == ruling(SAME, "the same decision again: nothing changed", "book", 0)  # fmt: skip
    assert judge("retry_undo", a=a, steps=UNDO_REFUSED, decisions=[retry, w]) == same


def test_decisions_are_named_by_their_values_with_dashes_or_underscores() -> None:
    assert [decision_of(v) for v in ("retry-undo", "undone_by_hand", "accept", "abandon",
                                     "withdraw", D.ACCEPT)] == [
        D.RETRY_UNDO, D.UNDONE_BY_HAND, D.ACCEPT, D.ABANDON, D.WITHDRAW, D.ACCEPT,
    ]  # fmt: skip
    assert Ruling(OK) == Ruling(OK, "", None, 0, None)
