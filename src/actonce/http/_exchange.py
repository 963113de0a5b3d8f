"""One perform's exchange with a provider, as data plus a generator (no I/O, no clock).

Theory of operation. A perform sends one request. What came back is one
:class:`Answer`; whether the request may be sent again depends on the answer
and on the provider (:data:`TABLE`):

- a provider **without** idempotency keys is never sent a request twice:
  the first answer decides (accepted → verify; a proof of non-occurrence →
  failed at once; anything else → unknown, reconcile first);
- a provider **with** keys is sent the same request, with the same key,
  again after a pause when the first answer leaves the outcome open (the
  request was written and no answer came, a 5xx or a 408, a 409 "in
  progress") — while the perform's bound leaves time for it. Once a request
  may have been processed, a later answer can no longer prove that nothing
  happened: a 4xx to a resend leaves the outcome unknown.

:func:`exchange` is that loop, written once: it yields :class:`Send` and
:class:`Pause` and is given a :class:`Reply` for each ``Send``; the sync
and async providers drive it. Every attempt becomes one wire record (method,
URL without secrets, seconds since the perform started, the status or what
happened instead, how long it took): no headers, no bodies, no keys.
"""

from __future__ import annotations

import enum
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from ._errors import NotSent, OutcomeUnknown, Refused, Stopped

__all__ = [
    "NO_RESPONSE",
    "RESET",
    "TABLE",
    "TIMED_OUT",
    "Answer",
    "Pause",
    "Reply",
    "Send",
    "Situation",
    "Step",
    "answer_of_status",
    "decide",
    "exchange",
]

NO_RESPONSE = "no response: connection closed"
RESET = "connection reset"
TIMED_OUT = "timed out"

MAX_PAUSE = 4.0
"""The longest pause between two sends of the same request (seconds)."""


class Answer(enum.Enum):
    """What one attempt got back."""

    NOT_SENT = "not sent"  # no byte of the request left: refused, DNS, TLS, connect timeout
    LOST = "lost"  # written, then no complete answer: reset, closed, timed out
    SERVER_ERROR = "server error"  # 5xx, 408: the provider may or may not have acted
    CONFLICT = "conflict"  # 409: keyed, "a request with this key is in progress"
    RATE_LIMITED = "rate limited"  # 429
    FORBIDDEN = "forbidden"  # 401, 403: who we are was refused
    REFUSED = "refused"  # any other 4xx: the provider did not act (validation, not found)
    REDIRECT = "redirect"  # a 3xx other than 303: not followed, nothing proven
    ACCEPTED = "accepted"  # 2xx, 303: verified like any effect


class Situation(enum.Enum):
    """Where the exchange stands when an answer arrives."""

    FIRST = "first, no key"  # the only send to a provider without keys
    FIRST_KEYED = "first, keyed"  # the first send to a provider with keys
    RESEND = "resend"  # a later send (keyed): an earlier one may have been processed


class Step(enum.Enum):
    """What the perform does with an answer."""

    DONE = "done"  # return: verification decides
    RETRY = "retry"  # the same request, same key, after a pause, inside the bound
    NOT_PERFORMED = "not performed"  # raise NotSent / Refused: failed at once, replannable
    STOP = "stop"  # raise Stopped: nothing performed, and the run stops (a hard stop)
    UNKNOWN = "unknown"  # raise OutcomeUnknown: reconcile first


A, S, St = Answer, Situation, Step

TABLE: dict[tuple[Answer, Situation], Step] = {
    (A.NOT_SENT, S.FIRST): St.NOT_PERFORMED,
    (A.NOT_SENT, S.FIRST_KEYED): St.NOT_PERFORMED,
    (A.NOT_SENT, S.RESEND): St.RETRY,
    (A.LOST, S.FIRST): St.UNKNOWN,
    (A.LOST, S.FIRST_KEYED): St.RETRY,
    (A.LOST, S.RESEND): St.RETRY,
    (A.SERVER_ERROR, S.FIRST): St.UNKNOWN,
    (A.SERVER_ERROR, S.FIRST_KEYED): St.RETRY,
    (A.SERVER_ERROR, S.RESEND): St.RETRY,
    # Without keys a 409 is a conflict the provider refused; with keys it says
    # that a request with this key is still being processed: ask again later.
    (A.CONFLICT, S.FIRST): St.NOT_PERFORMED,
    (A.CONFLICT, S.FIRST_KEYED): St.RETRY,
    (A.CONFLICT, S.RESEND): St.RETRY,
    # A rate limit refuses the request before it is processed, and it is a
    # hard stop (stop rather than guess). Once a send may have been
    # processed, the key makes waiting it out safe, inside the bound.
    (A.RATE_LIMITED, S.FIRST): St.STOP,
    (A.RATE_LIMITED, S.FIRST_KEYED): St.STOP,
    (A.RATE_LIMITED, S.RESEND): St.RETRY,
    (A.FORBIDDEN, S.FIRST): St.STOP,
    (A.FORBIDDEN, S.FIRST_KEYED): St.STOP,
    (A.FORBIDDEN, S.RESEND): St.UNKNOWN,
    (A.REFUSED, S.FIRST): St.NOT_PERFORMED,
    (A.REFUSED, S.FIRST_KEYED): St.NOT_PERFORMED,
    (A.REFUSED, S.RESEND): St.UNKNOWN,
    (A.REDIRECT, S.FIRST): St.UNKNOWN,
    (A.REDIRECT, S.FIRST_KEYED): St.UNKNOWN,
    (A.REDIRECT, S.RESEND): St.UNKNOWN,
    (A.ACCEPTED, S.FIRST): St.DONE,
    (A.ACCEPTED, S.FIRST_KEYED): St.DONE,
    (A.ACCEPTED, S.RESEND): St.DONE,
}


