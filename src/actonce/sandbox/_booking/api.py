"""The booking world's JSON API: the same operations, and read-only lookups.

``POST /api/book/...`` makes what the pages make (``Idempotency-Key``
honoured: a replay answers 200 with ``Idempotent-Replayed: true``);
``GET /api/book/...`` reads the user's own objects for verifiers, by id,
reference, client reference or idempotency key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .._pipeline import Ctx
from .rows import Refused
from .web import (
    BookingHandlers,
    booking_json,
    hold_json,
    int_field,
    message_json,
    payment_json,
)

__all__ = ["BookingApi"]


class BookingApi(BookingHandlers):
    """Handlers of ``/api/book/...``."""

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
        return await self._api_finish(ctx, self._answer(hold_json(hold, self.clock.now()), made))

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
            ctx, self._answer(hold_json(hold, self.clock.now()), made, 200)
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
                ctx, int_field(f, "hold_id"), f, request.headers.get("idempotency-key")
            )
        except Refused as exc:
            return JSONResponse(exc.to_json(), exc.status)
        payment = self.db.payment(made.id)
        assert payment is not None
        return await self._api_finish(ctx, self._answer(payment_json(payment), made))

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
        return await self._api_finish(ctx, self._answer(payment_json(payment), made, 200))

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
        return await self._api_finish(ctx, self._answer(booking_json(booking), made))

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
    ) -> tuple[Ctx, dict[str, Any]] | Response:
        return await self._api_begin(request, "view.booking.lookup", login=login)

    async def _lookup_answer(self, ctx: Ctx, body: Any, status: int = 200) -> Response:
        return await self._api_finish(ctx, JSONResponse(body, status))

    async def _missing(self, ctx: Ctx, what: str) -> Response:
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
        return await self._lookup_answer(ctx, [hold_json(h, now) for h in holds])

    async def api_get_hold(self, request: Request) -> Response:
        begun = await self._lookup(request)
        if isinstance(begun, Response):
            return begun
        ctx, _ = begun
        hold = self._user_hold(ctx.user, int(request.path_params["hold_id"]))
        if hold is None:
            return await self._missing(ctx, "hold")
        return await self._lookup_answer(ctx, hold_json(hold, self.clock.now()))

    async def api_payments(self, request: Request) -> Response:
        """``GET /api/book/payments?hold_id=&client_ref=&idempotency_key=``."""
        return await self._list(request, "pay", self.db.payments, payment_json)

    async def api_get_payment(self, request: Request) -> Response:
        begun = await self._lookup(request)
        if isinstance(begun, Response):
            return begun
        ctx, _ = begun
        payment = self._user_payment(ctx.user, int(request.path_params["payment_id"]))
        if payment is None:
            return await self._missing(ctx, "payment")
        return await self._lookup_answer(ctx, payment_json(payment))

    async def api_bookings(self, request: Request) -> Response:
        """``GET /api/book/bookings?hold_id=&client_ref=&idempotency_key=``."""
        return await self._list(request, "book", self.db.bookings, booking_json)

    async def _list(
        self,
        request: Request,
        op: str,
        rows: Callable[..., list[Any]],
        as_json: Callable[[Any], dict[str, Any]],
    ) -> Response:
        """The user's payments or bookings, by hold, client reference or idempotency key."""
        begun = await self._lookup(request)
        if isinstance(begun, Response):
            return begun
        ctx, f = begun
        try:
            hold_id = int_field(f, "hold_id") if f.get("hold_id") else None
        except Refused as exc:
            return JSONResponse(exc.to_json(), exc.status)
        found = rows(ctx.user, hold_id=hold_id, client_ref=f.get("client_ref"))
        if f.get("idempotency_key") is not None:
            made = self.db.idempotency_object(ctx.user or "", op, str(f["idempotency_key"]))
            found = [r for r in found if r.id == made]
        return await self._lookup_answer(ctx, [as_json(r) for r in found])

    async def api_get_booking(self, request: Request) -> Response:
        begun = await self._lookup(request)
        if isinstance(begun, Response):
            return begun
        ctx, _ = begun
        booking = self.db.booking(str(request.path_params["reference"]))
        if booking is None or booking.user != ctx.user:
            return await self._missing(ctx, "booking")
        return await self._lookup_answer(ctx, booking_json(booking))

    async def api_messages(self, request: Request) -> Response:
        begun = await self._lookup(request)
        if isinstance(begun, Response):
            return begun
        ctx, _ = begun
        return await self._lookup_answer(ctx, [message_json(m) for m in self.db.messages(ctx.user)])

    async def api_get_message(self, request: Request) -> Response:
        begun = await self._lookup(request)
        if isinstance(begun, Response):
            return begun
        ctx, _ = begun
        message = self.db.message(ctx.user, str(request.path_params["key"]))
        if message is None:
            return await self._missing(ctx, "message")
        return await self._lookup_answer(ctx, message_json(message))
