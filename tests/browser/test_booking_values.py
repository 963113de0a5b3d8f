"""The booking adapters' pure parts, without a browser (issue 23, item 2).

``_booking.py`` and ``_booking_steps.py`` were reached by no fast test of
the browser area: their own tests (``tests/browser_ledger``) start worker
processes. What they decide without a page is pinned here whole — a
trip's validation and matching, the helpers every verifier counts with,
what each step's read-back must equal, and how ``booking_steps`` builds
its four steps (keys, gates, roles, undos, attempts) and resends a 5xx.
The pages themselves are driven in ``test_browser_pins.py`` (Chromium).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from actonce import (
    Absent,
    Confirmed,
    HardStop,
    Intent,
    Ledger,
    UsageError,
    intent_key,
)
from actonce import NotPerformed as CoreNotPerformed
from actonce.browser import (
    BOOKING_POLICY,
    BookEffect,
    HoldEffect,
    NotifyEffect,
    NotPerformed,
    OutcomeUnknown,
    PayEffect,
    ProviderBusy,
    ReleaseHoldEffect,
    Trip,
    VoidPaymentEffect,
    booking_steps,
    money_of,
)
from actonce.browser._booking import _counted, _keyed, _one, _within
from actonce.browser._booking_steps import _Wire
from actonce.browser._session import AsyncBrowserSession
from actonce.testing import FrozenClock, MemoryStore

ORIGIN = "http://127.0.0.1:8765"
TRIP = Trip("trip-7@v2", "harbor-double", "2030-05-01", 2, 1, 24000, "ana@example.com")


class _Page:
    """What an AsyncBrowserSession asks of its Playwright page when made."""

    url = "about:blank"

    def set_default_timeout(self, ms: float) -> None:
        self.timeout = ms

    def set_default_navigation_timeout(self, ms: float) -> None:
        self.navigation_timeout = ms


def _session() -> AsyncBrowserSession:
    return AsyncBrowserSession(_Page(), origin=ORIGIN, username="ana")  # type: ignore[arg-type]


# --- Trip ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("ref", "sku"), [("", "umbrella"), ("  ", "umbrella"), ("t@v1", " ")])
def test_a_trip_needs_its_reference_and_its_sku(ref: str, sku: str) -> None:
    with pytest.raises(UsageError, match=r"^a trip needs a client reference and a sku$"):
        Trip(ref, sku)


@pytest.mark.parametrize("date", ["2030-05-01x", "x2030-05-01", "2030-05-1", "20300501"])
def test_a_trip_date_is_exactly_yyyy_mm_dd(date: str) -> None:
    with pytest.raises(UsageError, match=r"^a trip's date is YYYY-MM-DD, not "):
        Trip("t@v1", "harbor-double", date)


@pytest.mark.parametrize(
    ("field", "value"),
    [("nights", -1), ("qty", "2"), ("ceiling", -5), ("nights", True), ("qty", 1.0)],
)
def test_a_trips_counts_are_whole_numbers(field: str, value: Any) -> None:
    with pytest.raises(UsageError) as caught:
        Trip("t@v1", "harbor-double", "2030-05-01", **{field: value})
    assert str(caught.value) == f"a trip's {field} is a whole number >= 0, not {value!r}"


@pytest.mark.parametrize(("nights", "qty"), [(0, 1), (1, 0)])
def test_a_trip_has_a_night_and_a_unit(nights: int, qty: int) -> None:
    with pytest.raises(UsageError, match=r"^a trip has at least one night and one unit$"):
        Trip("t@v1", "harbor-double", "2030-05-01", nights, qty)


def test_a_trip_without_date_or_ceiling_is_a_shop_item() -> None:
    item = Trip("t@v1", "umbrella")
    assert (item.date, item.nights, item.qty, item.ceiling, item.recipient) == ("", 1, 1, 0, "")
    assert Trip("t@v1", "umbrella", ceiling=0).ceiling == 0  # zero is a whole number >= 0
    assert item.fields() == {"ref": "t@v1", "sku": "umbrella", "date": "", "nights": 1, "qty": 1}


def _record(**changes: Any) -> dict[str, Any]:
    record = {
        "client_ref": "trip-7@v2",
        "sku": "harbor-double",
        "date": "2030-05-01",
        "nights": 2,
        "qty": 1,
        "amount": 24000,
    }
    record.update(changes)
    return record


def test_a_record_is_the_trips_only_when_every_field_matches() -> None:
    assert TRIP.matches(_record())
    assert TRIP.fields() == {
        "ref": "trip-7@v2",
        "sku": "harbor-double",
        "date": "2030-05-01",
        "nights": 2,
        "qty": 1,
    }
    for field, other in [
        ("client_ref", "trip-7@v1"),
        ("sku", "umbrella"),
        ("date", "2030-05-02"),
        ("nights", 3),
        ("qty", 2),
    ]:
        assert not TRIP.matches(_record(**{field: other})), field
    assert not TRIP.matches(_record(date=None))
    assert not TRIP.matches({k: v for k, v in _record().items() if k != "nights"})


def test_a_shop_item_matches_without_date_or_nights() -> None:
    item = Trip("t@v1", "umbrella", qty=2)
    record = {"client_ref": "t@v1", "sku": "umbrella", "date": None, "nights": 9, "qty": 2}
    assert item.matches(record), "no date: the record's date may be empty and its nights any"
    assert item.matches({**record, "date": ""})
    assert not item.matches({**record, "date": "2030-05-01"})
    assert not item.matches({**record, "qty": 1})


# --- the verifiers' helpers ----------------------------------------------------------------


def test_every_match_is_counted_on_the_sessions_origin() -> None:
    session = _session()
    assert _counted(session, []) == Absent()
    one = _counted(session, ["/book/holds/4"])
    assert one == Confirmed(f"{ORIGIN}/book/holds/4", count=1, refs=(f"{ORIGIN}/book/holds/4",))
    two = _counted(session, ["/book/holds/4", "/book/holds/9"])
    assert isinstance(two, Confirmed)
    assert (two.result_ref, two.count) == (f"{ORIGIN}/book/holds/4", 2)
    assert two.refs == (f"{ORIGIN}/book/holds/4", f"{ORIGIN}/book/holds/9")


def test_a_record_above_the_ceiling_is_a_hard_stop_naming_it() -> None:
    _within(TRIP, "payment", [_record(id=1), _record(id=2, amount=None), {"id": 3}])
    with pytest.raises(HardStop) as caught:
        _within(TRIP, "booking", [_record(id=1), _record(id=5, amount=24001)])
    assert caught.value.reason == (
        "booking 5 of 24001 cents is above the approved ceiling of 24000: a human decides"
    )


def test_exactly_one_record_or_nothing_is_clicked() -> None:
    assert _one([{"id": 3}], "live hold") == {"id": 3}
    with pytest.raises(NotPerformed, match=r"^no live hold: nothing to act on$"):
        _one([], "live hold")
    with pytest.raises(HardStop) as caught:
        _one([{"id": 1}, {"reference": "BK-2"}, {"id": 0, "reference": "BK-3"}], "payment")
    assert caught.value.reason == "3 payments (1, BK-2, BK-3): which one is ambiguous"


def test_a_keyed_form_carries_the_provider_key_last() -> None:
    assert _keyed("/book", "") == "/book"
    assert _keyed("/book", "", date="2030-05-01") == "/book?date=2030-05-01"
    assert _keyed("/book", "k 1") == "/book?idempotency_key=k+1"
    assert (
        _keyed("/book", "k", date="2030-05-01", nights=2)
        == "/book?date=2030-05-01&nights=2&idempotency_key=k"
    )


# --- what each step's form must hold -------------------------------------------------------


def test_a_holds_form_must_hold_the_trip_and_the_provider_key() -> None:
    hold = HoldEffect("ana", TRIP, "hk")
    assert hold.kind == "hold"
    assert hold.payload() == {"user": "ana", **TRIP.fields(), "provider_key": "hk"}
    assert hold.expected() == {
        "sku": "harbor-double",
        "date": "2030-05-01",
        "nights": "2",
        "qty": "1",
        "client_ref": "trip-7@v2",
        "idempotency_key": "hk",
    }
    item = HoldEffect("ana", Trip("t@v1", "umbrella", qty=3))
    assert item.provider_key == ""
    assert item.expected() == {
        "sku": "umbrella",
        "date": "",
        "nights": "",
        "qty": "3",
        "client_ref": "t@v1",
        "idempotency_key": "",
    }


def test_a_payments_form_must_be_the_holds_within_the_ceiling() -> None:
    pay = PayEffect("ana", TRIP, "pk")
    assert pay.kind == "pay"
    assert pay.payload() == {"user": "ana", **TRIP.fields(), "provider_key": "pk"}
    assert pay.expected() == {"hold_id": "", "within_ceiling": True, "idempotency_key": "pk"}
    pay._hold = {"id": 12}
    assert pay.expected() == {"hold_id": "12", "within_ceiling": True, "idempotency_key": "pk"}


def test_a_bookings_form_must_be_the_authorizations() -> None:
    book = BookEffect("ana", TRIP, "bk")
    assert book.kind == "book"
    assert book.payload() == {"user": "ana", **TRIP.fields(), "provider_key": "bk"}
    assert book.expected() == {"payment_id": "", "client_ref": "trip-7@v2", "idempotency_key": "bk"}
    book._payment = {"id": 8}
    assert book.expected()["payment_id"] == "8"


def test_a_notification_needs_its_recipient_and_names_the_bookings_message() -> None:
    with pytest.raises(UsageError, match=r"^a notification needs the trip's recipient$"):
        NotifyEffect("ana", Trip("t@v1", "umbrella"))
    notify = NotifyEffect("ana", TRIP)
    assert notify.kind == "notify"
    assert notify.payload() == {"user": "ana", "ref": "trip-7@v2", "recipient": "ana@example.com"}
    notify._reference = "BK-42"
    assert notify.expected() == {
        "message_key": "BK-42-confirmation",
        "recipient": "ana@example.com",
    }


def test_the_undos_name_the_hold_or_payment_they_end() -> None:
    release = ReleaseHoldEffect("ana", TRIP)
    assert release.kind == "release"
    assert release.payload() == {"user": "ana", **TRIP.fields()}
    assert release.expected() == {"hold_id": "0"}
    release._hold_id = 5
    assert release.expected() == {"hold_id": "5"}
    void = VoidPaymentEffect("ana", TRIP)
    assert void.kind == "void"
    assert void.payload() == {"user": "ana", **TRIP.fields()}
    assert (void._form(), void.expected()) == ("void-form", {"payment_id": ""})
    void._payment = {"id": 3, "status": "authorized"}
    assert (void._form(), void.expected()) == ("void-form", {"payment_id": "3"})
    void._payment = {"id": 3, "status": "captured"}
    assert void._form() == "refund-form", "a captured payment is ended by a refund"


# --- booking_steps ------------------------------------------------------------------------


def test_money_is_cents_as_two_decimals() -> None:
    assert money_of(24000) == Decimal("240.00") and str(money_of(24000)) == "240.00"
    assert str(money_of(1)) == "0.01"
    assert str(money_of(12345)) == "123.45"
    assert str(money_of(0)) == "0.00"


def test_the_wire_of_a_perform_adds_every_submits_records() -> None:
    wire = _Wire()
    assert wire.details == {"wire": [], "sent": 0, "refused": 0, "submits": 0}
    wire.add({"wire": [{"outcome": 500}], "sent": 1, "refused": 2})
    wire.add(None)  # a submit that raised without evidence still counts as a submit
    wire.add({"wire": None, "sent": None, "refused": None})
    wire.add({"wire": [{"outcome": 303}], "sent": 1, "refused": 0})
    assert wire.details == {
        "wire": [{"outcome": 500}, {"outcome": 303}],
        "sent": 2,
        "refused": 2,
        "submits": 4,
    }


class _Bound:
    """A bound site effect whose perform follows a script (one entry per call)."""

    def __init__(self, session: _Scripted, site: Any) -> None:
        self.session, self.site = session, site

    def perform(self) -> dict[str, Any]:
        step = self.session.script.pop(0) if self.session.script else "ok"
        self.session.calls.append(("perform", self.site.kind))
        if step == "ok":
            return {"wire": [{"outcome": 303}], "sent": 1, "refused": 0}
        if step in ("500", "unknown"):
            exc = OutcomeUnknown(f"{step} answer")
            if step == "500":
                exc.__cause__ = ProviderBusy("server error")
            exc.details = {"wire": [{"outcome": 500}], "sent": 1, "refused": 0}  # type: ignore[attr-defined]
            raise exc
        if step == "bare":  # an error that carries no wire evidence
            raise OutcomeUnknown("no evidence")
        err = NotPerformed("no hold form (sold out?)")
        err.details = {"wire": [], "sent": 0, "refused": 1}  # type: ignore[attr-defined]
        raise err

    def verify(self) -> Any:
        self.session.calls.append(("verify", self.site.kind))
        return Absent()

    def evidence(self, label: str) -> str:
        self.session.calls.append(("evidence", label))
        return f"{self.site.kind}:{id(self)}"


class _Scripted:
    username = "ana"

    def __init__(self, *script: str) -> None:
        self.script = list(script)
        self.calls: list[tuple[str, str]] = []
        self.bound: list[_Bound] = []

    def effect(self, site: Any) -> _Bound:
        bound = _Bound(self, site)
        self.bound.append(bound)
        return bound


def _steps(session: _Scripted, **options: Any) -> tuple[Intent, list[Any]]:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    intent = ledger.intents.put(Intent("trip-7", "booking", user="ana"))
    options.setdefault("retry_backoff", 0)
    return intent, booking_steps(session, TRIP, intent, tenant="t", **options)  # type: ignore[arg-type]


def _key(effect: Any) -> str:
    return str(getattr(effect.key, "value", effect.key))


def test_the_four_steps_their_roles_undos_and_attempts() -> None:
    intent, steps = _steps(_Scripted(), pay_attempts=5, notify_attempts=7, notify_backoff=9.0)
    got = [
        (
            s.name,
            str(getattr(s.role, "value", s.role)),
            s.attempts,
            s.effect.kind,
            None if s.undo is None else s.undo.kind,
        )
        for s in steps
    ]
    assert got == [
        ("hold", "compensatable", 2, "hold", "release"),
        ("pay", "compensatable", 5, "pay", "void"),
        ("book", "pivot", 1, "book", None),
        ("notify", "retriable", 7, "notify", None),
    ]
    assert steps[3].backoff == 9.0
    for step in steps:
        assert step.effect.policy == BOOKING_POLICY, step.name
        want = intent_key(intent.ref, step.name, tenant="t", actor="ana").value
        assert _key(step.effect) == want, f"{step.name}'s key is the intent version's"
    for step, undo in ((steps[0], "release"), (steps[1], "void")):
        assert step.undo is not None
        assert _key(step.undo) == intent_key(intent.ref, undo, tenant="t", actor="ana").value
        assert step.undo.gate is None and step.undo.policy == BOOKING_POLICY
        assert step.undo.payload == {"user": "ana", **TRIP.fields()}
    assert steps[3].effect.payload == {
        "user": "ana",
        "ref": "trip-7@v2",
        "recipient": "ana@example.com",
    }


def test_the_default_attempts_of_pay_and_notify() -> None:
    _, steps = _steps(_Scripted())
    assert [s.attempts for s in steps] == [2, 2, 1, 3]
    assert steps[3].backoff == 30.0


def test_every_step_is_gated_by_the_intent_version_and_pay_by_its_approval() -> None:
    intent, steps = _steps(_Scripted())
    for step in steps:
        assert step.effect.gate is not None and step.effect.gate.intent == intent.ref
        assert step.effect.gate.approval is None and step.effect.gate.amount is None
        assert step.effect.refresh is None, "without an approval nothing is refreshed"
    _, steps = _steps(_Scripted(), approval="packet-9", amount=Decimal("240.00"))
    pay = steps[1].effect
    assert pay.gate is not None
    assert (pay.gate.intent, pay.gate.approval, pay.gate.amount) == (
        intent.ref,
        "packet-9",
        Decimal("240.00"),
    )
    assert pay.refresh is not None, "an approved payment refreshes its total before the claim"
    for step in (steps[0], steps[2], steps[3]):
        assert step.effect.gate is not None and step.effect.gate.approval is None
        assert step.effect.refresh is None


def test_a_perform_returns_its_submits_wire() -> None:
    session = _Scripted("ok")
    _, steps = _steps(session)
    assert steps[0].effect.perform() == {
        "wire": [{"outcome": 303}],
        "sent": 1,
        "refused": 0,
        "submits": 1,
    }
    assert session.calls == [("perform", "hold")]


def test_a_5xx_is_resent_until_the_attempts_run_out_then_is_unknown() -> None:
    session = _Scripted("500", "500", "500", "ok")
    _, steps = _steps(session)  # provider_retries=3 by default
    with pytest.raises(OutcomeUnknown, match=r"^500 answer$") as caught:
        steps[2].effect.perform()
    assert session.calls == [("perform", "book")] * 3
    assert caught.value.details == {  # type: ignore[attr-defined]
        "wire": [{"outcome": 500}] * 3,
        "sent": 3,
        "refused": 0,
        "submits": 3,
    }


def test_a_resent_5xx_that_then_succeeds_returns_every_submits_wire() -> None:
    session = _Scripted("500", "ok")
    _, steps = _steps(session, provider_retries=2)
    assert steps[1].effect.perform() == {
        "wire": [{"outcome": 500}, {"outcome": 303}],
        "sent": 2,
        "refused": 0,
        "submits": 2,
    }
    assert len(session.bound) == 2, "each submit is a new bound effect (a perform runs once)"


def test_an_unknown_outcome_without_a_server_error_is_never_resent() -> None:
    session = _Scripted("unknown", "ok")
    _, steps = _steps(session)
    with pytest.raises(OutcomeUnknown, match=r"^unknown answer$") as caught:
        steps[0].effect.perform()
    assert session.calls == [("perform", "hold")]
    assert caught.value.details["submits"] == 1  # type: ignore[attr-defined]


def test_with_one_provider_attempt_a_5xx_is_unknown_at_once() -> None:
    session = _Scripted("500", "ok")
    _, steps = _steps(session, provider_retries=1)
    with pytest.raises(OutcomeUnknown) as caught:
        steps[0].effect.perform()
    assert isinstance(caught.value.__cause__, ProviderBusy)
    assert caught.value.details == {  # type: ignore[attr-defined]
        "wire": [{"outcome": 500}],
        "sent": 1,
        "refused": 0,
        "submits": 1,
    }


def test_the_notification_is_never_resent_by_the_provider_retry() -> None:
    session = _Scripted("500", "ok")
    _, steps = _steps(session)
    with pytest.raises(OutcomeUnknown):
        steps[3].effect.perform()
    assert session.calls == [("perform", "notify")]


def test_an_error_without_evidence_still_counts_its_submit() -> None:
    session = _Scripted("bare")
    _, steps = _steps(session)
    with pytest.raises(OutcomeUnknown) as caught:
        steps[0].effect.perform()
    assert caught.value.details == {"wire": [], "sent": 0, "refused": 0, "submits": 1}  # type: ignore[attr-defined]


def test_a_first_attempt_stopped_before_its_click_is_a_proven_failure() -> None:
    session = _Scripted("before-click")
    _, steps = _steps(session)
    with pytest.raises(NotPerformed, match=r"^no hold form \(sold out\?\)$") as caught:
        steps[0].effect.perform()
    assert caught.value.details == {"wire": [], "sent": 0, "refused": 1, "submits": 1}  # type: ignore[attr-defined]


def test_a_resend_stopped_before_its_click_is_unknown_and_says_why() -> None:
    session = _Scripted("500", "before-click")
    _, steps = _steps(session)
    with pytest.raises(OutcomeUnknown) as caught:
        steps[1].effect.perform()
    assert not isinstance(caught.value, CoreNotPerformed)
    assert str(caught.value) == (
        "pay: a resend stopped before its click after an earlier submit got a server error: "
        "no hold form (sold out?)"
    )
    assert isinstance(caught.value.__cause__, NotPerformed)
    assert caught.value.details == {  # type: ignore[attr-defined]
        "wire": [{"outcome": 500}],
        "sent": 1,
        "refused": 1,
        "submits": 2,
    }


def test_verify_and_evidence_go_to_the_last_submit_or_a_fresh_binding() -> None:
    session = _Scripted("ok")
    _, steps = _steps(session)
    hold = steps[0].effect
    assert hold.verify() == Absent()
    fresh = hold.evidence("before")  # nothing performed yet: a fresh binding's evidence
    hold.perform()
    performed = session.bound[-1]
    assert hold.evidence("after") == f"hold:{id(performed)}"
    assert fresh != f"hold:{id(performed)}"
    assert session.calls == [
        ("verify", "hold"),
        ("evidence", "before"),
        ("perform", "hold"),
        ("evidence", "after"),
    ]


def test_the_booking_operation_carries_the_approval_and_every_option() -> None:
    from actonce.browser import booking_operation

    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    intent = ledger.intents.put(Intent("trip-7", "booking", user="ana"))
    op = booking_operation(
        ledger,
        _Scripted(),
        TRIP,
        intent.ref,
        tenant="t",  # type: ignore[arg-type]
        approval="packet-2",
        amount=Decimal("240.00"),
        pay_attempts=4,
        notify_attempts=5,
    )
    plan = op.plan
    assert (plan.op_id, plan.intent, plan.approval) == ("booking:trip-7@v1", intent.ref, "packet-2")
    assert [s.max_attempts for s in plan.steps] == [2, 4, 1, 5]
    gate = plan.steps[1].plan.gate
    assert gate is not None and (gate.approval, gate.amount) == ("packet-2", Decimal("240.00"))
    assert plan.steps[1].plan.has_refresh, "an approved payment refreshes its total"
    assert plan.steps[0].plan.scope == (
        '{"actor":"ana","intent_version":1,"kind":"hold","object":"trip-7",'
        '"operation":"commit","tenant":"t"}'
    )
