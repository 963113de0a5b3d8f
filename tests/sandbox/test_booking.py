"""The booking world over real HTTP: holds, payments, bookings, messages, faults.

Every test reads the world's own ground truth (``/admin/booking/ground-truth``)
rather than trusting the answers it got; hold expiry is driven by the world's
clock (``/admin/booking/clock``), never by sleeping.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from actonce.sandbox import ACTIONS, SEED_USERS, BookingDB, Fault, Refused

DATE = "2030-05-01"

Api = Callable[..., httpx.Client]


def truth(base: str) -> dict[str, Any]:
    data: dict[str, Any] = httpx.get(base + "/admin/booking/ground-truth").json()
    return data


def counts(base: str) -> dict[str, int]:
    data: dict[str, int] = httpx.get(base + "/admin/requests").json()["counts"]
    return data


def advance(base: str, seconds: float) -> dict[str, float]:
    r = httpx.post(base + "/admin/booking/clock", json={"advance": seconds})
    r.raise_for_status()
    data: dict[str, float] = r.json()
    return data


def whoami(html: str) -> str:
    m = re.search(r'data-testid="whoami">([^<]*)<', html)
    assert m is not None
    return m.group(1)


def available(base: str, sku: str, date: str = DATE, nights: int = 1) -> int:
    r = httpx.get(base + "/api/book/offers", params={"date": date, "nights": nights})
    r.raise_for_status()
    [offer] = [o for o in r.json()["offers"] if o["sku"] == sku]
    return int(offer["available"])


@pytest.fixture
def api(base: str) -> Iterator[Api]:
    """``api(user="alice")``: a JSON client with Basic auth."""
    made: list[httpx.Client] = []

    def make(user: str = "alice") -> httpx.Client:
        client = httpx.Client(base_url=base, auth=(user, SEED_USERS[user]), timeout=10)
        made.append(client)
        return client

    yield make
    for c in made:
        c.close()


def hold(c: httpx.Client, sku: str = "harbor-double", **body: Any) -> dict[str, Any]:
    body.setdefault("date", DATE)
    r = c.post("/api/book/holds", json={"sku": sku, **body})
    assert r.status_code == 201, r.text
    data: dict[str, Any] = r.json()
    return data


def pay(c: httpx.Client, h: dict[str, Any], **headers: str) -> dict[str, Any]:
    r = c.post(
        "/api/book/payments", json={"hold_id": h["id"], "amount": h["amount"]}, headers=headers
    )
    assert r.status_code == 201, r.text
    data: dict[str, Any] = r.json()
    return data


def book(c: httpx.Client, h: dict[str, Any], p: dict[str, Any]) -> httpx.Response:
    return c.post("/api/book/bookings", json={"hold_id": h["id"], "payment_id": p["id"]})


def send(c: httpx.Client, key: str, body: str = "Booked.", **extra: Any) -> httpx.Response:
    return c.post(
        "/api/book/messages",
        json={"message_key": key, "recipient": "+15550100", "body": body, **extra},
    )


# -- operations and their ground truth ------------------------------------


def test_hold_pay_book_notify_and_every_lookup(base: str, api: Api) -> None:
    alice = api("alice")
    h = hold(alice, nights=2, client_ref="trip-7")
    assert (h["status"], h["amount"], h["nights"]) == ("held", 24000, 2)
    assert 599 < h["expires_in"] <= 600
    p = pay(alice, h)
    assert (p["status"], p["amount"], p["hold_id"]) == ("authorized", 24000, h["id"])
    r = book(alice, h, p)
    assert r.status_code == 201, r.text
    b = r.json()
    assert b["reference"] == "BK-1001" and b["amount"] == 24000 and b["nights"] == 2
    m = send(alice, "BK-1001-confirmation", booking_ref="BK-1001")
    assert m.status_code == 202 and m.json()["accepted"] is True

    # Lookups a verifier uses: by hold id, payment id, reference, message key.
    assert alice.get(f"/api/book/holds/{h['id']}").json()["status"] == "booked"
    assert alice.get(f"/api/book/payments/{p['id']}").json()["status"] == "captured"
    assert alice.get("/api/book/bookings/BK-1001").json()["payment_id"] == p["id"]
    msg = alice.get("/api/book/messages/BK-1001-confirmation").json()
    assert (msg["status"], msg["delivered"], msg["attempts"]) == ("delivered", True, 1)
    assert [
        x["id"] for x in alice.get("/api/book/holds", params={"client_ref": "trip-7"}).json()
    ] == [h["id"]]
    assert [
        x["reference"] for x in alice.get("/api/book/bookings", params={"hold_id": h["id"]}).json()
    ] == ["BK-1001"]
    assert len(alice.get("/api/book/messages").json()) == 1

    gt = truth(base)
    assert gt["totals"] == {
        "holds": 1,
        "authorizations": 1,
        "authorized_amount": 24000,
        "standing_amount": 24000,
        "captured_amount": 24000,
        "voids": 0,
        "refunds": 0,
        "bookings": 1,
        "messages": 1,
        "deliveries": 1,
        "message_attempts": 1,
    }
    assert gt["bookings"] == [
        {
            "key": {"user": "alice", "sku": "harbor-double", "date": DATE},
            "count": 1,
            "ids": [1],
            "references": ["BK-1001"],
            "amount": 24000,
            "statuses": {"confirmed": 1, "cancelled": 0},
        }
    ]
    assert gt["duplicates"] == [] and gt["open_authorizations"] == []
    nights = {(i["sku"], i["date"]): i for i in gt["inventory"]}
    assert nights["harbor-double", "2030-05-02"]["booked"] == 1
    assert nights["harbor-double", "2030-05-02"]["available"] == 1


def test_holds_reserve_inventory_per_night_and_stock(base: str, api: Api) -> None:
    alice, bob = api("alice"), api("bob")
    assert available(base, "harbor-double") == 2
    hold(alice, qty=2, nights=2)  # both rooms, 05-01 and 05-02
    assert available(base, "harbor-double") == 0
    assert available(base, "harbor-double", "2030-05-02") == 0
    assert available(base, "harbor-double", "2030-05-03") == 2
    r = bob.post("/api/book/holds", json={"sku": "harbor-double", "date": "2030-05-02"})
    assert r.status_code == 409 and r.json()["error"] == "sold_out"
    # A stay that only overlaps one held night is sold out too.
    r = bob.post(
        "/api/book/holds", json={"sku": "harbor-double", "date": "2030-04-30", "nights": 3}
    )
    assert r.json()["error"] == "sold_out"
    hold(bob, date="2030-05-03")
    hold(bob, "guidebook", date="")  # one in stock
    r = bob.post("/api/book/holds", json={"sku": "guidebook"})
    assert r.status_code == 409 and r.json()["available"] == 0
    assert bob.post("/api/book/holds", json={"sku": "nope"}).status_code == 404
    assert bob.post("/api/book/holds", json={"sku": "harbor-double"}).status_code == 400
    bad = bob.post("/api/book/holds", json={"sku": "harbor-double", "date": "05/01/2030"})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid"
    assert truth(base)["totals"]["holds"] == 3  # refusals created nothing


def test_a_hold_expires_on_the_world_clock_and_frees_its_inventory(base: str, api: Api) -> None:
    alice = api("alice")
    h = hold(alice, "guidebook", date="", seconds=60)
    assert available(base, "guidebook", "") == 0
    advance(base, 59)
    assert alice.get(f"/api/book/holds/{h['id']}").json()["status"] == "held"
    clock = advance(base, 1)
    assert clock["offset"] == 60
    got = alice.get(f"/api/book/holds/{h['id']}").json()
    assert got["status"] == "expired" and got["expires_in"] == 0
    assert available(base, "guidebook", "") == 1
    r = alice.post("/api/book/payments", json={"hold_id": h["id"], "amount": h["amount"]})
    assert r.status_code == 409 and r.json()["error"] == "hold_expired"
    gt = truth(base)
    assert gt["holds"][0]["statuses"]["expired"] == 1 and gt["totals"]["authorizations"] == 0
    # Expired after the authorization: the booking is refused, the money stands.
    h2 = hold(alice, "guidebook", date="", seconds=60)
    p2 = pay(alice, h2)
    advance(base, 61)
    r = book(alice, h2, p2)
    assert r.status_code == 409 and r.json()["error"] == "hold_expired"
    assert [a["id"] for a in truth(base)["open_authorizations"]] == [p2["id"]]
    # /admin/reset puts the clock back.
    httpx.post(base + "/admin/reset").raise_for_status()
    assert httpx.get(base + "/admin/booking/clock").json()["offset"] == 0


def test_clock_only_moves_forward(base: str) -> None:
    for bad in ({"advance": -1}, {"advance": "x"}, {"set": 3}, [1]):
        assert httpx.post(base + "/admin/booking/clock", json=bad).status_code == 422
    assert httpx.get(base + "/admin/booking/clock").json()["offset"] == 0


def test_release_frees_a_hold_once(base: str, api: Api) -> None:
    alice = api("alice")
    h = hold(alice, "adapter", date="", qty=2)
    assert available(base, "adapter", "") == 0
    r = alice.post(f"/api/book/holds/{h['id']}/release")
    assert r.status_code == 200 and r.json()["status"] == "released"
    assert "idempotent-replayed" not in r.headers
    again = alice.post(f"/api/book/holds/{h['id']}/release")
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert available(base, "adapter", "") == 2
    r = alice.post("/api/book/payments", json={"hold_id": h["id"], "amount": h["amount"]})
    assert r.status_code == 409 and r.json()["error"] == "hold_not_active"
    h2 = hold(alice, "adapter", date="")
    book(alice, h2, pay(alice, h2))
    assert alice.post(f"/api/book/holds/{h2['id']}/release").status_code == 409


def test_payment_idempotency_key_replays_and_refuses_other_parameters(base: str, api: Api) -> None:
    alice, bob = api("alice"), api("bob")
    h = hold(alice)
    body = {"hold_id": h["id"], "amount": h["amount"]}
    first = alice.post("/api/book/payments", json=body, headers={"Idempotency-Key": "pay-1"})
    assert first.status_code == 201 and "idempotent-replayed" not in first.headers
    again = alice.post("/api/book/payments", json=body, headers={"Idempotency-Key": "pay-1"})
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json()
    other = alice.post(
        "/api/book/payments",
        json={**body, "client_ref": "changed"},
        headers={"Idempotency-Key": "pay-1"},
    )
    assert other.status_code == 422 and other.json()["error"] == "idempotency_mismatch"
    # A key belongs to its user: bob's "pay-1" is his own (and his hold is his).
    hb = hold(bob, "umbrella", date="")
    theirs = bob.post(
        "/api/book/payments",
        json={"hold_id": hb["id"], "amount": hb["amount"]},
        headers={"Idempotency-Key": "pay-1"},
    )
    assert theirs.status_code == 201 and theirs.json()["id"] != first.json()["id"]
    # Lookup by idempotency key (what a verifier asks after a lost answer).
    found = alice.get("/api/book/payments", params={"idempotency_key": "pay-1"}).json()
    assert [p["id"] for p in found] == [first.json()["id"]]
    assert alice.get("/api/book/payments", params={"idempotency_key": "nope"}).json() == []
    gt = truth(base)
    assert gt["totals"]["authorizations"] == 2 and gt["duplicates"] == []


def test_hold_and_booking_idempotency_keys(base: str, api: Api) -> None:
    alice = api("alice")
    body = {"sku": "alpine-single", "date": DATE, "nights": 3}
    key = {"Idempotency-Key": "hold-1"}
    h = alice.post("/api/book/holds", json=body, headers=key)
    assert h.status_code == 201
    replay = alice.post("/api/book/holds", json=body, headers=key)
    assert replay.status_code == 200 and replay.json()["id"] == h.json()["id"]
    assert alice.post("/api/book/holds", json={**body, "nights": 2}, headers=key).status_code == 422
    assert [
        x["id"] for x in alice.get("/api/book/holds", params={"idempotency_key": "hold-1"}).json()
    ] == [h.json()["id"]]
    p = pay(alice, h.json())
    bbody = {"hold_id": h.json()["id"], "payment_id": p["id"]}
    b = alice.post("/api/book/bookings", json=bbody, headers={"Idempotency-Key": "book-1"})
    assert b.status_code == 201
    b2 = alice.post("/api/book/bookings", json=bbody, headers={"Idempotency-Key": "book-1"})
    assert b2.status_code == 200 and b2.headers["idempotent-replayed"] == "true"
    assert b2.json()["reference"] == b.json()["reference"]
    # Without the key the same request is refused by the provider's own rule.
    b3 = alice.post("/api/book/bookings", json=bbody)
    assert b3.status_code == 409 and b3.json()["error"] == "already_booked"
    assert b3.json()["reference"] == b.json()["reference"]
    found = alice.get("/api/book/bookings", params={"idempotency_key": "book-1"}).json()
    assert [x["reference"] for x in found] == [b.json()["reference"]]
    assert truth(base)["totals"]["bookings"] == 1 and truth(base)["totals"]["holds"] == 1


def test_two_authorizations_for_one_intent_are_a_duplicate(base: str, api: Api) -> None:
    alice = api("alice")
    h = hold(alice)
    p1, p2 = pay(alice, h), pay(alice, h)  # no key: the provider takes both
    gt = truth(base)
    [dup] = gt["duplicates"]
    assert dup["kind"] == "authorizations" and dup["count"] == 2
    assert dup["key"] == {"user": "alice", "sku": "harbor-double", "date": DATE}
    assert dup["ids"] == [p1["id"], p2["id"]] and dup["amount"] == 24000 and dup["standing"] == 2
    assert alice.post(f"/api/book/payments/{p2['id']}/void").json()["status"] == "voided"
    gt = truth(base)
    [dup] = gt["duplicates"]
    assert dup["standing"] == 1 and dup["statuses"]["voided"] == 1  # compensated, still seen
    assert gt["voids"] == [
        {
            "key": {"payment_id": p2["id"]},
            "count": 1,
            "ids": [1],
            "kinds": ["void"],
            "amount": 12000,
        }
    ]
    assert gt["totals"]["standing_amount"] == 12000 and gt["totals"]["authorized_amount"] == 24000


def test_void_and_refund(base: str, api: Api) -> None:
    alice = api("alice")
    h = hold(alice, "umbrella", date="")
    p = pay(alice, h)
    v = alice.post(f"/api/book/payments/{p['id']}/void")
    assert v.status_code == 200 and v.json()["status"] == "voided"
    again = alice.post(f"/api/book/payments/{p['id']}/void")
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert alice.post(f"/api/book/payments/{p['id']}/refund").json()["error"] == "not_refundable"
    r = book(alice, h, p)
    assert r.status_code == 409 and r.json()["error"] == "payment_not_authorized"
    p2 = pay(alice, h)
    b = book(alice, h, p2).json()
    assert available(base, "umbrella", "") == 4
    void_captured = alice.post(f"/api/book/payments/{p2['id']}/void")
    assert void_captured.status_code == 409 and "refund" in void_captured.json()["message"]
    refund = alice.post(f"/api/book/payments/{p2['id']}/refund")
    assert refund.status_code == 200 and refund.json()["status"] == "refunded"
    assert alice.get(f"/api/book/bookings/{b['reference']}").json()["status"] == "cancelled"
    assert available(base, "umbrella", "") == 5  # the cancelled booking frees its unit
    totals = truth(base)["totals"]
    assert (totals["voids"], totals["refunds"], totals["captured_amount"]) == (1, 1, 0)


def test_ending_a_payment_the_wrong_way_names_the_right_one(base: str, api: Api) -> None:
    alice = api("alice")
    h = hold(alice, "umbrella", date="")
    p = pay(alice, h)
    refund = alice.post(f"/api/book/payments/{p['id']}/refund")
    assert refund.status_code == 409
    assert refund.json()["message"] == "the payment is authorized: void it instead"
    book(alice, h, p)
    void = alice.post(f"/api/book/payments/{p['id']}/void")
    assert void.status_code == 409
    assert void.json()["message"] == "the payment is captured: refund it instead"


def test_api_needs_auth_and_shows_only_your_own(base: str, api: Api, alice: httpx.Client) -> None:
    h = hold(api("alice"))
    assert httpx.post(base + "/api/book/holds", json={"sku": "umbrella"}).status_code == 401
    assert httpx.get(base + f"/api/book/holds/{h['id']}").status_code == 401
    bob = api("bob")
    assert bob.get(f"/api/book/holds/{h['id']}").status_code == 404
    r = bob.post("/api/book/payments", json={"hold_id": h["id"], "amount": h["amount"]})
    assert r.status_code == 404
    assert bob.get("/api/book/holds").json() == []
    # The session cookie works as well as Basic auth.
    assert alice.get(f"/api/book/holds/{h['id']}").json()["id"] == h["id"]
    assert bob.post("/api/book/holds", content=b"not json").status_code == 400
    assert httpx.get(base + "/api/book/offers").status_code == 200  # offers are public


def test_booking_db_in_process_with_a_clock_function() -> None:
    now = [1_000.0]
    db = BookingDB(clock=lambda: now[0])
    made = db.create_hold("alice", "harbor-suite", date=DATE, seconds=30)
    assert db.available("harbor-suite", DATE) == 0
    now[0] += 30
    hold_now = db.hold(made.id)
    assert hold_now is not None and hold_now.status == "expired"
    assert db.available("harbor-suite", DATE) == 1
    with pytest.raises(Refused) as info:
        db.authorize("alice", made.id, 26000)
    assert info.value.code == "hold_expired"
    db.close()


# -- the HTML pages ---------------------------------------------------------


def test_pages_book_through_the_forms(base: str, alice: httpx.Client) -> None:
    offers = alice.get("/book", params={"date": DATE, "nights": "2"})
    assert offers.status_code == 200 and whoami(offers.text) == "alice"
    assert offers.text.count('data-testid="offer"') == 6
    assert (
        'data-sku="harbor-double" data-kind="room" data-price="12000" data-total="24000"'
        in offers.text
    )
    r = alice.post(
        "/book/holds",
        data={
            "sku": "harbor-double",
            "date": DATE,
            "nights": "2",
            "quoted_price": "12000",
            "qty": "1",
            "client_ref": "trip-9",
        },
    )
    assert r.status_code == 303 and r.headers["location"] == "/book/holds/1"
    page = alice.get("/book/holds/1").text
    assert 'data-status="held"' in page and whoami(page) == "alice"
    form = alice.get("/book/holds/1/pay").text
    assert 'name="amount" value="24000"' in form and 'data-testid="pay-form"' in form
    r = alice.post(
        "/book/holds/1/pay", data={"hold_id": "1", "amount": "24000", "client_ref": "trip-9"}
    )
    assert r.status_code == 303 and r.headers["location"] == "/book/payments/1"
    payment = alice.get("/book/payments/1").text
    assert 'data-status="authorized"' in payment and "Confirm booking" in payment
    r = alice.post(
        "/book/bookings", data={"hold_id": "1", "payment_id": "1", "client_ref": "trip-9"}
    )
    assert r.status_code == 303 and r.headers["location"] == "/book/bookings/BK-1001"
    confirmation = alice.get("/book/bookings/BK-1001").text
    assert 'data-reference="BK-1001" data-status="confirmed"' in confirmation
    assert 'name="message_key" value="BK-1001-confirmation"' in confirmation
    r = alice.post(
        "/book/messages",
        data={
            "message_key": "BK-1001-confirmation",
            "booking_ref": "BK-1001",
            "recipient": "alice@example.test",
            "body": "Booked.",
        },
    )
    assert r.status_code == 303 and r.headers["location"] == "/book/outbox"
    outbox = alice.get("/book/outbox").text
    assert (
        'data-message-key="BK-1001-confirmation" data-recipient="alice@example.test" data-status="delivered"'
        in outbox
    )
    mine = alice.get("/book/mine").text
    assert 'data-testid="booking-row" data-reference="BK-1001"' in mine and whoami(mine) == "alice"
    # Someone else's objects are not found; signed-out visitors go to the login.
    assert alice.get("/book/bookings/BK-9999").status_code == 404
    with httpx.Client(base_url=base) as anon:
        r = anon.get("/book/mine")
        assert r.status_code == 303 and r.headers["location"].startswith("/login")
        assert anon.post("/book/holds", data={"sku": "umbrella"}).status_code == 401
    gt = truth(base)
    assert gt["totals"]["bookings"] == 1 and gt["totals"]["deliveries"] == 1
    assert gt["duplicates"] == []


def test_pages_refuse_what_the_provider_refuses(base: str, alice: httpx.Client) -> None:
    r = alice.post("/book/holds", data={"sku": "guidebook", "qty": "2"})
    assert r.status_code == 400 and 'data-code="invalid"' in r.text
    alice.post("/book/holds", data={"sku": "guidebook"})
    sold = alice.post("/book/holds", data={"sku": "guidebook"})
    assert sold.status_code == 409 and 'data-code="sold_out"' in sold.text
    assert 'data-testid="sold-out"' in alice.get("/book").text
    assert alice.get("/book", params={"date": "never"}).status_code == 400


# -- faults -------------------------------------------------------------------


def _raw(base: str, user: str = "alice") -> tuple[http.client.HTTPConnection, dict[str, str]]:
    """A keep-alive connection that already served one GET, and auth headers."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    token = base64.b64encode(f"{user}:{SEED_USERS[user]}".encode()).decode()
    headers = {"Authorization": f"Basic {token}", "Content-Type": "application/json"}
    conn.request("GET", "/api/book/offers", headers=headers)
    answer = conn.getresponse()
    assert answer.status == 200
    answer.read()
    return conn, headers


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("headers", http.client.IncompleteRead),
        ("close", http.client.RemoteDisconnected),
        ("reset", ConnectionResetError),
    ],
)
def test_lost_payment_answer_commits_and_replays_by_key(
    set_faults: Any, base: str, api: Api, mode: str, error: type[Exception]
) -> None:
    h = hold(api("alice"))
    set_faults(base, {"action": "booking.pay", "fault": "lost_response", "mode": mode, "times": 1})
    conn, headers = _raw(base)
    body = json.dumps({"hold_id": h["id"], "amount": h["amount"]})
    conn.request(
        "POST", "/api/book/payments", body=body, headers={**headers, "Idempotency-Key": "k"}
    )
    with pytest.raises(error):  # close/reset: not one byte of a status line came
        conn.getresponse().read()
    conn.close()
    gt = truth(base)
    assert gt["totals"]["authorizations"] == 1  # committed although the answer was lost
    logged = [
        r
        for r in httpx.get(base + "/admin/requests").json()["requests"]
        if r["action"] == "booking.pay"
    ]
    assert [(r["faults"], r["lost_mode"], r["on_connection"]) for r in logged] == [
        (["lost_response"], mode, 2)
    ]
    retry = api("alice").post(
        "/api/book/payments",
        content=body,
        headers={"Idempotency-Key": "k", "Content-Type": "application/json"},
    )
    assert retry.status_code == 200 and retry.headers["idempotent-replayed"] == "true"
    assert retry.json()["id"] == gt["authorizations"][0]["ids"][0]
    assert truth(base)["totals"]["authorizations"] == 1


