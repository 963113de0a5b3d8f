"""What each page shows, pinned whole on a world whose clock stands still (issue 23, item 2).

The world of ``world.py`` is built on a :class:`~actonce.testing.FrozenClock`,
then the clock is moved 125 s on, so every time and age a page shows is
known. Each view function's answer is compared as a whole: every key it
returns (no more, no fewer), every value a reviewer reads, every entry of
a timeline, every consequence spelled out before a click.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from actonce import ApprovalStatus, Status
from actonce.console import Settings
from actonce.console._console import Console
from actonce.console._decide import CLASSES
from actonce.console._timeline import Entry
from actonce.console._views import (
    approvals_page,
    effect_page,
    overview_page,
    packet_page,
    parse_cursor,
    queue_page,
)

from .world import World

T0 = "2023-11-14 22:13:20 UTC"
FREE = {"free": True, "holder": "", "until": "", "mine": False, "here": False}
EFFECT_KEYS = {
    "ref", "key", "question", "kind", "actor", "status", "status_words", "status_css", "open",
    "since", "age", "created", "attempt", "owner", "lease", "lease_live", "result_ref",
    "matches", "reason", "error", "last_verdicts", "verdicts", "timeline", "evidence",
    "payload", "scope", "holds", "context", "operation", "reviewable", "hold", "hold_minutes",
    "classes", "consequences", "verifier", "seen", "verifying",
}  # fmt: skip
SETTLE = "still absent after the settle window; absence proves nothing here"


def _console(w: World, **settings: Any) -> Console:
    return Console(w.ledger, w.reviewers(), replace(Settings(), **settings))


def _entries(w: World, key: str) -> list[Entry]:
    page = effect_page(_console(w), key, "ana")
    return page["timeline"]  # type: ignore[no-any-return]


def _start(rid: str, seq: int) -> list[Entry]:
    claim = Entry(
        seq, 1_700_000_000.0, "claimed: attempt 1 (fencing token 1)", "claim", 1, rid,
        "(new) → claimed", "attempt 1",
    )  # fmt: skip
    mark = Entry(
        seq + 1, 1_700_000_000.0, "executing mark (durable): the perform may start", "mark", 1,
        rid, "claimed → executing", "",
    )  # fmt: skip
    return [claim, mark]


def _perform_data(error: str, evidence: str | None = None) -> str:
    lines = ["{"]
    if evidence:
        lines.append(f'  "evidence": "{evidence}",')
    lines += ['  "perform": {', f'    "error": "{error}",', '    "seconds": 0.0', "  }", "}"]
    return "\n".join(lines)


def test_the_unknown_effects_page_whole(still: World) -> None:
    key = still.keys["unknown"]
    page = effect_page(_console(still), key, "ana")
    assert set(page) == EFFECT_KEYS
    record = still.ledger.get(key)
    assert record is not None
    rid = record.owner
    folder = str(still.root / "evidence" / "001-invoice-perform-error")
    error = "TimeoutError: response lost after commit for ORDER-9201"
    reason = f"perform raised {error}; outcome not proven yet"
    seq = page["timeline"][0].seq
    verdict = Entry(
        seq + 2, 1_700_000_000.0, "verdict: unknown", "verdict", 1, rid,
        "executing → unknown", reason,
        facts=(("perform took", "0.0 s"), ("perform raised", error), ("evidence", folder)),
        data=_perform_data(error, folder), tags=("perform",),
    )  # fmt: skip
    assert page["timeline"] == [*_start(rid, seq), verdict]
    assert page["verdicts"] == [verdict] and page["last_verdicts"] == [verdict]
    (shelf,) = page["evidence"]
    assert (shelf.seq, shelf.label, shelf.problem) == (seq + 2, "001-invoice-perform-error", "")
    assert shelf.files == ("screenshot.png", "page.html", "meta.json", "wire.json")
    assert shelf.sent == "1 sent, 0 refused"
    assert shelf.meta == (
        ("actor", "billing-bot"),
        ("captured_at", T0),
        ("label", "invoice-perform-error"),
        ("url", "https://billing.example/invoices/new?session=[redacted]"),
    )
    assert shelf.wire == (
        {
            "method": "POST",
            "url": "https://billing.example/api/invoices?api_key=[redacted]",
            "at": "0.012",
            "outcome": "connection closed without a response",
            "took": "2.5",
        },
    )
    rest = {k: v for k, v in page.items() if k not in ("timeline", "verdicts", "last_verdicts")}
    del rest["evidence"]
    assert rest == {
        "ref": key,
        "key": key,
        "question": "Did create invoice ORDER-9201 for acme (120.00 EUR) happen?",
        "kind": "invoice",
        "actor": "billing-bot",
        "status": "unknown",
        "status_words": "unknown",
        "status_css": "s-unknown",
        "open": True,
        "since": T0,
        "age": "2 min",
        "created": T0,
        "attempt": 1,
        "owner": rid,
        "lease": at_lease(record.lease_expires_at),
        "lease_live": False,
        "result_ref": "",
        "matches": 0,
        "reason": reason,
        "error": error,
        "payload": '{\n  "amount": "120.00",\n  "currency": "EUR",\n  "reference": "ORDER-9201"\n}',
        "scope": (
            '{\n  "actor": "billing-bot",\n  "kind": "invoice",\n  "object": "ORDER-9201",\n'
            '  "operation": "create",\n  "tenant": "acme"\n}'
        ),
        "holds": [],
        "context": {"intents": [], "packets": [], "refreshed": None},
        "operation": None,
        "reviewable": True,
        "hold": FREE,
        "hold_minutes": 10,
        "classes": list(CLASSES.values()),
        "consequences": {
            "seen": (
                "happened → confirmed with the result you name. The key is done: no worker "
                "will ever perform it again."
            ),
            "not_found": (
                "not happened → failed. Releases the reservation: the effect may be tried again "
                "with the same key (attempt 2) by the next run."
            ),
            "duplicate": (
                "happened → confirmed with the result you name as the one that counts. The "
                "other results stay at the provider: cancel them there. The key is done."
            ),
            "abandon": (
                "abandon → abandoned. The effect must not happen: no run performs it any more. "
                "If it did happen at the provider, undo it there."
            ),
        },
        "verifier": True,
        "seen": None,
        "verifying": False,
    }


def at_lease(ts: float) -> str:
    from actonce.console._words import at

    return at(ts)


def test_a_gated_effects_page_names_its_holds_its_intent_and_its_packet(still: World) -> None:
    key = still.keys["gated"]
    packet = still.packets["approved"]
    page = effect_page(_console(still), key, "ana")
    assert page["holds"] == [
        {"attempt": 1, "kind": "approval", "ref": packet, "amount": "1", "status": "held"},
        {"attempt": 1, "kind": "intent", "ref": "trip-paris@v1", "amount": "0", "status": "held"},
    ]
    intents, packets = page["context"]["intents"], page["context"]["packets"]
    assert intents == [
        {
            "ref": "trip-paris@v1",
            "fields": [
                ("currency", "EUR", True),
                ("intent_id", "trip-paris", False),
                ("kind", "booking", False),
                ("price_ceiling", "120", True),
                ("provider", "Hotel Adlon", True),
                ("user", "ana", False),
                ("version", "1", False),
                ("when", "2026-12-01", True),
            ],
        }
    ]
    assert page["context"]["refreshed"] is None
    (p,) = packets
    assert p == {
        "id": packet,
        "summary": (
            "book 2026-12-01, https://v.example/?token=[redacted] at Hotel Adlon for 110 EUR "
            "(trip-paris@v1)"
        ),
        "user": "ana",
        "status": "held",
        "expires": "2023-11-14 23:13:20 UTC",
        "expired": False,
        "age": "2 min",
        "stale": False,
        "intent": "trip-paris version 1",
        "action": "book",
        "effect_ref": key,
        "effect_short": key[:12],
        "destination": "Hotel Adlon",
        "amount": "110 EUR",
        "ceiling": "120 EUR",
        "details": [("date", "2026-12-01"), ("voucher", "https://v.example/?token=[redacted]")],
        "terms": "free cancellation until 2026-11-28",
        "facts": [
            {
                "name": "price",
                "value": "110",
                "observed": T0,
                "valid_until": "2023-11-14 22:18:20 UTC",
                "freshness": "fresh",
                "source": "https://hotel.example/rates",
            }
        ],
        "created": T0,
        "revision": 1,
        "replaces": "",
        "replaced_by": "",
        "decided_by": "ana",
        "decided_at": T0,
        "note": "",
        "held_by": key,
        "answerable": False,
        "mine": True,
    }
    held = f"the approval {packet}, the intent version trip-paris@v1"
    assert page["consequences"] == {
        "seen": (
            "happened → confirmed with the result you name. The key is done: no worker will "
            f"ever perform it again. Consumes what its claim holds: {held}."
        ),
        "not_found": (
            "not happened → failed. Releases the reservation: the effect may be tried again "
            f"with the same key (attempt 2) by the next run. Releases what its claim holds: "
            f"{held}. The approval may then authorize the retry."
        ),
        "duplicate": (
            "happened → confirmed with the result you name as the one that counts. The other "
            f"results stay at the provider: cancel them there. The key is done. Consumes what "
            f"its claim holds: {held}."
        ),
        "abandon": (
            "abandon → abandoned. The effect must not happen: no run performs it any more. "
            f"If it did happen at the provider, undo it there. Releases what its claim holds: "
            f"{held}. The approval may then authorize the retry."
        ),
    }
    assert page["question"] == "Did commit book trip-paris for ana (110 EUR) happen?"
    assert page["actor"] == "ana-agent" and page["kind"] == "book"
    assert page["verifier"] is False  # no verifier is registered for "book"
    bob = effect_page(_console(still), key, "bo")["context"]["packets"][0]
    assert bob["mine"] is False


def test_a_duplicates_page_counts_its_results(still: World) -> None:
    page = effect_page(_console(still), still.keys["duplicate"], "ana")
    assert page["matches"] == 2
    assert page["consequences"]["duplicate"] == (
        "happened → confirmed with the result you name as the one that counts. The other "
        "results stay at the provider: cancel them there. The key is done; the ledger keeps "
        "the duplicate count (2 results seen)."
    )
    assert page["reason"].startswith("duplicate detected: 2 matching results (")
    verdict = page["timeline"][-1]
    assert verdict.tags == ("duplicate",) and verdict.category == "verdict"
    assert verdict.facts[0][0] == "duplicate detected"
    assert verdict.facts[0][1].startswith("2 results ")


def test_an_abandoned_effects_page_shows_the_decision_and_offers_nothing(still: World) -> None:
    page = effect_page(_console(still), still.keys["abandoned"], "carol")
    assert (page["status"], page["status_words"], page["status_css"]) == (
        "abandoned",
        "abandoned",
        "s-abandoned",
    )
    assert page["open"] is False and page["reviewable"] is False and page["consequences"] == {}
    assert page["reason"] == "abandon: customer cancelled; wrote password=[redacted] (bo)"
    decision = page["timeline"][-1]
    assert decision == Entry(
        decision.seq, 1_700_000_000.0, "decision: abandoned", "decision", 1, "review:bo",
        "needs_review → abandoned", "customer cancelled; wrote password=[redacted]",
        data='{\n  "decision": "abandon",\n  "result_ref": null,\n  "reviewer": "bo"\n}',
        by_reviewer="bo",
    )  # fmt: skip
    assert page["verdicts"][-1] == decision
    assert [e.category for e in page["verdicts"]] == ["verdict", "decision"]
    assert page["last_verdicts"] == [page["verdicts"][0]]  # decisions are not verdicts
    assert page["error"] == "ProviderError: HTTP 500 before commit for ORDER-9205"


def test_a_claimed_effect_is_open_but_not_for_review(still: World) -> None:
    page = effect_page(_console(still, hold_seconds=90), still.keys["claimed"], "ana")
    assert page["status"] == "claimed" and page["open"] is True and page["reviewable"] is False
    assert page["consequences"] == {} and page["hold_minutes"] == 2
    assert page["lease_live"] is False and page["error"] == ""
    assert [e.label for e in page["timeline"]] == ["claimed: attempt 1 (fencing token 1)"]
    assert page["verdicts"] == [] and page["evidence"] == []
    done = effect_page(_console(still, hold_seconds=29), still.keys["confirmed"], "ana")
    assert done["open"] is False and done["hold_minutes"] == 0
    assert done["result_ref"] == "obj-1"


def _row(w: World, name: str, subject: str, reason: str, **over: Any) -> dict[str, Any]:
    key = w.keys[name]
    row = {
        "ref": key,
        "short": key[:12],
        "kind": "invoice",
        "status": "needs_review",
        "subject": subject,
        "actor": "billing-bot",
        "age": "2 min",
        "since": T0,
        "reason": reason,
        "matches": 0,
        "hold": FREE,
    }
    row.update(over)
    return row


def _rows(w: World) -> list[dict[str, Any]]:
    raised = "perform raised ProviderError: HTTP 500 before commit for "
    rows = [
        _row(w, "needs_review", "create invoice ORDER-9202 for acme (75.50 EUR)",
             f"{raised}ORDER-9202; {SETTLE}"),
        _row(w, "gated", "commit book trip-paris for ana (110 EUR)", f"{raised}BOOK-1; {SETTLE}",
             kind="book", actor="ana-agent"),
        _row(w, "canary", "create invoice ORDER-9400 for acme (120.00 EUR)",
             f"{raised}ORDER-9400; {SETTLE}"),
        _row(w, "unknown", "create invoice ORDER-9201 for acme (120.00 EUR)",
             "perform raised TimeoutError: response lost after commit for ORDER-9201; "
             "outcome not proven yet", status="unknown"),
        _row(w, "duplicate", "create invoice ORDER-9203 for acme (120.00 EUR)",
             "duplicate detected: 2 matching results (obj-3, obj-4)", matches=2),
    ]  # fmt: skip
    return sorted(rows, key=lambda r: str(r["ref"]))


def test_the_review_queue_whole(still: World) -> None:
    page = queue_page(_console(still), "ana", "review", "", None)
    packets = {p: still.ledger.approvals.get(p) for p in still.packets.values()}
    pending = sorted(
        (p for p in packets.values() if p.status.value == "pending"),
        key=lambda p: (p.created_at, p.packet_id),
    )
    assert [p["id"] for p in page["pending"]] == [p.packet_id for p in pending]
    assert page["pending"][0] == {
        "id": pending[0].packet_id,
        "summary": pending[0].summary(),
        "user": pending[0].user,
        "status": "pending",
        "expires": "2023-11-14 23:13:20 UTC",
        "expired": False,
        "age": "2 min",
        "stale": True,
    }
    (op,) = page["operations"]
    assert op == {
        "id": "booking:trip-b3@v1",
        "link": "booking:trip-b3@v1",
        "state": "needs_review",
        "at": "the undo of pay",
        "since": T0,
        "age": "2 min",
        "done": "hold (obj-7), pay (obj-8), its undo was refused: it still stands",
        "not_done": "book (it did not happen)",
        "uncertain": "",
        "money": "240.00 EUR held",
        "reason": "the undo of pay was refused: pay still stands",
    }
    rest = {k: v for k, v in page.items() if k not in ("pending", "operations")}
    assert rest == {
        "rows": _rows(still),
        "status": "review",
        "statuses": [
            "review",
            "claimed",
            "executing",
            "unknown",
            "needs_review",
            "confirmed",
            "failed",
            "abandoned",
        ],
        "kind": "",
        "kinds": ["invoice"],
        "next": None,
        "paged": False,
        "counts": {"unknown": 1, "needs_review": 4},
        "pending_more": False,
    }


def test_the_queue_filters_by_status_and_kind_and_pages_by_cursor(still: World) -> None:
    console = _console(still, page_size=2)
    first = queue_page(console, "ana", "review", "", None)
    rows = _rows(still)
    assert queue_page(console, "ana", "nonsense", "", None)["rows"] == rows[:2]
    assert first["status"] == "review" and first["rows"] == rows[:2]
    second_record = still.ledger.get(str(rows[1]["ref"]))
    assert second_record is not None
    assert first["next"] == f"{second_record.updated_at!r}:{second_record.key}"
    assert first["paged"] is False and len(first["operations"]) == 1
    second = queue_page(console, "ana", "review", "", first["next"])
    assert second["rows"] == rows[2:4] and second["paged"] is True
    assert second["operations"] == []  # operations ride on the first page only
    last = queue_page(console, "ana", "review", "", second["next"])
    assert last["rows"] == rows[4:] and last["next"] is None
    exact = queue_page(_console(still, page_size=5), "ana", "review", "", None)
    assert exact["next"] is None and exact["rows"] == rows
    unknown = queue_page(_console(still), "ana", "unknown", "", None)
    assert unknown["status"] == "unknown" and [r["ref"] for r in unknown["rows"]] == [
        still.keys["unknown"]
    ]
    assert unknown["operations"] == [] and unknown["counts"] == {"unknown": 1, "needs_review": 4}
    books = queue_page(_console(still), "ana", "review", "book", None)
    assert [r["ref"] for r in books["rows"]] == [still.keys["gated"]] and books["kind"] == "book"
    done = queue_page(_console(still), "ana", "confirmed", "", None)
    assert {r["status"] for r in done["rows"]} == {"confirmed"}
    assert {r["reason"] for r in done["rows"]} == {""}


def test_a_queue_cursor_is_a_finite_time_and_a_key() -> None:
    assert parse_cursor(None) is None and parse_cursor("") is None
    assert parse_cursor("12.5:abc") == (12.5, "abc")
    assert parse_cursor("12.5:a:b") == (12.5, "a:b")
    for bad in ("12.5", "12.5:", "x:abc", "nan:abc", "inf:abc", "-inf:k"):
        assert parse_cursor(bad) is None, bad


def test_the_overview_counts_every_status(still: World) -> None:
    page = overview_page(_console(still))
    assert page == {
        "counts": [
            ("claimed", 1),
            ("executing", 1),
            ("unknown", 1),
            ("needs_review", 4),
            ("confirmed", page["counts"][4][1]),
            ("failed", 3),
            ("abandoned", 1),
        ],
        "total": sum(n for _, n in page["counts"]),
        "duplicates": page["duplicates"],
    }
    assert page["counts"][4][1] == len(still.ledger.list([Status.CONFIRMED]))
    assert page["duplicates"] == still.ledger.duplicates()


def test_a_pending_packets_page_whole(still: World) -> None:
    packet = still.packets["pending-ana"]
    page = packet_page(_console(still), packet, "ana")
    p = still.ledger.approvals.get(packet)
    assert set(page) == {"p", "effect_recorded", "history"}
    assert page["effect_recorded"] is False
    assert page["history"] == [
        {
            "at": T0,
            "what": "requested",
            "duplicate": False,
            "refused": False,
            "message": "buy dinner at Shop for 42 EUR (dinner-1@v1)",
            "data": (
                f'{{\n  "effect_key": "{p.effect_key}",\n  "replaces": null,\n'
                '  "revision": 1,\n  "status": "pending"\n}'
            ),
        }
    ]
    assert page["p"] == {
        "id": packet,
        "summary": "buy dinner at Shop for 42 EUR (dinner-1@v1)",
        "user": "ana",
        "status": "pending",
        "expires": "2023-11-14 23:13:20 UTC",
        "expired": False,
        "age": "2 min",
        "stale": True,
        "intent": "dinner-1 version 1",
        "action": "buy",
        "effect_ref": p.effect_key,
        "effect_short": p.effect_key[:12],
        "destination": "Shop",
        "amount": "42 EUR",
        "ceiling": "50 EUR",
        "details": [("item", "dinner")],
        "terms": "",
        "facts": [
            {
                "name": "price",
                "value": "42",
                "observed": "2023-11-14 21:13:20 UTC",
                "valid_until": "2023-11-14 21:18:20 UTC",
                "freshness": "stale",
                "source": "",
            }
        ],
        "created": T0,
        "revision": 1,
        "replaces": "",
        "replaced_by": "",
        "decided_by": "",
        "decided_at": "",
        "note": "",
        "held_by": "",
        "answerable": True,
        "mine": True,
    }
    assert packet_page(_console(still), packet, "carol")["p"]["mine"] is False
    approved = packet_page(_console(still), still.packets["approved"], "ana")
    assert approved["effect_recorded"] is True
    whats = [(h["what"], h["duplicate"], h["refused"]) for h in approved["history"]]
    assert whats[0] == ("requested", False, False)
    assert ("duplicate", True, False) in whats


def test_the_approvals_list_is_of_one_status(still: World) -> None:
    pending = approvals_page(_console(still), "pending")
    assert set(pending["statuses"]) >= {"pending", "held"}
    assert pending["status"] == "pending" and len(pending["packets"]) == 2
    assert approvals_page(_console(still), "bogus") == pending
    held = approvals_page(_console(still), "held")
    assert held["status"] == "held"
    assert [p["id"] for p in held["packets"]] == [still.packets["approved"]]
    assert pending["statuses"] == [s.value for s in ApprovalStatus]
