"""The booking adapters against the sandbox's booking world, in Chromium (issue 23).

``test_browser_pins.py`` drives hold, pay, book and void; here the rest of
what lives in the provider's pages: the undos' forms and their verdicts as
states, the confirmation message, what each step does when there is nothing
to act on, the provider's answers that are not a success (a server error, a
refusal, a price above the ceiling) and the lookups' statuses. One effect
at a time (the sandbox is reset per test by ``base``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from actonce import Absent, Confirmed, Unavailable
from actonce.browser import (
    BookEffect,
    BrowserSession,
    HoldEffect,
    NotifyEffect,
    NotPerformed,
    OutcomeUnknown,
    PageUnavailable,
    PayEffect,
    ProviderBusy,
    ProviderRefused,
    ReadBackMismatch,
    ReleaseHoldEffect,
    SignedOut,
    Trip,
    VoidPaymentEffect,
)
from actonce.browser._booking import lookup, trip_bookings, trip_holds, trip_payments
from actonce.browser._session import AsyncBrowserSession

SessionFactory = Callable[..., BrowserSession]

pytestmark = pytest.mark.browser

TOTAL = 24000  # harbor-double, two nights (test_browser_pins pins the price)


def _trip(ceiling: int = TOTAL, ref: str = "page-trip@v1") -> Trip:
    return Trip(ref, "harbor-double", "2030-05-01", 2, 1, ceiling, "carol@example.com")


def _read(session: BrowserSession, what: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    async def read(s: AsyncBrowserSession) -> Any:
        return await what(s, *args, **kw)

    return session.run(read)


def _booked(session: BrowserSession, trip: Trip) -> None:
    session.effect(HoldEffect("alice", trip, "page-hold")).perform()
    session.effect(PayEffect("alice", trip, "page-pay")).perform()
    session.effect(BookEffect("alice", trip, "page-book")).perform()


def test_a_release_ends_the_live_hold_and_is_verified_as_a_state(
    new_session: SessionFactory, base: str
) -> None:
    session, trip = new_session("alice"), _trip()
    release = session.effect(ReleaseHoldEffect("alice", trip))
    assert release.verify() == Absent(), "no hold at all: nothing released"
    session.effect(HoldEffect("alice", trip, "page-hold")).perform()
    assert release.verify() == Absent(), "a live hold is not released"
    release.perform()
    url = f"{base}/book/holds/1"
    assert release.verify() == Confirmed(url, count=1, refs=(url,))
    assert [h["status"] for h in _read(session, trip_holds, trip)] == ["released"]
    with pytest.raises(NotPerformed, match=r"^no live hold: nothing to act on$"):
        session.effect(ReleaseHoldEffect("alice", trip)).perform()


def test_the_confirmation_is_sent_once_to_the_recipient_and_the_booked_hold_stays(
    new_session: SessionFactory, base: str
) -> None:
    session, trip = new_session("alice"), _trip()
    notify = session.effect(NotifyEffect("alice", trip))
    assert notify.verify() == Absent(), "no booking: nothing to announce yet"
    with pytest.raises(NotPerformed) as caught:
        session.effect(NotifyEffect("alice", trip)).perform()
    assert str(caught.value) == "no confirmed booking for page-trip@v1: nothing to announce"
    _booked(session, trip)
    [booking] = _read(session, trip_bookings, trip)
    assert booking["status"] == "confirmed"
    for path, key in (("holds", "page-hold"), ("payments", "page-pay"), ("bookings", "page-book")):
        assert len(_read(session, lookup, f"/api/book/{path}", idempotency_key=key)) == 1, path
    assert notify.verify() == Absent(), "booked, but no message sent yet"
    notify.perform()
    url = f"{base}/book/outbox#{booking['reference']}-confirmation"
    assert notify.verify() == Confirmed(url, count=1, refs=(url,))
    release = session.effect(ReleaseHoldEffect("alice", trip))
    assert release.verify() == Unavailable(
        "the hold is booked: a release cannot undo it (refund the payment)"
    )


def test_a_message_the_provider_dropped_is_absent(
    new_session: SessionFactory, set_faults: Callable[..., None]
) -> None:
    session, trip = new_session("alice"), _trip()
    _booked(session, trip)
    set_faults({"action": "booking.message", "fault": "message_dropped", "times": 1})
    notify = session.effect(NotifyEffect("alice", trip))
    notify.perform()
    assert notify.verify() == Absent(), "accepted but never delivered: the next send delivers it"


def test_a_booked_payment_is_refunded_through_the_refund_form(
    new_session: SessionFactory, base: str
) -> None:
    session, trip = new_session("alice"), _trip()
    _booked(session, trip)
    [payment] = _read(session, trip_payments, trip)
    assert payment["status"] == "captured"
    void = session.effect(VoidPaymentEffect("alice", trip))
    assert void.verify() == Absent(), "a captured payment still stands"
    void.perform()
    assert [p["status"] for p in _read(session, trip_payments, trip)] == ["refunded"]
    url = f"{base}/book/payments/{payment['id']}"
    assert void.verify() == Confirmed(url, count=1, refs=(url,))


def test_each_step_with_nothing_to_act_on_clicks_nothing_and_says_so(
    new_session: SessionFactory,
) -> None:
    session, trip = new_session("alice"), _trip()
    with pytest.raises(NotPerformed) as caught:
        session.effect(PayEffect("alice", trip, "k")).perform()
    assert str(caught.value) == "no live hold for page-trip@v1: nothing to pay for"
    with pytest.raises(NotPerformed, match=r"^no authorization: nothing to act on$"):
        session.effect(BookEffect("alice", trip, "k")).perform()
    with pytest.raises(NotPerformed, match=r"^no payment: nothing to act on$"):
        session.effect(VoidPaymentEffect("alice", trip)).perform()
    sold_out = Trip("page-trip@v1", "no-such-room", "2030-05-01", 1, 1, TOTAL)
    with pytest.raises(NotPerformed, match=r"^no hold form for no-such-room \(sold out\?\)$"):
        session.effect(HoldEffect("alice", sold_out, "k")).perform()
    assert session.effect(PayEffect("alice", trip)).verify() == Absent()
    assert session.effect(BookEffect("alice", trip)).verify() == Absent()


def test_a_total_above_the_ceiling_is_never_clicked(new_session: SessionFactory) -> None:
    session = new_session("alice")
    trip = _trip(ceiling=TOTAL - 1)
    session.effect(HoldEffect("alice", trip, "page-hold")).perform()
    with pytest.raises(ReadBackMismatch) as caught:
        session.effect(PayEffect("alice", trip, "page-pay")).perform()
    assert (caught.value.field, caught.value.expected, caught.value.actual) == (
        "within_ceiling",
        True,
        False,
    )
    assert _read(session, trip_payments, trip) == []


def test_a_payment_above_the_ceiling_is_no_success(new_session: SessionFactory) -> None:
    session = new_session("alice")
    _booked(session, _trip())
    lower = _trip(ceiling=TOTAL - 1)  # the same trip, judged by a smaller approval
    verdict = session.effect(PayEffect("alice", lower)).verify()
    assert isinstance(verdict, Unavailable)
    assert verdict.reason.startswith("cannot check: payment 1 of 24000 cents is above the ")
    assert verdict.reason.endswith("approved ceiling of 23999: a human decides")
    booked = session.effect(BookEffect("alice", lower)).verify()
    assert isinstance(booked, Unavailable) and "booking " in booked.reason


def test_a_server_error_answering_a_hold_is_the_providers_busy_signal(
    new_session: SessionFactory, set_faults: Callable[..., None]
) -> None:
    session, trip = new_session("alice"), _trip()
    set_faults({"action": "booking.hold", "fault": "error_before_commit", "times": 1})
    with pytest.raises(OutcomeUnknown) as caught:
        session.effect(HoldEffect("alice", trip, "page-hold")).perform()
    cause = caught.value.__cause__
    assert isinstance(cause, ProviderBusy)
    assert str(cause) == "hold: the provider answered a server error"


def test_a_booking_the_provider_refused_names_its_code(
    new_session: SessionFactory, set_faults: Callable[..., None]
) -> None:
    session, trip = new_session("alice"), _trip()
    session.effect(HoldEffect("alice", trip, "page-hold")).perform()
    session.effect(PayEffect("alice", trip, "page-pay")).perform()
    set_faults({"action": "booking.book", "fault": "booking_failed", "times": 1})
    with pytest.raises(OutcomeUnknown) as caught:
        session.effect(BookEffect("alice", trip, "page-book")).perform()
    cause = caught.value.__cause__
    assert isinstance(cause, ProviderRefused)
    assert str(cause) == "booking: the provider refused it (booking_failed)"


def test_the_lookups_answer_json_none_or_say_why_not(
    new_session: SessionFactory, set_faults: Callable[..., None]
) -> None:
    session = new_session("alice")
    assert _read(session, lookup, "/api/book/holds") == []
    assert _read(session, lookup, "/api/book/holds/999") is None
    with pytest.raises(PageUnavailable, match=r"^lookup /book answered no JSON$"):
        _read(session, lookup, "/book")
    set_faults({"action": "view.booking.lookup", "fault": "error_before_commit", "times": 1})
    with pytest.raises(PageUnavailable, match=r"^lookup /api/book/holds answered HTTP 500$"):
        _read(session, lookup, "/api/book/holds")
    signed_out = new_session("alice", login=False)
    with pytest.raises(SignedOut) as caught:
        _read(signed_out, lookup, "/api/book/holds")
    assert caught.value.reason == (
        "the provider refused the lookup /api/book/holds (HTTP 401: signed out?)"
    )
    verdict = signed_out.effect(HoldEffect("alice", _trip())).verify()
    assert isinstance(verdict, Unavailable) and "HTTP 401" in verdict.reason


def test_a_shop_item_is_held_without_date_or_nights(new_session: SessionFactory, base: str) -> None:
    session = new_session("alice")
    item = Trip("page-item@v1", "umbrella", qty=2, ceiling=3000)
    hold = session.effect(HoldEffect("alice", item, "page-item-hold"))
    details = hold.perform()
    assert details["sent"] == 1
    url = f"{base}/book/holds/1"
    assert hold.verify() == Confirmed(url, count=1, refs=(url,))
    [record] = _read(session, trip_holds, item)
    assert (record["qty"], record["date"], record["amount"]) == (2, "", 3000)
    keyed = _read(session, lookup, "/api/book/holds", idempotency_key="page-item-hold")
    assert [h["id"] for h in keyed] == [1], "the form carried the provider key"
    assert _read(session, lookup, "/api/book/holds", idempotency_key="other") == []


def test_a_signed_out_session_pauses_the_payments_refresh(new_session: SessionFactory) -> None:
    from actonce import Intent, Ledger
    from actonce.browser import booking_steps
    from actonce.testing import FrozenClock, MemoryStore

    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    intent = ledger.intents.put(Intent("page-trip", "booking", user="alice"))
    session = new_session("alice", login=False)
    steps = booking_steps(session, _trip(), intent, tenant="t", approval="packet-1")
    refresh = steps[1].effect.refresh
    assert refresh is not None and refresh() == {"session": False}


class _Provider(BaseHTTPRequestHandler):
    """A provider whose lookups answer by path: /403, /404, /302, /html ..."""

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        status = {"/403": 403, "/404": 404, "/302": 302, "/html404": 404, "/502": 502}.get(
            path, 200
        )
        body = b"<html>no json</html>" if path in ("/html", "/html404") else b'{"ok": 1}'
        self.send_response(status)
        if status == 302:
            self.send_header("Location", "/login")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


def test_a_lookups_status_decides_its_answer(browser: Any, tmp_path: Any) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    session = browser.new_session(origin, "alice", evidence_dir=tmp_path, timeout=10.0)
    try:
        assert _read(session, lookup, "/json", client_ref="a b") == {"ok": 1}
        assert _read(session, lookup, "/404") is None
        with pytest.raises(SignedOut) as caught:
            _read(session, lookup, "/403")
        assert caught.value.reason == "the provider refused the lookup /403 (HTTP 403: signed out?)"
        for path, why in (
            ("/302", "lookup /302 answered HTTP 302"),
            ("/502", "lookup /502 answered HTTP 502"),
            ("/html", "lookup /html answered no JSON"),
            ("/html404", "lookup /html404 answered no JSON"),
        ):
            with pytest.raises(PageUnavailable) as unavailable:
                _read(session, lookup, path)
            assert str(unavailable.value) == why
        server.shutdown()
        server.server_close()
        with pytest.raises(PageUnavailable) as gone:
            _read(session, lookup, "/json")
        assert str(gone.value).startswith("lookup /json failed: Error: ")
    finally:
        session.close()
        server.server_close()
