"""Every refused reply code and link leaves one note: where it is filed, its words, its data.

An answer through a reply code or a signed link that is refused changes no
packet, and is recorded all the same: under the packet's own history when the
refusal knows the packet for sure (a used code, a link that does not describe
its packet as it stands, a link meant for another packet), else under a
shared history (``codes``, ``links``: a wrong code names no packet, a forged
link no trustworthy id). Each note carries the refusal's words as returned,
who answered and through which channel, at the ledger's time. Memory store, frozen clock.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from actonce import EventType, Intent, Ledger, MemoryStore, SigningKeys, intent_key
from actonce._rules.approvals import sign_link
from actonce._store.history import approval_event_key
from actonce.testing import FrozenClock

KEYS = SigningKeys.parse("k1:" + "ab" * 16)
TRIP = Intent("trip", "booking", user="ana", provider="hotel.example",
              price_ceiling=Decimal("250"), currency="EUR")  # fmt: skip
NOW = 10_000.0


def _ledger() -> tuple[Ledger, Any]:
    ledger = Ledger(MemoryStore(), clock=FrozenClock(start=NOW), signing_keys=KEYS)
    ledger.intents.put(TRIP)
    req = ledger.approvals.request(TRIP, "pay", intent_key(TRIP, "pay", tenant="t", actor="ana"),
                                   amount="240")  # fmt: skip
    return ledger, req


def _notes(ledger: Ledger, where: str) -> list[tuple[Any, ...]]:
    return [
        (e.type, e.message, e.data, e.at, e.fence)
        for e in ledger.store.events(approval_event_key(where))
        if e.type is EventType.APPROVAL_REFUSED
    ]


def _wrong(code: str) -> str:
    return "0" * len(code) if code != "0" * len(code) else "1" * len(code)


def _refused(why: str, via: str) -> tuple[Any, ...]:
    return (EventType.APPROVAL_REFUSED, why, {"by": "ana", "via": via}, NOW, 0)


def test_a_wrong_reply_code_is_noted_in_the_shared_history_of_codes() -> None:
    ledger, req = _ledger()
    pid = req.packet.packet_id
    wrong = _wrong(req.code)
    first = ledger.approvals.answer_code(wrong, "approve", by="ana")
    other = ledger.approvals.answer_code(req.code, "approve", by="ana", packet_id="p-x")
    assert first.reason == "no packet of yours has this reply code"
    assert other.reason == "this is not ana's reply code for p-x"
    assert _notes(ledger, "codes") == [
        _refused(first.reason, "code"), _refused(other.reason, "code"),
    ]  # fmt: skip
    assert _notes(ledger, pid) == []


def test_too_many_wrong_codes_are_noted_in_the_shared_history_of_codes() -> None:
    ledger, req = _ledger()
    for _ in range(5):
        ledger.approvals.answer_code(_wrong(req.code), "approve", by="ana")
    blocked = ledger.approvals.answer_code(req.code, "approve", by="ana")
    assert blocked.reason == "too many wrong codes: reply codes are refused for now"
    notes = _notes(ledger, "codes")
    assert len(notes) == 6 and notes[-1] == _refused(blocked.reason, "code")


def test_a_used_reply_code_with_another_answer_is_noted_on_its_packet() -> None:
    ledger, req = _ledger()
    pid = req.packet.packet_id
    ledger.approvals.answer_code(req.code, "approve", by="ana")
    got = ledger.approvals.answer_code(req.code, "deny", by="ana")
    assert got.reason == "this reply code was already used"
    assert _notes(ledger, pid) == [_refused(got.reason, "code")]
    assert _notes(ledger, "codes") == []


def test_a_forged_link_is_noted_in_the_shared_history_of_links() -> None:
    ledger, req = _ledger()
    forged = req.link[:-2] + ("AA" if not req.link.endswith("AA") else "BB")
    got = ledger.approvals.answer_link(forged, "approve", by="ana")
    assert got.answer.value == "refused" and got.status.value == "pending"
    assert got.reason is not None and got.reason.startswith("the link")
    assert _notes(ledger, "links") == [_refused(got.reason, "link")]
    assert _notes(ledger, req.packet.packet_id) == []


def test_a_link_that_does_not_describe_its_packet_is_noted_on_the_packet() -> None:
    """Signed with the right key, for other fields than the packet has (another amount)."""
    ledger, req = _ledger()
    pid = req.packet.packet_id
    token = sign_link(KEYS, replace(req.packet, amount=Decimal("245")))
    got = ledger.approvals.answer_link(token, "approve", by="ana")
    why = "the link does not describe this packet as it stands"
    assert (got.answer.value, got.status.value, got.reason) == ("refused", "pending", why)
    assert _notes(ledger, pid) == [_refused(why, "link")]
    assert ledger.approvals.get(pid).status.value == "pending"
