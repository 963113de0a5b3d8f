"""Every booking verifier, on the provider's lookups (issue 23, item 2).

Pinned after the held-out mutation sample ``heldout-1208`` of the browser area
was judged (90.0%): ``PayEffect.verify`` could count its payments under any
path, or none, and no fast test noticed (its end-to-end tests start worker
processes, outside the area's list). Here each of the six verifiers reads
canned answers of the provider's JSON lookups — Playwright's request
context answered in process, no page — and its verdict is stated whole:
what it counts, under which URLs, what it leaves out, when it is absent,
and what stops it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from actonce import Absent, Confirmed, HardStop, Unavailable
from actonce.browser import (
    BookEffect,
    HoldEffect,
    NotifyEffect,
    PayEffect,
    ReleaseHoldEffect,
    Trip,
    VoidPaymentEffect,
)
from actonce.browser._session import AsyncBrowserSession

ORIGIN = "http://127.0.0.1:8765"
TRIP = Trip("trip-7@v2", "harbor-double", "2030-05-01", 2, 1, 24000, "ana@example.com")
MINE = {"client_ref": "trip-7@v2", "sku": "harbor-double", "date": "2030-05-01",
        "nights": 2, "qty": 1, "amount": 24000}  # fmt: skip


class _Answer:
    def __init__(self, status: int, body: Any) -> None:
        self.status, self.body = status, body

    async def json(self) -> Any:
        return self.body


class _Lookups:
    """``page.request``: answers each lookup path from a dict (404 when absent)."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, dict[str, list[str]]]] = []

    async def get(self, url: str, timeout: float, max_redirects: int) -> _Answer:
        parts = urlsplit(url)
        assert f"{parts.scheme}://{parts.netloc}" == ORIGIN and max_redirects == 0
        self.asked.append((parts.path, parse_qs(parts.query)))
        body = self.answers.get(parts.path)
        return _Answer(404, {}) if body is None else _Answer(200, body)


class _Page:
    url = "about:blank"

    def __init__(self, answers: dict[str, Any]) -> None:
        self.request = _Lookups(answers)

    def set_default_timeout(self, ms: float) -> None:
        return None

    def set_default_navigation_timeout(self, ms: float) -> None:
        return None


def _session(**answers: Any) -> AsyncBrowserSession:
    paths = {f"/api/book/{name}": body for name, body in answers.items()}
    return AsyncBrowserSession(_Page(paths), origin=ORIGIN, username="ana")  # type: ignore[arg-type]


def _at(*paths: str) -> Confirmed:
    refs = tuple(ORIGIN + p for p in paths)
    return Confirmed(refs[0], count=len(refs), refs=refs)


HOLDS = [
    {**MINE, "id": 4, "status": "released"},
    {**MINE, "id": 5, "status": "held"},
    {**MINE, "id": 6, "sku": "harbor-single", "status": "held"},  # another trip's
]
PAYMENTS = [
    {"id": 11, "hold_id": 4, "amount": 24000, "status": "voided"},
    {"id": 12, "hold_id": 5, "amount": 24000, "status": "authorized"},
    {"id": 13, "hold_id": 6, "amount": 100, "status": "authorized"},  # on another trip's hold
]
BOOKINGS = [
    {**MINE, "reference": "BK-1", "status": "cancelled"},
    {**MINE, "reference": "BK-2", "status": "confirmed"},
    {**MINE, "reference": "BK-3", "qty": 2, "status": "confirmed"},  # another trip's
]


async def test_a_hold_counts_the_trips_holds_under_their_pages() -> None:
    session = _session(holds=HOLDS)
    assert await HoldEffect("ana", TRIP).verify(session) == _at("/book/holds/4", "/book/holds/5")
    (asked,) = session.page.request.asked  # type: ignore[attr-defined]
    assert asked == ("/api/book/holds", {"client_ref": ["trip-7@v2"]})
    assert await HoldEffect("ana", TRIP).verify(_session(holds=[])) == Absent()
    assert await HoldEffect("ana", TRIP).verify(_session()) == Absent()  # 404: none


