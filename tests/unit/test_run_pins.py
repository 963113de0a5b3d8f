"""Pins for the protocol's mutants the fast suite let through (issue 23, item 2).

``python tests/mutants/areas.py --area _run --sample 40 --seed 1`` showed
these unstated: the words refusing an answer's channel and a withdrawal
without its author, and the verdict a span carries for a duplicate.
"""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace

import pytest

from actonce import Confirmed, Intent, Ledger, SigningKeys, UsageError, intent_key
from actonce._run.telemetry import _verdict
from actonce.testing import FrozenClock, MemoryStore

KEYS = SigningKeys.parse("k1:" + "ab" * 16)


def _ledger() -> Ledger:
    ledger = Ledger(MemoryStore(), clock=FrozenClock(), signing_keys=KEYS)
    ledger.intents.put(
        Intent("trip", "booking", user="ana", price_ceiling=Decimal("250"), currency="EUR")
    )
    return ledger


@pytest.mark.parametrize("via", ["", " ", "x" * 33])
def test_an_answer_names_its_channel(via: str) -> None:
    ledger = _ledger()
    intent = ledger.intents.get("trip")
    assert intent is not None
    key = intent_key(intent, "pay", tenant="t", actor="ana")
    packet = ledger.approvals.request(intent, "pay", key, amount="240").packet
    with pytest.raises(
        UsageError, match=r"^via names the channel of an answer \(1 to 32 characters\)$"
    ):
        ledger.approvals.answer(packet.packet_id, "approve", by="ana", via=via)


def test_a_withdrawal_names_who_withdraws() -> None:
    with pytest.raises(
        UsageError, match=r"^an operation decision needs who withdraws it \(by=\.\.\.\)$"
    ):
        _ledger().intents.withdraw("trip", by=" ", reason="we stay home")


@pytest.mark.parametrize(("count", "name"), [(1, "confirmed"), (2, "duplicate"), (3, "duplicate")])
def test_a_span_calls_two_results_a_duplicate(count: int, name: str) -> None:
    verdict = Confirmed("r", count=count, refs=("r",) * count)
    assert _verdict(SimpleNamespace(verdict=verdict, stop=None)) == {  # type: ignore[arg-type]
        "actonce.verdict": name,
        "actonce.verdict.count": count,
    }
