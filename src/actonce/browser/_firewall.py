"""The write firewall of a Playwright browser context: nothing mutates outside an effect.

In a browser an agent drives, the model may click anything. The firewall
owns every **mutating** request (any method but GET, HEAD, OPTIONS) of every
page, popup and iframe of one context — form posts, ``fetch``/XHR, beacons
— through one context route:

- **outside** an effect's perform window, each one is put to
  :func:`actonce.judge_request` with no window and the allowlist: allowed
  ones go to the network untouched; every other one is **refused** (never
  sent: a navigation is answered with a short 403 page saying why, a
  fetch/XHR/beacon fails as blocked by the client) and **recorded**
  (``ledger.firewall``: actor, method, URL without query, the page that made
  it, the ledger time; never headers, cookies or bodies);
- **inside** a perform window the network guard of that effect (``_wire``;
  its routes are newer, so they see each request first) decides by the same
  rule with the effect's window; what it passes on untouched (an allowlisted
  or an allowed other origin's request) it tells the firewall about, so the
  firewall lets exactly that request through; what it refuses it reports
  here, to be recorded with the effect's key.

Service workers fetch outside every page's sight: contexts actonce makes
block them (``service_workers="block"``); on a context that does not, the
firewall warns when it is installed and whenever a worker starts
(``problems``). WebSocket messages are not requests: they are not covered.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import warnings
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError

from actonce import (
    ActOnceError,
    AsyncLedger,
    Ledger,
    RefusalReason,
    RequestPattern,
    UsageError,
    WireAction,
    WriteRefusal,
    bare_url,
    judge_request,
)

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Request, Route, Worker

    from ._wire import WireRecord

__all__ = ["SAFE_METHODS", "AsyncFirewall", "FirewallWarning", "firewall", "firewall_of"]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

_ON: weakref.WeakKeyDictionary[Any, AsyncFirewall] = weakref.WeakKeyDictionary()

Recorder = Callable[[WriteRefusal], Awaitable[WriteRefusal]]


class FirewallWarning(UserWarning):
    """The firewall cannot see everything in this context (service workers)."""


def firewall_of(context: BrowserContext) -> AsyncFirewall | None:
    """The firewall installed on a context, if any."""
    return _ON.get(context)


def _frame_url(request: Request) -> str:
    try:
        url = request.frame.url
    except Exception:  # a worker's request has no frame
        return ""
    return bare_url(url) if url.startswith("http") else ""


def refusal_page(method: str, url: str, reason: str, text: str) -> str:
    """The page a refused navigation (a form post) shows instead, for every firewall.

    Args:
        method, url: the refused request (``url`` already without its query).
        reason: the refusal's code (``outside_effect`` ...).
        text: why, in words.
    """
    what = html.escape(f"{method} {url}")
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<title>Refused by the write firewall</title></head><body>"
        "<h1>Refused by actonce's write firewall</h1>"
        f'<p data-testid="firewall-refusal" data-reason="{html.escape(reason)}">'
        f"{what} was not sent: {html.escape(text)}.</p>"
        "<p>This browser changes nothing by itself: every change goes through an "
        "effect (a guarded action). Use it instead.</p></body></html>"
    )


def _checked_allow(allow: Sequence[RequestPattern]) -> tuple[RequestPattern, ...]:
    if isinstance(allow, RequestPattern | str):
        raise UsageError("allow is a sequence of RequestPattern values")
    for entry in allow:
        if not isinstance(entry, RequestPattern) or entry.origin is None:
            raise UsageError(
                f"an allowlist entry is a RequestPattern that names its origin: {entry!r}"
            )
    return tuple(allow)


def recorder_of(ledger: Ledger | AsyncLedger | None) -> Recorder | None:
    """How refusals reach ``ledger.firewall`` from the browser's event loop."""
    if ledger is None:
        return None
    if isinstance(ledger, AsyncLedger):
        return ledger.firewall.record
    if isinstance(ledger, Ledger):
        sync = ledger.firewall.record

        async def record(refusal: WriteRefusal) -> WriteRefusal:
            return await asyncio.to_thread(sync, refusal)

        return record
    raise UsageError(f"the firewall records in a Ledger or an AsyncLedger, not {ledger!r}")


