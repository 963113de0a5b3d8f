"""The sandbox web app: posts, likes, follows, invoices, a shop, faults.

Server-rendered HTML (Jinja2) over Starlette, its own SQLite database as the
ground truth, and a fault plan consulted on every request. Forms are plain
``application/x-www-form-urlencoded``; no upload, no framework JS.

Each handler follows the same shape: ``_begin`` names the action, applies
the faults that stop a request before any commit (500, login wall, CAPTCHA,
rate limit), then the handler commits, then ``_finish`` applies the faults
that hit after the commit (lost or slow confirmation, 500).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import re
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates
from starlette.types import Receive, Scope, Send

from ._booking_app import BookingWorld
from ._conns import ConnectionDropped, Connections, lost_response
from ._db import SandboxDB
from ._faults import MAX_DELAY, Fault, FaultPlan, FaultRule, FiredFault

__all__ = ["SESSION_COOKIE", "Sandbox", "create_app"]

SESSION_COOKIE = "sandbox_session"
"""Name of the session cookie (HttpOnly)."""

_TEMPLATES = Jinja2Templates(directory=str(Path(__file__).with_name("templates")))
_POST_PATH = re.compile(r"^/posts/(\d+)/?$")


def parse_post_ref(ref: str) -> int | None:
    """The post id in a post URL or path (``/posts/7``, ``http://…/posts/7``)."""
    m = _POST_PATH.match(urlsplit(ref.strip()).path)
    return int(m.group(1)) if m else None


@dataclass(slots=True)
class _Ctx:
    """One request as the handlers see it."""

    request: Request
    action: str
    user: str | None
    fields: dict[str, str]
    fired: list[FiredFault]

    def has(self, fault: Fault) -> FiredFault | None:
        return next((f for f in self.fired if f.fault is fault), None)

    @property
    def hidden_for(self) -> float:
        late = self.has(Fault.LATE_INDEX)
        return late.seconds if late else 0.0


class Sandbox:
    """The app's state: database, fault plan and the shutdown signal.

    Args:
        db: a ``SandboxDB``, a database file path, or ``None`` for memory.
        seed: seed of the fault plan's RNG.
        faults: initial fault rules.
    """

    def __init__(
        self,
        db: SandboxDB | str | Path | None = None,
        *,
        seed: int = 0,
        faults: list[FaultRule] | tuple[FaultRule, ...] = (),
    ) -> None:
        self.db = db if isinstance(db, SandboxDB) else SandboxDB(db)
        self.seed = seed
        self.faults = FaultPlan(faults, seed=seed)
        # Set on server shutdown: slow confirmations stop waiting at once.
        self.closing = threading.Event()
        # Filled by the server's connection-tracking protocol (SandboxServer,
        # serve): lets a lost_response close or reset the request's own socket.
        self.connections = Connections()
        # The booking world (/book, /api/book, /admin/booking): its own tables
        # in the same database file, the same sessions, faults and request log.
        self.booking = BookingWorld(self, self.db.path)
        self.app = self._build()

    # -- plumbing ---------------------------------------------------------

    def _build(self) -> Starlette:
        r = [
            Route("/", self.home),
            Route("/login", self.login_form, methods=["GET"]),
            Route("/login", self.login, methods=["POST"]),
            Route("/logout", self.logout, methods=["GET", "POST"]),
            Route("/compose", self.compose_form, methods=["GET"]),
            Route("/compose", self.compose, methods=["POST"]),
            Route("/posts/{post_id:int}", self.post_page),
            Route("/posts/{post_id:int}/like", self.like, methods=["POST"]),
            Route("/u/{name}", self.profile),
            Route("/u/{name}/follow", self.follow, methods=["POST"]),
            Route("/search", self.search),
            Route("/invoices", self.invoices, methods=["GET"]),
            Route("/invoices", self.create_invoice, methods=["POST"]),
            Route("/invoices/new", self.invoice_form),
            Route("/invoices/{invoice_id:int}", self.invoice_page),
            Route("/shop", self.shop),
            Route("/shop/{slug}", self.book_form, methods=["GET"]),
            Route("/shop/{slug}/book", self.book, methods=["POST"]),
            Route("/bookings", self.bookings_page),
            Route("/api/invoices", self.api_create_invoice, methods=["POST"]),
            Route("/api/invoices", self.api_list_invoices, methods=["GET"]),
            Route("/admin/ground-truth", self.admin_ground_truth),
            Route("/admin/reset", self.admin_reset, methods=["POST"]),
            Route("/admin/faults", self.admin_get_faults, methods=["GET"]),
            Route("/admin/faults", self.admin_set_faults, methods=["POST"]),
            Route("/admin/requests", self.admin_requests),
            *self.booking.routes(),
        ]

        @asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            self.closing.clear()
            yield
            self.closing.set()

        app = Starlette(routes=r, lifespan=lifespan)
        app.state.sandbox = self
        return app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point; swallows the deliberate connection drop."""
        try:
            await self.app(scope, receive, send)
        except ConnectionDropped:
            return

    def _page(
        self, ctx: _Ctx | Request, template: str, status: int = 200, **context: Any
    ) -> Response:
        request = ctx.request if isinstance(ctx, _Ctx) else ctx
        user = ctx.user if isinstance(ctx, _Ctx) else self._user(request)
        return _TEMPLATES.TemplateResponse(
            request, template, {"user": user, **context}, status_code=status
        )

    def _wall(self, ctx: _Ctx, testid: str, title: str, message: str, status: int) -> Response:
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

    async def _begin(self, request: Request, action: str, *, login: bool = True) -> _Ctx | Response:
        """Name the action, fire the faults, stop before commit when needed."""
        if request.method == "POST" and not request.url.path.startswith("/api/"):
            body = (await request.body()).decode("utf-8", "replace")
            fields = dict(parse_qsl(body, keep_blank_values=True))
        else:
            fields = dict(request.query_params)
        user = self._user(request)
        fired = self._fire(request, action, fields, user)
        ctx = _Ctx(request, action, user, fields, fired)
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

    async def _finish(self, ctx: _Ctx, response: Response) -> Response:
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

    # -- accounts ---------------------------------------------------------

    async def home(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.home", login=False)
        return ctx if isinstance(ctx, Response) else self._page(ctx, "home.html")

    async def login_form(self, request: Request) -> Response:
        return self._page(request, "login.html", next=request.query_params.get("next", "/"))

    async def login(self, request: Request) -> Response:
        ctx = await self._begin(request, "login", login=False)
        if isinstance(ctx, Response):
            return ctx
        name, password = ctx.fields.get("username", ""), ctx.fields.get("password", "")
        target = ctx.fields.get("next", "/")
        if not target.startswith("/") or target.startswith("//"):
            target = "/"
        if not self.db.check_password(name, password):
            return self._page(
                ctx, "login.html", 401, next=target, message="Wrong username or password."
            )
        resp = RedirectResponse(target, 303)
        # "Keep me signed in": a cookie that outlives the browser (30 days), as
        # real sites do; otherwise a session cookie, gone when the browser closes.
        remember = ctx.fields.get("remember") == "1"
        resp.set_cookie(
            SESSION_COOKIE,
            self.db.new_session(name),
            max_age=30 * 86400 if remember else None,
            httponly=True,
            samesite="lax",
            path="/",
        )
        return resp

    async def logout(self, request: Request) -> Response:
        self.db.end_session(request.cookies.get(SESSION_COOKIE))
        resp = RedirectResponse("/", 303)
        resp.delete_cookie(SESSION_COOKIE)
        return resp

    # -- posts ------------------------------------------------------------

    async def compose_form(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.compose")
        if isinstance(ctx, Response):
            return ctx
        parent = None
        ref = ctx.fields.get("reply_to", "")
        if ref:
            pid = parse_post_ref(ref)
            parent = self.db.post(pid) if pid is not None else None
            if parent is None:
                return self._wall(ctx, "not-found", "Not found", "No such post to reply to.", 404)
        append = ctx.has(Fault.EDITOR_APPEND)
        return self._page(
            ctx,
            "compose.html",
            parent=parent,
            parent_url=f"/posts/{parent.id}" if parent else "",
            draft=append.draft if append else "",
            double_submit=ctx.has(Fault.DOUBLE_SUBMIT) is not None,
        )

    async def compose(self, request: Request) -> Response:
        ctx = await self._begin(request, "post.create")
        if isinstance(ctx, Response):
            return ctx
        assert ctx.user is not None
        f = ctx.fields
        text = f.get("text", "")
        media_type = f.get("media_type", "") or None
        parent_id = None
        if f.get("parent"):
            parent_id = parse_post_ref(f["parent"])
            if parent_id is None or self.db.post(parent_id) is None:
                return self._wall(ctx, "error", "Bad request", "No such parent post.", 400)
        if not text.strip() or len(text) > 2000 or media_type not in (None, "image", "video"):
            return self._wall(ctx, "error", "Bad request", "Text is required.", 400)
        post_id = self.db.create_post(
            ctx.user,
            text,
            parent_id,
            media_type,
            (f.get("media_name") or None) if media_type else None,
            (f.get("alt") or None) if media_type else None,
            hidden_for=ctx.hidden_for,
        )
        return await self._finish(ctx, RedirectResponse(f"/posts/{post_id}", 303))

    async def post_page(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.post", login=False)
        if isinstance(ctx, Response):
            return ctx
        post = self.db.post(int(request.path_params["post_id"]))
        if post is None:
            return self._wall(ctx, "not-found", "Not found", "No such post.", 404)
        liked = bool(ctx.user) and self.db.liked(ctx.user or "", post.id)
        return self._page(
            ctx,
            "post.html",
            post=post,
            liked=liked,
            likes=self.db.like_count(post.id),
            replies=self.db.replies(post.id),
        )

    async def like(self, request: Request) -> Response:
        ctx = await self._begin(request, "like.toggle")
        if isinstance(ctx, Response):
            return ctx
        post_id = int(request.path_params["post_id"])
        if self.db.post(post_id) is None:
            return self._wall(ctx, "not-found", "Not found", "No such post.", 404)
        self.db.toggle_like(ctx.user or "", post_id)
        return await self._finish(ctx, RedirectResponse(f"/posts/{post_id}", 303))

    async def profile(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.profile", login=False)
        if isinstance(ctx, Response):
            return ctx
        name = str(request.path_params["name"])
        if not self.db.user_exists(name):
            return self._wall(ctx, "not-found", "Not found", "No such user.", 404)
        following = bool(ctx.user) and self.db.following(ctx.user or "", name)
        return self._page(
            ctx,
            "profile.html",
            name=name,
            following=following,
            posts=self.db.search_posts(author=name),
        )

    async def follow(self, request: Request) -> Response:
        ctx = await self._begin(request, "follow.toggle")
        if isinstance(ctx, Response):
            return ctx
        name = str(request.path_params["name"])
        if not self.db.user_exists(name) or name == ctx.user:
            return self._wall(ctx, "not-found", "Not found", "No such user.", 404)
        self.db.toggle_follow(ctx.user or "", name)
        return await self._finish(ctx, RedirectResponse(f"/u/{name}", 303))

    async def search(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.search", login=False)
        if isinstance(ctx, Response):
            return ctx
        author, q = ctx.fields.get("author", ""), ctx.fields.get("q", "")
        posts = self.db.search_posts(author or None, q or None)
        return await self._finish(
            ctx, self._page(ctx, "search.html", author=author, q=q, posts=posts)
        )

    # -- invoices ---------------------------------------------------------

    async def invoices(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.invoices")
        if isinstance(ctx, Response):
            return ctx
        reference = ctx.fields.get("reference", "")
        return await self._finish(
            ctx,
            self._page(
                ctx,
                "invoices.html",
                reference=reference,
                invoices=self.db.list_invoices(reference or None),
            ),
        )

    async def invoice_form(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.invoice_new")
        return ctx if isinstance(ctx, Response) else self._page(ctx, "invoice_new.html")

    async def invoice_page(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.invoice")
        if isinstance(ctx, Response):
            return ctx
        invoice = self.db.invoice(int(request.path_params["invoice_id"]))
        if invoice is None:
            return self._wall(ctx, "not-found", "Not found", "No such invoice.", 404)
        return self._page(ctx, "invoice.html", invoice=invoice)

    async def create_invoice(self, request: Request) -> Response:
        ctx = await self._begin(request, "invoice.create")
        if isinstance(ctx, Response):
            return ctx
        reference = ctx.fields.get("reference", "").strip()
        try:
            amount = int(ctx.fields.get("amount", "0").strip() or "0")
        except ValueError:
            amount = -1
        if not reference or amount < 0:
            return self._wall(
                ctx,
                "error",
                "Bad request",
                "Reference and a whole, non-negative amount are required.",
                400,
            )
        invoice_id = self.db.create_invoice(
            ctx.user or "", reference, amount, hidden_for=ctx.hidden_for
        )
        return await self._finish(ctx, RedirectResponse(f"/invoices/{invoice_id}", 303))

    # -- shop -------------------------------------------------------------

    async def shop(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.shop", login=False)
        return (
            ctx
            if isinstance(ctx, Response)
            else self._page(ctx, "shop.html", items=self.db.items())
        )

    async def book_form(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.book")
        if isinstance(ctx, Response):
            return ctx
        item = self.db.item(str(request.path_params["slug"]))
        if item is None:
            return self._wall(ctx, "not-found", "Not found", "No such item.", 404)
        return self._page(ctx, "book.html", item=item, message="")

    async def book(self, request: Request) -> Response:
        ctx = await self._begin(request, "booking.create")
        if isinstance(ctx, Response):
            return ctx
        slug = str(request.path_params["slug"])
        if self.db.item(slug) is None:
            return self._wall(ctx, "not-found", "Not found", "No such item.", 404)
        change = ctx.has(Fault.PRICE_CHANGE)
        if change:
            self.db.change_price(slug, change.amount)
        try:
            quoted = int(ctx.fields.get("quoted_price", ""))
        except ValueError:
            return self._wall(ctx, "error", "Bad request", "No quoted price.", 400)
        if self.db.book(ctx.user or "", slug, quoted) is None:
            item = self.db.item(slug)
            return self._page(
                ctx,
                "book.html",
                409,
                item=item,
                message="The price changed since you viewed it. Review and book again.",
            )
        return await self._finish(ctx, RedirectResponse("/bookings", 303))

    async def bookings_page(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.bookings")
        if isinstance(ctx, Response):
            return ctx
        return self._page(ctx, "bookings.html", bookings=self.db.bookings(ctx.user))

    # -- JSON API ---------------------------------------------------------

    def _api_user(self, request: Request) -> str | None:
        header = request.headers.get("authorization", "")
        if header.lower().startswith("basic "):
            try:
                name, _, password = base64.b64decode(header[6:]).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return None
            return name if self.db.check_password(name, password) else None
        return self._user(request)

    async def api_create_invoice(self, request: Request) -> Response:
        """``POST /api/invoices`` with an optional ``Idempotency-Key`` header."""
        try:
            body = json.loads(await request.body())
            reference = str(body["reference"]).strip()
            amount = int(body.get("amount", 0))
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "body must be JSON with reference and amount"}, 400)
        user = self._api_user(request)
        fired = self._fire(request, "api.invoice.create", {"reference": reference}, user)
        ctx = _Ctx(request, "api.invoice.create", user, {"reference": reference}, fired)
        if ctx.has(Fault.ERROR_BEFORE_COMMIT):
            return JSONResponse({"error": "server error"}, 500)
        if ctx.has(Fault.RATE_LIMIT):
            return JSONResponse({"error": "rate limited"}, 429)
        if user is None or ctx.has(Fault.SESSION_EXPIRED) or ctx.has(Fault.CAPTCHA):
            return JSONResponse({"error": "authentication required"}, 401)
        key = request.headers.get("idempotency-key")
        canonical = json.dumps({"reference": reference, "amount": amount}, sort_keys=True)
        if key:
            body_hash = hashlib.sha256(canonical.encode()).hexdigest()
            invoice_id, created = self.db.create_invoice_idempotent(
                user, key, body_hash, reference, amount
            )
            if created is None:
                return JSONResponse({"error": "Idempotency-Key reused with a different body"}, 422)
        else:
            invoice_id, created = (
                self.db.create_invoice(user, reference, amount, hidden_for=ctx.hidden_for),
                True,
            )
        invoice = self.db.invoice(invoice_id)
        assert invoice is not None
        headers = {} if created else {"Idempotent-Replayed": "true"}
        return await self._finish(
            ctx, JSONResponse(_invoice_json(invoice), 201 if created else 200, headers)
        )

    async def api_list_invoices(self, request: Request) -> Response:
        reference = request.query_params.get("reference") or None
        return JSONResponse([_invoice_json(i) for i in self.db.list_invoices(reference)])

    # -- admin ------------------------------------------------------------

    async def admin_ground_truth(self, request: Request) -> Response:
        return JSONResponse(self.db.ground_truth())

    async def admin_reset(self, request: Request) -> Response:
        self.db.reset()
        self.booking.reset()
        self.faults.reset(seed=self.seed)
        return JSONResponse({"ok": True})

    async def admin_get_faults(self, request: Request) -> Response:
        return JSONResponse({"rules": self.faults.rules()})

    async def admin_set_faults(self, request: Request) -> Response:
        try:
            data = json.loads(await request.body())
            if not isinstance(data, dict) or not isinstance(data.get("rules", []), list):
                raise ValueError('body must be {"rules": [...], "seed": int?}')
            rules = [FaultRule.from_json(r) for r in data.get("rules", [])]
            seed = data.get("seed")
            self.faults.configure(rules, seed=None if seed is None else int(seed))
        except (ValueError, TypeError) as exc:
            return JSONResponse({"error": str(exc)}, 422)
        return JSONResponse({"rules": self.faults.rules()})

    async def admin_requests(self, request: Request) -> Response:
        return JSONResponse({"requests": self.faults.log(), "counts": self.faults.counts()})


def _invoice_json(invoice: Any) -> dict[str, Any]:
    return {
        "id": invoice.id,
        "account": invoice.account,
        "reference": invoice.reference,
        "amount": invoice.amount,
        "url": f"/invoices/{invoice.id}",
    }


def create_app(
    db: SandboxDB | str | Path | None = None,
    *,
    seed: int = 0,
    faults: list[FaultRule] | tuple[FaultRule, ...] = (),
) -> Sandbox:
    """Build the sandbox ASGI app (a ``Sandbox``, callable as ASGI).

    Args:
        db: database file path (or ``SandboxDB``); ``None`` keeps it in memory.
        seed: seed of the fault plan's RNG.
        faults: initial fault rules (also settable later via ``/admin/faults``
            or ``sandbox.faults.configure``).
    """
    return Sandbox(db, seed=seed, faults=faults)
