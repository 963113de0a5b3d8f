"""The exchange's rules as data: every cell, and the loop that follows them (no I/O).

The generator is driven here by hand with scripted replies, on a virtual
clock (each reply says when its send started and how long it took).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actonce import HardStop, NotPerformed
from actonce.http import HttpError, NotSent, OutcomeUnknown, Refused, Stopped
from actonce.http._exchange import (
    TABLE,
    Answer,
    Pause,
    Reply,
    Send,
    Situation,
    Step,
    answer_of_status,
    exchange,
)


def test_every_pair_is_a_cell() -> None:
    assert set(TABLE) == {(a, s) for a in Answer for s in Situation}


def test_without_keys_nothing_is_ever_sent_twice() -> None:
    assert all(TABLE[a, Situation.FIRST] is not Step.RETRY for a in Answer)


def test_after_a_send_that_may_have_been_processed_nothing_is_proven_absent() -> None:
    # A resend's refusal, rate limit or credentials error cannot prove that the
    # earlier send did nothing: never "not performed" from the second send on.
    assert {TABLE[a, Situation.RESEND] for a in Answer} == {Step.RETRY, Step.UNKNOWN, Step.DONE}


@pytest.mark.parametrize(
    ("status", "answer"),
    [
        (200, Answer.ACCEPTED), (201, Answer.ACCEPTED), (204, Answer.ACCEPTED),
        (303, Answer.ACCEPTED), (301, Answer.REDIRECT), (307, Answer.REDIRECT),
        (308, Answer.REDIRECT), (400, Answer.REFUSED), (404, Answer.REFUSED),
        (422, Answer.REFUSED), (402, Answer.REFUSED), (401, Answer.FORBIDDEN),
        (403, Answer.FORBIDDEN), (408, Answer.SERVER_ERROR), (409, Answer.CONFLICT),
        (429, Answer.RATE_LIMITED), (500, Answer.SERVER_ERROR), (502, Answer.SERVER_ERROR),
        (503, Answer.SERVER_ERROR), (504, Answer.SERVER_ERROR),
    ],
)  # fmt: skip
def test_statuses(status: int, answer: Answer) -> None:
    assert answer_of_status(status) is answer


def _reply(answer: Answer, outcome: int | str, at: float, took: float = 0.1, **kw: object) -> Reply:
    written = answer is not Answer.NOT_SENT
    return Reply(answer, outcome, "why", at, took, written, **kw)  # type: ignore[arg-type]


def _drive(
    replies: Iterator[Reply], *, keyed: bool, bound: float = 10.0, timeout: float | None = None
) -> tuple[list[Send | Pause], dict[str, object] | HttpError]:
    steps = exchange(
        "POST", "https://p/x", keyed=keyed, started=0.0, bound=bound, timeout=timeout, backoff=0.5
    )
    ops: list[Send | Pause] = []
    answer: Reply | None = None
    try:
        while True:
            op = steps.send(answer)
            ops.append(op)
            answer = next(replies) if isinstance(op, Send) else None
    except StopIteration as stop:
        return ops, stop.value
    except HttpError as exc:
        return ops, exc


def test_a_send_gets_what_the_bound_leaves_and_pauses_double() -> None:
    replies = iter(
        [
            _reply(Answer.SERVER_ERROR, 500, 0.0, 1.0),
            _reply(Answer.LOST, "timed out", 1.5, 2.0),
            _reply(Answer.ACCEPTED, 201, 4.5, 0.5),
        ]
    )
    ops, done = _drive(replies, keyed=True)
    assert ops == [Send(10.0), Pause(0.5), Send(8.5), Pause(1.0), Send(5.5)]
    assert isinstance(done, dict)
    assert [w["outcome"] for w in done["wire"]] == [500, "timed out", 201]  # type: ignore[index]
    assert done["sent"] == 3 and done["keyed"] is True


def test_a_send_timeout_caps_each_send() -> None:
    ops, _ = _drive(iter([_reply(Answer.ACCEPTED, 201, 0.0)]), keyed=False, timeout=3.0)
    assert ops == [Send(3.0)]


def test_retry_after_is_honoured_and_a_pause_past_the_bound_ends_in_unknown() -> None:
    replies = iter(
        [
            _reply(Answer.SERVER_ERROR, 503, 0.0, 0.1, retry_after=2.0),
            _reply(Answer.SERVER_ERROR, 503, 2.1, 0.1, retry_after=30.0),
        ]
    )
    ops, error = _drive(replies, keyed=True, bound=10.0)
    assert ops == [Send(10.0), Pause(2.0), Send(7.9)]
    assert isinstance(error, OutcomeUnknown) and "bound of 10 s" in error.reason
    assert error.status == 503


@pytest.mark.parametrize(
    ("first", "error", "also"),
    [
        (_reply(Answer.NOT_SENT, "not sent: connection refused", 0.0), NotSent, NotPerformed),
        (_reply(Answer.REFUSED, 422, 0.0), Refused, NotPerformed),
        (_reply(Answer.FORBIDDEN, 401, 0.0), Stopped, HardStop),
        (_reply(Answer.RATE_LIMITED, 429, 0.0, retry_after=5.0), Stopped, NotPerformed),
        (_reply(Answer.REDIRECT, 307, 0.0), OutcomeUnknown, HttpError),
    ],
)
@pytest.mark.parametrize("keyed", [False, True], ids=["no-key", "key"])
def test_a_first_answer_that_decides(
    first: Reply, error: type[HttpError], also: type[Exception], keyed: bool
) -> None:
    ops, raised = _drive(iter([first]), keyed=keyed)
    assert len(ops) == 1
    assert type(raised) is error and isinstance(raised, also)
    assert raised.details["wire"][0]["outcome"] == first.outcome  # type: ignore[index]


def test_without_keys_an_open_outcome_is_unknown_at_once() -> None:
    for answer, outcome in [(Answer.LOST, "connection reset"), (Answer.SERVER_ERROR, 500)]:
        ops, raised = _drive(iter([_reply(answer, outcome, 0.0)]), keyed=False)
        assert len(ops) == 1 and isinstance(raised, OutcomeUnknown)
        assert not isinstance(raised, NotPerformed)


def test_a_conflict_is_a_refusal_without_keys_and_in_progress_with_them() -> None:
    _, raised = _drive(iter([_reply(Answer.CONFLICT, 409, 0.0)]), keyed=False)
    assert isinstance(raised, Refused)
    conflict, ok = _reply(Answer.CONFLICT, 409, 0.0), _reply(Answer.ACCEPTED, 201, 1.0)
    ops, done = _drive(iter([conflict, ok]), keyed=True)
    assert isinstance(done, dict) and len([o for o in ops if isinstance(o, Send)]) == 2


def test_a_resend_that_is_not_sent_is_tried_again_and_the_refusal_after_it_is_unknown() -> None:
    replies = iter(
        [
            _reply(Answer.LOST, "connection reset", 0.0),
            _reply(Answer.NOT_SENT, "not sent: connection refused", 1.0),
            _reply(Answer.REFUSED, 400, 2.0),
        ]
    )
    _, raised = _drive(replies, keyed=True)
    assert (
        type(raised) is OutcomeUnknown and "earlier send may have been processed" in raised.reason
    )
    assert raised.details["sent"] == 2  # the refused connect wrote nothing