class AsyncFirewall:
    """The write firewall of one Playwright (async API) browser context.

    Make one with :func:`firewall`. ``refused`` holds every refusal so far
    (as recorded: with the ledger's ``id`` and ``at`` once written);
    ``problems`` what it cannot guard (service workers); ``errors`` the
    refusals the ledger could not record (refused all the same).
    """

    def __init__(
        self,
        context: BrowserContext,
        *,
        actor: str,
        allow: Sequence[RequestPattern] = (),
        recorder: Recorder | None = None,
    ) -> None:
        if not isinstance(actor, str) or not actor.strip():
            raise UsageError("a firewall names the actor its refusals are recorded under")
        self.context = context
        self.actor = actor
        self.allow = _checked_allow(allow)
        self.refused: list[WriteRefusal] = []
        self.problems: list[str] = []
        self.errors: list[str] = []
        self._recorder = recorder
        self._passed: weakref.WeakSet[Request] = weakref.WeakSet()
        self._pending: set[asyncio.Task[None]] = set()
        self._handler = self._handle
        self._installed = False

    # -- life -----------------------------------------------------------------

    async def install(self) -> None:
        """Start refusing (every page of the context, those to come included)."""
        if firewall_of(self.context) is not None:
            raise UsageError("this browser context has a firewall already")
        self._check_workers()
        self.context.on("serviceworker", self._worker_started)
        await self.context.route("**/*", self._handler)
        _ON[self.context] = self
        self._installed = True

    async def aclose(self) -> None:
        """Stop refusing; waits for the refusals still being recorded."""
        await self.settled()
        if _ON.get(self.context) is self:
            del _ON[self.context]
        if self._installed:
            self._installed = False
            with contextlib.suppress(PlaywrightError):
                self.context.remove_listener("serviceworker", self._worker_started)
                await self.context.unroute("**/*", self._handler)

    async def settled(self, timeout: float = 10.0) -> None:
        """Wait until every refusal so far is recorded (bounded)."""
        if self._pending:
            await asyncio.wait(list(self._pending), timeout=timeout)

    def counts(self) -> dict[RefusalReason, int]:
        """Refusals so far, per reason."""
        out: dict[RefusalReason, int] = {}
        for refusal in self.refused:
            out[refusal.reason] = out.get(refusal.reason, 0) + 1
        return out

    # -- service workers ---------------------------------------------------------

    def _check_workers(self) -> None:
        options = getattr(getattr(self.context, "_impl_obj", None), "_options", {}) or {}
        if options.get("serviceWorkers") != "block":
            self._problem(
                "service workers are not blocked in this context: a worker's fetches "
                "bypass the firewall (make the context with service_workers='block')"
            )
        for worker in self.context.service_workers:
            self._worker_started(worker)

    def _worker_started(self, worker: Worker) -> None:
        self._problem(f"a service worker runs ({bare_url(worker.url)}): its requests are not seen")

    def _problem(self, text: str) -> None:
        self.problems.append(text)
        warnings.warn(f"actonce firewall: {text}", FirewallWarning, stacklevel=3)

    # -- the network guard's side -------------------------------------------------

    def let_through(self, request: Request) -> None:
        """The network guard passed this request on untouched: it goes to the network."""
        self._passed.add(request)

    def during(self, effect_key: str | None) -> Callable[[WireRecord, RefusalReason, str], None]:
        """What the guard of one perform calls for each request it refused."""

        def refused(record: WireRecord, reason: RefusalReason, page: str) -> None:
            self._note(
                WriteRefusal(
                    actor=self.actor,
                    method=record.method,
                    url=record.url,
                    reason=reason,
                    page=page,
                    effect_key=effect_key,
                )
            )

        return refused

    # -- outside every perform --------------------------------------------------------

    async def _handle(self, route: Route) -> None:
        request = route.request
        method = request.method.upper()
        if method in SAFE_METHODS or request in self._passed or not request.url.startswith("http"):
            await route.fallback()
            return
        decision = judge_request(
            method,
            request.url,
            window=None,
            allow=self.allow,
            beacon=request.resource_type == "ping",
        )
        if decision.action is not WireAction.REFUSE:
            await route.fallback()
            return
        refusal = WriteRefusal(
            actor=self.actor,
            method=method,
            url=request.url,
            reason=decision.reason or RefusalReason.OUTSIDE_EFFECT,
            page=_frame_url(request),
        )
        with contextlib.suppress(PlaywrightError):
            if request.is_navigation_request():
                await route.fulfill(
                    status=403,
                    content_type="text/html; charset=utf-8",
                    headers={"Cache-Control": "no-store"},
                    body=refusal_page(
                        refusal.method, refusal.url, refusal.reason.value, refusal.reason.text
                    ),
                )
            else:
                await route.abort("blockedbyclient")
        self._note(refusal)

    def _note(self, refusal: WriteRefusal) -> None:
        index = len(self.refused)
        self.refused.append(refusal)
        if self._recorder is None:
            return
        task = asyncio.ensure_future(self._record(index, refusal, self._recorder))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _record(self, index: int, refusal: WriteRefusal, recorder: Recorder) -> None:
        try:
            self.refused[index] = await recorder(refusal)
        except (ActOnceError, OSError) as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}"[:300])


async def firewall(
    context: BrowserContext,
    ledger: Ledger | AsyncLedger | None,
    *,
    actor: str,
    allow: Sequence[RequestPattern] = (),
) -> AsyncFirewall:
    """Put the write firewall on a Playwright (async API) browser context.

    Args:
        context: the context the agent's pages live in (every page, popup
            and iframe of it, those opened later included).
        ledger: where refusals are recorded (``ledger.firewall``); an
            ``AsyncLedger`` on this event loop, or a ``Ledger`` (written from
            a worker thread); ``None`` keeps them in ``refused`` only.
        actor: the name refusals are recorded under.
        allow: what may pass outside an effect: ``RequestPattern`` values
            naming method, origin and path (the login form, a search form).
            Nothing by default.

    Warns ``FirewallWarning`` when the context runs service workers or does
    not block them. Remove it with ``await fw.aclose()``.
    """
    from playwright.async_api import BrowserContext as AsyncContext

    if not isinstance(context, AsyncContext):
        raise UsageError(
            "firewall() guards a Playwright async-API BrowserContext; for a sync program "
            "use actonce.browser.Browser().new_session(..., ledger=...), whose firewall is on"
        )
    wall = AsyncFirewall(context, actor=actor, allow=allow, recorder=recorder_of(ledger))
    await wall.install()
    return wall
