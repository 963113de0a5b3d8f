"""Site effects for the sandbox's booking world: hold, pay, book, notify and the undos.

Written the way docs/browser.md tells a user to write one (``SiteEffect``):
``prepare`` opens the provider's form and fills it, ``read_back`` /
``expected`` say what the form will submit, ``control`` is the one button,
``confirm`` waits for the provider's answer page, ``verify`` reads the
provider's own records. Every step of one trip shares the trip's client
reference (``Trip.ref``, one per intent version), which is how a later step
finds what an earlier one made and how a verifier counts.

Verification reads the provider's read-only JSON lookups (``/api/book/…``)
with the session's own cookies — the provider's authoritative state, always
current (the booking world has no late index) — and checks what seed 004
asks of a purchase: **count == 1** (every match is counted; two is a
duplicate, never a silent success), **amount ≤ the approved ceiling**, the
date, the recipient. A record outside the approved boundary is never
``Confirmed``: the verifier says so (``Unavailable``), and a human decides.

Steps with a provider key (hold, pay, book) open their form page with
``?idempotency_key=<the step's effect key>``: the form then carries the key
and the provider answers a repeat with the object it made (the sandbox's
forms honour it like ``Idempotency-Key`` on its API).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from playwright.async_api import Error as PlaywrightError

from actonce import Absent, Confirmed, HardStop, Unavailable, UsageError, Verdict

from ._errors import BrowserError, NotPerformed, PageUnavailable, first_line
from ._site import SiteEffect

if TYPE_CHECKING:
    from playwright.async_api import Locator

    from ._session import AsyncBrowserSession

__all__ = [
    "BookEffect",
    "HoldEffect",
    "NotifyEffect",
    "PayEffect",
    "ProviderBusy",
    "ProviderRefused",
    "ReleaseHoldEffect",
    "SignedOut",
    "Trip",
    "VoidPaymentEffect",
]

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# What the provider's pages show when they refuse, fail or ask to sign in.
_REFUSALS = (
    '[data-testid="error"], [data-testid="refused"], [data-testid="price-changed"], '
    '[data-testid="booking-failed"], [data-testid="hold-not-active"], '
    '[data-testid="not-found"], [data-testid="login-form"]'
)
_STANDING = ("authorized", "captured")


class ProviderBusy(BrowserError):
    """The provider answered a submit with a server error (5xx): transient.

    Raised by ``confirm``; the perform then ends ``OutcomeUnknown`` with this
    as its cause. A step whose request carries a provider key may send the
    same request again (``actonce.provider_retry``): the provider answers a
    repeat with the object it made, if it made one.
    """


class SignedOut(HardStop):
    """The provider refused a lookup: the session is signed out (or walled)."""


class ProviderRefused(BrowserError):
    """The provider refused a submit (price changed, hold expired, booking failed …)."""


@dataclass(frozen=True, slots=True)
class Trip:
    """What one booking intent version asks of the booking world.

    Attributes:
        ref: the client reference, one per intent version (``"trip-7@v2"``):
            every step carries it, every verifier counts by it.
        sku: the product (``harbor-double``, ``umbrella`` …).
        date: check-in, ``YYYY-MM-DD`` (rooms); ``""`` for shop items.
        nights: nights of the stay (rooms; 1 for items).
        qty: rooms or items.
        ceiling: the most, in cents, that a money step may commit (the
            approved ceiling).
        recipient: who receives the confirmation message.
    """

    ref: str
    sku: str
    date: str = ""
    nights: int = 1
    qty: int = 1
    ceiling: int = 0
    recipient: str = ""

    def __post_init__(self) -> None:
        if not self.ref.strip() or not self.sku.strip():
            raise UsageError("a trip needs a client reference and a sku")
        if self.date and not _DATE.fullmatch(self.date):
            raise UsageError(f"a trip's date is YYYY-MM-DD, not {self.date!r}")
        for name in ("nights", "qty", "ceiling"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise UsageError(f"a trip's {name} is a whole number >= 0, not {value!r}")
        if self.nights < 1 or self.qty < 1:
            raise UsageError("a trip has at least one night and one unit")

    def fields(self) -> dict[str, Any]:
        """The trip as payload fields."""
        return {"ref": self.ref, "sku": self.sku, "date": self.date, "nights": self.nights,
                "qty": self.qty}  # fmt: skip

    def matches(self, record: Mapping[str, Any]) -> bool:
        """Whether a provider hold or booking is for this trip."""
        return (
            record.get("client_ref") == self.ref
            and record.get("sku") == self.sku
            and (record.get("date") or "") == self.date
            and (not self.date or record.get("nights") == self.nights)
            and record.get("qty") == self.qty
        )


# --- the provider's read-only lookups ------------------------------------------------------


async def lookup(session: AsyncBrowserSession, path: str, **query: Any) -> Any:
    """``GET`` one of the provider's JSON lookups with the session's cookies.

    Returns the decoded JSON (``None`` for a 404). Raises ``SignedOut`` (a
    ``HardStop``) when the provider refuses to answer, ``PageUnavailable`` for
    network errors and other statuses: a verifier turns both into
    ``Unavailable``, never into ``Absent``.
    """
    url = session.url(path + ("?" + urlencode(query) if query else ""))
    try:
        response = await session.page.request.get(
            url, timeout=session.timeout * 1000, max_redirects=0
        )
        status = response.status
        body = await response.json() if status in (200, 404) else None
    except PlaywrightError as exc:
        raise PageUnavailable(f"lookup {path} failed: {first_line(exc)}") from exc
    except ValueError as exc:
        raise PageUnavailable(f"lookup {path} answered no JSON") from exc
    if status == 404:
        return None
    if status in (401, 403):
        raise SignedOut(f"the provider refused the lookup {path} (HTTP {status}: signed out?)")
    if status != 200:
        raise PageUnavailable(f"lookup {path} answered HTTP {status}")
    return body


async def trip_holds(session: AsyncBrowserSession, trip: Trip) -> list[dict[str, Any]]:
    """The provider's holds for this trip, oldest first."""
    found = await lookup(session, "/api/book/holds", client_ref=trip.ref)
    return [h for h in found or [] if trip.matches(h)]


