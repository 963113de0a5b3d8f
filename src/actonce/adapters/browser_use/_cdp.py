"""The write firewall at the DevTools-protocol layer: every target of one Chromium.

browser-use drives Chromium over the DevTools protocol itself (``cdp-use``),
not through Playwright: it launches the browser, opens its own tabs, and no
Playwright context of actonce's ever holds its pages. So the firewall sits
on the browser: this module opens a DevTools connection of its own to the
same Chromium and intercepts there, for every client:

- ``Target.setAutoAttach`` at the browser level (``waitForDebuggerOnStart``,
  flattened sessions) attaches to every page, popup and worker — existing
  ones and each new one *before it runs*, whoever created it (browser-use,
  a ``window.open``, a ``target=_blank`` form). Each page also auto-attaches
  its children: cross-process iframes and dedicated workers (whose requests
  are paused on their page's session).
- On every target, ``Fetch.enable`` at the request stage pauses each request;
  safe methods (GET, HEAD, OPTIONS) continue at once, and every other one is
  put to ``judge``: allowed ones continue, refused ones never leave the
  browser (``Fetch.failRequest``, ``BlockedByClient``; a refused navigation
  is answered with a short page saying why, so the agent reads it).
- Service and shared workers never run (left waiting for the debugger,
  then closed: they fetch on their own, outside any page), and pages
  bypass service workers (``Network.setBypassServiceWorker``).

Chromium runs the Fetch interceptors of its clients newest first, so a
Playwright route installed later (actonce's network guard during a perform)
sees a request before this one does; what it fulfils itself never reaches
here, what it passes on (``route.fallback``) does.

If the DevTools connection is lost, Chromium stops intercepting: the
firewall is then ``lost`` and says so (the adapter stops the agent's
actions), since it can no longer refuse anything.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from cdp_use.client import CDPClient

from actonce import bare_url
from actonce.browser import refusal_page

__all__ = ["SAFE_METHODS", "CDPFirewall", "Refused", "Request"]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that never reach ``judge``."""

_PAGES = frozenset({"page", "iframe"})
_BLOCKED = frozenset({"service_worker", "shared_worker"})
_AUTO_ATTACH = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}
_ALL_REQUESTS = {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}


@dataclass(frozen=True, slots=True)
class Request:
    """One mutating request, as the firewall sees it before it leaves."""

    method: str
    url: str
    resource_type: str
    """The DevTools resource type: Document, XHR, Fetch, Ping (a beacon) ..."""
    page: str
    """The URL of the page (or worker) that made it, as last seen."""


@dataclass(frozen=True, slots=True)
class Refused:
    """A refused request, secret-free: no query, no body, no headers."""

    method: str
    url: str
    page: str
    resource_type: str
    reason: str
    """Why, as a code (the adapter's rule names it: ``outside_effect`` ...)."""
    text: str
    """Why, in words."""
    at: float
    """Wall-clock time of the refusal (seconds since the epoch)."""

    def to_json(self) -> dict[str, Any]:
        """The refusal as JSON-able data."""
        return {
            "method": self.method,
            "url": self.url,
            "page": self.page,
            "resource_type": self.resource_type,
            "reason": self.reason,
            "text": self.text,
            "at": round(self.at, 3),
        }


Judge = Callable[[Request], tuple[str, str] | None]
"""``judge(request)``: ``None`` lets it go; ``(reason, text)`` refuses it."""
OnRefused = Callable[[Refused], Awaitable[None] | None]


