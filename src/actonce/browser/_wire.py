"""The network guard: one perform sends at most one mutating request.

Chromium resends a POST by itself when the keep-alive connection it reused
dies without a single response byte (a crashing backend, a restarting
proxy, a load balancer's idle timeout): one click, two requests, two
objects — and Playwright's ``page.on("request")`` sees only one, because the
resend happens below it, in Chromium's network stack. Issue 15.

So during a perform's window (from just before the click until the
confirmation, or the perform's bound) the adapter owns the network for
**mutating** requests (any method but GET, HEAD and OPTIONS), from every
page of the session's browser context:

Each one is judged by the one rule, :func:`actonce.judge_request`, with
the effect's window (the requests it declared, ``SiteEffect.requests``;
by default one request of any method to the origin) and the allowlist:

- the **next declared** request (the first, by default) is sent exactly
  once by Playwright's own HTTP client (``route.fetch`` with no redirect
  following and no retry; the page's headers, the context's cookies) and its
  answer handed to the page unchanged (``route.fulfill``), so a 303 is
  followed by the browser with a GET and ``Set-Cookie`` lands in the context.
  If it gets no answer (connection closed, reset, timed out) the page sees
  that network error (``route.abort``) — nothing is resent;
- a **repeat** of a request sent, a request **undeclared** or **out of
  order**, is refused (``route.abort``), never sent — a redirect that asks
  to repeat the POST (307/308) included; an undeclared or out-of-order one
  may leave the submit incomplete (``incomplete()``);
- a mutating request to **another origin** (analytics beacons, a payment
  provider) is refused unless that origin is in the session's
  ``allow_origins``; allowed ones, and allowlisted ones, go to the network
  untouched (a write firewall below is told to let them through);
- GET, HEAD and OPTIONS pass through untouched (``route.fallback``).

Each mutating request is recorded (``WireRecord``): method, URL without
userinfo, query or fragment, seconds since the perform started, and the
outcome (an HTTP status, or one of the strings below). No headers, cookies
or bodies.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError

from actonce import (
    RefusalReason,
    RequestPattern,
    SubmitWindow,
    WireAction,
    judge_request,
    origin_of,
)

from ._firewall import _frame_url

ANY_REQUEST = RequestPattern.ANY

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page, Request, Route

__all__ = [
    "ALLOWED_OTHER_ORIGIN",
    "INCOMPLETE",
    "NO_RESPONSE",
    "REFUSED_OTHER_ORIGIN",
    "REFUSED_OUT_OF_ORDER",
    "REFUSED_SECOND",
    "REFUSED_UNDECLARED",
    "RESET",
    "SAFE_METHODS",
    "TIMED_OUT",
    "NetworkGuard",
    "WireRecord",
    "origin_of",
    "scrub_url",
]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that pass through the guard untouched."""

NO_RESPONSE = "no response: connection closed"
INCOMPLETE = "incomplete response: connection closed"
RESET = "connection reset"
TIMED_OUT = "timed out"
REFUSED_SECOND = "refused: second mutating request"
REFUSED_OTHER_ORIGIN = "refused: other origin"
REFUSED_UNDECLARED = "refused: undeclared request"
REFUSED_OUT_OF_ORDER = "refused: out of order"
ALLOWED_OTHER_ORIGIN = "allowed: other origin"

_ABORT_CODES = {
    NO_RESPONSE: "connectionclosed",
    INCOMPLETE: "connectionclosed",
    RESET: "connectionreset",
    TIMED_OUT: "timedout",
    REFUSED_SECOND: "blockedbyclient",
    REFUSED_OTHER_ORIGIN: "blockedbyclient",
    REFUSED_UNDECLARED: "blockedbyclient",
    REFUSED_OUT_OF_ORDER: "blockedbyclient",
}


def scrub_url(url: str) -> str:
    """The URL as evidence may hold it: no userinfo, no query, no fragment."""
    return origin_of(url) + urlsplit(url).path


def _failure(exc: BaseException) -> str:
    """The outcome of a first mutating request that got no answer."""
    text = str(exc)
    if "socket hang up" in text:
        return NO_RESPONSE  # closed (FIN) before a byte of the answer
    if "ECONNRESET" in text:
        return RESET
    if text.rstrip().endswith("aborted") or ": aborted" in text:
        return INCOMPLETE  # the headers came, the body never did
    if "Timeout" in text or "timed out" in text.lower():
        return TIMED_OUT
    first = (text.strip().splitlines() or [type(exc).__name__])[0]
    first = re.sub(r"^\w+\.fetch: ", "", first)
    first = re.sub(r"(https?://[^\s?#]*)[?#]\S*", r"\1", first)  # no query in evidence
    return f"no response: {first}"[:200]


