"""Where an operation stands and what runs next, as whole assessments (issue 23, item 2).

``assess`` derives an operation's state from its steps; an ``Assessment``
is the state, the next move, the step it is about, the reason in words, and
whether it is about an undo, when a retry is due and whether the operation
was withdrawn. Each case states all of it, for every branch of the rule:
forward, waiting, compensating newest first, review, abandonment, retries of
a message with backoff, withdrawals and people's decisions.
"""

from __future__ import annotations

from typing import Any

import pytest

from actonce._rules.model import Status
from actonce._rules.operations import (
    RETRY_BACKOFF,
    RETRY_BACKOFF_MAX,
    Assessment,
    DecisionRecord,
    Next,
    OperationDecision,
    OperationState,
    Role,
    StepState,
    assess,
    retry_at,
)

S, R, D = Status, Role, OperationDecision
IN_PROGRESS, COMPLETE = OperationState.IN_PROGRESS, OperationState.COMPLETE
REVIEW, COMPENSATING = OperationState.NEEDS_REVIEW, OperationState.COMPENSATING
COMPENSATED, NEEDS_COMPENSATION = OperationState.COMPENSATED, OperationState.NEEDS_COMPENSATION
ABANDONED, ACCEPTED = OperationState.ABANDONED, OperationState.ACCEPTED


def st(name: str, role: Role, status: Status | None = None, attempts: int = 0,
       **kw: Any) -> StepState:  # fmt: skip
    if role is R.COMPENSATABLE:
        kw.setdefault("has_undo", True)
    return StepState(name, role, status, attempts, **kw)


def a(state: OperationState, nxt: Next, index: int | None, reason: str, **kw: Any) -> Assessment:
    return Assessment(state, nxt, index, reason, **kw)


HOLD_DONE = st("hold", R.COMPENSATABLE, S.CONFIRMED, 1)
PAY_DONE = st("pay", R.COMPENSATABLE, S.CONFIRMED, 1)
BOOK_FAILED = st("book", R.PIVOT, S.FAILED, 1)
BOOK_DONE = st("book", R.PIVOT, S.CONFIRMED, 1)
BOOK = st("book", R.PIVOT)