@pytest.mark.parametrize(
    "action",
    [
        "booking.hold",
        "booking.pay",
        "booking.book",
        "booking.message",
        "booking.void",
        "booking.release",
    ],
)
def test_every_operation_commits_before_its_answer_is_lost(
    set_faults: Any, base: str, api: Api, action: str
) -> None:
    alice = api("alice")
    h = hold(alice, "umbrella", date="")
    p = pay(alice, h) if action in ("booking.book", "booking.void") else None
    set_faults(base, {"action": action, "fault": "lost_response", "times": 1})
    with pytest.raises(httpx.RemoteProtocolError):
        if action == "booking.hold":
            alice.post("/api/book/holds", json={"sku": "umbrella"})
        elif action == "booking.pay":
            alice.post("/api/book/payments", json={"hold_id": h["id"], "amount": h["amount"]})
        elif action == "booking.book":
            assert p is not None
            book(alice, h, p)
        elif action == "booking.message":
            send(alice, "m-1")
        elif action == "booking.void":
            assert p is not None
            alice.post(f"/api/book/payments/{p['id']}/void")
        else:
            alice.post(f"/api/book/holds/{h['id']}/release")
    t = truth(base)["totals"]
    committed = {
        "booking.hold": t["holds"] == 2,
        "booking.pay": t["authorizations"] == 1,
        "booking.book": t["bookings"] == 1,
        "booking.message": t["deliveries"] == 1,
        "booking.void": t["voids"] == 1,
        "booking.release": truth(base)["holds"][0]["statuses"]["released"] == 1,
    }
    assert committed[action], t


