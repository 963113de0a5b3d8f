"""The sandbox over real HTTP: accounts, posts, toggles, invoices, shop, API."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from actonce.sandbox import SandboxServer, serve


def whoami(html: str) -> str:
    m = re.search(r'data-testid="whoami">([^<]*)<', html)
    assert m is not None
    return m.group(1)


def truth(base: str) -> dict[str, object]:
    data: dict[str, object] = httpx.get(base + "/admin/ground-truth").json()
    return data


def test_login_shows_identity_and_protects_pages(base: str) -> None:
    with httpx.Client(base_url=base) as anon:
        r = anon.get("/compose")
        assert r.status_code == 303 and r.headers["location"].startswith("/login")
        assert whoami(anon.get("/").text) == ""
        bad = anon.post("/login", data={"username": "alice", "password": "nope"})
        assert bad.status_code == 401
        ok = anon.post("/login", data={"username": "alice", "password": "alice-password"})
        assert ok.status_code == 303
        assert "httponly" in ok.headers["set-cookie"].lower()
        assert whoami(anon.get("/").text) == "alice"
        anon.post("/logout")
        assert whoami(anon.get("/").text) == ""


def test_post_reply_search_and_duplicates(base: str, alice: httpx.Client) -> None:
    r = alice.post(
        "/compose",
        data={
            "text": "Hello",
            "media_type": "image",
            "media_name": "cat.png",
            "alt": "a cat",
            "parent": "",
        },
    )
    assert r.status_code == 303
    url = r.headers["location"]
    assert re.fullmatch(r"/posts/\d+", url)
    page = alice.get(url).text
    assert 'data-media-count="1"' in page and "a cat" in page
    reply = alice.post("/compose", data={"text": "Reply", "parent": base + url})
    reply_page = alice.get(reply.headers["location"]).text
    assert f'data-testid="post-parent" href="{url}"' in reply_page
    alice.post(
        "/compose",
        data={
            "text": "Hello",
            "media_type": "image",
            "media_name": "cat.png",
            "alt": "a cat",
            "parent": "",
        },
    )
    found = alice.get("/search", params={"author": "alice", "q": "Hello"}).text
    assert found.count('data-testid="post"') == 2
    gt = truth(base)
    assert gt["totals"] == {
        "posts": 3,
        "invoices": 0,
        "bookings": 0,
        "likes": 0,
        "follows": 0,
        "notes": 0,
    }
    dups = gt["duplicates"]
    assert isinstance(dups, list) and len(dups) == 1
    assert dups[0]["kind"] == "posts" and dups[0]["count"] == 2
    assert dups[0]["key"] == {"author": "alice", "text": "Hello", "parent": None}
    assert alice.post("/compose", data={"text": "x", "parent": "/posts/999"}).status_code == 400


def test_toggles_record_every_event(base: str, client_for: Callable[[str], httpx.Client]) -> None:
    alice, bob = client_for("alice"), client_for("bob")
    post = alice.post("/compose", data={"text": "like me"}).headers["location"]
    post_id = post.rsplit("/", 1)[1]
    assert ">Like</button>" in bob.get(post).text
    bob.post(post + "/like")
    assert f'data-testid="like-{post_id}" aria-pressed="true">Unlike<' in bob.get(post).text
    bob.post(post + "/like")  # pressed twice: undone, but both events recorded
    assert ">Like</button>" in bob.get(post).text
    assert ">Follow</button>" in bob.get("/u/alice").text
    bob.post("/u/alice/follow")
    assert ">Following</button>" in bob.get("/u/alice").text
    gt = truth(base)
    assert gt["likes"] == [{"key": {"user": "bob", "target": post_id}, "count": 2, "ids": [1, 2]}]
    assert gt["follows"][0]["count"] == 1  # type: ignore[index]
    assert [d["kind"] for d in gt["duplicates"]] == ["likes"]  # type: ignore[union-attr]


def test_invoices_html_and_listing(base: str, client_for: Callable[[str], httpx.Client]) -> None:
    alice, bob = client_for("alice"), client_for("bob")
    assert "External reference" in alice.get("/invoices/new").text
    r = alice.post("/invoices", data={"reference": "ORDER-9201", "amount": "120"})
    assert r.status_code == 303
    bob.post("/invoices", data={"reference": "ORDER-9201", "amount": "5"})
    listing = alice.get("/invoices", params={"reference": "ORDER-9201"}).text
    rows = re.findall(
        r'data-testid="invoice-row" data-invoice-id="(\d+)" '
        r'data-reference="ORDER-9201" data-account="(\w+)"',
        listing,
    )
    assert rows == [("1", "alice"), ("2", "bob")]
    assert truth(base)["duplicates"] == []  # same reference, different accounts


def test_shop_booking_and_price_change(set_faults: Any, base: str, alice: httpx.Client) -> None:
    form = alice.get("/shop/kayak").text
    quoted = re.search(r'name="quoted_price" value="(\d+)"', form)
    assert quoted is not None
    assert alice.post("/shop/kayak/book", data={"quoted_price": quoted.group(1)}).status_code == 303
    set_faults(
        base, {"action": "booking.create", "fault": "price_change", "times": 1, "amount": 700}
    )
    changed = alice.post("/shop/kayak/book", data={"quoted_price": quoted.group(1)})
    assert changed.status_code == 409 and 'data-testid="price-changed"' in changed.text
    assert str(int(quoted.group(1)) + 700) in changed.text
    assert 'data-testid="booking-row"' in alice.get("/bookings").text
    assert truth(base)["totals"]["bookings"] == 1  # type: ignore[index]


def test_api_idempotency_key(base: str) -> None:
    auth = ("alice", "alice-password")
    with httpx.Client(base_url=base, auth=auth) as api:
        body = {"reference": "ORDER-1", "amount": 10}
        first = api.post("/api/invoices", json=body, headers={"Idempotency-Key": "k1"})
        assert first.status_code == 201
        again = api.post("/api/invoices", json=body, headers={"Idempotency-Key": "k1"})
        assert again.status_code == 200 and again.json() == first.json()
        assert again.headers["idempotent-replayed"] == "true"
        other = api.post(
            "/api/invoices",
            json={"reference": "ORDER-1", "amount": 11},
            headers={"Idempotency-Key": "k1"},
        )
        assert other.status_code == 422
        assert api.post("/api/invoices", json=body).status_code == 201  # no key: a new row
    assert httpx.post(base + "/api/invoices", json=body).status_code == 401
    gt = truth(base)
    assert gt["invoices"] == [
        {"key": {"account": "alice", "reference": "ORDER-1"}, "count": 2, "ids": [1, 2]}
    ]


def test_reset_and_non_loopback_refused(base: str, alice: httpx.Client) -> None:
    alice.post("/invoices", data={"reference": "R", "amount": "1"})
    httpx.post(base + "/admin/reset").raise_for_status()
    assert truth(base)["totals"]["invoices"] == 0  # type: ignore[index]
    with pytest.raises(ValueError, match="loopback"):
        SandboxServer(host="0.0.0.0")
    with pytest.raises(ValueError, match="allow_remote"):
        serve(host="192.0.2.1")


def test_server_stops_cleanly() -> None:
    import threading

    before = threading.active_count()
    with SandboxServer() as srv:
        url = srv.url
        assert httpx.get(url + "/").status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/", timeout=2)
    assert threading.active_count() == before


def test_the_listening_socket_is_tcp_so_small_pages_are_not_held_back(
    server: SandboxServer,
) -> None:
    # asyncio turns Nagle off (TCP_NODELAY) only on connections accepted from
    # a socket made with proto IPPROTO_TCP; with the default proto 0 a small
    # page's body waited ~40 ms for the client's delayed ACK of its headers
    # (an httpx round trip to the console: 52 ms where rendering took 3 ms).
    assert server._sock is not None
    assert server._sock.proto == socket.IPPROTO_TCP
