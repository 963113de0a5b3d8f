"""The guard every route goes through, and the headers every response carries.

:func:`guarded` wraps each endpoint when the app is built (one loop over the
route table, so a new route cannot be added without it):

1. A state-changing request (anything but ``GET``/``HEAD``) must come from
   this console's own pages: ``Sec-Fetch-Site``, when the browser sends it,
   must be ``same-origin``; ``Origin`` must be sent, and be this console's
   origin, or ``null`` vouched for by ``Sec-Fetch-Site: same-origin`` (what
   a browser sends for its own forms under ``Referrer-Policy:
   no-referrer``). Otherwise 403 — a request without ``Origin`` too, even
   with a valid CSRF token: every browser sends one with a form's POST.
2. Without a live session: a page (``GET``) redirects to ``/login``; any
   other request is 401. Only the routes built ``public`` (the login page)
   skip this.
3. A state-changing request must carry the session's CSRF token in the
   ``csrf`` field of an ``application/x-www-form-urlencoded`` body (for the
   public login form: the login nonce, in the field and in its cookie).
   Missing, wrong, or another content type: 403.

The endpoint then finds the session and the parsed form on
``request.state``. The reviewer's identity is the session's, never a form
field.

:class:`SecurityHeaders` adds to every response (router errors included):
a Content Security Policy without inline script and with
``frame-ancestors 'none'``, ``Referrer-Policy: no-referrer``,
``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY``,
``Cross-Origin-Opener-Policy: same-origin`` and ``Cache-Control: no-store``
(pages show ledger data: no cache keeps them).
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._sessions import Sessions

__all__ = [
    "CSP",
    "LOGIN_COOKIE",
    "SAFE_METHODS",
    "SESSION_COOKIE",
    "SecurityHeaders",
    "guarded",
    "read_form",
    "safe_next",
]

SESSION_COOKIE = "actonce_console"
LOGIN_COOKIE = "actonce_console_login"
SAFE_METHODS = frozenset({"GET", "HEAD"})
MAX_FORM_BYTES = 64 * 1024

#: The default policy: our own scripts, styles and images; nothing else, no framing.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = [
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]

Endpoint = Callable[[Request], Awaitable[Response]]


class FormError(Exception):
    """The body is not a form this console accepts."""


async def read_form(request: Request) -> dict[str, str]:
    """The urlencoded form of ``request`` (one value per name; at most 64 KiB)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise FormError("not a form")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise FormError("form too large")
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except (UnicodeDecodeError, ValueError) as exc:
        raise FormError("unreadable form") from exc
    form: dict[str, str] = {}
    for name, value in pairs:
        if name in form:
            raise FormError(f"field {name!r} given twice")
        form[name] = value
    return form


def own_origin(request: Request) -> str:
    """This console's origin, as the browser addressed it."""
    return f"{request.url.scheme}://{request.headers.get('host', '')}"


def _from_elsewhere(request: Request) -> bool:
    # Under "Referrer-Policy: no-referrer" a browser sends "Origin: null" with
    # every form it posts, its own origin's too; it then vouches for the
    # origin with Sec-Fetch-Site (a header no page can set). Every browser
    # sends Origin with a POST: a request without one is refused, whatever
    # its token (a stolen token must not be enough from a script).
    site = request.headers.get("sec-fetch-site")
    if site is not None and site != "same-origin":
        return True
    origin = request.headers.get("origin")
    if origin is None:
        return True
    if origin == own_origin(request):
        return False
    return not (origin == "null" and site == "same-origin")


def safe_next(target: str | None) -> str:
    """A local path to go to after sign-in (anything else: the queue)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def _refused(status: int, text: str) -> Response:
    body = (
        "<!doctype html><html lang=en><meta charset=utf-8><title>actonce console</title>"
        f"<p>{text}</p><p><a href=/>Back to the queue</a></p></html>"
    )
    return HTMLResponse(body, status_code=status)


def guarded(endpoint: Endpoint, sessions: Sessions, *, public: bool = False) -> Endpoint:
    """``endpoint`` behind the origin, session and CSRF checks (see the module doc)."""

    async def guard(request: Request) -> Response:
        changes = request.method not in SAFE_METHODS
        if changes and _from_elsewhere(request):
            return _refused(403, "Refused: this request did not come from the console's pages.")
        session = sessions.get(request.cookies.get(SESSION_COOKIE))
        if session is None and not public:
            if not changes:
                path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse("/login?next=" + quote(path, safe=""), status_code=303)
            return _refused(401, "Sign in first.")
        form: dict[str, str] = {}
        if changes:
            try:
                form = await read_form(request)
            except FormError:
                return _refused(403, "Refused: not a form of this console.")
            token = form.get("csrf", "")
            if session is not None and not public:
                ok = bool(token) and hmac.compare_digest(token.encode(), session.csrf.encode())
            else:
                ok = sessions.use_nonce(request.cookies.get(LOGIN_COOKIE), token)
            if not ok:
                return _refused(403, "Refused: the form's token is missing or stale. Reload.")
        request.state.session = session
        request.state.form = form
        started = time.perf_counter()
        response = await endpoint(request)
        # How long the page took to make, for benchmarks and browsers' devtools.
        took = (time.perf_counter() - started) * 1000
        response.headers["server-timing"] = f"app;dur={took:.2f}"
        return response

    guard.__name__ = getattr(endpoint, "__name__", "guard")
    guard.__doc__ = endpoint.__doc__
    guard.__wrapped__ = endpoint  # type: ignore[attr-defined]
    return guard


class SecurityHeaders:
    """ASGI middleware: the security headers on every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers: list[Any] = list(message.get("headers", []))
                names = {bytes(name).lower() for name, _ in headers}
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", CSP.encode()))
                headers.extend(h for h in _HEADERS if h[0] not in names)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