def test_slow_confirmation_commits_before_the_client_gives_up(
    set_faults: Any, base: str, api: Api
) -> None:
    alice = api("alice")
    h = hold(alice)
    p = pay(alice, h)
    set_faults(base, {"action": "booking.book", "fault": "slow_response", "seconds": 3})
    with pytest.raises(httpx.ReadTimeout):
        alice.post(
            "/api/book/bookings", json={"hold_id": h["id"], "payment_id": p["id"]}, timeout=0.5
        )
    assert [b["reference"] for b in alice.get("/api/book/bookings").json()] == ["BK-1001"]


def test_500_before_and_after_commit(set_faults: Any, base: str, api: Api) -> None:
    alice = api("alice")
    h = hold(alice)
    set_faults(
        base,
        {"action": "booking.pay", "fault": "error_before_commit", "times": 1},
        {
            "action": "booking.pay",
            "fault": "error_after_commit",
            "times": 1,
            "match": {"client_ref": "after"},
        },
    )
    before = alice.post("/api/book/payments", json={"hold_id": h["id"], "amount": h["amount"]})
    assert before.status_code == 500 and truth(base)["totals"]["authorizations"] == 0
    after = alice.post(
        "/api/book/payments",
        json={"hold_id": h["id"], "amount": h["amount"], "client_ref": "after"},
    )
    assert after.status_code == 500 and after.json()["error"] == "server_error"
    assert [p["client_ref"] for p in alice.get("/api/book/payments").json()] == ["after"]


