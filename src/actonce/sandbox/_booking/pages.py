"""The booking world's HTML pages: offers, hold, pay, payment, book, notify.

A purchase goes hold -> pay -> book -> notify, each a form posted by the
browser, each answered with a redirect to the object it made (or the
refusal page). A form opened with ``?idempotency_key=K`` carries K and is
then deduplicated like an API call with ``Idempotency-Key: K``.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from .._pipeline import Ctx
from .._templates import money
from .rows import Hold, Refused
from .web import BookingHandlers, form_key

__all__ = ["BookingPages"]


class BookingPages(BookingHandlers):
    """Handlers of the ``/book/...`` pages."""

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
                idempotency_key=form_key(ctx.fields),
            ),
        )

    async def hold(self, request: Request) -> Response:
        ctx = await self._begin(request, "booking.hold")
        if isinstance(ctx, Response):
            return ctx
        try:
            made = self._create_hold(ctx, ctx.fields, form_key(ctx.fields))
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
        self, ctx: Ctx, hold: Hold, status: int = 200, refused: Refused | None = None
    ) -> Response:
        return self._page(
            ctx,
            "booking_pay.html",
            status,
            hold=hold,
            refused=refused,
            idempotency_key=form_key(ctx.fields),
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
            made = self._authorize(ctx, hold_id, ctx.fields, form_key(ctx.fields))
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
                idempotency_key=form_key(ctx.fields),
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
            made = self._book(ctx, ctx.fields, form_key(ctx.fields))
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
            f" quantity {booking.qty}, total {money(booking.amount)}."
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