class CDPFirewall:
    """Refuses the mutating requests ``judge`` refuses, in every target of a browser.

    Args:
        judge: decides each mutating request (``None``: allowed).
        on_refused: told of each refusal (after it was refused); it may be
            async. Errors it raises are kept in ``errors``, never in the
            browser's way.
    """

    def __init__(self, judge: Judge, on_refused: OnRefused | None = None) -> None:
        self._judge = judge
        self._on_refused = on_refused
        self._client: Any = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._deciding: set[asyncio.Task[None]] = set()  # requests paused, not yet decided
        self._attaching: set[asyncio.Task[None]] = set()  # targets attached, not yet set up
        self._targets: dict[str, str] = {}  # session id -> target id
        self._urls: dict[str, str] = {}  # target id -> its URL, as last seen
        self.refused: list[Refused] = []
        """Every refusal so far, oldest first."""
        self.errors: list[str] = []
        """What went wrong inside the firewall's own handlers (never raised into the page)."""
        self.blocked_workers = 0
        """Service and shared workers kept from running."""
        self.lost = asyncio.Event()
        """Set when the DevTools connection is gone: nothing is intercepted any more."""

    async def attach(self, cdp_url: str) -> None:
        """Connect to ``cdp_url`` (``ws://…/devtools/browser/…``) and start refusing.

        Every target that exists is attached before this returns; every new
        one is attached before it runs.
        """
        client = CDPClient(cdp_url)
        await client.start()
        self._client = client
        client.register.Target.attachedToTarget(self._spawner(self._attached, self._attaching))
        client.register.Target.detachedFromTarget(self._spawner(self._detached))
        client.register.Target.targetInfoChanged(self._spawner(self._info_changed))
        client.register.Fetch.requestPaused(self._spawner(self._paused, self._deciding))
        watcher = asyncio.ensure_future(self._watch(client))
        self._tasks.add(watcher)
        await client.send_raw("Target.setDiscoverTargets", {"discover": True})
        # Chromium announces the targets that exist before it answers this;
        # their set-up (Fetch on each) is done before attach() returns.
        await client.send_raw("Target.setAutoAttach", _AUTO_ATTACH)
        deadline = time.monotonic() + 10.0
        while self._attaching and time.monotonic() < deadline:  # children attach meanwhile
            await asyncio.wait(list(self._attaching), timeout=deadline - time.monotonic())

    async def aclose(self) -> None:
        """Stop intercepting (the browser goes on without the firewall)."""
        client, self._client = self._client, None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=2.0)
        if client is not None:
            with contextlib.suppress(Exception):
                await client.stop()

    async def activate(self, target_id: str) -> None:
        """Bring a target (the agent's tab) to the front: a background tab paints nothing."""
        await self._send("Target.activateTarget", {"targetId": target_id}, None)

    async def settled(self, timeout: float = 5.0) -> None:
        """Wait until every request paused so far has been decided (bounded)."""
        if self._deciding:
            await asyncio.wait(list(self._deciding), timeout=timeout)

    def _spawner(
        self,
        handler: Callable[..., Coroutine[Any, Any, None]],
        also: set[asyncio.Task[None]] | None = None,
    ) -> Callable[..., None]:
        # cdp-use awaits an event handler inside its receive loop: one that
        # waited for an answer there would wait forever. Each event gets a task.
        def on_event(event: dict[str, Any], session_id: str | None = None) -> None:
            task = asyncio.ensure_future(self._guarded(handler(event, session_id)))
            for tasks in (self._tasks, also):
                if tasks is not None:
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)

        return on_event

    async def _guarded(self, step: Coroutine[Any, Any, None]) -> None:
        try:
            await step
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a target that went away mid-step, mostly
            self.errors.append(f"{type(exc).__name__}: {exc}"[:300])

    async def _watch(self, client: Any) -> None:
        with contextlib.suppress(Exception):
            await client.ws.wait_closed()
        self.lost.set()

    async def _send(self, method: str, params: dict[str, Any], session: str | None) -> Any:
        return await self._client.send_raw(method, params, session_id=session)

    async def _attached(self, event: dict[str, Any], _parent: str | None) -> None:
        session = event["sessionId"]
        info = event.get("targetInfo", {})
        kind = info.get("type", "")
        self._targets[session] = info.get("targetId", "")
        self._urls[info.get("targetId", "")] = info.get("url", "")
        if kind in _BLOCKED:
            # A worker that outlives its pages fetches out of their sight:
            # it never runs (left waiting for the debugger, then closed).
            self.blocked_workers += 1
            with contextlib.suppress(Exception):
                await self._send("Target.closeTarget", {"targetId": info.get("targetId")}, None)
            return
        if kind in _PAGES:
            try:
                await self._send("Fetch.enable", _ALL_REQUESTS, session)
                await self._send("Target.setAutoAttach", _AUTO_ATTACH, session)
            except Exception:
                # Closed, never open: a page the firewall cannot see never runs.
                with contextlib.suppress(Exception):
                    await self._send("Target.closeTarget", {"targetId": info.get("targetId")}, None)
                raise
        if event.get("waitingForDebugger"):
            await self._send("Runtime.runIfWaitingForDebugger", {}, session)
        if kind in _PAGES:
            # Only answered once a new popup runs, so after the release. Its
            # first request cannot meet a worker either: none ever runs.
            await self._send("Network.setBypassServiceWorker", {"bypass": True}, session)

    async def _detached(self, event: dict[str, Any], _parent: str | None) -> None:
        target = self._targets.pop(event.get("sessionId", ""), None)
        if target is not None and target not in self._targets.values():
            self._urls.pop(target, None)

    async def _info_changed(self, event: dict[str, Any], _session: str | None) -> None:
        info = event.get("targetInfo", {})
        if info.get("targetId") in self._urls:
            self._urls[info["targetId"]] = info.get("url", "")

    async def _paused(self, event: dict[str, Any], session: str | None) -> None:
        request_id = event["requestId"]
        request = event.get("request", {})
        method = str(request.get("method", "GET")).upper()
        url = str(request.get("url", ""))
        if method in SAFE_METHODS or not url.startswith("http"):
            await self._send("Fetch.continueRequest", {"requestId": request_id}, session)
            return
        seen = Request(
            method=method,
            url=url,
            resource_type=str(event.get("resourceType", "Other")),
            page=self._urls.get(self._targets.get(session or "", ""), ""),
        )
        try:
            verdict = self._judge(seen)
        except Exception as exc:  # a rule that fails refuses: closed, never open
            verdict = ("rule_failed", f"the firewall's rule failed ({type(exc).__name__})")
        if verdict is None:
            await self._send("Fetch.continueRequest", {"requestId": request_id}, session)
            return
        refused = Refused(
            method=method,
            url=bare_url(url),
            page=bare_url(seen.page) if seen.page.startswith("http") else "",
            resource_type=seen.resource_type,
            reason=verdict[0],
            text=verdict[1],
            at=time.time(),
        )
        self.refused.append(refused)
        if seen.resource_type == "Document":
            body = refusal_page(refused.method, refused.url, refused.reason, refused.text).encode()
            await self._send(
                "Fetch.fulfillRequest",
                {
                    "requestId": request_id,
                    "responseCode": 403,
                    "responseHeaders": [
                        {"name": "Content-Type", "value": "text/html; charset=utf-8"},
                        {"name": "Cache-Control", "value": "no-store"},
                    ],
                    "body": base64.b64encode(body).decode("ascii"),
                },
                session,
            )
        else:
            await self._send(
                "Fetch.failRequest",
                {"requestId": request_id, "errorReason": "BlockedByClient"},
                session,
            )
        if self._on_refused is not None:
            outcome = self._on_refused(refused)
            if outcome is not None:
                await outcome
