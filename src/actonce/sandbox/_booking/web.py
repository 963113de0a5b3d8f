"""What every booking handler shares: fields, JSON shapes, the pipeline, the desks.

Reading a form or a JSON body (``int_field``, ``str_field``, ``form_key``),
the JSON shape of each row, and ``BookingHandlers``: the main app's
pipeline (``Sandbox._begin`` for pages) with its JSON twin (``_api_begin``,
``_api_finish``), the refusal page, and the calls into the provider that the
pages and the API make alike (``_create_hold``, ``_authorize``, ``_book``,
``_send``) with the faults of this world (price change, booking failed,
message dropped).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .._conns import lost_response
from .._faults import Fault
from .._pipeline import SESSION_COOKIE, Ctx, Pipeline
from .db import BookingDB
from .rows import (
    MAX_NIGHTS,
    Booking,
    BookingClock,
    Created,
    Hold,
    Message,
    Payment,
    Refused,
    parse_date,
)

__all__ = [
    "BookingHandlers",
    "booking_json",
    "form_key",
    "hold_json",
    "int_field",
    "message_json",
    "payment_json",
    "str_field",
]


def hold_json(h: Hold, now: float) -> dict[str, Any]:
    out = asdict(h)
    out["expires_in"] = max(0.0, round(h.expires_at - now, 3)) if h.active else 0.0
    out["url"] = f"/book/holds/{h.id}"
    return out


def payment_json(p: Payment) -> dict[str, Any]:
    return {**asdict(p), "url": f"/book/payments/{p.id}"}


def booking_json(b: Booking) -> dict[str, Any]:
    return {**asdict(b), "url": f"/book/bookings/{b.reference}"}


def message_json(m: Message) -> dict[str, Any]:
    return {
        **asdict(m),
        "delivered": m.delivered,
        "url": f"/book/outbox#{quote(m.message_key)}",
    }


def int_field(fields: dict[str, Any], name: str, default: int | None = None) -> int:
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


def str_field(fields: dict[str, Any], name: str) -> str:
    value = fields.get(name)
    return "" if value is None else str(value).strip()


def form_key(fields: dict[str, Any]) -> str | None:
    """The provider key a page form carries (``idempotency_key``), if any.

    A form page opened with ``?idempotency_key=K`` puts K in a hidden field,
    and its post is then deduplicated like an API call with
    ``Idempotency-Key: K``; a form without one behaves as a naive site does.
    """
    return str_field(fields, "idempotency_key")[:200] or None


class BookingHandlers:
    """The state and plumbing the booking pages and API share.

    ``BookingWorld`` sets the state: the main app's pipeline (sessions,
    fault plan, connections, walls), the world's clock and its database.
    """

    sandbox: Pipeline
    clock: BookingClock
    db: BookingDB

    def _page(self, ctx: Ctx, template: str, status: int = 200, **context: Any) -> Response:
        return self.sandbox._page(ctx, template, status, **context)

    def _refused(self, ctx: Ctx, refused: Refused, **links: str) -> Response:
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

    def _not_found(self, ctx: Ctx, what: str) -> Response:
        return self.sandbox._wall(ctx, "not-found", "Not found", f"No such {what}.", 404)

    async def _begin(self, request: Request, action: str, *, login: bool = True) -> Ctx | Response:
        return await self.sandbox._begin(request, action, login=login)

    async def _api_begin(
        self, request: Request, action: str, *, login: bool = True
    ) -> tuple[Ctx, dict[str, Any]] | Response:
        """The JSON twin of ``Sandbox._begin``: fields from the JSON body
        (POST) or the query (GET) plus the path parameters, faults before
        commit as JSON errors, then authentication."""
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
        ctx = Ctx(request, action, user, fields, fired)
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

    async def _api_finish(self, ctx: Ctx, response: Response) -> Response:
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

    def _price_change(self, ctx: Ctx, sku: str | None) -> None:
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
        text = str_field(fields, "date")
        if text:
            date = parse_date(text)
        else:
            today = dt.datetime.fromtimestamp(self.clock.now(), dt.UTC).date()
            date = (today + dt.timedelta(days=1)).isoformat()
        nights = int_field(fields, "nights", 1)
        if not 1 <= nights <= MAX_NIGHTS:
            raise Refused("invalid", f"nights must be between 1 and {MAX_NIGHTS}", 400)
        return date, nights

    def _user_hold(self, user: str | None, hold_id: int) -> Hold | None:
        hold = self.db.hold(hold_id)
        return hold if hold is not None and hold.user == user else None

    def _user_payment(self, user: str | None, payment_id: int) -> Payment | None:
        payment = self.db.payment(payment_id)
        return payment if payment is not None and payment.user == user else None

    def _create_hold(self, ctx: Ctx, f: dict[str, Any], key: str | None) -> Created:
        sku = str_field(f, "sku")
        self._price_change(ctx, sku)
        quoted = f.get("quoted_price")
        return self.db.create_hold(
            ctx.user or "",
            sku,
            date=str_field(f, "date"),
            nights=int_field(f, "nights", 1),
            qty=int_field(f, "qty", 1),
            client_ref=str_field(f, "client_ref"),
            quoted_price=None if quoted in (None, "") else int_field(f, "quoted_price"),
            seconds=int_field(f, "seconds", 600),
            idempotency_key=key,
        )

    def _authorize(self, ctx: Ctx, hold_id: int, f: dict[str, Any], key: str | None) -> Created:
        hold = self._user_hold(ctx.user, hold_id)
        self._price_change(ctx, hold.sku if hold else None)
        return self.db.authorize(
            ctx.user or "",
            hold_id,
            int_field(f, "amount"),
            client_ref=str_field(f, "client_ref"),
            idempotency_key=key,
        )

    def _book(self, ctx: Ctx, f: dict[str, Any], key: str | None) -> Created:
        return self.db.book(
            ctx.user or "",
            int_field(f, "hold_id"),
            int_field(f, "payment_id"),
            client_ref=str_field(f, "client_ref"),
            idempotency_key=key,
            fail=ctx.has(Fault.BOOKING_FAILED) is not None,
        )

    def _send(self, ctx: Ctx, f: dict[str, Any]) -> Created:
        return self.db.send_message(
            ctx.user or "",
            str_field(f, "message_key"),
            str_field(f, "recipient"),
            str(f.get("body") or "").strip(),
            booking_ref=str_field(f, "booking_ref"),
            drop=ctx.has(Fault.MESSAGE_DROPPED) is not None,
        )