CASES: list[tuple[str, list[StepState], Assessment]] = [
    ("fresh", [st("hold", R.COMPENSATABLE), BOOK, st("mail", R.RETRIABLE)],
     a(IN_PROGRESS, Next.RUN, 0, "hold runs next")),
    ("a-step-on-its-way", [st("hold", R.COMPENSATABLE, S.EXECUTING, 1), BOOK],
     a(IN_PROGRESS, Next.WAIT, 0, "hold is executing")),
    ("a-claimed-step", [HOLD_DONE, st("book", R.PIVOT, S.CLAIMED, 1)],
     a(IN_PROGRESS, Next.WAIT, 1, "book is claimed")),
    ("failed-with-attempts-left", [st("hold", R.COMPENSATABLE, S.FAILED, 1, max_attempts=2), BOOK],
     a(IN_PROGRESS, Next.RUN, 0, "hold runs next")),
    ("the-first-fails-for-good", [st("hold", R.COMPENSATABLE, S.FAILED, 2, max_attempts=2), BOOK],
     a(COMPENSATED, Next.STOP, None, "hold failed; undone")),
    ("the-pivot-fails", [HOLD_DONE, PAY_DONE, BOOK_FAILED],
     a(NEEDS_COMPENSATION, Next.UNDO, 1, "book failed: undo pay")),
    ("newest-first", [HOLD_DONE, st("pay", R.COMPENSATABLE, S.CONFIRMED, 1, undo=S.CONFIRMED,
                                    undo_attempts=1), BOOK_FAILED],
     a(COMPENSATING, Next.UNDO, 0, "book failed: undo hold")),
    ("a-step-with-no-undo-is-passed", [HOLD_DONE, st("note", R.PIVOT, S.FAILED, 1)],
     a(NEEDS_COMPENSATION, Next.UNDO, 0, "note failed: undo hold")),
    ("an-undo-on-its-way", [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1, undo=S.CLAIMED,
                                undo_attempts=1), BOOK_FAILED],
     a(COMPENSATING, Next.WAIT, 0, "undoing hold")),
    ("an-undo-executing", [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1, undo=S.EXECUTING,
                              undo_attempts=1), BOOK_FAILED],
     a(COMPENSATING, Next.WAIT, 0, "undoing hold")),
    ("an-undo-refused", [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1, undo=S.FAILED,
                            undo_attempts=1), BOOK_FAILED],
     a(REVIEW, Next.STOP, 0, "the undo of hold was refused: hold still stands", undo=True)),
    ("an-undo-refused-asked-again", [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1, undo=S.FAILED,
                                        undo_attempts=1, undo_retry=True), BOOK_FAILED],
     a(COMPENSATING, Next.UNDO, 0, "book failed: undo hold")),
    ("an-undo-unknown", [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1, undo=S.UNKNOWN,
                            undo_attempts=1), BOOK_FAILED],
     a(REVIEW, Next.STOP, 0, "the undo of hold is unknown", undo=True)),
    ("an-undo-in-review", [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1, undo=S.NEEDS_REVIEW,
                              undo_attempts=1), BOOK_FAILED],
     a(REVIEW, Next.STOP, 0, "the undo of hold is needs_review", undo=True)),
    ("compensated", [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1, undo=S.CONFIRMED,
                        undo_attempts=1), BOOK_FAILED],
     a(COMPENSATED, Next.STOP, None, "book failed; undone")),
    ("a-step-in-doubt-is-never-undone", [st("hold", R.COMPENSATABLE, S.UNKNOWN, 1),
                                         st("pay", R.COMPENSATABLE, S.CONFIRMED, 1,
                                            undo=S.CONFIRMED, undo_attempts=1), BOOK_FAILED],
     a(REVIEW, Next.STOP, 0, "hold is unknown: it cannot be compensated blindly")),
    ("undone-though-nothing-failed", [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1,
                                         undo=S.CONFIRMED, undo_attempts=1), PAY_DONE, BOOK],
     a(COMPENSATING, Next.UNDO, 1, "withdrawn before book: undo pay")),
    ("the-pivot-done-a-step-before-not", [st("hold", R.COMPENSATABLE, S.FAILED, 1), BOOK_DONE],
     a(REVIEW, Next.STOP, 1, "book is done but hold is failed: a human decides")),
    ("the-pivot-done-a-step-undone", [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1,
                                         undo=S.CONFIRMED), BOOK_DONE],
     a(REVIEW, Next.STOP, 1, "book is done but a step was undone: a human decides")),
    ("a-step-in-review", [HOLD_DONE, st("pay", R.COMPENSATABLE, S.NEEDS_REVIEW, 1), BOOK],
     a(REVIEW, Next.STOP, 1, "pay is needs_review: a human decides")),
    ("the-pivot-unknown", [HOLD_DONE, st("book", R.PIVOT, S.UNKNOWN, 1)],
     a(REVIEW, Next.STOP, 1, "book is unknown: a human decides")),
    ("a-step-abandoned", [HOLD_DONE, st("book", R.PIVOT, S.ABANDONED, 1)],
     a(ABANDONED, Next.STOP, None, "book was abandoned")),
    ("an-undo-abandoned", [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1, undo=S.ABANDONED),
                           BOOK_FAILED],
     a(ABANDONED, Next.STOP, None, "hold was abandoned")),
    ("complete", [BOOK_DONE, st("mail", R.RETRIABLE, S.CONFIRMED, 1)],
     a(COMPLETE, Next.STOP, None, "complete")),
    ("the-message-on-its-way", [BOOK_DONE, st("mail", R.RETRIABLE, S.CLAIMED, 1)],
     a(COMPLETE, Next.WAIT, 1, "mail is claimed")),
    ("the-message-in-doubt", [BOOK_DONE, st("mail", R.RETRIABLE, S.UNKNOWN, 1)],
     a(COMPLETE, Next.STOP, 1, "mail is unknown: a human decides")),
    ("the-message-never-sent", [BOOK_DONE, st("mail", R.RETRIABLE)],
     a(COMPLETE, Next.RUN, 1, "mail runs (retriable)")),
    ("messages-given-up", [BOOK_DONE,
                           st("mail", R.RETRIABLE, S.FAILED, 3, max_attempts=3, reason="smtp 550"),
                           st("sms", R.RETRIABLE, S.FAILED, 1)],
     a(COMPLETE, Next.STOP, None,
       "complete; mail given up after 3 attempts: smtp 550; sms given up after 1 attempt")),
    ("a-step-after-the-pivot-in-doubt", [BOOK_DONE, st("later", R.COMPENSATABLE, S.UNKNOWN, 1)],
     a(REVIEW, Next.STOP, 1, "later is unknown: a human decides")),
    ("no-pivot-the-last-step-counts", [st("a", R.RETRIABLE, S.CONFIRMED, 1),
                                       st("b", R.RETRIABLE, S.FAILED, 1, max_attempts=2)],
     a(IN_PROGRESS, Next.RUN, 1, "b runs next")),
    ("no-pivot-the-last-failed-for-good", [HOLD_DONE, st("b", R.RETRIABLE, S.FAILED, 1)],
     a(NEEDS_COMPENSATION, Next.UNDO, 0, "b failed: undo hold")),
]  # fmt: skip


