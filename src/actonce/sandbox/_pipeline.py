"""What every sandbox handler does around its commit: the request pipeline.

Each handler follows the same shape: ``_begin`` names the action, applies
the faults that stop a request before any commit (500, login wall, CAPTCHA,
rate limit), then the handler commits, then ``_finish`` applies the faults
that hit after the commit (lost or slow confirmation, 500). ``Ctx`` is one
request as the handlers see it; ``_page`` and ``_wall`` render, ``_user``
and ``_api_user`` say who is signed in (session cookie, or Basic auth for
the JSON API).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ._conns import Connections, lost_response
from ._db import SandboxDB
from ._faults import MAX_DELAY, Fault, FaultPlan, FiredFault
from ._templates import TEMPLATES

__all__ = ["SESSION_COOKIE", "Ctx", "Pipeline"]

SESSION_COOKIE = "sandbox_session"
"""Name of the session cookie (HttpOnly)."""


@dataclass(slots=True)
class Ctx:
    """One request as the handlers see it."""

    request: Request
    action: str
    user: str | None
    fields: dict[str, str]
    fired: list[FiredFault]

    def has(self, fault: Fault) -> FiredFault | None:
        return next((f for f in self.fired if f.fault is fault), None)

    def shown(self, rows: list[Any]) -> list[Any]:
        """The rows a list page shows: one fewer under ``truncated_list``."""
        return rows[:-1] if self.has(Fault.TRUNCATED_LIST) else rows

    @property
    def hidden_for(self) -> float:
        late = self.has(Fault.LATE_INDEX)
        return late.seconds if late else 0.0


class Pipeline:
    """The steps around every handler, over the app's state.

    ``Sandbox`` sets the state: its database, fault plan, shutdown signal
    and the connections the server tracks.
    """

    db: SandboxDB
    faults: FaultPlan
    closing: threading.Event
    connections: Connections

    def _page(
        self, ctx: Ctx | Request, template: str, status: int = 200, **context: Any
    ) -> Response:
        request = ctx.request if isinstance(ctx, Ctx) else ctx
        user = ctx.user if isinstance(ctx, Ctx) else self._user(request)
        return TEMPLATES.TemplateResponse(
            request, template, {"user": user, **context}, status_code=status
        )

    def _wall(self, ctx: Ctx, testid: str, title: str, message: str, status: int) -> Response:
        return self._page(ctx, "wall.html", status, testid=testid, title=title, message=message)

    def _user(self, request: Request) -> str | None:
        return self.db.session_user(request.cookies.get(SESSION_COOKIE))

    def _fire(
        self, request: Request, action: str, fields: dict[str, str], user: str | None
    ) -> list[FiredFault]:
        """The faults for this request; logs it with the connection it came on."""
        connection, on_connection = self.connections.note_request(request.scope.get("client"))
        return self.faults.fire(
            action,
            fields,
            method=request.method,
            path=request.url.path,
            user=user,
            connection=connection,
            on_connection=on_connection,
        )

    async def _begin(self, request: Request, action: str, *, login: bool = True) -> Ctx | Response:
        """Name the action, fire the faults, stop before commit when needed."""
        if request.method == "POST" and not request.url.path.startswith("/api/"):
            body = (await request.body()).decode("utf-8", "replace")
            fields = dict(parse_qsl(body, keep_blank_values=True))
        else:
            fields = dict(request.query_params)
        user = self._user(request)
        fired = self._fire(request, action, fields, user)
        ctx = Ctx(request, action, user, fields, fired)
        if ctx.has(Fault.ERROR_BEFORE_COMMIT):
            return self._wall(ctx, "error", "Server error", "Something went wrong.", 500)
        if ctx.has(Fault.SESSION_EXPIRED):
            self.db.end_session(request.cookies.get(SESSION_COOKIE))
            ctx.user = None
            resp = self._page(
                ctx,
                "login.html",
                401,
                next=request.url.path,
                message="Your session has expired. Please sign in again.",
            )
            resp.delete_cookie(SESSION_COOKIE)
            return resp
        if ctx.has(Fault.CAPTCHA):
            return self._wall(
                ctx, "captcha", "Verify you are human", "Complete the CAPTCHA to continue.", 200
            )
        if ctx.has(Fault.RATE_LIMIT):
            return self._wall(
                ctx,
                "rate-limit",
                "Too many requests",
                "You are doing that too often. Try again later.",
                429,
            )
        if login and user is None:
            if request.method == "GET":
                return RedirectResponse(f"/login?next={quote(request.url.path)}", 303)
            return self._page(
                ctx, "login.html", 401, next=request.url.path, message="Please sign in."
            )
        return ctx

    async def _finish(self, ctx: Ctx, response: Response) -> Response:
        """Apply the faults that strike after the commit."""
        if ctx.has(Fault.ERROR_AFTER_COMMIT):
            return self._wall(ctx, "error", "Server error", "Something went wrong.", 500)
        lost = ctx.has(Fault.LOST_RESPONSE)
        if lost:
            return lost_response(lost.mode, self.connections)
        slow = ctx.has(Fault.SLOW_RESPONSE)
        if slow:
            await self._pause(slow.seconds)
        return response

    async def _pause(self, seconds: float) -> None:
        deadline = time.monotonic() + min(seconds, MAX_DELAY)
        while not self.closing.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            await asyncio.sleep(min(left, 0.05))

    def _api_user(self, request: Request) -> str | None:
        header = request.headers.get("authorization", "")
        if header.lower().startswith("basic "):
            try:
                name, _, password = base64.b64decode(header[6:]).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return None
            return name if self.db.check_password(name, password) else None
        return self._user(request)