def test_price_change_between_offer_and_payment(
    set_faults: Any, base: str, api: Api, alice: httpx.Client
) -> None:
    c = api("alice")
    h = hold(c, nights=2)
    set_faults(base, {"action": "booking.pay", "fault": "price_change", "amount": 700, "times": 1})
    r = c.post("/api/book/payments", json={"hold_id": h["id"], "amount": h["amount"]})
    assert r.status_code == 409
    assert r.json() | {"message": ""} == {
        "error": "price_changed",
        "message": "",
        "hold_id": h["id"],
        "amount": 24000,
        "total": 25400,
        "unit_price": 12700,
    }
    assert truth(base)["totals"]["authorizations"] == 0
    assert c.get(f"/api/book/holds/{h['id']}").json()["amount"] == 25400
    assert pay(c, {**h, "amount": 25400})["amount"] == 25400  # a new approval, a new total
    # In the pages: the pay form comes back with the refreshed total.
    h2 = hold(c, "alpine-single")
    set_faults(base, {"action": "booking.pay", "fault": "price_change", "amount": 500, "times": 1})
    page = alice.post(
        f"/book/holds/{h2['id']}/pay", data={"hold_id": str(h2["id"]), "amount": "8000"}
    )
    assert page.status_code == 409 and 'data-testid="price-changed"' in page.text
    assert 'name="amount" value="8500"' in page.text
    # At the offer: a hold quoted at the old unit price is refused as well.
    set_faults(base, {"action": "booking.hold", "fault": "price_change", "amount": 100, "times": 1})
    r = c.post("/api/book/holds", json={"sku": "umbrella", "quoted_price": 1500})
    assert r.status_code == 409 and r.json()["price"] == 1600
    assert truth(base)["totals"]["authorizations"] == 1


