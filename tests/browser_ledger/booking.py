"""A user-written ``SiteEffect``: book a shop item at the price the user approved.

The adapter ships no booking effect; this one is written the way
docs/browser.md tells a user to write one, to show that it is short. The
approval binds the price: the precondition refuses (``False``) when the shop
shows another price than the approved one, and the read-back refuses to
click when the form would submit another price.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from actonce import Absent, Confirmed, Verdict
from actonce.browser import AsyncBrowserSession, SiteEffect

if TYPE_CHECKING:
    from playwright.async_api import Locator


class BookingEffect(SiteEffect):
    kind = "booking"

    def __init__(self, user: str, item: str, approved_price: int) -> None:
        self.user, self.item, self.approved_price = user, item, approved_price

    def payload(self) -> dict[str, Any]:
        return {"user": self.user, "item": self.item, "approved_price": self.approved_price}

    async def precondition(self, session: AsyncBrowserSession) -> bool:
        await session.goto(f"/shop/{self.item}")
        shown = (await session.page.get_by_test_id("price").inner_text()).strip()
        return shown == str(self.approved_price)

    async def prepare(self, session: AsyncBrowserSession) -> None:
        await session.goto(f"/shop/{self.item}")

    async def read_back(self, session: AsyncBrowserSession) -> Mapping[str, Any]:
        quoted = session.page.locator('[data-testid="book-form"] input[name="quoted_price"]')
        return {"price": await quoted.input_value()}

    def expected(self) -> Mapping[str, Any]:
        return {"price": str(self.approved_price)}

    def control(self, session: AsyncBrowserSession) -> Locator:
        return session.page.get_by_test_id("book-form").get_by_role(
            "button", name="Book", exact=True
        )

    async def confirm(self, session: AsyncBrowserSession) -> None:
        await session.page.wait_for_url("**/bookings", timeout=session.confirm_timeout * 1000)

    async def verify(self, session: AsyncBrowserSession) -> Verdict:
        await session.goto("/bookings")
        rows = await session.page.get_by_test_id("booking-row").evaluate_all(
            "els => els.map(e => ({...e.dataset}))"
        )
        ids = sorted(int(r["bookingId"]) for r in rows if r.get("item") == self.item)
        return Confirmed(session.url(f"/bookings#{ids[0]}")) if ids else Absent()
