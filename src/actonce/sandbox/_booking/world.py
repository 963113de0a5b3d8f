"""The booking world: a hotel-and-shop provider inside the sandbox.

HTML pages under ``/book/...`` for the browser, the same operations as JSON
under ``/api/book/...`` (Basic auth or the session cookie), read-only lookups
for verifiers, and its own ground truth under ``/admin/booking/...``. It is
mounted into the main app (``Sandbox``): one server, one login, one fault
plan, one request log (``/admin/requests``) and one ``/admin/reset``.

A purchase goes hold -> pay -> book -> notify::

    GET  /book?date=2030-05-01&nights=2      offers (rooms per night, shop items)
    POST /book/holds                         hold      (booking.hold)
    POST /book/holds/{id}/pay                authorize (booking.pay)
    POST /book/bookings                      book      (booking.book)
    POST /book/messages                      notify    (booking.message)

Handlers follow the main app's shape: name the action and fire the faults
(``Sandbox._begin`` for pages, ``_api_begin`` for JSON), commit, then apply
the faults that strike after the commit. Faults of this world: the existing
ones (lost, slow, 500 before/after commit, login wall, CAPTCHA, rate limit,
price change) plus ``booking_failed`` (partial success) and
``message_dropped`` (accepted, never delivered).

The handlers are ``pages`` (HTML) and ``api`` (JSON) over ``web`` (what they
share); this module assembles them with the routes and the admin endpoints.
"""

from __future__ import annotations

import json
from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._pipeline import Pipeline
from .api import BookingApi
from .db import BookingDB
from .pages import BookingPages
from .rows import BookingClock

__all__ = ["BookingWorld"]


class BookingWorld(BookingPages, BookingApi):
    """The booking provider: its database, clock, pages and API routes.

    Args:
        sandbox: the main app (sessions, fault plan, connections, walls).
        path: database file (shared with the sandbox's own file; the tables
            are prefixed ``bk_``); ``None`` or ``":memory:"`` keeps it in memory.
    """

    def __init__(self, sandbox: Pipeline, path: str | Path | None = None) -> None:
        self.sandbox = sandbox
        self.clock = BookingClock()
        self.db = BookingDB(None if path in (None, ":memory:") else path, clock=self.clock.now)

    def reset(self) -> None:
        """Empty the world, restore prices and stock, put the clock back."""
        self.clock.reset()
        self.db.reset()

    def routes(self) -> list[Route]:
        """The world's routes, to add to the main app."""
        return [
            Route("/book", self.offers_page, methods=["GET"]),
            Route("/book/holds", self.hold, methods=["POST"]),
            Route("/book/holds/{hold_id:int}", self.hold_page, methods=["GET"]),
            Route("/book/holds/{hold_id:int}/release", self.release, methods=["POST"]),
            Route("/book/holds/{hold_id:int}/pay", self.pay_page, methods=["GET"]),
            Route("/book/holds/{hold_id:int}/pay", self.pay, methods=["POST"]),
            Route("/book/payments/{payment_id:int}", self.payment_page, methods=["GET"]),
            Route("/book/payments/{payment_id:int}/void", self.void, methods=["POST"]),
            Route("/book/payments/{payment_id:int}/refund", self.refund, methods=["POST"]),
            Route("/book/bookings", self.book, methods=["POST"]),
            Route("/book/bookings/{reference}", self.confirmation_page, methods=["GET"]),
            Route("/book/messages", self.message, methods=["POST"]),
            Route("/book/mine", self.mine_page, methods=["GET"]),
            Route("/book/outbox", self.outbox_page, methods=["GET"]),
            Route("/api/book/offers", self.api_offers, methods=["GET"]),
            Route("/api/book/holds", self.api_hold, methods=["POST"]),
            Route("/api/book/holds", self.api_holds, methods=["GET"]),
            Route("/api/book/holds/{hold_id:int}", self.api_get_hold, methods=["GET"]),
            Route("/api/book/holds/{hold_id:int}/release", self.api_release, methods=["POST"]),
            Route("/api/book/payments", self.api_pay, methods=["POST"]),
            Route("/api/book/payments", self.api_payments, methods=["GET"]),
            Route("/api/book/payments/{payment_id:int}", self.api_get_payment, methods=["GET"]),
            Route("/api/book/payments/{payment_id:int}/void", self.api_void, methods=["POST"]),
            Route("/api/book/payments/{payment_id:int}/refund", self.api_refund, methods=["POST"]),
            Route("/api/book/bookings", self.api_book, methods=["POST"]),
            Route("/api/book/bookings", self.api_bookings, methods=["GET"]),
            Route("/api/book/bookings/{reference}", self.api_get_booking, methods=["GET"]),
            Route("/api/book/messages", self.api_message, methods=["POST"]),
            Route("/api/book/messages", self.api_messages, methods=["GET"]),
            Route("/api/book/messages/{key:path}", self.api_get_message, methods=["GET"]),
            Route("/admin/booking/ground-truth", self.admin_ground_truth, methods=["GET"]),
            Route("/admin/booking/clock", self.admin_clock, methods=["GET", "POST"]),
        ]

    # -- admin ------------------------------------------------------------

    async def admin_ground_truth(self, request: Request) -> Response:
        return JSONResponse(self.db.ground_truth())

    async def admin_clock(self, request: Request) -> Response:
        """``GET``: the world's time; ``POST {"advance": seconds}`` moves it ahead."""
        if request.method == "POST":
            try:
                data = json.loads(await request.body())
                if not isinstance(data, dict) or set(data) != {"advance"}:
                    raise ValueError('body must be {"advance": seconds}')
                self.clock.advance(float(data["advance"]))
            except (ValueError, TypeError) as exc:
                return JSONResponse({"error": str(exc)}, 422)
        return JSONResponse({"now": self.clock.now(), "offset": self.clock.offset})