def decide(answer: Answer, situation: Situation) -> Step:
    """The table's step for one answer (every pair is a cell)."""
    return TABLE[answer, situation]


def answer_of_status(status: int) -> Answer:
    """The answer an HTTP status gives."""
    if 200 <= status < 300 or status == 303:
        return A.ACCEPTED
    if 300 <= status < 400:
        return A.REDIRECT
    if status >= 500 or status == 408:
        return A.SERVER_ERROR
    if status == 409:
        return A.CONFLICT
    if status == 429:
        return A.RATE_LIMITED
    if status in (401, 403):
        return A.FORBIDDEN
    if 400 <= status < 500:
        return A.REFUSED
    return A.REDIRECT  # 1xx as a final answer: nothing proven


@dataclass(frozen=True, slots=True)
class Send:
    """Send the request once, with ``timeout`` seconds for each phase of it."""

    timeout: float


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait ``seconds`` before the next send."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Reply:
    """What one send got back (the driver's account of it).

    Attributes:
        answer: the class of the answer.
        outcome: the HTTP status, or what happened instead (``"timed out"``).
        reason: the provider's reason for a 4xx, the error's for a failure.
        at: when the send started (monotonic seconds).
        took: seconds from the send to its outcome.
        written: bytes of the request may have left.
        retry_after: the answer's ``Retry-After`` in seconds, if any.
    """

    answer: Answer
    outcome: int | str
    reason: str
    at: float
    took: float
    written: bool
    retry_after: float | None = None


def exchange(
    method: str,
    url: str,
    *,
    keyed: bool,
    started: float,
    bound: float,
    timeout: float | None,
    backoff: float,
) -> Generator[Send | Pause, Reply | None, dict[str, Any]]:
    """The exchange of one perform; returns its details (the wire records).

    Args:
        method, url: what is sent (``url`` already without secrets).
        keyed: the request carries the provider's idempotency key.
        started: monotonic time the perform started.
        bound: seconds the whole perform may take.
        timeout: cap of one send's own timeout (``None``: what the bound leaves).
        backoff: the first pause between two sends; doubles, up to 4 s.

    Raises:
        NotSent, Refused: nothing was performed (the effect fails at once).
        Stopped: nothing was performed, and the run stops.
        OutcomeUnknown: the request may have been processed.
    """
    deadline = started + bound
    wire: list[dict[str, Any]] = []
    written = 0
    now = started
    while True:
        left = deadline - now
        reply = yield Send(left if timeout is None else min(timeout, left))
        assert reply is not None
        wire.append(_record(method, url, reply, started))
        if reply.written:
            written += 1
        now = reply.at + reply.took
        # Only a first answer that left the outcome open leads to a resend, so
        # from the second send on, an earlier one may have been processed.
        first = S.FIRST_KEYED if keyed else S.FIRST
        situation = S.RESEND if len(wire) > 1 else first
        step = decide(reply.answer, situation)
        details = {"wire": wire, "sent": written, "keyed": keyed}
        if step is St.DONE:
            return details
        if step is St.RETRY:
            pause = min(backoff * 2 ** (len(wire) - 1), MAX_PAUSE)
            if reply.retry_after is not None:
                pause = max(pause, reply.retry_after)
            if now + pause < deadline:
                yield Pause(pause)
                now += pause
                continue
            step = St.UNKNOWN
            last = f"{reply.outcome}: {reply.reason}" if reply.reason else str(reply.outcome)
            why = (
                f"no answer proved the outcome within the perform's bound of {bound:g} s "
                f"({len(wire)} sends, the last: {last})"
            )
        else:
            why = _why(reply, situation)
        raise _error(step, why, reply, details)


def _record(method: str, url: str, reply: Reply, started: float) -> dict[str, Any]:
    return {
        "method": method,
        "url": url,
        "at": round(reply.at - started, 4),
        "outcome": reply.outcome,
        "took": round(reply.took, 4),
    }


def _why(reply: Reply, situation: Situation) -> str:
    answer, outcome = reply.answer, reply.outcome
    said = f"{outcome}: {reply.reason}" if reply.reason else str(outcome)
    if answer is A.NOT_SENT:
        return f"the request was not sent ({said})"
    if situation is S.RESEND:
        return (
            f"a resend was answered {said} after an earlier send may have been "
            "processed: the outcome is not known"
        )
    if answer is A.RATE_LIMITED:
        wait = "" if reply.retry_after is None else f"; retry after {reply.retry_after:g} s"
        return f"the provider is rate limiting ({said}{wait})"
    if answer is A.FORBIDDEN:
        return f"the provider refused our credentials ({said})"
    if answer in (A.REFUSED, A.CONFLICT):
        return f"the provider refused the request ({said})"
    if answer is A.REDIRECT:
        return f"the provider redirected the request ({said}); redirects are not followed"
    return f"the request may have been processed ({said})"


def _error(step: Step, why: str, reply: Reply, details: dict[str, Any]) -> Exception:
    status = reply.outcome if isinstance(reply.outcome, int) else None
    if step is St.NOT_PERFORMED:
        cls = NotSent if reply.answer is A.NOT_SENT else Refused
        return cls(why, status=status, details=details)
    if step is St.STOP:
        return Stopped(why, status=status, details=details)
    return OutcomeUnknown(why, status=status, details=details)
