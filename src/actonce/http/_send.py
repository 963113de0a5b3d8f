"""One send over httpx, as the exchange needs it: a :class:`~._exchange.Reply`.

Whether bytes of the request may have left is read from httpcore's ``trace``
extension (:class:`Trace`): ``send_request_headers.started`` is the first
moment a byte may be written to the socket. Before it — the TCP connect, the
DNS lookup inside it, the TLS handshake — a failure proves that nothing was
sent (:data:`PRE_WRITE` errors). A transport that reports no trace is judged
by the error's type alone. After it, a failure is a lost answer: reset,
closed without a byte, timed out. An answer is classified by its status;
the reason of a refusal is read from its body (JSON error fields, else its
first line) and scrubbed of every header value we were given.

A lookup's answer becomes a verdict here too (:func:`lookup_verdict`).
"""

from __future__ import annotations

import json
import math
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpcore
import httpx

from actonce import Absent, Unavailable, Verdict, scrub_text, scrub_url

from ._exchange import NO_RESPONSE, RESET, TIMED_OUT, Answer, Reply, answer_of_status
from ._lookup import Ref, Select, verdict_of_body

__all__ = [
    "PRE_WRITE",
    "REASON_BYTES",
    "Trace",
    "failure_of",
    "lookup_failed",
    "lookup_verdict",
    "positive",
    "reply_of",
    "transport_options",
]

PRE_WRITE = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.UnsupportedProtocol,
)
"""Errors raised before any byte of a request is written (unless the trace says otherwise)."""

REASON_BYTES = 4096
"""How much of a refusal's body is read for its reason."""


class Trace:
    """Records whether a byte of the request may have been written (httpcore's ``trace``)."""

    def __init__(self) -> None:
        self.written = False

    def see(self, name: str, info: Mapping[str, Any]) -> None:
        if name.endswith("send_request_headers.started"):
            self.written = True
        elif name.endswith("send_request_headers.failed") and isinstance(
            info.get("exception"), httpcore.LocalProtocolError
        ):
            self.written = False  # h11 refused the headers before writing any

    def __call__(self, name: str, info: Mapping[str, Any]) -> None:
        self.see(name, info)

    async def atrace(self, name: str, info: Mapping[str, Any]) -> None:
        self.see(name, info)


def transport_options(verify_tls: bool | ssl.SSLContext) -> dict[str, Any]:
    # No keep-alive: a request never rides a pooled connection the provider
    # may have closed meanwhile (a write that "succeeds", then no answer: an
    # ambiguity made by the pool, not by the provider). No retries, HTTP/1.1.
    return {
        "verify": verify_tls,
        "retries": 0,
        "http2": False,
        "limits": httpx.Limits(max_keepalive_connections=0),
    }


def positive(value: Any, *, zero: bool = False) -> bool:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return ok and (value >= 0 if zero else value > 0)


def failure_of(exc: httpx.TransportError, trace: Trace, at: float, known: tuple[str, ...]) -> Reply:
    """What a send that raised got: not sent, or lost (classified, secret-free)."""
    took = time.monotonic() - at
    text = scrub_text(str(exc) or type(exc).__name__, known)
    if isinstance(exc, PRE_WRITE) and not trace.written:
        return Reply(Answer.NOT_SENT, f"not sent: {_why_not_sent(exc)}", text, at, took, False)
    if isinstance(exc, httpx.TimeoutException):
        outcome = TIMED_OUT
    elif _caused_by(exc, ConnectionResetError, BrokenPipeError):
        outcome = RESET
    elif isinstance(exc, httpx.RemoteProtocolError) and "without sending" in text:
        outcome = NO_RESPONSE
    else:
        outcome = f"no response: {type(exc).__name__}"
    return Reply(Answer.LOST, outcome, text, at, took, True)


def _why_not_sent(exc: httpx.TransportError) -> str:
    if isinstance(exc, httpx.ConnectTimeout):
        return "connect timed out"
    if isinstance(exc, httpx.PoolTimeout):
        return "no connection free"
    if isinstance(exc, httpx.UnsupportedProtocol):
        return "unsupported URL scheme"
    if _caused_by(exc, ssl.SSLError):
        return "TLS handshake failed"
    if _caused_by(exc, ConnectionRefusedError):
        return "connection refused"
    if _caused_by(exc, socket.gaierror):
        return "name not resolved"
    return "connect failed"


def _caused_by(exc: BaseException, *types: type[BaseException]) -> bool:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, types):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


def reply_of(response: httpx.Response, raw: bytes, at: float, known: tuple[str, ...]) -> Reply:
    status = response.status_code
    answer = answer_of_status(status)
    reason = ""
    if answer is not Answer.ACCEPTED:
        reason = _reason_of(raw) or response.reason_phrase
        if answer is Answer.REDIRECT and "location" in response.headers:
            reason = f"to {scrub_url(response.headers['location'])}"
        # A provider may echo what it was sent (an API key it refuses, say).
        reason = scrub_text(reason, known)
    retry_after = response.headers.get("retry-after", "").strip()
    wait = float(retry_after) if retry_after.isdigit() else None
    took = time.monotonic() - at
    return Reply(answer, status, reason, at, took, True, wait)


def _reason_of(raw: bytes) -> str:
    """The provider's reason in a refusal's body (JSON error fields, else its first line)."""
    text = raw.decode("utf-8", "replace")
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        for node in (body.get("error"), body):
            if isinstance(node, str):
                return node[:300]
            if isinstance(node, dict):
                for field in ("message", "detail", "title", "error_description", "error"):
                    if isinstance(node.get(field), str):
                        return str(node[field])[:300]
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first[:300]


def lookup_failed(exc: httpx.HTTPError) -> Verdict:
    return Unavailable(f"lookup failed: {type(exc).__name__}: {exc}")


def lookup_verdict(
    response: httpx.Response,
    items: Select,
    ref: Ref,
    match: Callable[[Any], bool] | None,
    absent_on_404: bool,
) -> Verdict:
    if response.status_code == 404 and absent_on_404:
        return Absent()
    if not 200 <= response.status_code < 300:
        return Unavailable(f"lookup answered {response.status_code} {response.reason_phrase}")
    try:
        body = response.json()
    except ValueError:
        return Unavailable("the lookup's answer is not JSON")
    return verdict_of_body(body, items=items, ref=ref, match=match)
