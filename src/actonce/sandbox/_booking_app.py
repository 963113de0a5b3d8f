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
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from ._booking_db import (
    MAX_NIGHTS,
    Booking,
    BookingClock,
    BookingDB,
    Created,
    Hold,
    Message,
    Payment,
    Refused,
    parse_date,
)
from ._conns import lost_response
from ._faults import Fault

if TYPE_CHECKING:
    from ._app import Sandbox, _Ctx

__all__ = ["BookingWorld"]


def _money(cents: Any) -> str:
    """``12000`` -> ``120.00``."""
    value = int(cents)
    sign = "-" if value < 0 else ""
    return f"{sign}{abs(value) // 100}.{abs(value) % 100:02d}"


_TEMPLATES = Jinja2Templates(directory=str(Path(__file__).with_name("templates")))
_TEMPLATES.env.filters["money"] = _money


def _hold_json(h: Hold, now: float) -> dict[str, Any]:
    out = asdict(h)
    out["expires_in"] = max(0.0, round(h.expires_at - now, 3)) if h.active else 0.0
    out["url"] = f"/book/holds/{h.id}"
    return out


def _payment_json(p: Payment) -> dict[str, Any]:
    return {**asdict(p), "url": f"/book/payments/{p.id}"}


def _booking_json(b: Booking) -> dict[str, Any]:
    return {**asdict(b), "url": f"/book/bookings/{b.reference}"}


def _message_json(m: Message) -> dict[str, Any]:
    return {
        **asdict(m),
        "delivered": m.delivered,
        "url": f"/book/outbox#{quote(m.message_key)}",
    }


def _int(fields: dict[str, Any], name: str, default: int | None = None) -> int:
    value = fields.get(name)
    if value is None or value == "":
        if default is None:
            raise Refused("invalid", f"{name} is required", 400)
        return default
    if isinstance(value, bool):
        raise Refused("invalid", f"{name} must be a whole number", 400)
    try:
        return int(str(value).strip())
    except ValueError:
        raise Refused("invalid", f"{name} must be a whole number", 400) from None


def _str(fields: dict[str, Any], name: str) -> str:
    value = fields.get(name)
    return "" if value is None else str(value).strip()


def _form_key(fields: dict[str, Any]) -> str | None:
    """The provider key a page form carries (``idempotency_key``), if any.

    A form page opened with ``?idempotency_key=K`` puts K in a hidden field,
    and its post is then deduplicated like an API call with
    ``Idempotency-Key: K``; a form without one behaves as a naive site does.
    """
    return _str(fields, "idempotency_key")[:200] or None