@dataclass(slots=True)
class WireRecord:
    """One mutating request seen during a perform."""

    method: str
    url: str
    at: float
    """Seconds since the perform started (monotonic clock)."""
    outcome: int | str | None = None
    """HTTP status, or what happened instead; ``None`` while in flight."""
    took: float | None = None
    """Seconds from the request to its outcome."""

    def to_json(self) -> dict[str, Any]:
        """The record as JSON-able data."""
        return {
            "method": self.method,
            "url": self.url,
            "at": round(self.at, 4),
            "outcome": self.outcome,
            "took": None if self.took is None else round(self.took, 4),
        }


class NetworkGuard:
    """Owns the mutating requests of one browser context for one perform window.

    Every mutating request is judged by :func:`actonce.judge_request` with
    this window (the effect's declared requests, how many were sent, the
    allowed other origins) and the allowlist.

    Args:
        page: the session's page (its routes take precedence over the
            context's, so the guard routes on both).
        origin: the session's origin; the effect's declared requests go there.
        allow_origins: other origins whose mutating requests may pass.
        started: ``time.monotonic()`` at the start of the perform.
        deadline: ``time.monotonic()`` value by which the perform must end;
            bounds each request's own timeout.
        declared: the requests the submit makes, in order, each at most once
            (default: one request of any method to any path of the origin).
        allow: the allowlist (``RequestPattern`` values with their origin).
        on_refused: told of each refusal (``WireRecord``, reason, page URL).
        on_allowed: told of each request passed on untouched (a firewall
            below the guard lets it through).
    """

    def __init__(
        self,
        page: Page,
        origin: str,
        *,
        allow_origins: frozenset[str] = frozenset(),
        started: float,
        deadline: float,
        declared: Sequence[RequestPattern] = (ANY_REQUEST,),
        allow: Sequence[RequestPattern] = (),
        on_refused: Callable[[WireRecord, RefusalReason, str], None] | None = None,
        on_allowed: Callable[[Request], None] | None = None,
    ) -> None:
        self._page = page
        self._context: BrowserContext | None = None
        self._origin = origin
        self._window = SubmitWindow(
            origin, tuple(declared) or (ANY_REQUEST,), allow_origins=frozenset(allow_origins)
        )
        self._allow = tuple(allow)
        self._on_refused = on_refused
        self._on_allowed = on_allowed
        self._started = started
        self._deadline = deadline
        self._records: list[WireRecord] = []
        self._sent: list[WireRecord] = []
        self._breaking: list[tuple[WireRecord, RefusalReason]] = []
        self._inflight: dict[int, asyncio.Future[Any]] = {}
        self._busy: set[asyncio.Future[None]] = set()
        # Requests passed on by the page's route reach the context's route too.
        self._passed: set[Request] = set()
        self._open = False
        self._closed = False
        self.sent = 0
        """Mutating requests the guard sent (at most one per declared request)."""
        self.refused = 0
        """Mutating requests refused (never sent)."""
        self.failed = asyncio.Event()
        """Set when a request the guard sent ended without an answer."""
        self.seen = asyncio.Event()
        """Set when every declared request was taken (sent)."""
        self.settled = asyncio.Event()
        """Set when every declared request has its outcome, or one got no answer."""
        self.broken = asyncio.Event()
        """Set when a refusal may have left the submit incomplete (undeclared, out of order)."""
        self._handler = self._handle  # one bound method, for route and unroute

    @property
    def records(self) -> list[WireRecord]:
        """The records so far, oldest first."""
        return list(self._records)

    @property
    def window(self) -> SubmitWindow:
        """The perform window as the rule sees it now."""
        return self._window

    @property
    def active(self) -> bool:
        """The guard owns the network (opened, not yet closed)."""
        return self._open and not self._closed

    @property
    def in_flight(self) -> bool:
        """A request was sent and has no outcome yet."""
        return any(r.outcome is None for r in self._sent)

    @property
    def failure(self) -> str | None:
        """Why a sent request got no answer (None: each did, or none was sent)."""
        for record in self._sent:
            if record.outcome is not None and not isinstance(record.outcome, int):
                return record.outcome
        return None

    def incomplete(self) -> str | None:
        """Why the submit may be incomplete, naming each refusal; None if it is not.

        A request refused as undeclared or out of order (it may be a part of
        the submit), or declared requests never sent after one was.
        """
        parts = [f"refused {r.method} {r.url} ({reason.text})" for r, reason in self._breaking]
        missing = self._window.missing
        if missing and self._window.declares and (self._sent or parts):
            parts.append("never sent: " + ", ".join(p.describe() for p in missing))
        return "; ".join(parts) or None

    def details(self) -> dict[str, Any]:
        """``{"wire": [...], "sent": n, "refused": m}``: JSON-able, secret-free."""
        return {
            "wire": [r.to_json() for r in self._records],
            "sent": self.sent,
            "refused": self.refused,
        }

    async def open(self) -> None:
        """Start owning the network (before the click)."""
        self._context = self._page.context
        await self._page.route("**/*", self._handler)
        self._open = True
        await self._context.route("**/*", self._handler)

    async def close(self, grace: float = 1.0) -> None:
        """End the window: settle the requests in flight, remove the routes.

        A sent request still unanswered is recorded as timed out, its
        wait is cancelled and the page sees ``timedout``. Bounded by ``grace``
        seconds for the handlers and again for each unroute.
        """
        if self._closed:
            return
        self._closed = True
        for record in self._sent:
            inflight = self._inflight.get(id(record))
            if record.outcome is None and inflight is not None:
                self._settle(record, TIMED_OUT)
                inflight.cancel()
        if self._busy:
            await asyncio.wait(list(self._busy), timeout=grace)
        if not self._open:
            return
        for owner in (self._page, self._context):
            if owner is None:
                continue
            with contextlib.suppress(PlaywrightError, TimeoutError):
                await asyncio.wait_for(owner.unroute("**/*", self._handler), grace)

    def _now(self) -> float:
        return time.monotonic() - self._started

    def _settle(self, record: WireRecord, outcome: int | str) -> None:
        if record.outcome is None:
            record.outcome = outcome
            record.took = self._now() - record.at
            if record in self._sent:
                if not isinstance(outcome, int):
                    self.failed.set()
                    self.settled.set()
                elif self.seen.is_set() and not self.in_flight:
                    self.settled.set()

    async def _handle(self, route: Route) -> None:
        request = route.request
        method = request.method.upper()
        if (
            self._closed
            or method in SAFE_METHODS
            or request in self._passed
            or not request.url.startswith("http")
        ):
            await route.fallback()
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._busy.add(done)
        try:
            await self._mutating(route, method)
        finally:
            self._busy.discard(done)
            done.set_result(None)

    async def _mutating(self, route: Route, method: str) -> None:
        request = route.request
        record = WireRecord(method, scrub_url(request.url), self._now())
        self._records.append(record)
        decision = judge_request(
            method,
            request.url,
            window=self._window,
            allow=self._allow,
            beacon=request.resource_type == "ping",
        )
        if decision.action is WireAction.PASS:  # not reached: safe methods fall back above
            await route.fallback()
            return
        if decision.action is WireAction.ALLOW:
            record.outcome, record.took = decision.outcome, 0.0
            self._passed.add(request)
            if self._on_allowed is not None:
                self._on_allowed(request)
            await route.fallback()
            return
        if decision.action is WireAction.REFUSE:
            reason = decision.reason or RefusalReason.UNDECLARED
            beacon = request.resource_type == "ping"  # never a part of a submit
            if reason.breaks_submit and not beacon:
                self._breaking.append((record, reason))
                self.broken.set()
            await self._refuse(route, record, decision.outcome or f"refused: {reason.text}")
            if self._on_refused is not None:
                self._on_refused(record, reason, _frame_url(request))
            return
        # SEND: the window moves on before any await, so two handlers cannot
        # both be the next declared request.
        self._window = self._window.advanced(method, request.url)
        self._sent.append(record)
        self.sent += 1
        if not self._window.missing:
            self.seen.set()
        timeout_ms = max(1.0, (self._deadline - time.monotonic()) * 1000)  # 0 would mean none
        fetch = asyncio.ensure_future(
            route.fetch(max_redirects=0, max_retries=0, timeout=timeout_ms)
        )
        self._inflight[id(record)] = fetch
        try:
            response = await fetch
        except asyncio.CancelledError:
            # close() settled it as timed out; tell the page, unless this
            # handler itself is being cancelled (the browser is going away).
            self._settle(record, TIMED_OUT)
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            await self._abort(route, TIMED_OUT)
            return
        except PlaywrightError as exc:
            outcome = _failure(exc)
            self._settle(record, outcome)
            await self._abort(route, outcome)
            return
        self._settle(record, response.status)
        with contextlib.suppress(PlaywrightError):
            await route.fulfill(response=response)

    async def _refuse(self, route: Route, record: WireRecord, outcome: str) -> None:
        self.refused += 1
        self._settle(record, outcome)
        await self._abort(route, outcome)

    @staticmethod
    async def _abort(route: Route, outcome: str) -> None:
        with contextlib.suppress(PlaywrightError):
            await route.abort(_ABORT_CODES.get(outcome, "failed"))