async def trip_payments(session: AsyncBrowserSession, trip: Trip) -> list[dict[str, Any]]:
    """The provider's payment authorizations for this trip's holds, oldest first."""
    holds = {h["id"] for h in await trip_holds(session, trip)}
    if not holds:
        return []
    found = await lookup(session, "/api/book/payments", client_ref=trip.ref)
    return [p for p in found or [] if p.get("hold_id") in holds]


async def trip_bookings(session: AsyncBrowserSession, trip: Trip) -> list[dict[str, Any]]:
    """The provider's bookings for this trip, oldest first."""
    found = await lookup(session, "/api/book/bookings", client_ref=trip.ref)
    return [b for b in found or [] if trip.matches(b)]


def _counted(session: AsyncBrowserSession, paths: list[str]) -> Verdict:
    """Every match counted (seed 004: ``assert outcome.count == 1``)."""
    if not paths:
        return Absent()
    refs = tuple(session.url(p) for p in paths)
    return Confirmed(refs[0], count=len(refs), refs=refs)


def _name(record: dict[str, Any]) -> str:
    """How the provider names a record: its id, or a booking's reference."""
    return str(record.get("id") or record.get("reference"))


def _within(trip: Trip, what: str, records: list[dict[str, Any]]) -> None:
    """No record above the approved ceiling is ever a success."""
    for r in records:
        if int(r.get("amount") or 0) > trip.ceiling:
            raise HardStop(
                f"{what} {_name(r)} of {r.get('amount')} cents is above the approved "
                f"ceiling of {trip.ceiling}: a human decides"
            )


