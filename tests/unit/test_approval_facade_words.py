"""The approvals facade: where its signing keys come from, what its listings filter on,
a packet's gate and link, each refusal in its own words (issue 23 item 2, facades).

Keys are the ledger's, else ``ACTONCE_APPROVAL_KEYS``, else the file
``ACTONCE_APPROVAL_KEYS_FILE`` names; without any, approvals refuse to work
and say how to give one. Memory store, a frozen clock.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from actonce import (
    ApprovalStatus,
    Gate,
    Intent,
    IntentStatus,
    Ledger,
    MemoryStore,
    SigningKeys,
    UsageError,
    intent_key,
)
from actonce.testing import FrozenClock

HEX = "ab" * 16
TRIP = Intent("trip", "booking", user="ana", price_ceiling=Decimal("250"), currency="EUR")
NO_KEYS = (
    "approvals need a signing key kept outside the ledger: set ACTONCE_APPROVAL_KEYS=<key id>:"
    "<hex> (or ACTONCE_APPROVAL_KEYS_FILE), or pass signing_keys= to the ledger"
)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("ACTONCE_APPROVAL_KEYS", raising=False)
    monkeypatch.delenv("ACTONCE_APPROVAL_KEYS_FILE", raising=False)
    return monkeypatch


def _refused(call: object, message: str) -> None:
    with pytest.raises(UsageError) as err:
        call()  # type: ignore[operator]
    assert str(err.value) == message


def test_keys_come_from_the_ledger_the_variable_or_its_file(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    given = SigningKeys.parse("mine:" + HEX)
    assert Ledger(MemoryStore(), signing_keys=given).approvals.keys is given
    _refused(lambda: Ledger(MemoryStore()).approvals.keys, NO_KEYS)
    env.setenv("ACTONCE_APPROVAL_KEYS", "k1:" + HEX)
    assert Ledger(MemoryStore()).approvals.keys == SigningKeys.parse("k1:" + HEX)
    path = tmp_path / "approval.keys"
    path.write_text("k2:" + "cd" * 16 + "\n", encoding="utf-8")
    env.setenv("ACTONCE_APPROVAL_KEYS_FILE", str(path))
    assert Ledger(MemoryStore()).approvals.keys == SigningKeys.parse(
        "k1:" + HEX
    )  # the variable wins
    env.setenv("ACTONCE_APPROVAL_KEYS", "")
    assert Ledger(MemoryStore()).approvals.keys == SigningKeys.parse("k2:" + "cd" * 16)
    env.setenv("ACTONCE_APPROVAL_KEYS", "bad")
    _refused(
        lambda: Ledger(MemoryStore()).approvals.keys,
        "ACTONCE_APPROVAL_KEYS must hold 'kid:hex[,kid:hex...]'",
    )
    env.delenv("ACTONCE_APPROVAL_KEYS")
    path.write_text("bad", encoding="utf-8")
    _refused(
        lambda: Ledger(MemoryStore()).approvals.keys,
        f"the key file {path} must hold 'kid:hex[,kid:hex...]'",
    )
    missing = tmp_path / "nope.keys"
    env.setenv("ACTONCE_APPROVAL_KEYS_FILE", str(missing))
    _refused(
        lambda: Ledger(MemoryStore()).approvals.keys,
        f"cannot read the key file {missing}: No such file or directory",
    )


def _ledger() -> Ledger:
    ledger = Ledger(MemoryStore(), clock=FrozenClock(start=1_000.0),
                    signing_keys=SigningKeys.parse("k1:" + HEX))  # fmt: skip
    ledger.intents.put(TRIP)
    return ledger


def test_listings_filter_on_status_user_and_key() -> None:
    ledger = _ledger()
    key = intent_key(TRIP, "pay", tenant="t", actor="ana")
    first = ledger.approvals.request(TRIP, "pay", key, amount="240").packet
    other = ledger.approvals.request(TRIP, "pay", "other-key", amount="10", user="bo").packet
    ledger.approvals.answer(first.packet_id, "approve", by="ana")
    ids = lambda packets: [p.packet_id for p in packets]  # noqa: E731
    assert ids(ledger.approvals.list("approved")) == [first.packet_id]
    assert ids(ledger.approvals.list(ApprovalStatus.PENDING)) == [other.packet_id]
    assert ids(ledger.approvals.list(user="bo")) == [other.packet_id]
    assert ids(ledger.approvals.list(key=key)) == [first.packet_id]
    assert ids(ledger.approvals.list(key="other-key")) == [other.packet_id]
    assert len(ledger.approvals.list(limit=1)) == 1
    choices = ", ".join(s.value for s in ApprovalStatus)
    _refused(lambda: ledger.approvals.list("nope"),
             f"an approval status is one of {choices}, not 'nope'")  # fmt: skip
    ledger.intents.revise("trip", price_ceiling=Decimal("300"))
    assert [r.intent.version for r in ledger.intents.list()] == [2]
    assert [r.intent.version for r in ledger.intents.list(None)] == [1, 2]
    assert [r.intent.version for r in ledger.intents.list("superseded")] == [1]
    assert [r.intent.version for r in ledger.intents.list(IntentStatus.CURRENT, user="bo")] == []
    _refused(lambda: ledger.intents.list("nope"),
             "an intent status is one of current, superseded, not 'nope'")  # fmt: skip


def test_a_packet_s_gate_and_link() -> None:
    ledger = _ledger()
    packet = ledger.approvals.request(TRIP, "pay", "k", amount="240").packet
    assert ledger.approvals.gate(packet) == Gate(packet.intent, packet.packet_id, Decimal("240"))
    assert ledger.approvals.gate(packet, amount="99.5") == Gate(
        packet.intent, packet.packet_id, Decimal("99.5")
    )
    link = ledger.approvals.link(packet.packet_id)
    got = ledger.approvals.answer_link(link, "approve", by="ana")
    assert got.status is ApprovalStatus.APPROVED