async def test_a_payment_counts_the_payments_on_the_trips_holds() -> None:
    session = _session(holds=HOLDS, payments=PAYMENTS)
    verdict = await PayEffect("ana", TRIP).verify(session)
    assert verdict == _at("/book/payments/11", "/book/payments/12")
    asked = session.page.request.asked  # type: ignore[attr-defined]
    assert asked == [("/api/book/holds", {"client_ref": ["trip-7@v2"]}),
                     ("/api/book/payments", {"client_ref": ["trip-7@v2"]})]  # fmt: skip
    no_holds = _session(holds=[], payments=PAYMENTS)
    assert await PayEffect("ana", TRIP).verify(no_holds) == Absent()
    assert no_holds.page.request.asked == [  # type: ignore[attr-defined]
        ("/api/book/holds", {"client_ref": ["trip-7@v2"]})
    ]
    dear = [{"id": 14, "hold_id": 5, "amount": 24001, "status": "authorized"}]
    with pytest.raises(HardStop, match=r"^payment 14 of 24001 cents is above the approved"):
        await PayEffect("ana", TRIP).verify(_session(holds=HOLDS, payments=dear))


async def test_a_booking_counts_the_trips_bookings_by_reference() -> None:
    session = _session(bookings=BOOKINGS)
    verdict = await BookEffect("ana", TRIP).verify(session)
    assert verdict == _at("/book/bookings/BK-1", "/book/bookings/BK-2")
    assert await BookEffect("ana", TRIP).verify(_session(bookings=[])) == Absent()
    dear = [{**MINE, "reference": "BK-9", "amount": 30000, "status": "confirmed"}]
    with pytest.raises(HardStop, match=r"^booking BK-9 of 30000 cents is above the approved"):
        await BookEffect("ana", TRIP).verify(_session(bookings=dear))


async def test_a_notification_is_the_confirmed_bookings_message_to_the_recipient() -> None:
    sent = {"delivered": True, "recipient": "ana@example.com"}
    session = _session(bookings=BOOKINGS, **{"messages/BK-2-confirmation": sent})
    url = f"{ORIGIN}/book/outbox#BK-2-confirmation"
    assert await NotifyEffect("ana", TRIP).verify(session) == Confirmed(url, count=1, refs=(url,))
    queued = {"delivered": False, "recipient": "ana@example.com"}
    pending = _session(bookings=BOOKINGS, **{"messages/BK-2-confirmation": queued})
    assert await NotifyEffect("ana", TRIP).verify(pending) == Absent()
    none = _session(bookings=BOOKINGS)
    assert await NotifyEffect("ana", TRIP).verify(none) == Absent()
    stray = {"delivered": True, "recipient": "bo@example.com"}
    wrong = _session(bookings=BOOKINGS, **{"messages/BK-2-confirmation": stray})
    assert await NotifyEffect("ana", TRIP).verify(wrong) == Unavailable(
        "BK-2-confirmation went to 'bo@example.com', not 'ana@example.com'"
    )
    assert await NotifyEffect("ana", TRIP).verify(_session(bookings=BOOKINGS[:1])) == Absent()


async def test_a_release_is_the_first_hold_once_none_is_held_or_booked() -> None:
    released = [{**MINE, "id": 4, "status": "released"}, {**MINE, "id": 7, "status": "expired"}]
    url = f"{ORIGIN}/book/holds/4"
    release = ReleaseHoldEffect("ana", TRIP)
    assert await release.verify(_session(holds=released)) == Confirmed(url, count=1, refs=(url,))
    assert await release.verify(_session(holds=HOLDS)) == Absent()  # hold 5 is still held
    assert await release.verify(_session(holds=[])) == Absent()
    booked = [{**MINE, "id": 4, "status": "booked"}]
    assert await release.verify(_session(holds=booked)) == Unavailable(
        "the hold is booked: a release cannot undo it (refund the payment)"
    )


async def test_a_void_is_the_first_payment_once_none_stands() -> None:
    done = [{"id": 11, "hold_id": 4, "amount": 24000, "status": "voided"},
            {"id": 12, "hold_id": 5, "amount": 24000, "status": "refunded"}]  # fmt: skip
    url = f"{ORIGIN}/book/payments/11"
    void = VoidPaymentEffect("ana", TRIP)
    got = await void.verify(_session(holds=HOLDS, payments=done))
    assert got == Confirmed(url, count=1, refs=(url,))
    assert await void.verify(_session(holds=HOLDS, payments=PAYMENTS)) == Absent()  # 12 stands
    assert await void.verify(_session(holds=HOLDS, payments=[])) == Absent()