def _one(records: list[dict[str, Any]], what: str) -> dict[str, Any]:
    """Exactly one record to act on, or nothing is clicked."""
    if not records:
        raise NotPerformed(f"no {what}: nothing to act on")
    if len(records) > 1:
        ids = ", ".join(_name(r) for r in records)
        raise HardStop(f"{len(records)} {what}s ({ids}): which one is ambiguous")
    return records[0]


async def landed(session: AsyncBrowserSession, done: str, what: str) -> None:
    """Wait for the provider's answer page: ``done`` (a selector) or a refusal.

    Raises ``ProviderBusy`` for a server error page, ``ProviderRefused`` for a
    refusal or a login wall, ``TimeoutError`` when neither came in time.
    """
    page = session.page
    try:
        await page.locator(f"{done}, {_REFUSALS}").first.wait_for(
            timeout=session.confirm_timeout * 1000
        )
        if await page.locator(done).count():
            return
        refusal = page.locator(_REFUSALS).first
        testid = await refusal.get_attribute("data-testid") or "refused"
        code = await refusal.get_attribute("data-code") or testid
    except PlaywrightError as exc:
        raise TimeoutError(f"{what}: no answer page: {first_line(exc)}") from exc
    if testid == "error":
        raise ProviderBusy(f"{what}: the provider answered a server error")
    raise ProviderRefused(f"{what}: the provider refused it ({code})")


async def _hidden(
    session: AsyncBrowserSession, form: str, names: tuple[str, ...]
) -> dict[str, str]:
    out = {}
    for name in names:
        field = session.page.locator(f'{form} input[name="{name}"]')
        out[name] = await field.input_value() if await field.count() == 1 else ""
    return out


def _keyed(path: str, key: str, **query: Any) -> str:
    params = {**query, "idempotency_key": key} if key else query
    return path + ("?" + urlencode(params) if params else "")


# --- the steps -----------------------------------------------------------------------------


class HoldEffect(SiteEffect):
    """Hold the trip's rooms (or items): the hold form of the offers page.

    Verified: the provider's holds of this client reference with this sku,
    date, nights and quantity, counted (any status: a hold that expired or was
    released since was still made). ``result_ref`` is the hold's page.
    """

    kind = "hold"

    def __init__(self, user: str, trip: Trip, provider_key: str = "") -> None:
        self.user, self.trip, self.provider_key = user, trip, provider_key

    def payload(self) -> dict[str, Any]:
        return {"user": self.user, **self.trip.fields(), "provider_key": self.provider_key}

    async def prepare(self, session: AsyncBrowserSession) -> None:
        t = self.trip
        query = {"date": t.date, "nights": t.nights} if t.date else {}
        await session.goto(_keyed("/book", self.provider_key, **query))
        form = session.page.get_by_test_id(f"hold-form-{t.sku}")
        if await form.count() != 1:
            raise NotPerformed(f"no hold form for {t.sku} (sold out?)")
        await session.page.locator(f"#qty-{t.sku}").fill(str(t.qty))
        await session.page.locator(f"#ref-{t.sku}").fill(t.ref)

    async def read_back(self, session: AsyncBrowserSession) -> Mapping[str, Any]:
        form = f'[data-testid="hold-form-{self.trip.sku}"]'
        got = await _hidden(session, form, ("sku", "date", "nights", "idempotency_key"))
        got["qty"] = await session.page.locator(f"#qty-{self.trip.sku}").input_value()
        got["client_ref"] = await session.page.locator(f"#ref-{self.trip.sku}").input_value()
        return got

    def expected(self) -> Mapping[str, Any]:
        t = self.trip
        return {"sku": t.sku, "date": t.date, "nights": str(t.nights) if t.date else "",
                "qty": str(t.qty), "client_ref": t.ref,
                "idempotency_key": self.provider_key}  # fmt: skip

    def control(self, session: AsyncBrowserSession) -> Locator:
        return session.page.get_by_test_id(f"hold-{self.trip.sku}")

    async def confirm(self, session: AsyncBrowserSession) -> None:
        await landed(session, '[data-testid="hold"]', "hold")

    async def verify(self, session: AsyncBrowserSession) -> Verdict:
        holds = await trip_holds(session, self.trip)
        return _counted(session, [f"/book/holds/{h['id']}" for h in holds])


