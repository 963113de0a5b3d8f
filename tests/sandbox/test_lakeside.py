"""Lakeside Inn, the second hotel site: its rules, over real HTTP (httpx)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from actonce.sandbox import LakesideServer
from actonce.sandbox._lakeside import HOLD_SECONDS

REF = "trip-1@v1"


@pytest.fixture
def inn() -> Iterator[tuple[LakesideServer, httpx.Client]]:
    with LakesideServer() as server, httpx.Client(base_url=server.url) as client:
        signed = client.post(
            "/signin", data={"email": "mia@lakeside.example", "password": "lakeside-password"}
        )
        assert signed.status_code == 303
        yield server, client


def _hold(client: httpx.Client, request_id: str) -> httpx.Response:
    form = {"room": "lake-view", "arrive": "2031-06-01", "nights": "2", "reference": REF,
            "request_id": request_id}  # fmt: skip
    return client.post("/holds", data=form)


def test_a_repeated_request_id_answers_with_the_first_object(inn: tuple) -> None:
    server, client = inn
    token = str(uuid.uuid4())
    assert _hold(client, token).headers["location"] == "/holds/H-1"
    assert _hold(client, token).headers["location"] == "/holds/H-1"
    assert _hold(client, str(uuid.uuid4())).headers["location"] == "/holds/H-2"
    assert len(server.inn.truth()["holds"]) == 2


def test_a_request_id_that_is_not_a_uuid_is_refused(inn: tuple) -> None:
    server, client = inn
    refused = _hold(client, "a" * 64)  # an actonce effect key as it is: not the inn's format
    assert refused.status_code == 400 and "UUID" in refused.text
    assert server.inn.truth()["holds"] == []


def test_a_hold_lapses_on_its_own_and_then_cannot_be_paid(inn: tuple) -> None:
    server, client = inn
    _hold(client, str(uuid.uuid4()))
    server.inn.advance(HOLD_SECONDS + 1)
    (hold,) = client.get("/api/holds", params={"reference": REF}).json()
    assert hold["status"] == "expired"
    paid = client.post("/payments", data={"hold_id": "H-1", "request_id": str(uuid.uuid4())})
    assert paid.status_code == 409 and server.inn.truth()["payments"] == []


def test_pay_void_book_and_a_refused_booking(inn: tuple) -> None:
    server, client = inn
    _hold(client, str(uuid.uuid4()))
    client.post("/payments", data={"hold_id": "H-1", "request_id": str(uuid.uuid4())})
    server.inn.refuse_bookings = True
    refused = client.post("/bookings", data={"payment_id": "P-1", "request_id": str(uuid.uuid4())})
    assert refused.status_code == 409 and server.inn.truth()["bookings"] == []
    assert client.post("/payments/P-1/void").status_code == 303
    (payment,) = client.get("/api/payments", params={"reference": REF}).json()
    assert (payment["status"], payment["amount"]) == ("voided", 24000)


def test_the_lookups_and_the_pages_need_the_session() -> None:
    with LakesideServer() as server, httpx.Client(base_url=server.url) as client:
        assert client.get("/api/holds").status_code == 401
        assert client.get("/").headers["location"] == "/signin"
        assert _hold(client, str(uuid.uuid4())).status_code == 303  # to the sign-in
        assert server.inn.truth()["holds"] == []