def test_session_expiry_at_commit_commits_nothing(
    set_faults: Any, base: str, api: Api, alice: httpx.Client
) -> None:
    h = hold(api("alice"))
    p = pay(api("alice"), h)
    set_faults(base, {"action": "booking.book", "fault": "session_expired", "times": 1})
    r = alice.post("/book/bookings", data={"hold_id": str(h["id"]), "payment_id": str(p["id"])})
    assert r.status_code == 401 and 'data-testid="login-form"' in r.text
    assert whoami(r.text) == ""
    assert alice.get("/book/mine").status_code == 303  # the session is really gone
    gt = truth(base)
    assert gt["totals"]["bookings"] == 0 and [a["id"] for a in gt["open_authorizations"]] == [
        p["id"]
    ]
    # The JSON API answers the same fault with a 401 and nothing committed.
    set_faults(base, {"action": "booking.pay", "fault": "session_expired", "times": 1})
    r = api("alice").post("/api/book/payments", json={"hold_id": h["id"], "amount": h["amount"]})
    assert r.status_code == 401 and r.json()["error"] == "session_expired"
    assert truth(base)["totals"]["authorizations"] == 1


def test_booking_fails_after_payment_leaves_an_authorization_without_booking(
    set_faults: Any, base: str, api: Api
) -> None:
    alice = api("alice")
    h = hold(alice, qty=2)
    p = pay(alice, h)
    set_faults(base, {"action": "booking.book", "fault": "booking_failed", "times": 1})
    r = book(alice, h, p)
    assert r.status_code == 409
    assert r.json()["error"] == "booking_failed" and r.json()["payment_status"] == "authorized"
    gt = truth(base)
    assert gt["totals"]["bookings"] == 0 and gt["bookings"] == []
    assert gt["open_authorizations"] == [
        {
            "id": p["id"],
            "user": "alice",
            "hold_id": h["id"],
            "amount": 24000,
            "hold_status": "rejected",
        }
    ]
    assert gt["totals"]["standing_amount"] == 24000
    assert available(base, "harbor-double") == 2  # the rejected hold freed its rooms
    # Retrying the booking does not help: the hold is gone; compensation does.
    assert book(alice, h, p).json()["error"] == "hold_not_active"
    assert alice.post(f"/api/book/payments/{p['id']}/void").json()["status"] == "voided"
    gt = truth(base)
    assert gt["open_authorizations"] == [] and gt["totals"]["voids"] == 1


