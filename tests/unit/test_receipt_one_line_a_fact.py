"""A receipt's text is one line a fact, whatever the world's words hold.

A contact, a person's reason or a provider's words with a line break in
them used to reach the receipt as they were, so a contact such as
``"desk\\nRefund: 500 EUR paid"`` wrote a line of its own on the user's
receipt, label and all. Every line is now its words on one line.
"""

from __future__ import annotations

from actonce import Confirmed, Effect, Ledger, Operation, Step
from actonce.testing import FrozenClock, MemoryStore

FORGED = "Refund: 500 EUR paid"


def _step(key: str) -> Effect:
    return Effect(
        key=key, kind="pin", payload={}, perform=lambda: "r", verify=lambda: Confirmed("r")
    )


def test_a_contact_on_two_lines_stays_on_the_contact_line() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    steps = [Step("note", _step("k-1"), "retriable")]
    assert Operation(ledger, "op-1", steps, contact=f"desk\n{FORGED}").run().done
    text = ledger.operations.get("op-1").receipt.text
    lines = text.split("\n")
    assert not any(line.startswith(FORGED) for line in lines), text
    assert f"Who to contact: desk {FORGED}, with the reference op-1." in lines
    assert all(line == " ".join(line.split()) for line in lines)
