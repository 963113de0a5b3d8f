"""The booking pages take a client's provider key, as the JSON API does.

A form page opened with ``?idempotency_key=K`` carries K in a hidden field;
its post is then deduplicated by the provider exactly like an API call with
``Idempotency-Key: K`` (same key, same parameters: the original object). A
form without one stays naive: a resent post makes a second object.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

DATE = "2030-05-01"


def _truth(base: str) -> dict[str, Any]:
    gt: dict[str, Any] = httpx.get(base + "/admin/booking/ground-truth").json()
    return gt


def _hidden(html: str, name: str) -> str | None:
    m = re.search(rf'name="{name}" value="([^"]*)"', html)
    return None if m is None else m.group(1)


def test_form_pages_carry_the_key_and_posts_replay_by_it(base: str, alice: httpx.Client) -> None:
    offers = alice.get("/book", params={"date": DATE, "nights": 2, "idempotency_key": "k-hold"})
    assert _hidden(offers.text, "idempotency_key") == "k-hold"
    assert _hidden(alice.get("/book", params={"date": DATE}).text, "idempotency_key") is None
    form = {"sku": "harbor-double", "date": DATE, "nights": "2", "quoted_price": "12000",
            "qty": "1", "client_ref": "trip-k", "idempotency_key": "k-hold"}  # fmt: skip
    first = alice.post("/book/holds", data=form)
    again = alice.post("/book/holds", data=form)
    assert first.status_code == again.status_code == 303
    assert first.headers["location"] == again.headers["location"]
    hold_id = int(first.headers["location"].rsplit("/", 1)[1])

    pay_page = alice.get(f"/book/holds/{hold_id}/pay", params={"idempotency_key": "k-pay"})
    assert _hidden(pay_page.text, "idempotency_key") == "k-pay"
    pay = {"hold_id": str(hold_id), "amount": "24000", "client_ref": "trip-k",
           "idempotency_key": "k-pay"}  # fmt: skip
    paid = [alice.post(f"/book/holds/{hold_id}/pay", data=pay) for _ in range(2)]
    assert {p.headers["location"] for p in paid} == {paid[0].headers["location"]}
    payment_id = int(paid[0].headers["location"].rsplit("/", 1)[1])
    # The same key with other parameters is the provider's 422, never a second object.
    other = alice.post(f"/book/holds/{hold_id}/pay", data={**pay, "amount": "23000"})
    assert other.status_code == 422

    page = alice.get(f"/book/payments/{payment_id}", params={"idempotency_key": "k-book"})
    assert _hidden(page.text, "idempotency_key") == "k-book"
    book = {"hold_id": str(hold_id), "payment_id": str(payment_id), "client_ref": "trip-k",
            "idempotency_key": "k-book"}  # fmt: skip
    booked = [alice.post("/book/bookings", data=book) for _ in range(2)]
    assert {b.status_code for b in booked} == {303}
    assert booked[0].headers["location"] == booked[1].headers["location"]

    totals = _truth(base)["totals"]
    assert (totals["holds"], totals["authorizations"], totals["bookings"]) == (1, 1, 1)
    # The lookups find each object by the key the form carried.
    assert [p["id"] for p in alice.get("/api/book/payments",
                                       params={"idempotency_key": "k-pay"}).json()] == [payment_id]  # fmt: skip


def test_a_form_without_a_key_stays_naive(base: str, alice: httpx.Client) -> None:
    form = {"sku": "umbrella", "quoted_price": "1500", "qty": "1", "client_ref": "naive"}
    assert alice.post("/book/holds", data=form).status_code == 303
    assert alice.post("/book/holds", data=form).status_code == 303
    assert _truth(base)["totals"]["holds"] == 2