class BookingWorld:
    """The booking provider: its database, clock, pages and API routes.

    Args:
        sandbox: the main app (sessions, fault plan, connections, walls).
        path: database file (shared with the sandbox's own file; the tables
            are prefixed ``bk_``); ``None`` or ``":memory:"`` keeps it in memory.
    """

    def __init__(self, sandbox: Sandbox, path: str | Path | None = None) -> None:
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

    # -- plumbing ---------------------------------------------------------

    def _page(self, ctx: _Ctx, template: str, status: int = 200, **context: Any) -> Response:
        return _TEMPLATES.TemplateResponse(
            ctx.request, template, {"user": ctx.user, **context}, status_code=status
        )

    def _refused(self, ctx: _Ctx, refused: Refused, **links: str) -> Response:
        testid = {"booking_failed": "booking-failed", "price_changed": "price-changed"}.get(
            refused.code, "refused"
        )
        return self._page(
            ctx,
            "booking_refused.html",
            refused.status,
            testid=testid,
            refused=refused,
            links=links,
        )

    def _not_found(self, ctx: _Ctx, what: str) -> Response:
        return self.sandbox._wall(ctx, "not-found", "Not found", f"No such {what}.", 404)

    async def _begin(self, request: Request, action: str, *, login: bool = True) -> _Ctx | Response:
        return await self.sandbox._begin(request, action, login=login)

    async def _api_begin(
        self, request: Request, action: str, *, login: bool = True
    ) -> tuple[_Ctx, dict[str, Any]] | Response:
        """The JSON twin of ``Sandbox._begin``: fields from the JSON body
        (POST) or the query (GET) plus the path parameters, faults before
        commit as JSON errors, then authentication."""
        from ._app import SESSION_COOKIE, _Ctx

        body: dict[str, Any] | None
        if request.method == "POST":
            raw = await request.body()
            try:
                parsed = json.loads(raw) if raw.strip() else {}
            except ValueError:
                parsed = None
            body = parsed if isinstance(parsed, dict) else None
        else:
            body = dict(request.query_params)
        merged = {**(body or {}), **request.path_params}
        fields = {str(k): str(v) for k, v in merged.items() if not isinstance(v, (dict, list))}
        user = self.sandbox._api_user(request)
        fired = self.sandbox._fire(request, action, fields, user)
        ctx = _Ctx(request, action, user, fields, fired)
        if ctx.has(Fault.ERROR_BEFORE_COMMIT):
            return JSONResponse({"error": "server_error", "message": "server error"}, 500)
        if ctx.has(Fault.RATE_LIMIT):
            return JSONResponse({"error": "rate_limited", "message": "too many requests"}, 429)
        if ctx.has(Fault.SESSION_EXPIRED):
            self.sandbox.db.end_session(request.cookies.get(SESSION_COOKIE))
            resp = JSONResponse(
                {"error": "session_expired", "message": "your session has expired"}, 401
            )
            resp.delete_cookie(SESSION_COOKIE)
            return resp
        if ctx.has(Fault.CAPTCHA):
            return JSONResponse({"error": "captcha", "message": "verify you are human"}, 401)
        if login and user is None:
            return JSONResponse(
                {"error": "authentication_required", "message": "authentication required"}, 401
            )
        if body is None:
            return JSONResponse(
                {"error": "invalid", "message": "the body must be a JSON object"}, 400
            )
        return ctx, {**body, **request.path_params}

    async def _api_finish(self, ctx: _Ctx, response: Response) -> Response:
        """Faults after the commit, in JSON."""
        if ctx.has(Fault.ERROR_AFTER_COMMIT):
            return JSONResponse({"error": "server_error", "message": "server error"}, 500)
        lost = ctx.has(Fault.LOST_RESPONSE)
        if lost:
            return lost_response(lost.mode, self.sandbox.connections)
        slow = ctx.has(Fault.SLOW_RESPONSE)
        if slow:
            await self.sandbox._pause(slow.seconds)
        return response

    @staticmethod
    def _answer(body: dict[str, Any], made: Created, status: int = 201) -> JSONResponse:
        if made.created:
            return JSONResponse(body, status)
        return JSONResponse(body, 200, {"Idempotent-Replayed": "true"})

    def _price_change(self, ctx: _Ctx, sku: str | None) -> None:
        change = ctx.has(Fault.PRICE_CHANGE)
        if change and sku:
            self.db.change_price(sku, change.amount)

    def _offers(self, date: str, nights: int) -> list[dict[str, Any]]:
        offers = []
        for p in self.db.products():
            n = nights if p.kind == "room" else 1
            offers.append(
                {
                    **asdict(p),
                    "nights": n,
                    "total": p.price * n,
                    "available": self.db.available(p.sku, date if p.kind == "room" else "", n),
                }
            )
        return offers

    def _search(self, fields: dict[str, Any]) -> tuple[str, int]:
        """``date`` (default: tomorrow on the world's clock) and ``nights``."""
        text = _str(fields, "date")
        if text:
            date = parse_date(text)
        else:
            today = dt.datetime.fromtimestamp(self.clock.now(), dt.UTC).date()
            date = (today + dt.timedelta(days=1)).isoformat()
        nights = _int(fields, "nights", 1)
        if not 1 <= nights <= MAX_NIGHTS:
            raise Refused("invalid", f"nights must be between 1 and {MAX_NIGHTS}", 400)
        return date, nights

    def _user_hold(self, user: str | None, hold_id: int) -> Hold | None:
        hold = self.db.hold(hold_id)
        return hold if hold is not None and hold.user == user else None

    def _user_payment(self, user: str | None, payment_id: int) -> Payment | None:
        payment = self.db.payment(payment_id)
        return payment if payment is not None and payment.user == user else None

    def _create_hold(self, ctx: _Ctx, f: dict[str, Any], key: str | None) -> Created:
        sku = _str(f, "sku")
        self._price_change(ctx, sku)
        quoted = f.get("quoted_price")
        return self.db.create_hold(
            ctx.user or "",
            sku,
            date=_str(f, "date"),
            nights=_int(f, "nights", 1),
            qty=_int(f, "qty", 1),
            client_ref=_str(f, "client_ref"),
            quoted_price=None if quoted in (None, "") else _int(f, "quoted_price"),
            seconds=_int(f, "seconds", 600),
            idempotency_key=key,
        )

    def _authorize(self, ctx: _Ctx, hold_id: int, f: dict[str, Any], key: str | None) -> Created:
        hold = self._user_hold(ctx.user, hold_id)
        self._price_change(ctx, hold.sku if hold else None)
        return self.db.authorize(
            ctx.user or "",
            hold_id,
            _int(f, "amount"),
            client_ref=_str(f, "client_ref"),
            idempotency_key=key,
        )

    def _book(self, ctx: _Ctx, f: dict[str, Any], key: str | None) -> Created:
        return self.db.book(
            ctx.user or "",
            _int(f, "hold_id"),
            _int(f, "payment_id"),
            client_ref=_str(f, "client_ref"),
            idempotency_key=key,
            fail=ctx.has(Fault.BOOKING_FAILED) is not None,
        )

    def _send(self, ctx: _Ctx, f: dict[str, Any]) -> Created:
        return self.db.send_message(
            ctx.user or "",
            _str(f, "message_key"),
            _str(f, "recipient"),
            str(f.get("body") or "").strip(),
            booking_ref=_str(f, "booking_ref"),
            drop=ctx.has(Fault.MESSAGE_DROPPED) is not None,
        )

    # -- pages ------------------------------------------------------------

    async def offers_page(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.booking.offers", login=False)
        if isinstance(ctx, Response):
            return ctx
        try:
            date, nights = self._search(ctx.fields)
        except Refused as exc:
            return self._refused(ctx, exc, back="/book")
        return await self.sandbox._finish(
            ctx,
            self._page(
                ctx,
                "booking_offers.html",
                date=date,
                nights=nights,
                offers=self._offers(date, nights),
                idempotency_key=_form_key(ctx.fields),
            ),
        )

    async def hold(self, request: Request) -> Response:
        ctx = await self._begin(request, "booking.hold")
        if isinstance(ctx, Response):
            return ctx
        try:
            made = self._create_hold(ctx, ctx.fields, _form_key(ctx.fields))
        except Refused as exc:
            return self._refused(ctx, exc, back="/book")
        return await self.sandbox._finish(ctx, RedirectResponse(f"/book/holds/{made.id}", 303))

    async def hold_page(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.booking.hold")
        if isinstance(ctx, Response):
            return ctx
        hold = self._user_hold(ctx.user, int(request.path_params["hold_id"]))
        if hold is None:
            return self._not_found(ctx, "hold")
        return await self.sandbox._finish(
            ctx,
            self._page(
                ctx,
                "booking_hold.html",
                hold=hold,
                expires_in=max(0, int(hold.expires_at - self.clock.now())),
                payments=self.db.payments(ctx.user, hold_id=hold.id),
                bookings=self.db.bookings(ctx.user, hold_id=hold.id),
            ),
        )

    async def release(self, request: Request) -> Response:
        ctx = await self._begin(request, "booking.release")
        if isinstance(ctx, Response):
            return ctx
        hold_id = int(request.path_params["hold_id"])
        try:
            self.db.release_hold(ctx.user or "", hold_id)
        except Refused as exc:
            return self._refused(ctx, exc, hold=f"/book/holds/{hold_id}")
        return await self.sandbox._finish(ctx, RedirectResponse(f"/book/holds/{hold_id}", 303))

    def _pay_form(
        self, ctx: _Ctx, hold: Hold, status: int = 200, refused: Refused | None = None
    ) -> Response:
        return self._page(
            ctx,
            "booking_pay.html",
            status,
            hold=hold,
            refused=refused,
            idempotency_key=_form_key(ctx.fields),
        )

    async def pay_page(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.booking.pay")
        if isinstance(ctx, Response):
            return ctx
        hold = self._user_hold(ctx.user, int(request.path_params["hold_id"]))
        if hold is None:
            return self._not_found(ctx, "hold")
        return await self.sandbox._finish(ctx, self._pay_form(ctx, hold))

    async def pay(self, request: Request) -> Response:
        ctx = await self._begin(request, "booking.pay")
        if isinstance(ctx, Response):
            return ctx
        hold_id = int(request.path_params["hold_id"])
        try:
            made = self._authorize(ctx, hold_id, ctx.fields, _form_key(ctx.fields))
        except Refused as exc:
            hold = self._user_hold(ctx.user, hold_id)
            if hold is None:
                return self._not_found(ctx, "hold")
            # The pay form again, with the refreshed total: a new approval.
            return self._pay_form(ctx, hold, exc.status, exc)
        return await self.sandbox._finish(ctx, RedirectResponse(f"/book/payments/{made.id}", 303))

    async def payment_page(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.booking.payment")
        if isinstance(ctx, Response):
            return ctx
        payment = self._user_payment(ctx.user, int(request.path_params["payment_id"]))
        if payment is None:
            return self._not_found(ctx, "payment")
        return await self.sandbox._finish(
            ctx,
            self._page(
                ctx,
                "booking_payment.html",
                payment=payment,
                hold=self.db.hold(payment.hold_id),
                bookings=[b for b in self.db.bookings(ctx.user) if b.payment_id == payment.id],
                idempotency_key=_form_key(ctx.fields),
            ),
        )

    async def _end_payment(self, request: Request, refund: bool) -> Response:
        ctx = await self._begin(request, "booking.void")
        if isinstance(ctx, Response):
            return ctx
        payment_id = int(request.path_params["payment_id"])
        try:
            if refund:
                self.db.refund(ctx.user or "", payment_id)
            else:
                self.db.void(ctx.user or "", payment_id)
        except Refused as exc:
            return self._refused(ctx, exc, payment=f"/book/payments/{payment_id}")
        return await self.sandbox._finish(
            ctx, RedirectResponse(f"/book/payments/{payment_id}", 303)
        )

    async def void(self, request: Request) -> Response:
        return await self._end_payment(request, refund=False)

    async def refund(self, request: Request) -> Response:
        return await self._end_payment(request, refund=True)

    async def book(self, request: Request) -> Response:
        ctx = await self._begin(request, "booking.book")
        if isinstance(ctx, Response):
            return ctx
        try:
            made = self._book(ctx, ctx.fields, _form_key(ctx.fields))
        except Refused as exc:
            links = {"mine": "/book/mine"}
            if exc.details.get("payment_id"):
                links["payment"] = f"/book/payments/{exc.details['payment_id']}"
            return self._refused(ctx, exc, **links)
        booking = self.db.booking_by_id(made.id)
        assert booking is not None
        return await self.sandbox._finish(
            ctx, RedirectResponse(f"/book/bookings/{booking.reference}", 303)
        )

    async def confirmation_page(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.booking.confirmation")
        if isinstance(ctx, Response):
            return ctx
        booking = self.db.booking(str(request.path_params["reference"]))
        if booking is None or booking.user != ctx.user:
            return self._not_found(ctx, "booking")
        product = self.db.product(booking.sku)
        assert product is not None
        stay = (
            f"{booking.date}, {booking.nights} night(s)" if product.kind == "room" else "shop item"
        )
        body = (
            f"Booking {booking.reference} confirmed: {product.venue}, {product.name}, {stay},"
            f" quantity {booking.qty}, total {_money(booking.amount)}."
        )
        return await self.sandbox._finish(
            ctx,
            self._page(
                ctx,
                "booking_confirmation.html",
                booking=booking,
                product=product,
                body=body,
                message_key=f"{booking.reference}-confirmation",
                messages=[
                    m for m in self.db.messages(ctx.user) if m.booking_ref == booking.reference
                ],
            ),
        )

    async def message(self, request: Request) -> Response:
        ctx = await self._begin(request, "booking.message")
        if isinstance(ctx, Response):
            return ctx
        try:
            self._send(ctx, ctx.fields)
        except Refused as exc:
            return self._refused(ctx, exc, outbox="/book/outbox")
        return await self.sandbox._finish(ctx, RedirectResponse("/book/outbox", 303))

    async def mine_page(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.booking.mine")
        if isinstance(ctx, Response):
            return ctx
        return await self.sandbox._finish(
            ctx,
            self._page(
                ctx,
                "booking_mine.html",
                bookings=self.db.bookings(ctx.user),
                payments=self.db.payments(ctx.user),
                holds=self.db.holds(ctx.user),
            ),
        )

    async def outbox_page(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.booking.outbox")
        if isinstance(ctx, Response):
            return ctx
        return await self.sandbox._finish(
            ctx, self._page(ctx, "booking_outbox.html", messages=self.db.messages(ctx.user))
        )

    # -- JSON API: operations ---------------------------------------------

    async def api_hold(self, request: Request) -> Response:
        """``POST /api/book/holds`` {sku, date?, nights?, qty?, quoted_price?,
        client_ref?, seconds?}, ``Idempotency-Key`` honoured."""
        begun = await self._api_begin(request, "booking.hold")
        if isinstance(begun, Response):
            return begun
        ctx, f = begun
        try:
            made = self._create_hold(ctx, f, request.headers.get("idempotency-key"))
        except Refused as exc:
            return JSONResponse(exc.to_json(), exc.status)
        hold = self.db.hold(made.id)
        assert hold is not None
        return await self._api_finish(ctx, self._answer(_hold_json(hold, self.clock.now()), made))

    async def api_release(self, request: Request) -> Response:
        begun = await self._api_begin(request, "booking.release")
        if isinstance(begun, Response):
            return begun
        ctx, _ = begun
        hold_id = int(request.path_params["hold_id"])
        try:
            made = self.db.release_hold(ctx.user or "", hold_id)
        except Refused as exc:
            return JSONResponse(exc.to_json(), exc.status)
        hold = self.db.hold(hold_id)
        assert hold is not None
        return await self._api_finish(
            ctx, self._answer(_hold_json(hold, self.clock.now()), made, 200)
        )

    async def api_pay(self, request: Request) -> Response:
        """``POST /api/book/payments`` {hold_id, amount, client_ref?},
        ``Idempotency-Key`` honoured."""
        begun = await self._api_begin(request, "booking.pay")
        if isinstance(begun, Response):
            return begun
        ctx, f = begun
        try:
            made = self._authorize(
                ctx, _int(f, "hold_id"), f, request.headers.get("idempotency-key")
            )
        except Refused as exc:
            return JSONResponse(exc.to_json(), exc.status)
        payment = self.db.payment(made.id)
        assert payment is not None
        return await self._api_finish(ctx, self._answer(_payment_json(payment), made))

    async def _api_end_payment(self, request: Request, refund: bool) -> Response:
        begun = await self._api_begin(request, "booking.void")
        if isinstance(begun, Response):
            return begun
        ctx, _ = begun
        payment_id = int(request.path_params["payment_id"])
        try:
            if refund:
                made = self.db.refund(ctx.user or "", payment_id)
            else:
                made = self.db.void(ctx.user or "", payment_id)
        except Refused as exc:
            return JSONResponse(exc.to_json(), exc.status)
        payment = self.db.payment(payment_id)
        assert payment is not None
        return await self._api_finish(ctx, self._answer(_payment_json(payment), made, 200))

    async def api_void(self, request: Request) -> Response:
        return await self._api_end_payment(request, refund=False)

    async def api_refund(self, request: Request) -> Response:
        return await self._api_end_payment(request, refund=True)

    async def api_book(self, request: Request) -> Response:
        """``POST /api/book/bookings`` {hold_id, payment_id, client_ref?},
        ``Idempotency-Key`` honoured."""
        begun = await self._api_begin(request, "booking.book")
        if isinstance(begun, Response):
            return begun
        ctx, f = begun
        try:
            made = self._book(ctx, f, request.headers.get("idempotency-key"))
        except Refused as exc:
            return JSONResponse(exc.to_json(), exc.status)
        booking = self.db.booking_by_id(made.id)
        assert booking is not None
        return await self._api_finish(ctx, self._answer(_booking_json(booking), made))

    async def api_message(self, request: Request) -> Response:
        """``POST /api/book/messages`` {message_key, recipient, body, booking_ref?}.

        202 for an accepted send, delivered or dropped alike (the answer
        cannot tell them apart; the lookup can); 200 with
        ``Idempotent-Replayed: true`` for a key delivered before.
        """
        begun = await self._api_begin(request, "booking.message")
        if isinstance(begun, Response):
            return begun
        ctx, f = begun
        try:
            made = self._send(ctx, f)
        except Refused as exc:
            return JSONResponse(exc.to_json(), exc.status)
        message = self.db.message_by_id(made.id)
        assert message is not None
        receipt = {
            "accepted": True,
            "message_key": message.message_key,
            "recipient": message.recipient,
            "booking_ref": message.booking_ref,
            "attempt": message.attempts,
            "url": f"/api/book/messages/{quote(message.message_key)}",
        }
        return await self._api_finish(ctx, self._answer(receipt, made, 202))

    # -- JSON API: read-only lookups --------------------------------------

    async def _lookup(
        self, request: Request, *, login: bool = True
    ) -> tuple[_Ctx, dict[str, Any]] | Response:
        return await self._api_begin(request, "view.booking.lookup", login=login)

    async def _lookup_answer(self, ctx: _Ctx, body: Any, status: int = 200) -> Response:
        return await self._api_finish(ctx, JSONResponse(body, status))

    async def _missing(self, ctx: _Ctx, what: str) -> Response:
        return await self._lookup_answer(
            ctx, {"error": "not_found", "message": f"no such {what}"}, 404
        )

    async def api_offers(self, request: Request) -> Response:
        """``GET /api/book/offers?date=&nights=``: prices and availability."""
        begun = await self._lookup(request, login=False)
        if isinstance(begun, Response):
            return begun
        ctx, f = begun
        try:
            date, nights = self._search(f)
        except Refused as exc:
            return JSONResponse(exc.to_json(), exc.status)
        return await self._lookup_answer(
            ctx, {"date": date, "nights": nights, "offers": self._offers(date, nights)}
        )

    async def api_holds(self, request: Request) -> Response:
        """``GET /api/book/holds?client_ref=&idempotency_key=``: the user's holds."""
        begun = await self._lookup(request)
        if isinstance(begun, Response):
            return begun
        ctx, f = begun
        holds = self.db.holds(ctx.user, client_ref=f.get("client_ref"))
        if f.get("idempotency_key") is not None:
            made = self.db.idempotency_object(ctx.user or "", "hold", str(f["idempotency_key"]))
            holds = [h for h in holds if h.id == made]
        now = self.clock.now()
        return await self._lookup_answer(ctx, [_hold_json(h, now) for h in holds])

    async def api_get_hold(self, request: Request) -> Response:
        begun = await self._lookup(request)
        if isinstance(begun, Response):
            return begun
        ctx, _ = begun
        hold = self._user_hold(ctx.user, int(request.path_params["hold_id"]))
        if hold is None:
            return await self._missing(ctx, "hold")
        return await self._lookup_answer(ctx, _hold_json(hold, self.clock.now()))

    async def api_payments(self, request: Request) -> Response:
        """``GET /api/book/payments?hold_id=&client_ref=&idempotency_key=``."""
        begun = await self._lookup(request)
        if isinstance(begun, Response):
            return begun
        ctx, f = begun
        try:
            hold_id = _int(f, "hold_id") if f.get("hold_id") else None
        except Refused as exc:
            return JSONResponse(exc.to_json(), exc.status)
        payments = self.db.payments(ctx.user, hold_id=hold_id, client_ref=f.get("client_ref"))
        if f.get("idempotency_key") is not None:
            made = self.db.idempotency_object(ctx.user or "", "pay", str(f["idempotency_key"]))
            payments = [p for p in payments if p.id == made]
        return await self._lookup_answer(ctx, [_payment_json(p) for p in payments])

    async def api_get_payment(self, request: Request) -> Response:
        begun = await self._lookup(request)
        if isinstance(begun, Response):
            return begun
        ctx, _ = begun
        payment = self._user_payment(ctx.user, int(request.path_params["payment_id"]))
        if payment is None:
            return await self._missing(ctx, "payment")
        return await self._lookup_answer(ctx, _payment_json(payment))

    async def api_bookings(self, request: Request) -> Response:
        """``GET /api/book/bookings?hold_id=&client_ref=&idempotency_key=``."""
        begun = await self._lookup(request)
        if isinstance(begun, Response):
            return begun
        ctx, f = begun
        try:
            hold_id = _int(f, "hold_id") if f.get("hold_id") else None
        except Refused as exc:
            return JSONResponse(exc.to_json(), exc.status)
        bookings = self.db.bookings(ctx.user, hold_id=hold_id, client_ref=f.get("client_ref"))
        if f.get("idempotency_key") is not None:
            made = self.db.idempotency_object(ctx.user or "", "book", str(f["idempotency_key"]))
            bookings = [b for b in bookings if b.id == made]
        return await self._lookup_answer(ctx, [_booking_json(b) for b in bookings])

    async def api_get_booking(self, request: Request) -> Response:
        begun = await self._lookup(request)
        if isinstance(begun, Response):
            return begun
        ctx, _ = begun
        booking = self.db.booking(str(request.path_params["reference"]))
        if booking is None or booking.user != ctx.user:
            return await self._missing(ctx, "booking")
        return await self._lookup_answer(ctx, _booking_json(booking))

    async def api_messages(self, request: Request) -> Response:
        begun = await self._lookup(request)
        if isinstance(begun, Response):
            return begun
        ctx, _ = begun
        return await self._lookup_answer(
            ctx, [_message_json(m) for m in self.db.messages(ctx.user)]
        )

    async def api_get_message(self, request: Request) -> Response:
        begun = await self._lookup(request)
        if isinstance(begun, Response):
            return begun
        ctx, _ = begun
        message = self.db.message(ctx.user, str(request.path_params["key"]))
        if message is None:
            return await self._missing(ctx, "message")
        return await self._lookup_answer(ctx, _message_json(message))

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