class PayEffect(SiteEffect):
    """Authorize the hold's total: the pay form of the trip's live hold.

    The read-back refuses to click unless the form's total is within the
    approved ceiling and the form carries the provider key. Verified: the
    authorizations against this trip's holds, counted (any status), none
    above the ceiling. ``result_ref`` is the payment's page.
    """

    kind = "pay"

    def __init__(self, user: str, trip: Trip, provider_key: str = "") -> None:
        self.user, self.trip, self.provider_key = user, trip, provider_key
        self._hold: dict[str, Any] | None = None

    def payload(self) -> dict[str, Any]:
        # The ceiling is the approval's (its packet binds it to this key); a
        # refreshed packet may raise it, and a key's payload never changes.
        return {"user": self.user, **self.trip.fields(), "provider_key": self.provider_key}

    async def live_hold(self, session: AsyncBrowserSession) -> dict[str, Any] | None:
        """The trip's one live hold (``None`` when none is live)."""
        live = [h for h in await trip_holds(session, self.trip) if h.get("status") == "held"]
        return _one(live, "live hold") if live else None

    async def prepare(self, session: AsyncBrowserSession) -> None:
        hold = await self.live_hold(session)
        if hold is None:
            raise NotPerformed(f"no live hold for {self.trip.ref}: nothing to pay for")
        self._hold = hold
        await session.goto(_keyed(f"/book/holds/{hold['id']}/pay", self.provider_key))

    async def read_back(self, session: AsyncBrowserSession) -> Mapping[str, Any]:
        got = await _hidden(
            session, '[data-testid="pay-form"]', ("hold_id", "amount", "idempotency_key")
        )
        amount = int(got.pop("amount") or 0)
        return {**got, "within_ceiling": 0 < amount <= self.trip.ceiling}

    def expected(self) -> Mapping[str, Any]:
        hold_id = "" if self._hold is None else str(self._hold["id"])
        return {"hold_id": hold_id, "within_ceiling": True, "idempotency_key": self.provider_key}

    def control(self, session: AsyncBrowserSession) -> Locator:
        return session.page.get_by_test_id("pay-form").get_by_role(
            "button", name="Authorize payment", exact=True
        )

    async def confirm(self, session: AsyncBrowserSession) -> None:
        await landed(session, '[data-testid="payment"]', "payment")

    async def verify(self, session: AsyncBrowserSession) -> Verdict:
        payments = await trip_payments(session, self.trip)
        _within(self.trip, "payment", payments)
        return _counted(session, [f"/book/payments/{p['id']}" for p in payments])


