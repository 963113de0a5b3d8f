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

- the **first** mutating request to the session's origin is sent exactly
  once by Playwright's own HTTP client (``route.fetch`` with no redirect
  following and no retry; the page's headers, the context's cookies) and its
  answer handed to the page unchanged (``route.fulfill``), so a 303 is
  followed by the browser with a GET and ``Set-Cookie`` lands in the context.
  If it gets no answer (connection closed, reset, timed out) the page sees
  that network error (``route.abort``) — nothing is resent;
- **every further** mutating request to the session's origin is refused
  (``route.abort``), never sent — a redirect that asks to repeat the POST
  (307/308) included;
- a mutating request to **another origin** (analytics beacons, a payment
  provider) is refused unless that origin is in the session's
  ``allow_origins``; allowed ones go to the network untouched;
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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page, Request, Route

__all__ = [
    "ALLOWED_OTHER_ORIGIN",
    "INCOMPLETE",
    "NO_RESPONSE",
    "REFUSED_OTHER_ORIGIN",
    "REFUSED_SECOND",
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
ALLOWED_OTHER_ORIGIN = "allowed: other origin"

_ABORT_CODES = {
    NO_RESPONSE: "connectionclosed",
    INCOMPLETE: "connectionclosed",
    RESET: "connectionreset",
    TIMED_OUT: "timedout",
    REFUSED_SECOND: "blockedbyclient",
    REFUSED_OTHER_ORIGIN: "blockedbyclient",
}


_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL: lower case, no userinfo, no default port."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    keep = port is not None and port != _DEFAULT_PORTS.get(scheme)
    return f"{scheme}://{host}{f':{port}' if keep else ''}"


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

    Args:
        page: the session's page (its routes take precedence over the
            context's, so the guard routes on both).
        origin: the session's origin; its first mutating request is sent.
        allow_origins: other origins whose mutating requests may pass.
        started: ``time.monotonic()`` at the start of the perform.
        deadline: ``time.monotonic()`` value by which the perform must end;
            bounds the first request's own timeout.
    """

    def __init__(
        self,
        page: Page,
        origin: str,
        *,
        allow_origins: frozenset[str] = frozenset(),
        started: float,
        deadline: float,
    ) -> None:
        self._page = page
        self._context: BrowserContext | None = None
        self._origin = origin
        self._allowed = allow_origins
        self._started = started
        self._deadline = deadline
        self._records: list[WireRecord] = []
        self._first: WireRecord | None = None
        self._inflight: asyncio.Future[Any] | None = None
        self._busy: set[asyncio.Future[None]] = set()
        # Requests passed on by the page's route reach the context's route too.
        self._passed: set[Request] = set()
        self._open = False
        self._closed = False
        self.sent = 0
        """Mutating requests to the origin that were sent (at most one)."""
        self.refused = 0
        """Mutating requests refused (never sent)."""
        self.failed = asyncio.Event()
        """Set when the first mutating request ended without an answer."""
        self.seen = asyncio.Event()
        """Set when the first mutating request to the origin is taken (sent)."""
        self.settled = asyncio.Event()
        """Set when the first mutating request has its outcome (answer or not)."""
        self._handler = self._handle  # one bound method, for route and unroute

    @property
    def records(self) -> list[WireRecord]:
        """The records so far, oldest first."""
        return list(self._records)

    @property
    def active(self) -> bool:
        """The guard owns the network (opened, not yet closed)."""
        return self._open and not self._closed

    @property
    def in_flight(self) -> bool:
        """A first mutating request was sent and has no outcome yet."""
        return self._first is not None and not self.settled.is_set()

    @property
    def failure(self) -> str | None:
        """Why the first mutating request got no answer (None: it did, or none was sent)."""
        first = self._first
        if first is None or isinstance(first.outcome, int) or first.outcome is None:
            return None
        return first.outcome

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
        """End the window: settle the request in flight, remove the routes.

        A first request still unanswered is recorded as timed out, its
        wait is cancelled and the page sees ``timedout``. Bounded by ``grace``
        seconds for the handlers and again for each unroute.
        """
        if self._closed:
            return
        self._closed = True
        first, inflight = self._first, self._inflight
        if first is not None and first.outcome is None and inflight is not None:
            self._settle(first, TIMED_OUT)
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
            if record is self._first:
                if not isinstance(outcome, int):
                    self.failed.set()
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
        if origin_of(request.url) != self._origin:
            if origin_of(request.url) in self._allowed:
                record.outcome, record.took = ALLOWED_OTHER_ORIGIN, 0.0
                self._passed.add(request)
                await route.fallback()
                return
            await self._refuse(route, record, REFUSED_OTHER_ORIGIN)
            return
        if self._first is not None:
            await self._refuse(route, record, REFUSED_SECOND)
            return
        # The first: decided before any await, so two handlers cannot both win.
        self._first = record
        self.sent += 1
        self.seen.set()
        timeout_ms = max(1.0, (self._deadline - time.monotonic()) * 1000)  # 0 would mean none
        fetch = asyncio.ensure_future(
            route.fetch(max_redirects=0, max_retries=0, timeout=timeout_ms)
        )
        self._inflight = fetch
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
