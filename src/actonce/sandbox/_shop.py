"""The shop: items with a price, booked at the price the buyer saw."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ._faults import Fault
from ._pipeline import Pipeline

__all__ = ["ShopPages"]


class ShopPages(Pipeline):
    """Handlers of the shop and its bookings."""

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
