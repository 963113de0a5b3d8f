"""Pages at their edges, each on a small ledger of its own (issue 23, item 2).

How many pending packets the queue shows (twenty, and says there are more),
how long a kind may be on an effect's page, a "verify again" verdict
remembered for an older attempt (not shown), an intent's empty fields (left
out), an operation row with no time, and the throttle of a client that
gave no address.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

from actonce import (
    Absent,
    Confirmed,
    Effect,
    Hold,
    HoldKind,
    HoldStatus,
    Intent,
    Ledger,
    Policy,
    Status,
    Unavailable,
    effect_key,
)
from actonce.console import Reviewers
from actonce.console._console import Console
from actonce.console._decide import Seen
from actonce.console._operations import operation_row
from actonce.console._views import _context, effect_page, queue_page
from actonce.testing import FrozenClock

from .world import KEYS, World, _hashes, build

QUICK = Policy(settle_seconds=0.0, verify_attempts=1, verify_backoff=0.0)


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    led = Ledger.open(str(tmp_path / "l.db"), create=True, clock=FrozenClock(), signing_keys=KEYS)
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
