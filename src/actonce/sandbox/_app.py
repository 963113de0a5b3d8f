"""The sandbox web app: posts, likes, follows, invoices, a shop, notes, faults.

Server-rendered HTML (Jinja2) over Starlette, its own SQLite database as the
ground truth, and a fault plan consulted on every request. Forms are plain
``application/x-www-form-urlencoded``; no upload, no framework JS.

The handlers live by area — ``_social`` (accounts, posts), ``_invoices``,
``_shop`` and the booking world (``_booking``) — over the request pipeline of
``_pipeline`` (faults before and after the commit); this module assembles
them into one Starlette app with the admin endpoints.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ._booking import BookingWorld
from ._conns import ConnectionDropped, Connections
from ._db import SandboxDB
from ._faults import FaultPlan, FaultRule
from ._invoices import InvoicePages
from ._notes import NotesPages
from ._pipeline import SESSION_COOKIE
from ._shop import ShopPages
from ._social import SocialPages, parse_post_ref

__all__ = ["SESSION_COOKIE", "Sandbox", "create_app", "parse_post_ref"]


class Sandbox(SocialPages, InvoicePages, ShopPages, NotesPages):
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
            Route("/notes", self.notes_page, methods=["GET"]),
            Route("/notes", self.create_note, methods=["POST"]),
            Route("/notes/{note_id:int}", self.note_page),
            Route("/notes/{note_id:int}/publish", self.publish_note, methods=["POST"]),
            Route("/analytics", self.analytics, methods=["POST"]),
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
