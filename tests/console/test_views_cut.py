"""The lengths each view cuts a value to: whole at its limit, cut with "…" one past it.

A page shows what a user, an agent or a provider wrote; every such value
has a length it is cut to, so a page stays readable whatever was stored.
Each test below stores every field of one view once at its limit and once
one character past it, and reads the view.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest

from actonce import (
    Absent,
    Approvals,
    Confirmed,
    DecisionRecord,
    Effect,
    Event,
    EventType,
    Fact,
    Hold,
    HoldKind,
    HoldStatus,
    Intent,
    Ledger,
    MemoryStore,
    Operation,
    OperationDecision,
    Policy,
    Registry,
    Step,
)
from actonce.console import Reviewers
from actonce.console._console import Console
from actonce.console._decide import words_of
from actonce.console._evidence import _wire
from actonce.console._operations import _decision, operation_page, operation_row
from actonce.console._receipts import receipt_page, receipts_page, step_rows
from actonce.console._timeline import _facts, evidence_refs
from actonce.console._views import _context, approvals_page, effect_page, packet_page, queue_page
from actonce.console._words import object_of
from actonce.testing import FrozenClock

from .test_reviewers_and_words_whole import _record
from .world import KEYS, World


def shown_as(char: str, limit: int, over: int) -> str:
    """What a page shows of ``char * (limit + over)``, cut at ``limit``."""
    return char * limit if not over else char * (limit - 1) + "…"


#: A packet's fields and the lengths its page cuts them to.
PACKET_LIMITS = {
    "user": 80, "intent": 120, "action": 80, "destination": 200, "detail_name": 80,
    "detail_value": 300, "terms": 2000, "fact_name": 80, "fact_value": 500, "fact_source": 200,
    "note": 500,
}  # fmt: skip
SOURCE = "https://s.example/"
QUICK = Policy(settle_seconds=0.0, verify_attempts=1, verify_backoff=0.0)


def _packet_ledger(over: int) -> tuple[Ledger, str]:
    """A ledger with one answered packet, every field ``over`` past its limit."""
    n = {name: limit + over for name, limit in PACKET_LIMITS.items()}
    clock = FrozenClock()
    ledger = Ledger(MemoryStore(), clock=clock, signing_keys=KEYS)
    intent = ledger.intents.put(
        Intent("i" * n["intent"], "purchase", user="u" * n["user"], provider="Shop",
               price_ceiling=Decimal("50"), currency="EUR")
    )  # fmt: skip
    fact = Fact("n" * n["fact_name"], "x" * n["fact_value"], observed_at=clock.now(),
                source=SOURCE + "s" * (n["fact_source"] - len(SOURCE)))  # fmt: skip
    asked = ledger.approvals.request(
        intent, "a" * n["action"], "key-1", destination="d" * n["destination"], amount="42",
        currency="EUR", details={"k" * n["detail_name"]: "v" * n["detail_value"]},
        terms="t" * n["terms"], facts=[fact],
    )  # fmt: skip
    packet = asked.packet.packet_id
    ledger.approvals.answer(packet, "approve", by="u" * n["user"], note="o" * n["note"])
    return ledger, packet


@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "one-past"])
def test_a_packets_page_cuts_each_field_at_its_length(over: int) -> None:
    ledger, packet = _packet_ledger(over)
    page = packet_page(Console(ledger, Reviewers()), packet, "ana")
    p = page["p"]
    got = {
        "user": p["user"],
        "decided_by": p["decided_by"],
        "intent": p["intent"],
        "action": p["action"],
        "destination": p["destination"],
        "details": p["details"],
        "terms": p["terms"],
        "note": p["note"],
        "fact_name": p["facts"][0]["name"],
        "fact_value": p["facts"][0]["value"],
        "fact_source": p["facts"][0]["source"],
    }
    source = SOURCE + "s" * (200 + over - len(SOURCE))
    assert got == {
        "user": shown_as("u", 80, over),
        "decided_by": shown_as("u", 80, over),
        "intent": shown_as("i", 120, over) + " version 1",
        "action": shown_as("a", 80, over),
        "destination": shown_as("d", 200, over),
        "details": [(shown_as("k", 80, over), shown_as("v", 300, over))],
        "terms": shown_as("t", 2000, over),
        "note": shown_as("o", 500, over),
        "fact_name": shown_as("n", 80, over),
        "fact_value": shown_as("x", 500, over),
        "fact_source": source if not over else source[:199] + "…",
    }
    # The summary (action, details, destination) is long either way: cut at 300.
    assert len(p["summary"]) == 300 and p["summary"].endswith("…"), p["summary"]
    # A history row's message (the request names the action and the details): cut at 500.
    requested = page["history"][0]
    assert requested["what"] == "requested"
    assert len(requested["message"]) == 500 and requested["message"].endswith("…")


@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "one-past"])
def test_a_packets_row_in_the_lists_cuts_its_user_and_summary(over: int) -> None:
    ledger, packet = _packet_ledger(over)
    console = Console(ledger, Reviewers())
    (row,) = approvals_page(console, "approved")["packets"]
    assert row["id"] == packet and row["user"] == shown_as("u", 80, over)
    assert len(row["summary"]) == 300 and row["summary"].endswith("…")


@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "one-past"])
def test_an_effects_page_and_its_queue_row_cut_owner_holder_and_reason(over: int) -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock(), registry=Registry())

    def perform() -> None:
        raise RuntimeError("HTTP 500")

    effect = Effect("k-1", "kind", {"reference": "R"}, perform, Absent, policy=QUICK)
    ledger.run(effect, run_id="o" * (120 + over))  # the run's id is the record's owner
    console = Console(ledger, Reviewers())
    console.holds.take("k-1", "h" * (80 + over))
    page = effect_page(console, "k-1", "ana")
    assert page["owner"] == shown_as("o", 120, over)
    assert page["hold"]["holder"] == shown_as("h", 80, over)
    (row,) = queue_page(console, "ana", "review", "", None)["rows"]
    assert row["hold"]["holder"] == shown_as("h", 80, over)
    ledger.resolve("k-1", "abandon", reviewer="bo", reason="y" * (200 - 14 + over))
    (row,) = queue_page(console, "ana", "abandoned", "", None)["rows"]
    # The record's reason is "abandon: <reason> (bo)": 14 characters more.
    full = "abandon: " + "y" * (186 + over) + " (bo)"
    assert row["reason"] == (full if not over else full[:199] + "…"), row["reason"]


@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "one-past"])
def test_an_intent_in_an_effects_context_cuts_its_ref_and_its_values(over: int) -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock(), signing_keys=KEYS)
    intent_id = "i" * (200 - len("@v1") + over)
    ledger.intents.put(Intent(intent_id, "purchase", user="ana", provider="p" * (300 + over)))
    hold = Hold(1, HoldKind.INTENT, f"{intent_id}@v1", Decimal(0), HoldStatus.HELD, 0.0, None)
    (intent,) = _context(Console(ledger, Reviewers()), [hold], [], "ana")["intents"]
    ref = f"{intent_id}@v1"
    assert intent["ref"] == (ref if not over else ref[:199] + "…")
    fields = {name: value for name, value, _ in intent["fields"]}
    assert fields["provider"] == shown_as("p", 300, over)
    assert fields["intent_id"] == intent_id  # under 300: whole


# --- operations and receipts --------------------------------------------------------------


def _pin(key: str) -> Effect:
    return Effect(
        key=key, kind="pin", payload={}, perform=lambda: "r", verify=lambda: Confirmed("r")
    )


@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "one-past"])
def test_an_operations_page_cuts_its_headline_facts_proofs_and_intent(over: int) -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock(), signing_keys=KEYS)
    console = Console(ledger, Reviewers())
    long_id = "o" * (500 - len("Operation  is done.") + over)
    assert Operation(ledger, long_id, [Step("x", _pin("s0"), "retriable")]).run().done
    headline = f"Operation {long_id} is done."
    page = operation_page(console, long_id, "ana", {})["op"]
    assert page["headline"] == (headline if not over else headline[:499] + "…")
    (row,) = receipts_page(console, None)["receipts"]
    assert row["first"] == headline[:199] + "…" and row["id"] == long_id[:199] + "…"
    receipt = receipt_page(console, long_id)
    assert receipt is not None and receipt["headline"] == page["headline"]
    assert receipt["id"] == row["id"] == page["id"] == long_id[:199] + "…"
    intent = ledger.intents.put(Intent("i" * (200 - len("@v1") + over), "purchase", user="ana"))
    # "verification found <name> (attempt 1)": 31 characters more than the step's name;
    # the facts' "How we know" line joins both steps' proofs and ends with a full stop.
    first, second = "a" * (300 - 31 + over), "b" * 166
    steps = [Step(first, _pin("s1"), "retriable"), Step(second, _pin("s2"), "retriable")]
    assert Operation(ledger, "op-2", steps, intent=intent.ref).run().done
    page = operation_page(console, "op-2", "ana", {})["op"]
    proof = f"verification found {first} (attempt 1)"
    assert page["know"] == [
        proof if not over else proof[:299] + "…",
        f"verification found {second} (attempt 1)",
    ]
    line = f"{proof}; verification found {second} (attempt 1)."
    assert dict(page["facts"])["How we know"] == (line if not over else line[:499] + "…")
    ref = str(intent.ref)
    assert len(ref) == 200 + over and page["intent"] == (ref if not over else ref[:199] + "…")


@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "one-past"])
def test_an_operations_row_cuts_each_of_its_values(still: World, over: int) -> None:
    (view,) = still.ledger.operations.in_review()
    user = {
        "done": ["d" * (300 + over)], "not_done": ["n" * (300 + over)],
        "uncertain": ["u" * (300 + over)], "currency": "EUR", "charged_state": "charged",
        "charged": "9" * (120 - len(" EUR held") + over),
    }  # fmt: skip
    receipt = replace(view.receipt, data={**view.receipt.data, "user": user})
    step = "s" * (120 - len("the undo of ") + over)
    view = replace(view, op_id="o" * (200 + over), reason="r" * (300 + over), step=step,
                   undo=True, receipt=receipt)  # fmt: skip
    row = operation_row(view, 0.0)
    money = f"{user['charged']} EUR held"
    assert {
        k: row[k] for k in ("id", "at", "done", "not_done", "uncertain", "money", "reason")
    } == {
        "id": shown_as("o", 200, over),
        "at": ("the undo of " + step) if not over else ("the undo of " + step)[:119] + "…",
        "done": shown_as("d", 300, over),
        "not_done": shown_as("n", 300, over),
        "uncertain": shown_as("u", 300, over),
        "money": money if not over else money[:119] + "…",
        "reason": shown_as("r", 300, over),
    }


@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "one-past"])
def test_a_receipts_step_and_an_operations_decision_cut_their_values(over: int) -> None:
    step = {"name": "n" * (80 + over), "role": "r" * (40 + over), "status": "confirmed",
            "key": "k-1", "provider_ref": "p" * (200 + over)}  # fmt: skip
    (row,) = step_rows({"steps": [step]})
    assert (row["name"], row["role"], row["provider_ref"]) == (
        shown_as("n", 80, over), shown_as("r", 40, over), shown_as("p", 200, over),
    )  # fmt: skip
    decision = DecisionRecord(OperationDecision.ACCEPT, "b" * (80 + over), 0.0, "why",
                              "s" * (80 + over), 1, 1)  # fmt: skip
    shown = _decision(decision)
    assert (shown["by"], shown["step"]) == (shown_as("b", 80, over), shown_as("s", 80, over))


# --- a timeline's facts, its evidence folders, a folder's wire requests -------------------


@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "one-past"])
def test_a_timelines_facts_cut_each_value_at_its_length(over: int) -> None:
    data = {
        "perform": {"error": "e" * (500 + over),
                    "details": {"wire": [], "sent": "s" * (20 + over), "refused": "f" * (20 + over)}},
        "duplicate": {"count": "c" * (10 + over), "refs": ["r" * (120 + over)]},
        "alarm": {"attempt": "a" * (10 + over), "current_attempt": "b" * (10 + over)},
        "result_ref": "R" * (300 + over),
    }  # fmt: skip
    assert _facts(data) == [
        ("perform raised", shown_as("e", 500, over)),
        ("mutating requests sent", shown_as("s", 20, over)),
        ("requests refused by the guard", shown_as("f", 20, over)),
        ("duplicate detected", f"{shown_as('c', 10, over)} results {shown_as('r', 120, over)}"),
        ("alarm", f"attempt {shown_as('a', 10, over)} performed while attempt "
                  f"{shown_as('b', 10, over)} held the effect"),
        ("result", shown_as("R", 300, over)),
    ]  # fmt: skip
    folder = "/evidence/" + "l" * (120 + over)
    event = Event("k", EventType.EVIDENCE, 0.0, 1, data={"evidence": folder}, seq=3)
    (ref,) = evidence_refs([event])
    assert ref.label == shown_as("l", 120, over) and ref.folder == folder


@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "one-past"])
def test_a_folders_wire_requests_cut_each_value_and_stop_at_fifty(over: int) -> None:
    url = "https://x.example/" + "u" * (300 - len("https://x.example/") + over)
    item = {"method": "m" * (10 + over), "url": url, "at": "a" * (20 + over),
            "outcome": "o" * (120 + over), "took": "t" * (20 + over)}  # fmt: skip
    rows, sent = _wire({"wire": [item] * (50 + over), "sent": "s" * (10 + over), "refused": 1})
    assert len(rows) == 50, "a folder shows its first fifty requests"
    assert rows[0] == {
        "method": shown_as("m", 10, over),
        "url": url if not over else url[:299] + "…",
        "at": shown_as("a", 20, over),
        "outcome": shown_as("o", 120, over),
        "took": shown_as("t", 20, over),
    }
    assert sent == f"{shown_as('s', 10, over)} sent, 1 refused"


# --- an effect in words, a verdict in words -----------------------------------------------


@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "one-past"])
def test_an_object_read_from_the_payload_and_a_verdicts_result_are_cut(over: int) -> None:
    assert object_of(_record({"reference": "x" * (120 + over)})) == shown_as("x", 120, over)
    state, words, ref = words_of(Confirmed("R" * (300 + over)))
    assert (state, ref) == ("confirmed", shown_as("R", 300, over))
    assert words == f"confirmed: {shown_as('R', 300, over)} (1 match)"


@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "one-past"])
def test_an_effects_holds_cut_the_ref_they_hold_at_two_hundred(over: int) -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock(), signing_keys=KEYS)
    intent = ledger.intents.put(
        Intent("i" * (200 - len("@v1") + over), "purchase", user="ana",
               price_ceiling=Decimal("50"), currency="EUR")
    )  # fmt: skip
    asked = ledger.approvals.request(intent, "buy", "k-1", amount="5", currency="EUR")
    ledger.approvals.answer(asked.packet.packet_id, "approve", by="ana")

    def perform() -> None:
        raise RuntimeError("HTTP 500")

    gate = Approvals.gate(asked.packet)
    ledger.run(Effect("k-1", "buy", {"reference": "R"}, perform, Absent, policy=QUICK, gate=gate))
    page = effect_page(Console(ledger, Reviewers()), "k-1", "ana")
    ref = str(intent.ref)
    held = {h["kind"]: h["ref"] for h in page["holds"]}
    assert held == {
        "approval": asked.packet.packet_id,
        "intent": ref if not over else ref[:199] + "…",
    }


@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "one-past"])
def test_a_receipts_lines_cut_each_value_at_a_thousand(over: int) -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    # "What was done: <name> (r); ...": three steps whose line is 1000 (+ over) long.
    names = ["a" * 400, "b" * 400, "c" * (183 + over)]
    steps = [Step(name, _pin(f"s{n}"), "retriable") for n, name in enumerate(names)]
    # A contact on two lines stays one line: its second line is no label of its own
    # (labels are the receipt's own words, so their cut at 60 is never reached).
    contact = "desk\n" + "L" * 60 + ": the night desk"
    assert Operation(ledger, "op-1", steps, contact=contact).run().done
    page = receipt_page(Console(ledger, Reviewers()), "op-1")
    assert page is not None
    lines = dict(page["lines"])
    done = "; ".join(f"{name} (r)" for name in names) + "."
    assert len(done) == 1000 + over
    assert lines["What was done"] == (done if not over else done[:999] + "…")
    whom = "desk " + "L" * 60 + ": the night desk, with the reference op-1."
    assert lines["Who to contact"] == whom
    assert "L" * 60 not in lines
    facts = dict(operation_page(Console(ledger, Reviewers()), "op-1", "ana", {})["op"]["facts"])
    assert facts["Who to contact"] == whom
