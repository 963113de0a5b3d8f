"""docs/booking.md's agent for a site of your own (``examples/hotel_agent.py``), in real Chromium.

The example's own functions drive Lakeside Inn (``actonce.sandbox.LakesideServer``,
not the sandbox's booking world) through a SQLite ledger; the inn's ground truth
(``inn.truth()``, its count of POSTs) is checked beside the ledger. The price
rises after the approval (a refreshed packet, approved again: the verifier reads
the newest packet's ceiling), the booking is refused (the payment is voided, the
hold lapses on its own), and the example runs as a program.
"""

from __future__ import annotations

import runpy
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from actonce import Intent, Ledger, OperationState, SigningKeys, Status, Unavailable, intent_key
from actonce.browser import Browser, BrowserSession
from actonce.sandbox import LakesideServer
from actonce.sandbox._lakeside import HOLD_SECONDS

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hotel_agent.py"
ex: dict[str, Any] = runpy.run_path(str(EXAMPLE), run_name="hotel_agent")
KEYS = SigningKeys.parse("k1:" + "5e" * 16)


@dataclass
class Trip:
    ledger: Ledger
    inn: LakesideServer
    session: BrowserSession
    intent: Any
    stay: Any
    packet_id: str

    def run(self) -> Any:
        return ex["book_stay"](self.ledger, self.session, self.stay, self.intent, self.packet_id)

    def status(self, action: str) -> Status | None:
        key = intent_key(self.intent, action, tenant=ex["TENANT"], actor=ex["GUEST"])
        record = self.ledger.get(key.value)
        return None if record is None else record.status

    def truth(self) -> dict[str, list[dict[str, Any]]]:
        return self.inn.inn.truth()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser() as b:
        yield b


@pytest.fixture
def trip(browser: Browser, tmp_path: Path) -> Iterator[Trip]:
    ledger = Ledger.open(f"sqlite:///{tmp_path / 'hotel.db'}", create=True, signing_keys=KEYS)
    with LakesideServer() as inn:
        intent = ledger.intents.put(Intent(
            "mia-june", "booking", user=ex["GUEST"], provider="Lakeside Inn",
            items=("lake-view",), when="2031-06-01", price_ceiling=Decimal("250.00"),
            currency="EUR",
        ))  # fmt: skip
        pay_key = intent_key(intent, "pay", tenant=ex["TENANT"], actor=ex["GUEST"])
        ask = ledger.approvals.request(intent, "pay", pay_key, amount="240.00",
                                       ceiling="250.00", destination="Lakeside Inn")  # fmt: skip
        ledger.approvals.answer_link(ask.link, "approve", by=ex["GUEST"])
        session = ex["sign_in"](browser, inn.url)
        stay = ex["Stay"](str(intent.ref), "lake-view", "2031-06-01", nights=2)
        try:
            yield Trip(ledger, inn, session, intent, stay, ask.packet.packet_id)
        finally:
            session.close()
            ledger.close()


def test_one_pass_books_once_and_a_second_pass_sends_nothing(trip: Trip) -> None:
    done = trip.run()
    assert done.state is OperationState.COMPLETE, done.reason
    truth = trip.truth()
    assert [len(truth[k]) for k in ("holds", "payments", "bookings", "messages")] == [1, 1, 1, 1]
    assert truth["payments"][0]["amount"] == 24000 and truth["payments"][0]["status"] == "captured"
    assert trip.inn.inn.posts == 4  # one submit per step, nothing resent
    again = trip.run()
    assert again.state is OperationState.COMPLETE and trip.inn.inn.posts == 4
    receipt = trip.ledger.receipt(done.op_id)
    assert receipt is not None and "Charged: 240.00 EUR." in receipt.text


def test_the_pay_step_keeps_its_gate_refresh_and_evidence_and_keys_fit_the_inn(trip: Trip) -> None:
    steps = ex["stay_steps"](trip.ledger, trip.session, trip.stay, trip.intent, trip.packet_id)
    pay = steps[1].effect
    assert pay.gate is not None and pay.gate.approval == trip.packet_id
    assert pay.refresh is not None and pay.evidence is not None
    tokens = [s.effect.payload["request_id"] for s in steps]
    assert all(len(t) == 36 for t in tokens[:3]) and len(set(tokens[:3])) == 3
    assert tokens == [s.effect.payload["request_id"] for s in ex["stay_steps"](
        trip.ledger, trip.session, trip.stay, trip.intent, trip.packet_id)]  # fmt: skip


def test_a_price_rise_needs_a_new_approval_and_the_verifier_reads_its_ceiling(trip: Trip) -> None:
    trip.inn.inn.set_rate("lake-view", 13000)  # 260.00 for two nights: above the 250.00 approved
    stale = trip.run()
    assert stale.state is OperationState.IN_PROGRESS, stale.reason
    assert trip.status("hold") is Status.CONFIRMED and trip.status("pay") is None
    assert trip.truth()["payments"] == []
    newest = trip.ledger.approvals.latest(trip.packet_id)
    assert (newest.revision, newest.ceiling) == (2, Decimal("260.00"))
    trip.ledger.approvals.answer_link(
        trip.ledger.approvals.link(newest.packet_id), "approve", by=ex["GUEST"]
    )
    done = trip.run()
    assert done.state is OperationState.COMPLETE, done.reason
    assert trip.truth()["payments"][0]["amount"] == 26000
    receipt = trip.ledger.receipt(done.op_id)
    assert receipt is not None and "raised from 250.00 EUR" in receipt.text
    # The pitfall the page names: a verifier holding the intent's ceiling (250.00)
    # would not confirm the payment the re-approval allowed.
    assert trip.status("pay") is Status.CONFIRMED
    stale_pay = ex["Pay"](trip.stay, "", 25000)
    verdict = trip.session.effect(stale_pay).verify()
    assert isinstance(verdict, Unavailable) and "above the approved ceiling" in verdict.reason


def test_a_refused_booking_voids_the_payment_and_waits_for_the_hold_to_lapse(trip: Trip) -> None:
    trip.inn.inn.refuse_bookings = True
    first = trip.run()
    assert trip.status("book") is Status.FAILED
    assert trip.status("pay") is Status.CONFIRMED and first.state is not OperationState.COMPENSATED
    truth = trip.truth()
    assert truth["payments"][0]["status"] == "voided" and truth["bookings"] == []
    assert truth["holds"][0]["status"] == "held"  # nothing can release it: the undo waits
    assert first.op_id in trip.ledger.operations.due()  # the queued undo: work due
    trip.inn.inn.advance(HOLD_SECONDS + 1)
    done = trip.run()
    assert done.state is OperationState.COMPENSATED, done.reason
    assert trip.truth()["holds"][0]["status"] == "expired"
    assert trip.inn.inn.posts == 4  # hold, pay, the refused book, the void: no click to undo a hold
    receipt = trip.ledger.receipt(done.op_id)
    assert receipt is not None and "Charged: nothing." in receipt.text


def test_the_example_runs_as_a_program(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(EXAMPLE)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("complete in ") and "is done." in proc.stdout


def test_docs_booking_shows_the_whole_example() -> None:
    page = (EXAMPLE.parents[1] / "docs" / "booking.md").read_text(encoding="utf-8")
    assert f"```python\n{EXAMPLE.read_text(encoding='utf-8')}```" in page
    lines = len(EXAMPLE.read_text(encoding="utf-8").splitlines())
    assert f"{lines}\nlines with its docstrings" in page  # the figure the page gives