class BookEffect(SiteEffect):
    """Confirm the booking: the book form of the trip's one authorized payment.

    Verified: the bookings of this client reference with this sku, date,
    nights and quantity, counted, none above the ceiling. ``result_ref`` is
    the confirmation page (``/book/bookings/BK-…``).
    """

    kind = "book"

    def __init__(self, user: str, trip: Trip, provider_key: str = "") -> None:
        self.user, self.trip, self.provider_key = user, trip, provider_key
        self._payment: dict[str, Any] | None = None

    def payload(self) -> dict[str, Any]:
        # The ceiling is the approval's (its packet binds it to this key); a
        # refreshed packet may raise it, and a key's payload never changes.
        return {"user": self.user, **self.trip.fields(), "provider_key": self.provider_key}

    async def prepare(self, session: AsyncBrowserSession) -> None:
        payments = await trip_payments(session, self.trip)
        payment = _one([p for p in payments if p.get("status") == "authorized"], "authorization")
        self._payment = payment
        await session.goto(_keyed(f"/book/payments/{payment['id']}", self.provider_key))

    async def read_back(self, session: AsyncBrowserSession) -> Mapping[str, Any]:
        return await _hidden(
            session, '[data-testid="book-form"]', ("payment_id", "client_ref", "idempotency_key")
        )

    def expected(self) -> Mapping[str, Any]:
        pid = "" if self._payment is None else str(self._payment["id"])
        return {"payment_id": pid, "client_ref": self.trip.ref,
                "idempotency_key": self.provider_key}  # fmt: skip

    def control(self, session: AsyncBrowserSession) -> Locator:
        return session.page.get_by_test_id("book-form").get_by_role(
            "button", name="Confirm booking", exact=True
        )

    async def confirm(self, session: AsyncBrowserSession) -> None:
        await landed(session, '[data-testid="booking"]', "booking")

    async def verify(self, session: AsyncBrowserSession) -> Verdict:
        bookings = await trip_bookings(session, self.trip)
        _within(self.trip, "booking", bookings)
        return _counted(session, [f"/book/bookings/{b['reference']}" for b in bookings])


class NotifyEffect(SiteEffect):
    """Send the booking's confirmation to the trip's recipient.

    The provider keys the message (``<reference>-confirmation``) and delivers
    a key at most once. Verified: that message, for this booking and this
    recipient, ``delivered`` (an undelivered one is ``Absent``: the provider
    says so, and the next send of the key delivers it).
    """

    kind = "notify"

    def __init__(self, user: str, trip: Trip) -> None:
        if not trip.recipient:
            raise UsageError("a notification needs the trip's recipient")
        self.user, self.trip = user, trip
        self._reference = ""

    def payload(self) -> dict[str, Any]:
        return {"user": self.user, "ref": self.trip.ref, "recipient": self.trip.recipient}

    async def _booking(self, session: AsyncBrowserSession) -> dict[str, Any] | None:
        found = [b for b in await trip_bookings(session, self.trip) if b["status"] == "confirmed"]
        return _one(found, "confirmed booking") if found else None

    async def prepare(self, session: AsyncBrowserSession) -> None:
        booking = await self._booking(session)
        if booking is None:
            raise NotPerformed(f"no confirmed booking for {self.trip.ref}: nothing to announce")
        self._reference = booking["reference"]
        await session.goto(f"/book/bookings/{self._reference}")
        await session.page.get_by_label("Recipient").fill(self.trip.recipient)

    async def read_back(self, session: AsyncBrowserSession) -> Mapping[str, Any]:
        got = await _hidden(session, '[data-testid="message-form"]', ("message_key",))
        got["recipient"] = await session.page.get_by_label("Recipient").input_value()
        return got

    def expected(self) -> Mapping[str, Any]:
        return {"message_key": f"{self._reference}-confirmation",
                "recipient": self.trip.recipient}  # fmt: skip

    def control(self, session: AsyncBrowserSession) -> Locator:
        return session.page.get_by_test_id("message-form").get_by_role(
            "button", name="Send confirmation", exact=True
        )

    async def confirm(self, session: AsyncBrowserSession) -> None:
        await landed(session, '[data-testid="outbox"]', "message")

    async def verify(self, session: AsyncBrowserSession) -> Verdict:
        booking = await self._booking(session)
        if booking is None:
            return Absent()
        key = f"{booking['reference']}-confirmation"
        message = await lookup(session, f"/api/book/messages/{key}")
        if message is None or not message.get("delivered"):
            return Absent()
        if message.get("recipient") != self.trip.recipient:
            return Unavailable(
                f"{key} went to {message.get('recipient')!r}, not {self.trip.recipient!r}"
            )
        url = session.url(f"/book/outbox#{key}")
        return Confirmed(url, count=1, refs=(url,))  # the provider delivers a key once


# --- the undos -----------------------------------------------------------------------------