def test_booking_failed_in_the_pages(
    set_faults: Any, base: str, api: Api, alice: httpx.Client
) -> None:
    h = hold(api("alice"))
    p = pay(api("alice"), h)
    set_faults(base, {"action": "booking.book", "fault": "booking_failed"})
    r = alice.post("/book/bookings", data={"hold_id": str(h["id"]), "payment_id": str(p["id"])})
    assert r.status_code == 409 and 'data-testid="booking-failed"' in r.text
    assert f'href="/book/payments/{p["id"]}"' in r.text
    assert 'data-status="authorized"' in alice.get(f"/book/payments/{p['id']}").text


def test_dropped_message_is_undelivered_until_the_next_send_with_its_key(
    set_faults: Any, base: str, api: Api, alice: httpx.Client
) -> None:
    c = api("alice")
    set_faults(base, {"action": "booking.message", "fault": "message_dropped", "times": 1})
    first = send(c, "notify-1")
    assert first.status_code == 202 and first.json()["accepted"] is True  # looks like any send
    looked = c.get("/api/book/messages/notify-1").json()
    assert (looked["status"], looked["delivered"], looked["attempts"]) == ("undelivered", False, 1)
    assert (
        'data-message-key="notify-1" data-recipient="+15550100" data-status="undelivered"'
        in alice.get("/book/outbox").text
    )
    second = send(c, "notify-1")
    assert second.status_code == 202 and "idempotent-replayed" not in second.headers
    assert c.get("/api/book/messages/notify-1").json()["status"] == "delivered"
    third = send(c, "notify-1")
    assert third.status_code == 200 and third.headers["idempotent-replayed"] == "true"
    assert send(c, "notify-1", body="Other text").status_code == 422
    gt = truth(base)
    assert gt["messages"] == [
        {
            "key": {"user": "alice", "recipient": "+15550100", "body": "Booked."},
            "count": 1,
            "ids": [1],
            "message_keys": ["notify-1"],
            "attempts": 3,
            "undelivered": 0,
        }
    ]
    assert gt["messages_by_key"][0]["attempts"] == ["dropped", "delivered", "replayed"]
    # The same text under another key is delivered again: a duplicate message.
    send(c, "notify-2")
    [dup] = truth(base)["duplicates"]
    assert dup["kind"] == "messages" and dup["count"] == 2
    assert dup["message_keys"] == ["notify-1", "notify-2"]


