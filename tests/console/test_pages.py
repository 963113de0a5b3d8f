"""The pages and the decisions, over HTTP against a real console on a real ledger."""

from __future__ import annotations

import contextlib
import html
import re
from collections.abc import Callable

import httpx

from actonce import Confirmed, EventType, Status
from actonce.console import ConsoleServer, Settings, ref_of

from .conftest import sign_in
from .world import World

SignIn = Callable[..., tuple[httpx.Client, str]]


def text_of(page: str) -> str:
    """A page's words, as a reader sees them."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def post(client: httpx.Client, url: str, token: str, **data: str) -> httpx.Response:
    r = client.post(url, data={"csrf": token, **data}, headers={"origin": str(client.base_url)})
    assert r.status_code == 303, r.text
    return client.get(r.headers["location"])


def test_the_queue_lists_what_waits_oldest_first_with_its_counts(
    server: ConsoleServer, world: World, signed_in: SignIn
) -> None:
    client, _ = signed_in("ana")
    page = client.get("/").text
    words = text_of(page)
    review = world.ledger.list([Status.UNKNOWN, Status.NEEDS_REVIEW], limit=100)
    refs = re.findall(r'href="/effects/([^"]+)"', page)
    assert refs == [ref_of(r.key) for r in review]  # oldest change first
    assert "create invoice ORDER-9201 for acme (120.00 EUR)" in words
    assert "unknown 1" in words and "needs review 4" in words and "pending approvals 2" in words
    assert "duplicate \u00d72" in words and "billing-bot" in words
    only = text_of(client.get("/?status=unknown").text)
    assert "ORDER-9201" in only and "ORDER-9202" not in only
    kind = text_of(client.get("/?kind=book").text)
    assert "trip-paris" in kind and "ORDER-9201" not in kind


def test_paging_is_by_keyset_and_sees_every_item_once(world: World) -> None:
    with ConsoleServer(world.ledger, world.reviewers(), Settings(page_size=2)) as srv:
        client, _ = sign_in(srv.url, "ana")
        with contextlib.closing(client):
            seen, url = [], "/"
            while url:
                page = client.get(url).text
                seen += re.findall(r'href="/effects/([^"]+)"', page)
                more = re.search(r'rel="next" href="([^"]+)"', page)
                url = html.unescape(more.group(1)) if more else ""
                assert "after=" in url or not url
    review = world.ledger.list([Status.UNKNOWN, Status.NEEDS_REVIEW], limit=100)
    assert seen == [ref_of(r.key) for r in review] and len(seen) == 5


def test_one_effect_one_screen(server: ConsoleServer, world: World, signed_in: SignIn) -> None:
    client, _ = signed_in("ana")
    page = client.get(f"/effects/{ref_of(world.keys['unknown'])}").text
    words = text_of(page)
    assert "Did create invoice ORDER-9201 for acme (120.00 EUR) happen?" in words
    assert "The perform raised: TimeoutError: response lost after commit" in words
    assert "claimed: attempt 1 (fencing token 1)" in words
    assert "executing mark (durable)" in words and "verdict: unknown" in words
    assert "connection closed without a response" in words  # the wire request, inline
    assert 'data-testid="screenshot"' in page and "page.html" in page
    assert "Hold to decide" in words and "There is no re-run here" in words
    dup = text_of(client.get(f"/effects/{ref_of(world.keys['duplicate'])}").text)
    assert "duplicate detected: 2 results" in dup
    gated = text_of(client.get(f"/effects/{ref_of(world.keys['gated'])}").text)
    assert "Intent trip-paris@v1" in gated and "material" in gated
    assert "Facts then (as approved)" in gated and "free cancellation" not in gated
    done = text_of(client.get(f"/effects/{ref_of(world.keys['confirmed'])}").text)
    assert "not waiting for a reviewer" in done and "Record the decision" not in done


def test_a_decision_needs_the_hold_and_records_the_reviewer_once(
    fresh: World, signed_in: SignIn
) -> None:
    with ConsoleServer(fresh.ledger, fresh.reviewers()) as srv:
        ana, ana_token = sign_in(srv.url, "ana")
        bo, bo_token = sign_in(srv.url, "bo")
        with contextlib.closing(ana), contextlib.closing(bo):
            key = fresh.keys["needs_review"]
            url = f"/effects/{ref_of(key)}"
            before = len(fresh.ledger.events(key))
            # Without a hold, nothing is recorded.
            page = post(
                ana,
                url + "/resolve",
                ana_token,
                **{"attempt": "1", "class": "not_found", "reason": "x"},
            )
            assert "hold the item first" in text_of(page.text)
            page = post(ana, url + "/hold", ana_token)
            words = text_of(page.text)
            assert "You hold this item until" in words
            # The consequence is on the page before the click.
            assert "releases the reservation" in words.lower()
            assert "tried again with the same key (attempt 2)" in words
            # Another reviewer sees the hold and cannot decide.
            seen_by_bo = text_of(bo.get(url).text)
            assert re.search(r"Held by ana until \d\d:\d\d:\d\d UTC", seen_by_bo)
            assert "Record the decision" not in seen_by_bo
            page = post(
                bo,
                url + "/resolve",
                bo_token,
                **{"attempt": "1", "class": "not_found", "reason": "me"},
            )
            assert "hold the item first" in text_of(page.text)
            assert "Held by ana" in text_of(post(bo, url + "/hold", bo_token).text)
            # A reason class that names a result needs it.
            page = post(
                ana,
                url + "/resolve",
                ana_token,
                **{"attempt": "1", "class": "seen", "reason": "there"},
            )
            assert "names the result" in text_of(page.text)
            # A decision names the attempt the page showed: none, or another, records nothing.
            page = post(ana, url + "/resolve", ana_token, **{"class": "not_found", "reason": "x"})
            assert "did not say which attempt" in text_of(page.text)
            stale = {"attempt": "2", "class": "not_found", "reason": "x"}
            page = post(ana, url + "/resolve", ana_token, **stale)
            assert "on attempt 1 now, not the attempt 2" in text_of(page.text)
            assert 'name="attempt" value="1"' in ana.get(url).text  # what the form sends
            # A form field cannot choose the identity.
            page = post(
                ana, url + "/resolve", ana_token,
                **{"attempt": "1", "class": "not_found", "reason": "not in billing",
                   "reviewer": "mallory"},
            )  # fmt: skip
            assert "Recorded by ana: the effect is failed" in text_of(page.text)
    events = fresh.ledger.events(key)
    decisions = [e for e in events if e.run_id.startswith("review:")]
    assert len(events) == before + 1 and len(decisions) == 1
    (d,) = decisions
    assert d.type is EventType.FAILED and d.data["reviewer"] == "ana"
    assert d.message == "not found at the provider: not in billing"
    assert fresh.ledger.get(key).status is Status.FAILED  # type: ignore[union-attr]


def test_verify_again_writes_nothing_and_the_decision_quotes_it(
    fresh: World, signed_in: SignIn
) -> None:
    key = fresh.keys["unknown"]
    url = f"/effects/{ref_of(key)}"
    fresh.provider.clock.advance(2e9)  # the lost invoice is visible now
    found = fresh.provider.lookup("ORDER-9201")
    assert isinstance(found, Confirmed) and found.result_ref
    obj = found.result_ref
    with ConsoleServer(fresh.ledger, fresh.reviewers()) as srv:
        ana, token = sign_in(srv.url, "ana")
        with contextlib.closing(ana):
            before = fresh.ledger.events(key)
            lookups = fresh.provider.calls("lookup")
            page = post(ana, url + "/verify", token)
            assert fresh.provider.calls("lookup") == lookups + 1  # it really looked, once
            assert fresh.ledger.events(key) == before  # and wrote nothing
            assert fresh.ledger.get(key).status is Status.UNKNOWN  # type: ignore[union-attr]
            words = text_of(page.text)
            assert "ana verified again at" in words and f"confirmed: {obj} (1 match)" in words
            assert "Nothing was written" in words
            post(ana, url + "/hold", token)
            page = post(
                ana, url + "/resolve", token,
                **{"attempt": "1", "class": "seen", "reason": "the verifier sees it",
                   "result_ref": obj},
            )  # fmt: skip
            assert "the effect is confirmed" in text_of(page.text)
    (d,) = [e for e in fresh.ledger.events(key) if e.run_id.startswith("review:")]
    assert d.message is not None and d.message.startswith("seen at the provider: the verifier")
    assert "[verified again by ana at" in d.message and f"confirmed: {obj}" in d.message
    assert fresh.ledger.get(key).result_ref == obj  # type: ignore[union-attr]


def test_no_route_can_run_an_effect(server: ConsoleServer) -> None:
    paths = [getattr(r, "path", "") for r in server.app.routes]
    assert not [p for p in paths if re.search(r"run|perform|retry|submit|execute", p)]


def test_approvals_show_bound_fields_staleness_and_answers(
    server: ConsoleServer, world: World, signed_in: SignIn
) -> None:
    client, token = signed_in("bo")
    listing = text_of(client.get("/approvals").text)
    assert "stale facts" in listing and "dinner" in listing and "flowers" in listing
    approved = text_of(client.get(f"/approvals/{world.packets['approved']}").text)
    for bound in ("Hotel Adlon", "110 EUR", "120 EUR", "2026-12-01", "free cancellation"):
        assert bound in approved
    assert "duplicate delivery" in approved and "answered by ana" in approved.lower()
    assert "https://v.example/?token=[redacted]" in approved
    # bo is not the packet's user: read-only, and a forged answer is refused.
    ana_packet = f"/approvals/{world.packets['pending-ana']}"
    page = text_of(client.get(ana_packet).text)
    assert "Only ana can answer this packet" in page and "Approve, as" not in page
    r = client.post(
        ana_packet + "/answer", data={"csrf": token, "decision": "approve"},
        headers={"origin": server.url},
    )  # fmt: skip
    assert r.status_code == 403
    assert world.ledger.approvals.get(world.packets["pending-ana"]).status.value == "pending"


def test_the_packets_own_user_answers_it(fresh: World) -> None:
    packet = fresh.packets["pending-carol"]
    with ConsoleServer(fresh.ledger, fresh.reviewers()) as srv:
        carol, token = sign_in(srv.url, "carol")
        with contextlib.closing(carol):
            page = text_of(carol.get(f"/approvals/{packet}").text)
            assert "Approve, as carol" in page and "stale" in page
            answer = {"decision": "deny", "note": "the price is old"}
            words = text_of(post(carol, f"/approvals/{packet}/answer", token, **answer).text)
            assert "Answer accepted: the packet is denied" in words
            again = text_of(post(carol, f"/approvals/{packet}/answer", token, **answer).text)
            assert "takes no answer" in again
    got = fresh.ledger.approvals.get(packet)
    assert got.status.value == "denied" and got.decided_by == "carol"


def test_receipts_list_show_and_link_back(
    server: ConsoleServer, world: World, signed_in: SignIn
) -> None:
    client, _ = signed_in("ana")
    listing = client.get("/receipts")
    assert listing.status_code == 200
    page = text_of(listing.text)
    assert "trip-77" in page and "complete" in page
    assert 'data-placeholder="receipts"' not in listing.text
    one = client.get("/receipts/trip-77")
    assert one.status_code == 200
    words = text_of(one.text)
    receipt = world.ledger.receipt("trip-77")
    assert receipt is not None
    assert receipt.text.splitlines()[0] in words  # the user's text, as the ledger wrote it
    assert '"operation_id": "trip-77"' in html.unescape(one.text)  # the operators' JSON
    step = ref_of(world.keys["step"])
    assert f'href="/effects/{step}"' in one.text  # each step links to its effect
    # The effect's own screen names its operation and links back to the receipt.
    effect = client.get(f"/effects/{step}").text
    assert 'data-testid="operation"' in effect and 'href="/receipts/trip-77"' in effect
    assert "(this effect)" in text_of(effect)
    # An effect that is no operation's step shows no operation section.
    alone = client.get(f"/effects/{ref_of(world.keys['confirmed'])}").text
    assert 'data-testid="operation"' not in alone
    assert client.get("/receipts/no-such-op").status_code == 404
    assert client.get("/receipts?before=nan").status_code == 200  # a bad cursor is ignored