class ReleaseHoldEffect(SiteEffect):
    """Undo a hold: *Release hold* on the trip's live hold.

    Verified as a state: every hold of the trip reserves nothing any more
    (released, expired, or rejected by a failed booking) — so a hold that
    already ended is confirmed without a click. A booked hold is not undone
    by a release (``Unavailable``: a human decides; a refund cancels it).
    """

    kind = "release"

    def __init__(self, user: str, trip: Trip) -> None:
        self.user, self.trip = user, trip
        self._hold_id = 0

    def payload(self) -> dict[str, Any]:
        return {"user": self.user, **self.trip.fields()}

    async def prepare(self, session: AsyncBrowserSession) -> None:
        live = [h for h in await trip_holds(session, self.trip) if h.get("status") == "held"]
        self._hold_id = int(_one(live, "live hold")["id"])
        await session.goto(f"/book/holds/{self._hold_id}")

    async def read_back(self, session: AsyncBrowserSession) -> Mapping[str, Any]:
        return await _hidden(session, '[data-testid="release-form"]', ("hold_id",))

    def expected(self) -> Mapping[str, Any]:
        return {"hold_id": str(self._hold_id)}

    def control(self, session: AsyncBrowserSession) -> Locator:
        return session.page.get_by_test_id("release-form").get_by_role(
            "button", name="Release hold", exact=True
        )

    async def confirm(self, session: AsyncBrowserSession) -> None:
        await landed(session, '[data-testid="hold"][data-status="released"]', "release")

    async def verify(self, session: AsyncBrowserSession) -> Verdict:
        holds = await trip_holds(session, self.trip)
        statuses = {h.get("status") for h in holds}
        if not holds or "held" in statuses:
            return Absent()
        if "booked" in statuses:
            return Unavailable("the hold is booked: a release cannot undo it (refund the payment)")
        url = session.url(f"/book/holds/{holds[0]['id']}")
        return Confirmed(url, count=1, refs=(url,))


class VoidPaymentEffect(SiteEffect):
    """Undo an authorization: *Void authorization* (or *Refund and cancel* once captured).

    Verified as a state: every authorization of the trip is voided or
    refunded (the provider makes a second void a no-op).
    """

    kind = "void"

    def __init__(self, user: str, trip: Trip) -> None:
        self.user, self.trip = user, trip
        self._payment: dict[str, Any] | None = None

    def payload(self) -> dict[str, Any]:
        return {"user": self.user, **self.trip.fields()}

    def _form(self) -> str:
        captured = self._payment is not None and self._payment.get("status") == "captured"
        return "refund-form" if captured else "void-form"

    async def prepare(self, session: AsyncBrowserSession) -> None:
        payments = await trip_payments(session, self.trip)
        self._payment = _one([p for p in payments if p.get("status") in _STANDING], "payment")
        await session.goto(f"/book/payments/{self._payment['id']}")

    async def read_back(self, session: AsyncBrowserSession) -> Mapping[str, Any]:
        return await _hidden(session, f'[data-testid="{self._form()}"]', ("payment_id",))

    def expected(self) -> Mapping[str, Any]:
        return {"payment_id": "" if self._payment is None else str(self._payment["id"])}

    def control(self, session: AsyncBrowserSession) -> Locator:
        name = "Refund and cancel" if self._form() == "refund-form" else "Void authorization"
        return session.page.get_by_test_id(self._form()).get_by_role(
            "button", name=name, exact=True
        )

    async def confirm(self, session: AsyncBrowserSession) -> None:
        done = '[data-testid="payment"][data-status="voided"], [data-testid="payment"][data-status="refunded"]'
        await landed(session, done, "void")

    async def verify(self, session: AsyncBrowserSession) -> Verdict:
        payments = await trip_payments(session, self.trip)
        if not payments or any(p.get("status") in _STANDING for p in payments):
            return Absent()
        url = session.url(f"/book/payments/{payments[0]['id']}")
        return Confirmed(url, count=1, refs=(url,))
