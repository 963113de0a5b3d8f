"""Pins for what the console's tests left unstated in the dev-1208 round (issue 23, item 2).

Found by ``python tests/mutants/areas.py --area console --seed dev-1208-console-N``
and by the weak spots of the round before: an unknown queue filter, the
receipts page's next cursor, a hold confirmed twice, a server that fails
to start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from actonce import (
    Confirmed,
    Effect,
    Event,
    EventType,
    Hold,
    HoldKind,
    HoldStatus,
    Intent,
    Ledger,
    MemoryStore,
    Operation,
    Status,
    Step,
)
from actonce.console import ConsoleServer, Reviewers, Settings
from actonce.console._console import Console
from actonce.console._guard import SecurityHeaders, guarded, own_origin
from actonce.console._holds import ReviewHolds
from actonce.console._operations import consequences as op_consequences
from actonce.console._receipts import PAGE, receipts_page
from actonce.console._sessions import Sessions
from actonce.console._timeline import entries
from actonce.console._views import _context, approvals_page, queue_page
from actonce.testing import FrozenClock

from .test_signin_and_guard_whole import _client, _sign_in
from .world import KEYS, World, _hashes

# --- the queue's status filter ------------------------------------------------------------


def test_an_unknown_queue_filter_is_the_review_queue_with_its_operations(still: World) -> None:
    console = Console(still.ledger, still.reviewers())
    review = queue_page(console, "ana", "review", "", None)
    assert len(review["operations"]) == 1, review["operations"]
    for unknown in ("nonsense", "", "REVIEW", "pending"):
        page = queue_page(console, "ana", unknown, "", None)
        assert page == review, f"status={unknown!r} is not the review queue whole"


def test_an_unknown_queue_filter_over_http_shows_the_operations_in_review(
    signed_in: Callable[..., tuple[httpx.Client, str]],
) -> None:
    client, _ = signed_in()
    page = client.get("/", params={"status": "bogus"})
    assert page.status_code == 200
    assert '<h2 id="operations">Operations stopped for a person</h2>' in page.text
    assert '<option value="review" selected>unknown + needs review</option>' in page.text


# --- the receipts page's next cursor ------------------------------------------------------


def _receipts(count: int) -> Ledger:
    """A ledger of ``count`` one-step operations, one a second apart."""
    clock = FrozenClock()
    ledger = Ledger(MemoryStore(), clock=clock)
    for n in range(count):
        key = f"op-{n:03d}-step"
        step = Effect(key=key, kind="pin", payload={"n": n}, perform=lambda k=key: k,
                      verify=lambda k=key: Confirmed(k))  # fmt: skip
        assert Operation(ledger, f"op-{n:03d}", [Step("only", step, "retriable")]).run().done
        clock.advance(1)
    return ledger


def test_a_full_receipts_page_names_the_time_of_its_last_receipt_as_the_next_cursor() -> None:
    ledger = _receipts(PAGE + 1)
    console = Console(ledger, Reviewers())
    first = receipts_page(console, None)
    ids = [r["id"] for r in first["receipts"]]
    assert ids == [f"op-{n:03d}" for n in range(PAGE, 0, -1)], ids  # newest first, 50 of them
    written = dict((r.operation_id, at) for r, at in ledger.receipts(limit=PAGE + 1))
    assert first["next"] == repr(written["op-001"]), first["next"]
    rest = receipts_page(console, first["next"])
    assert [r["id"] for r in rest["receipts"]] == ["op-000"] and rest["next"] is None


def test_a_receipts_page_of_exactly_fifty_has_no_next_cursor() -> None:
    page = receipts_page(Console(_receipts(PAGE), Reviewers()), None)
    assert len(page["receipts"]) == PAGE and page["next"] is None


# --- a hold confirmed twice ---------------------------------------------------------------


def test_a_hold_confirmed_twice_stays_held_and_is_let_go_once() -> None:
    clock = FrozenClock()
    ledger = Ledger(MemoryStore(), clock=clock)
    holds = ReviewHolds(ledger, 10.0)
    holds.take("k", "ana")
    clock.advance(4)
    assert holds.confirm("k", "ana"), "the first confirmation was refused"
    clock.advance(4)
    assert holds.confirm("k", "ana"), "a hold confirmed once is not confirmed again"
    state = holds.state("k", "ana")
    assert (state.holder, state.until, state.mine, state.here) == (
        "ana", 1_700_000_018.0, True, True,
    )  # fmt: skip
    holds.release("k", "ana")
    assert holds.state("k", "bo").free, "a hold confirmed twice was not let go"
    assert not holds.confirm("k", "ana"), "a released hold was confirmed"


# --- a server that fails to start ---------------------------------------------------------


def test_a_server_whose_run_fails_says_so_and_frees_its_port() -> None:
    server = ConsoleServer(Ledger(MemoryStore()), Reviewers())
    server.app = "actonce_no_such_module:app"  # uvicorn cannot load it: its run exits
    with pytest.raises(RuntimeError, match=r"^the console failed to start$") as failed:
        server.start()
    assert isinstance(failed.value.__cause__, SystemExit), repr(failed.value.__cause__)
    with pytest.raises(RuntimeError, match=r"^the console is not running$"):
        _ = server.url


# --- dev-1208-console-1's survivors -------------------------------------------------------


def test_a_security_header_a_response_sets_itself_is_kept_once() -> None:
    async def own(request: Request) -> Response:
        return Response(
            "x", headers={"Cache-Control": "max-age=60", "X-Frame-Options": "SAMEORIGIN"}
        )

    app = Starlette(routes=[Route("/", own)], middleware=[Middleware(SecurityHeaders)])
    answer = TestClient(app).get("/")
    assert answer.headers.get_list("cache-control") == ["max-age=60"], answer.headers
    assert answer.headers.get_list("x-frame-options") == ["SAMEORIGIN"], answer.headers
    for name, value in (("referrer-policy", "no-referrer"), ("x-content-type-options", "nosniff"),
                        ("cross-origin-opener-policy", "same-origin"),
                        ("cross-origin-resource-policy", "same-origin")):  # fmt: skip
        assert answer.headers.get_list(name) == [value], (name, answer.headers)


@pytest.mark.parametrize("data", [None, ["a", "list"], "text"])
def test_a_timeline_entry_of_an_event_whose_data_is_no_mapping_shows_no_data(data: object) -> None:
    event = Event("k", EventType.ABANDONED, 0.0, 1, run_id="review:bo",
                  from_status=Status.NEEDS_REVIEW, to_status=Status.ABANDONED,
                  data=data)  # type: ignore[arg-type]  # fmt: skip
    (entry,) = entries([event])
    assert (entry.data, entry.facts, entry.tags) == ("", (), ())
    assert entry.label == "decision: abandoned" and entry.by_reviewer == "bo", (
        "the reviewer of a decision is read from its run id"
    )


# --- dev-1208-console-2's survivors -------------------------------------------------------


def test_a_guarded_endpoint_without_a_name_is_called_guard() -> None:
    class Endpoint:
        """An endpoint object (no __name__ of its own)."""

        async def __call__(self, request: Request) -> Response:
            return Response("x")

    endpoint = Endpoint()
    guard = guarded(endpoint, Sessions())
    assert guard.__name__ == "guard" and guard.__doc__ == Endpoint.__doc__
    assert guard.__wrapped__ is endpoint  # type: ignore[attr-defined]


def test_the_origin_of_a_request_naming_no_host_has_an_empty_host() -> None:
    scope = {"type": "http", "method": "GET", "path": "/", "headers": [], "scheme": "http",
             "query_string": b"", "server": ("127.0.0.1", 8000)}  # fmt: skip
    assert own_origin(Request(scope)) == "http://"
    named = {**scope, "headers": [(b"host", b"127.0.0.1:8080")], "scheme": "https"}
    assert own_origin(Request(named)) == "https://127.0.0.1:8080"


def test_an_effects_context_skips_a_hold_it_cannot_read_and_shows_the_next(
    still: World,
) -> None:
    console = Console(still.ledger, still.reviewers())
    approved = still.packets["approved"]
    gone = Hold(1, HoldKind.INTENT, "no-such-intent@v1", Decimal(0), HoldStatus.HELD, 0.0, None)
    bad = Hold(1, HoldKind.INTENT, "trip-paris@vx", Decimal(0), HoldStatus.HELD, 0.0, None)
    lost = Hold(1, HoldKind.APPROVAL, "apv-none", Decimal(1), HoldStatus.HELD, 0.0, None)
    trip = Hold(1, HoldKind.INTENT, "trip-paris@v1", Decimal(0), HoldStatus.HELD, 0.0, None)
    packet = Hold(1, HoldKind.APPROVAL, approved, Decimal(1), HoldStatus.HELD, 0.0, None)
    context = _context(console, [gone, bad, lost, trip, lost, packet], [], "ana")
    assert [i["ref"] for i in context["intents"]] == ["trip-paris@v1"]
    assert [p["id"] for p in context["packets"]] == [approved]


def test_the_approvals_list_shows_two_hundred_packets_of_a_status() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock(), signing_keys=KEYS)
    intent = ledger.intents.put(Intent("buy", "purchase", user="ana"))
    asked = [ledger.approvals.request(intent, "buy", f"k-{n:03d}").packet.packet_id
             for n in range(201)]  # fmt: skip
    page = approvals_page(Console(ledger, Reviewers()), "pending")
    assert [p["id"] for p in page["packets"]] == sorted(asked)[:200]


def test_a_consoles_settings_by_default() -> None:
    s = Settings()
    assert (s.evidence_roots, s.hold_seconds, s.verify_timeout, s.secure_cookies) == (
        (), 600.0, 30.0, False,
    )  # fmt: skip
    assert s.page_size == 50 and s.allowed_hosts == ("127.0.0.1", "localhost", "::1", "[::1]")


def test_the_receipts_page_links_to_older_receipts_and_serves_them() -> None:
    ledger = _receipts(PAGE + 1)
    client = _client(Console(ledger, Reviewers(_hashes())))
    _sign_in(client)
    first = client.get("/receipts")
    written = dict((r.operation_id, at) for r, at in ledger.receipts(limit=PAGE + 1))
    link = f'<a href="/receipts?before={written["op-001"]!r}" data-testid="next">Older receipts</a>'
    assert link in first.text and "/receipts/op-000" not in first.text
    older = client.get("/receipts", params={"before": repr(written["op-001"])})
    assert "/receipts/op-000" in older.text and "/receipts/op-001" not in older.text
    assert 'data-testid="next"' not in older.text


# --- dev-1208-console-4's survivors -------------------------------------------------------


def test_an_undo_never_run_is_not_in_doubt_in_an_operations_consequences(still: World) -> None:
    (view,) = still.ledger.operations.in_review()
    hold = next(s for s in view.steps if s.name == "hold")
    assert hold.record is not None and hold.undo_record is None  # its undo never ran
    said = op_consequences(replace(view, step="hold", undo=True))
    assert said["retry_undo"] == (
        f"The next pass of the operation runs the undo of hold again (attempt {view.attempt + 1});"
        " it verifies first, so an undo that landed meanwhile is found, never sent twice."
    )
    assert said["undone_by_hand"] == (
        "The undo of hold counts as done; the next pass goes on undoing what is left, newest "
        "first. Only if it really was undone outside actonce."
    )