@pytest.mark.parametrize(("steps", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_an_operation_is_assessed_whole(steps: list[StepState], expected: Assessment) -> None:
    assert assess(steps) == expected


WITHDRAWN = [DecisionRecord(D.WITHDRAW, "ana", 5.0, "we stay home")]
WITHDRAWALS: list[tuple[str, list[StepState], Assessment]] = [
    ("a-step-on-its-way-is-waited-for", [HOLD_DONE, st("pay", R.COMPENSATABLE, S.EXECUTING, 1),
                                         BOOK],
     a(COMPENSATING, Next.WAIT, 1, "withdrawn (we stay home); pay is executing: waiting for it",
       closed=True)),
    ("a-claim-is-waited-for", [st("hold", R.COMPENSATABLE, S.CLAIMED, 1), BOOK],
     a(COMPENSATING, Next.WAIT, 0, "withdrawn (we stay home); hold is claimed: waiting for it",
       closed=True)),
    ("nothing-was-done", [st("hold", R.COMPENSATABLE), BOOK],
     a(COMPENSATED, Next.STOP, None, "withdrawn (we stay home); undone", closed=True)),
    ("what-was-done-is-undone", [HOLD_DONE, BOOK],
     a(NEEDS_COMPENSATION, Next.UNDO, 0, "withdrawn (we stay home): undo hold", closed=True)),
    ("after-the-pivot-it-goes-forward", [BOOK_DONE, st("mail", R.RETRIABLE)],
     a(COMPLETE, Next.RUN, 1, "mail runs (retriable)", closed=True)),
    ("a-step-in-doubt-stops-it", [st("hold", R.COMPENSATABLE, S.UNKNOWN, 1), BOOK],
     a(REVIEW, Next.STOP, 0, "hold is unknown: a human decides", closed=True)),
    # A pass that chose the pivot before the withdrawal ran it after the undos began.
    ("the-pivot-in-doubt-after-the-undos", [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1,
                                               undo=S.CONFIRMED, undo_attempts=1),
                                            st("book", R.PIVOT, S.UNKNOWN, 1),
                                            st("mail", R.RETRIABLE)],
     a(REVIEW, Next.STOP, 1, "book is unknown: it cannot be compensated blindly", closed=True)),
]  # fmt: skip


@pytest.mark.parametrize(("steps", "expected"), [c[1:] for c in WITHDRAWALS],
                         ids=[c[0] for c in WITHDRAWALS])  # fmt: skip
def test_a_withdrawn_operation_is_assessed_whole(
    steps: list[StepState], expected: Assessment
) -> None:
    assert assess(steps, decisions=WITHDRAWN) == expected
    # The first withdrawal's reason is the one given; a later one changes nothing.
    again = [*WITHDRAWN, DecisionRecord(D.WITHDRAW, "bo", 6.0, "later")]
    assert assess(steps, decisions=again) == expected


REFUSED = [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1, undo=S.FAILED, undo_attempts=1),
           BOOK_FAILED]  # fmt: skip
IN_DOUBT = [st("hold", R.COMPENSATABLE, S.CONFIRMED, 1, undo=S.UNKNOWN, undo_attempts=2),
            BOOK_FAILED]  # fmt: skip
STANDS = a(REVIEW, Next.STOP, 0, "the undo of hold was refused: hold still stands", undo=True)


def dr(decision: OperationDecision, step: str | None = "hold", attempt: int = 1,
       by: str = "bo", reason: str = "why") -> DecisionRecord:  # fmt: skip
    return DecisionRecord(decision, by, 1.0, reason, step, attempt)