def test_view_and_lookup_faults(set_faults: Any, base: str, api: Api, alice: httpx.Client) -> None:
    h = hold(api("alice"))
    c = api("alice")
    set_faults(base, {"action": "view.booking.lookup", "fault": "error_before_commit", "times": 1})
    assert c.get(f"/api/book/holds/{h['id']}").status_code == 500
    assert c.get(f"/api/book/holds/{h['id']}").status_code == 200
    set_faults(base, {"action": "view.booking.lookup", "fault": "rate_limit", "times": 1})
    assert c.get(f"/api/book/holds/{h['id']}").status_code == 429
    set_faults(
        base,
        {"action": "view.booking.offers", "fault": "captcha", "times": 1},
        {"action": "view.booking.hold", "fault": "lost_response", "times": 1},
    )
    page = alice.get("/book")
    assert page.status_code == 200 and 'data-testid="captcha"' in page.text
    with pytest.raises(httpx.RemoteProtocolError):
        alice.get(f"/book/holds/{h['id']}")
    assert alice.get(f"/book/holds/{h['id']}").status_code == 200


def test_request_log_counts_booking_actions(base: str, api: Api, alice: httpx.Client) -> None:
    c = api("alice")
    h = hold(c)
    pay(c, h)
    pay(c, h)
    c.get(f"/api/book/holds/{h['id']}")
    alice.get("/book")
    got = counts(base)
    assert {k: v for k, v in got.items() if "booking" in k} == {
        "booking.hold": 1,
        "booking.pay": 2,
        "view.booking.lookup": 1,
        "view.booking.offers": 1,
    }


