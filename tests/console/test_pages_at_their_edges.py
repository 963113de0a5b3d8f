"""Pages at their edges, each on a small ledger of its own (issue 23, item 2).

How many pending packets the queue shows (twenty, and says there are more),
how long a kind may be on an effect's page, a "verify again" verdict
remembered for an older attempt (not shown), an intent's empty fields (left
out), an operation row with no time, and the throttle of a client that
gave no address.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from actonce import (
    Absent,
    Confirmed,
    DecisionRecord,
    Effect,
    EffectRecord,
    Event,
    EventType,
    Hold,
    HoldKind,
    HoldStatus,
    Intent,
    Ledger,
    OperationDecision,
    Policy,
    Registry,
    Status,
    Unavailable,
    Verdict,
    effect_key,
)
from actonce.console import ConsoleServer, Reviewers, create_app, key_of, ref_of
from actonce.console._console import Console
from actonce.console._decide import Seen, verify_once
from actonce.console._decide import consequences as decide_consequences
from actonce.console._evidence import Folder, folder_view
from actonce.console._operations import _decision, operation_page, operation_row
from actonce.console._receipts import receipt_page
from actonce.console._server import _config
from actonce.console._views import _context, effect_page, queue_page
from actonce.testing import FrozenClock

from .conftest import CSRF
from .world import KEYS, World, _hashes, build

BASE = "http://127.0.0.1"
QUICK = Policy(settle_seconds=0.0, verify_attempts=1, verify_backoff=0.0)


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    # A registry of its own, not the process's default: kinds registered here stay here.
    led = Ledger.open(
        str(tmp_path / "l.db"), create=True, clock=FrozenClock(), signing_keys=KEYS,
        registry=Registry(),
    )  # fmt: skip
    yield led
    led.close()


def _console(ledger: Ledger) -> Console:
    return Console(ledger, Reviewers(_hashes()))


def _request(ledger: Ledger, n: int) -> str:
    intent = ledger.intents.put(
        Intent(f"buy-{n}", "purchase", user="ana", provider="Shop",
               price_ceiling=Decimal("50"), currency="EUR")
    )  # fmt: skip
    key = effect_key(tenant="ana", actor="a", kind="buy", object=f"o{n}", operation="commit")
    return ledger.approvals.request(intent, "buy", key, amount="5").packet.packet_id


def test_the_queue_shows_twenty_pending_packets_and_says_there_are_more(ledger: Ledger) -> None:
    ids = [_request(ledger, n) for n in range(20)]
    page = queue_page(_console(ledger), "ana", "review", "", None)
    assert [p["id"] for p in page["pending"]] == sorted(ids) and page["pending_more"] is False
    ids.append(_request(ledger, 20))
    page = queue_page(_console(ledger), "ana", "review", "", None)
    assert [p["id"] for p in page["pending"]] == sorted(ids)[:20] and page["pending_more"] is True
    assert page["rows"] == [] and page["counts"] == {"unknown": 0, "needs_review": 0}
    assert page["operations"] == [] and page["kinds"] == []


def _refused(ledger: Ledger, kind: str, key: str = "k-1") -> str:
    def perform() -> None:
        raise RuntimeError("HTTP 500")

    ledger.registry.register(kind, lambda r: Unavailable("down"), policy=QUICK)
    effect = Effect(key, kind, {"reference": "R"}, perform, Absent, policy=QUICK)
    record = ledger.run(effect)
    assert record.status is Status.NEEDS_REVIEW, record
    return record.key


def test_an_effects_kind_is_cut_at_eighty_characters(ledger: Ledger) -> None:
    key = _refused(ledger, "k" * 81)
    record = ledger.get(key)
    assert record is not None
    page = effect_page(_console(ledger), key, "ana")
    assert page["kind"] == "k" * 79 + "…"
    row = queue_page(_console(ledger), "ana", record.status.value, "", None)["rows"][0]
    assert row["kind"] == "k" * 79 + "…"
    other = _refused(ledger, "j" * 80, "k-2")
    assert effect_page(_console(ledger), other, "ana")["kind"] == "j" * 80


def test_a_verdict_seen_for_another_attempt_is_not_shown(ledger: Ledger) -> None:
    key = _refused(ledger, "invoice")
    record = ledger.get(key)
    assert record is not None
    console = _console(ledger)
    seen = Seen(key, record.fence, "ana", 0.0, "absent", "absent: nothing", None)
    console.seen[key] = seen
    assert effect_page(console, key, "ana")["seen"] == seen
    console.seen[key] = replace(seen, fence=record.fence + 1)
    assert effect_page(console, key, "ana")["seen"] is None
    console.verifying.add(key)
    assert effect_page(console, key, "ana")["verifying"] is True


def test_an_intents_empty_fields_are_left_out_of_the_context(ledger: Ledger) -> None:
    ledger.intents.put(Intent("plain", "purchase", user="ana", provider="", when=""))
    hold = Hold(1, HoldKind.INTENT, "plain@v1", Decimal(0), HoldStatus.HELD, 0.0, None)
    context = _context(_console(ledger), [hold, hold], [], "ana")
    (shown,) = context["intents"]
    names = [name for name, _, _ in shown["fields"]]
    assert names == ["intent_id", "kind", "user", "version"]
    assert shown["ref"] == "plain@v1"
    bad = Hold(1, HoldKind.INTENT, "nothing@vx", Decimal(0), HoldStatus.HELD, 0.0, None)
    gone = Hold(1, HoldKind.APPROVAL, "apv-none", Decimal(1), HoldStatus.HELD, 0.0, None)
    assert _context(_console(ledger), [bad, gone], [], "ana") == {
        "intents": [], "packets": [], "refreshed": None,
    }  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = build(tmp_path_factory.mktemp("edges"), clock=FrozenClock())
    yield w
    w.close()


def test_an_operation_row_without_a_time_shows_no_age(world: World) -> None:
    (v,) = [x for x in world.ledger.operations.in_review() if x.op_id.startswith("booking:")]
    row = operation_row(replace(v, since=None), 0.0)
    assert row["since"] == "" and row["age"] == ""
    data = {**v.receipt.data, "user": {}}
    bare = operation_row(replace(v, receipt=replace(v.receipt, data=data)), v.since or 0.0)
    assert (bare["done"], bare["not_done"], bare["uncertain"], bare["money"]) == (
        "nothing", "-", "", "",
    )  # fmt: skip
    assert bare["age"] == "0 s"


def test_a_client_without_an_address_is_throttled_as_one() -> None:
    reviewers = Reviewers({"ana": _hashes()["ana"]}, clock=lambda: 0.0)
    for _ in range(5):
        assert not reviewers.check("ana", "wrong")
    assert not reviewers.check("ana", "ana-password-1", "")
    assert reviewers.check("ana", "ana-password-1", "XXXX")


def test_a_settled_effect_names_its_result(ledger: Ledger) -> None:
    effect = Effect("done-1", "invoice", {"reference": "R"}, lambda: None,
                    lambda: Confirmed("R-" + "9" * 400), policy=QUICK)  # fmt: skip
    record = ledger.run(effect)
    assert record.status is Status.CONFIRMED
    page = effect_page(_console(ledger), record.key, "ana")
    assert page["result_ref"] == "R-" + "9" * 297 + "…"
    assert page["status_css"] == "s-confirmed" and page["status_words"] == "confirmed"
    assert page["consequences"] == {} and page["operation"] is None


def test_a_claimed_effect_has_no_reason_to_show(world: World) -> None:
    page = effect_page(Console(world.ledger, world.reviewers()), world.keys["claimed"], "ana")
    assert page["reason"] == "" and page["result_ref"] == "" and page["error"] == ""


def test_an_async_verifier_is_awaited(ledger: Ledger) -> None:
    async def verify(record: EffectRecord) -> Verdict:
        return Confirmed("ASYNC-1")

    registry = Registry()
    registry.register("invoice", verify)
    record = EffectRecord(
        key="k", kind="invoice", status=Status.UNKNOWN, fence=2, owner="w",
        lease_expires_at=0.0, payload="{}", payload_hash="h",
    )  # fmt: skip
    seen = asyncio.run(verify_once(registry, record, "bo", 5.0, 7.0))
    assert seen is not None
    assert (seen.key, seen.fence, seen.reviewer, seen.at, seen.verdict, seen.result_ref) == (
        "k", 2, "bo", 7.0, "confirmed", "ASYNC-1",
    )  # fmt: skip
    assert re.fullmatch(r"confirmed: ASYNC-1 \(1 match\); took \d+\.\d s", seen.words)
    assert asyncio.run(verify_once(Registry(), record, "bo", 5.0, 7.0)) is None

    def broken(record: EffectRecord) -> Verdict:
        raise KeyError("gone")

    registry.register("invoice", broken)
    seen = asyncio.run(verify_once(registry, record, "bo", 5.0, 7.0))
    assert seen is not None and seen.verdict == "unavailable"
    assert seen.words.startswith("unavailable: KeyError: 'gone'; took ")


def test_an_evidence_folder_says_how_many_requests_were_sent_and_refused(tmp_path: Path) -> None:
    folder = tmp_path / "ev"
    folder.mkdir()
    wire = {"wire": [{"method": "DELETE" * 3, "url": "https://x.example/a?token=SECRET",
                      "at": 1, "outcome": "o", "took": "t" * 21}, "junk"],
            "sent": 3, "refused": 2}  # fmt: skip
    (folder / "wire.json").write_text(json.dumps(wire), encoding="utf-8")
    (folder / "meta.json").write_text(json.dumps({"k" * 61: True, "done_at": 0}), encoding="utf-8")
    events = [Event("k", EventType.EVIDENCE, 0.0, 1, data={"evidence": str(folder)}, seq=4)]
    view = folder_view(events, 4, "ev", ())
    assert view.files == ("meta.json", "wire.json") and view.problem == ""
    assert view.sent == "3 sent, 2 refused"
    assert view.wire == ({"method": "DELETEDEL…", "url": "https://x.example/a?token=[redacted]",
                          "at": "1", "outcome": "o", "took": "t" * 19 + "…"},)  # fmt: skip
    assert view.meta == (("done_at", "1970-01-01 00:00:00 UTC"), ("k" * 59 + "…", "True"))
    (folder / "wire.json").write_text(json.dumps({"wire": []}), encoding="utf-8")
    assert folder_view(events, 4, "ev", ()).sent == " sent, 0 refused"
    (folder / "wire.json").write_text("[]", encoding="utf-8")
    assert folder_view(events, 4, "ev", ()).sent == ""
    gone = folder_view(events, 5, "other", ())
    assert gone == Folder(5, "other", (), (), "", (), "the folder is not there (moved, deleted, "
                          "or outside the evidence roots)")  # fmt: skip
    outside = folder_view(events, 4, "ev", (tmp_path / "elsewhere",))
    assert outside.files == () and outside.problem.startswith("the folder is not there")
    assert folder_view(events, 4, "ev", (tmp_path,)).files == ("meta.json", "wire.json")
    assert folder_view(events, 4, "ev", (folder,)).files == ("meta.json", "wire.json")


def test_a_field_given_twice_even_blank_is_not_a_form(ledger: Ledger) -> None:
    client = TestClient(create_app(_console(ledger)), base_url=BASE, follow_redirects=False)
    nonce = CSRF.search(client.get("/login").text)
    assert nonce
    body = f"csrf={nonce.group(1)}&name=ana&password=ana-password-1&x=&x="
    kind = {"content-type": "application/x-www-form-urlencoded", "origin": BASE}
    answer = client.post("/login", content=body.encode(), headers=kind)
    assert answer.status_code == 403 and "not a form of this console" in answer.text
    body = f"csrf={nonce.group(1)}&name=ana&password=ana-password-1&x="
    assert client.post("/login", content=body.encode(), headers=kind).status_code == 303


def test_the_receipt_page_whole(world: World) -> None:
    page = receipt_page(Console(world.ledger, world.reviewers()), "trip-77")
    assert page is not None
    steps = world.ledger.receipt("trip-77").data["steps"]  # type: ignore[union-attr]
    assert {k: v for k, v in page.items() if k not in ("json", "steps")} == {
        "id": "trip-77",
        "link": "trip-77",
        "state": "complete",
        "headline": "Operation trip-77 is done.",
        "lines": [
            ("What was done", "hold (obj-5); book (obj-6)."),
            ("Exceptions", "none."),
            ("What happens next", "Nothing: the operation is done."),
            ("Who to contact", "the team that runs this agent for you, with the reference "
                               "trip-77."),
            ("How we know", "verification found hold (attempt 1); verification found book "
                            "(attempt 1)."),
        ],
    }  # fmt: skip
    assert [s["ref"] for s in page["steps"]] == [s["key"] for s in steps]
    assert json.loads(page["json"])["operation_id"] == "trip-77"
    assert page["json"].startswith('{\n  "approval": null,\n  "approvals": [],\n')
    assert receipt_page(Console(world.ledger, world.reviewers()), "nope") is None


def test_a_flood_of_wrong_names_forgets_only_the_old_windows() -> None:
    now = [5000.0]
    reviewers = Reviewers({"ana": _hashes()["ana"]}, clock=lambda: now[0])
    for _ in range(5):
        assert not reviewers.check("ana", "wrong", "c")
    flood = {(f"x{i}", "n"): (0.0, 1) for i in range(100_001)}
    reviewers._failures.update(flood)
    now[0] += 10
    assert not reviewers.check("ana", "ana-password-1", "c")  # still locked: a recent window
    assert len(reviewers._failures) == 1


def test_the_server_thread_is_a_daemon(world: World) -> None:
    server = ConsoleServer(world.ledger, world.reviewers()).start()
    try:
        (thread,) = [t for t in threading.enumerate() if t.name == "actonce-console"]
        assert thread.daemon
        assert server.url.startswith("http://127.0.0.1:")
    finally:
        server.stop()


def test_a_long_reason_and_error_are_cut_at_a_thousand_characters(ledger: Ledger) -> None:
    def perform() -> None:
        raise RuntimeError("e" * 1200)

    effect = Effect("long-1", "invoice", {"reference": "R"}, perform, Absent, policy=QUICK)
    record = ledger.run(effect)
    page = effect_page(_console(ledger), record.key, "ana")
    stored = ledger.get(record.key)
    assert stored is not None and stored.reason is not None and 500 < len(stored.reason) < 1000
    assert page["reason"] == stored.reason  # the ledger cut the error; the page cuts no more
    error = ledger.events(record.key)[-1].data["perform"]["error"]
    assert page["error"] == error


def test_the_server_is_configured_quiet_and_quick_to_stop() -> None:
    config = _config(object())
    assert (config.ws, config.lifespan, config.access_log, config.server_header) == (
        "none", "off", False, False,
    )  # fmt: skip
    assert config.timeout_graceful_shutdown == 2 and config.log_level == "warning"


def test_an_operations_decisions_are_listed_on_its_page(tmp_path: Path) -> None:
    w = build(tmp_path, clock=FrozenClock())
    try:
        console = Console(w.ledger, w.reviewers())
        op = w.operations["review"]
        view = w.ledger.operations.get(op)
        w.ledger.operations.decide(op, OperationDecision.UNDONE_BY_HAND, by="bo",
                                   reason="voided by phone", attempt=view.attempt)  # fmt: skip
        page = operation_page(console, op, "ana", {})
        (row,) = page["op"]["decisions"]
        assert row == {"n": 1, "at": "2023-11-14 22:13:20 UTC", "what": "Record it undone by hand",
                       "by": "bo", "reason": "voided by phone", "step": "pay", "attempt": 1}  # fmt: skip
    finally:
        w.close()


def test_a_decision_about_the_whole_operation_names_no_step() -> None:
    row = _decision(DecisionRecord(OperationDecision.WITHDRAW, "carol", 0.0, "r" * 501, None, 4, 2))
    assert row == {"n": 2, "at": "1970-01-01 00:00:00 UTC", "what": "Withdraw", "by": "carol",
                   "reason": "r" * 499 + "…", "step": "", "attempt": 4}  # fmt: skip


def test_only_what_this_attempt_still_holds_is_named_in_the_consequences() -> None:
    def hold(fence: int, ref: str, status: HoldStatus) -> Hold:
        return Hold(fence, HoldKind.APPROVAL, ref, Decimal(1), status, 0.0, None)

    record = EffectRecord(
        key="k", kind="invoice", status=Status.NEEDS_REVIEW, fence=2, owner="w",
        lease_expires_at=0.0, payload="{}", payload_hash="h", matches=1,
    )  # fmt: skip
    holds = [
        hold(1, "apv-old", HoldStatus.HELD),
        hold(2, "apv-spent", HoldStatus.CONSUMED),
        hold(2, "apv-now", HoldStatus.HELD),
    ]
    words = decide_consequences(record, holds)
    assert words["seen"].endswith(" Consumes what its claim holds: the approval apv-now.")
    assert words["not_found"].endswith(
        "(attempt 3) by the next run. Releases what its claim holds: the approval apv-now. "
        "The approval may then authorize the retry."
    )
    assert words["duplicate"].endswith(
        "The key is done. Consumes what its claim holds: the approval apv-now."
    )
    budget = Hold(2, HoldKind.BUDGET, "team", Decimal("5"), HoldStatus.HELD, 0.0, None)
    assert decide_consequences(record, [budget])["abandon"].endswith(
        "undo it there. Releases what its claim holds: 5 of the budget team."
    )
    assert "apv" not in "".join(decide_consequences(record, holds[:2]).values())


def test_a_queue_row_says_who_holds_it(world: World) -> None:
    console = Console(world.ledger, world.reviewers())
    key = world.keys["needs_review"]
    console.holds.take(key, "ana")
    try:
        rows = queue_page(console, "ana", "review", "", None)["rows"]
        (row,) = [r for r in rows if r["ref"] == key]
        until = row["hold"]["until"]
        assert row["hold"] == {"free": False, "holder": "ana", "until": until, "mine": True,
                               "here": True}  # fmt: skip
        assert re.fullmatch(r"\d\d:\d\d:\d\d UTC", until)
        (theirs,) = [r for r in queue_page(console, "bo", "review", "", None)["rows"]
                     if r["ref"] == key]  # fmt: skip
        assert theirs["hold"] == {**row["hold"], "mine": False, "here": True}
        other = Console(world.ledger, world.reviewers())
        (seen,) = [r for r in queue_page(other, "ana", "review", "", None)["rows"]
                   if r["ref"] == key]  # fmt: skip
        assert seen["hold"] == {**row["hold"], "here": False}  # held through another console
    finally:
        console.holds.release(key, "ana")
    assert console.holds.state(key, "ana").free


def test_a_key_travels_as_url_safe_base64_without_padding() -> None:
    for key, ref in ((">>>???", "~Pj4-Pz8_"), ("~a", "~fmE"), ("a b", "~YSBi"), ("é", "~w6k")):
        assert ref_of(key) == ref and key_of(ref) == key
    assert ref_of("plain-KEY_1.x@y:z") == "plain-KEY_1.x@y:z"
    assert ref_of("k" * 512) == "k" * 512 and ref_of("k" * 513).startswith("~")
    assert key_of("~_w") == "~_w"  # not UTF-8: looked up as it is


def test_an_evidence_folders_refused_count_is_cut_at_ten_characters(tmp_path: Path) -> None:
    (tmp_path / "wire.json").write_text(
        json.dumps({"wire": [], "sent": "1" * 11, "refused": "2" * 11}), encoding="utf-8"
    )
    events = [Event("k", EventType.EVIDENCE, 0.0, 1, data={"evidence": str(tmp_path)}, seq=1)]
    assert folder_view(events, 1, "x", ()).sent == f"{'1' * 9}… sent, {'2' * 9}… refused"