DECIDED: list[tuple[str, list[StepState], list[DecisionRecord], Assessment]] = [
    ("retry-the-refused-undo", REFUSED, [dr(D.RETRY_UNDO)],
     a(COMPENSATING, Next.UNDO, 0, "book failed: undo hold")),
    ("a-retry-of-an-older-attempt-is-moot", REFUSED, [dr(D.RETRY_UNDO, attempt=0)], STANDS),
    ("a-retry-about-another-step-is-moot", REFUSED, [dr(D.RETRY_UNDO, step="book")], STANDS),
    ("a-retry-about-no-step-is-moot", REFUSED, [dr(D.RETRY_UNDO, step=None)], STANDS),
    ("a-retry-of-an-undo-in-doubt-waits-for-its-resolution", IN_DOUBT,
     [dr(D.RETRY_UNDO, attempt=2)],
     a(REVIEW, Next.STOP, 0, "the undo of hold is unknown", undo=True)),
    ("undone-by-hand", REFUSED, [dr(D.UNDONE_BY_HAND)],
     a(COMPENSATED, Next.STOP, None, "book failed; undone")),
    ("an-undo-in-doubt-done-by-hand", IN_DOUBT, [dr(D.UNDONE_BY_HAND, attempt=2)],
     a(COMPENSATED, Next.STOP, None, "book failed; undone")),
    ("by-hand-after-a-retry-counts-as-done", REFUSED,
     [dr(D.RETRY_UNDO), dr(D.UNDONE_BY_HAND)],
     a(COMPENSATED, Next.STOP, None, "book failed; undone")),
    ("a-step-not-undone-is-not-undone-by-hand", [HOLD_DONE, BOOK_FAILED],
     [dr(D.UNDONE_BY_HAND, attempt=0)],
     a(NEEDS_COMPENSATION, Next.UNDO, 0, "book failed: undo hold")),
    ("accepted", REFUSED, [dr(D.ACCEPT, None, 0, "bo", "ok")],
     a(ACCEPTED, Next.STOP, None, "accepted as it stands by bo: ok")),
    ("abandoned", REFUSED, [dr(D.ABANDON, None, 0, "cy", "no")],
     a(ABANDONED, Next.STOP, None, "abandoned by cy: no")),
    ("the-latest-ending-counts", REFUSED,
     [dr(D.ACCEPT, None, 0, "bo", "ok"), dr(D.ABANDON, None, 0, "cy", "no"),
      dr(D.RETRY_UNDO)],
     a(ABANDONED, Next.STOP, None, "abandoned by cy: no")),
    ("the-latest-ending-counts-2", REFUSED,
     [dr(D.ABANDON, None, 0, "cy", "no"), dr(D.ACCEPT, None, 0, "bo", "ok")],
     a(ACCEPTED, Next.STOP, None, "accepted as it stands by bo: ok")),
]  # fmt: skip


@pytest.mark.parametrize(("steps", "decisions", "expected"), [c[1:] for c in DECIDED],
                         ids=[c[0] for c in DECIDED])  # fmt: skip
def test_peoples_decisions_move_the_operation(
    steps: list[StepState], decisions: list[DecisionRecord], expected: Assessment
) -> None:
    assert assess(steps, decisions=decisions) == expected


MAIL = [BOOK_DONE, st("mail", R.RETRIABLE, S.FAILED, 2, max_attempts=3, since=100.0)]


def test_a_failed_message_waits_for_its_backoff_and_runs_at_its_end() -> None:
    due = 100.0 + RETRY_BACKOFF * 2  # the second failure: twice the first wait
    waiting = a(COMPLETE, Next.WAIT, 1,
                "mail failed (attempt 2 of 3): it is tried again after its backoff", due=due)  # fmt: skip
    runs = a(COMPLETE, Next.RUN, 1, "mail runs (retriable)")
    assert assess(MAIL, now=due - 0.1) == waiting
    assert assess(MAIL, now=due) == runs
    assert assess(MAIL) == runs  # no time given: at once
    never_failed = [BOOK_DONE, st("mail", R.RETRIABLE, S.FAILED, 1, max_attempts=3)]
    assert assess(never_failed, now=0.0) == runs  # no time of failure: at once


def test_the_backoff_doubles_from_its_base_and_is_capped() -> None:
    def step(attempts: int, since: float | None = 10.0, backoff: float = RETRY_BACKOFF) -> Any:
        return StepState("mail", R.RETRIABLE, S.FAILED, attempts, since=since, backoff=backoff)

    assert [retry_at(step(n)) for n in (1, 2, 3, 4)] == [40.0, 70.0, 130.0, 250.0]
    assert retry_at(step(1, backoff=5.0)) == 15.0
    assert retry_at(step(30)) == 10.0 + RETRY_BACKOFF_MAX == 3610.0
    assert retry_at(step(8, backoff=10.0)) == 10.0 + 1280.0  # under the cap: not capped
    assert retry_at(step(0)) is None
    assert retry_at(step(2, since=None)) is None
    assert (RETRY_BACKOFF, RETRY_BACKOFF_MAX) == (30.0, 3600.0)


def test_a_step_state_and_an_assessment_default_to_nothing_done() -> None:
    assert StepState("x", R.PIVOT) == StepState("x", R.PIVOT, None, 0, 1, None, False, 0, None,
                                                None, RETRY_BACKOFF, False)  # fmt: skip
    assert Assessment(COMPLETE, Next.STOP) == Assessment(COMPLETE, Next.STOP, None, "", False,
                                                         None, False)  # fmt: skip
    assert DecisionRecord(D.ACCEPT, "bo", 1.0, "ok").as_json() == {
        "n": 0, "decision": "accept", "by": "bo", "at": 1.0, "reason": "ok", "step": None,
        "attempt": 0,
    }  # fmt: skip