def test_booking_actions_and_faults_are_known() -> None:
    for action in (
        "booking.hold",
        "booking.pay",
        "booking.book",
        "booking.message",
        "booking.void",
    ):
        assert action in ACTIONS
    assert Fault("booking_failed") is Fault.BOOKING_FAILED
    assert Fault("message_dropped") is Fault.MESSAGE_DROPPED


# -- in real Chromium ---------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    from actonce.browser import DEFAULT_ARGS, find_chromium

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=find_chromium(), args=list(DEFAULT_ARGS))
        yield browser
        browser.close()


@pytest.fixture
def page(chromium: Any, base: str) -> Iterator[Any]:
    context = chromium.new_context(base_url=base, service_workers="block")
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto("/login")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(SEED_USERS["alice"])
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()
    yield page
    context.close()


@pytest.mark.browser
def test_book_through_the_pages_in_chromium(page: Any, base: str) -> None:
    page.goto(f"/book?date={DATE}&nights=2")
    assert page.get_by_test_id("whoami").text_content() == "alice"
    offer = page.locator('[data-testid="offer"][data-sku="harbor-suite"]')
    assert offer.get_attribute("data-total") == "52000"
    offer.get_by_label("Your reference (optional)").fill("anniversary")
    offer.get_by_role("button", name="Hold").click()
    page.wait_for_url(re.compile(r"/book/holds/\d+$"))
    assert page.get_by_test_id("hold").get_attribute("data-status") == "held"
    page.get_by_test_id("pay-link").click()
    page.wait_for_url(re.compile(r"/pay$"))
    assert page.get_by_test_id("amount").get_attribute("data-cents") == "52000"
    page.get_by_role("button", name="Authorize payment").click()
    page.wait_for_url(re.compile(r"/book/payments/\d+$"))
    assert page.get_by_test_id("payment").get_attribute("data-status") == "authorized"
    page.get_by_role("button", name="Confirm booking").click()
    page.wait_for_url(re.compile(r"/book/bookings/BK-\d+$"))
    reference = page.get_by_test_id("booking-reference").text_content()
    assert reference == "BK-1001"
    page.get_by_label("Recipient").fill("+15550123")
    page.get_by_role("button", name="Send confirmation").click()
    page.wait_for_url(re.compile(r"/book/outbox$"))
    row = page.locator('[data-testid="message-row"][data-message-key="BK-1001-confirmation"]')
    assert row.get_attribute("data-status") == "delivered"
    page.get_by_role("link", name="My bookings").click()
    page.wait_for_url(re.compile(r"/book/mine$"))
    assert page.locator('[data-testid="booking-row"]').get_attribute("data-reference") == reference
    gt = truth(base)
    assert gt["duplicates"] == []
    assert gt["bookings"][0]["key"] == {"user": "alice", "sku": "harbor-suite", "date": DATE}
    assert gt["authorizations"][0]["statuses"]["captured"] == 1
    assert gt["holds"][0]["statuses"]["booked"] == 1
    assert gt["totals"]["deliveries"] == 1 and gt["totals"]["captured_amount"] == 52000
    assert alice_bookings_by_ref(base, "anniversary") == [reference]


def alice_bookings_by_ref(base: str, client_ref: str) -> list[str]:
    r = httpx.get(
        base + "/api/book/bookings",
        params={"client_ref": client_ref},
        auth=("alice", SEED_USERS["alice"]),
    )
    return [b["reference"] for b in r.json()]


@pytest.mark.browser
def test_chromium_resends_a_payment_lost_without_a_byte(
    page: Any, base: str, set_faults: Any
) -> None:
    """The proof that the world's no-byte close is the real thing: one click on
    "Authorize payment", two authorizations (Chromium resent the POST)."""
    page.goto("/book")
    page.locator('[data-testid="offer"][data-sku="umbrella"]').get_by_role(
        "button", name="Hold"
    ).click()
    page.wait_for_url(re.compile(r"/book/holds/\d+$"))
    page.get_by_test_id("pay-link").click()
    page.wait_for_url(re.compile(r"/pay$"))  # a GET: its socket stays alive for the submit
    set_faults(
        base, {"action": "booking.pay", "fault": "lost_response", "mode": "close", "times": 1}
    )
    page.get_by_role("button", name="Authorize payment").click()
    page.wait_for_url(re.compile(r"/book/payments/\d+$"))  # the resend's answer
    logged = [
        r
        for r in httpx.get(base + "/admin/requests").json()["requests"]
        if r["action"] == "booking.pay"
    ]
    assert logged[0]["faults"] == ["lost_response"] and logged[0]["on_connection"] >= 2
    assert len(logged) == 2, "Chromium did not resend the POST"
    [dup] = truth(base)["duplicates"]
    assert dup["kind"] == "authorizations" and dup["count"] == 2  # one click, two charges
