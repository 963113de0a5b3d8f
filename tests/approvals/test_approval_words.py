"""Intents and approval packets: every refusal in its own words, and what a request
fills in from its intent (issue 23 item 2, the ``_run`` area's sample dev-run-1).

The area's tests named few of these messages whole. Each says what was
wrong and with which value; an answer refused through a link or a reply code
says why and keeps the packet as it was. Memory store, a frozen clock.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from actonce import Intent, Ledger, MemoryStore, SigningKeys, UsageError, intent_key
from actonce.testing import FrozenClock

KEYS = SigningKeys.parse("k1:" + "ab" * 16)
TRIP = Intent("trip", "booking", user="ana", provider="hotel.example",
              price_ceiling=Decimal("250"), currency="EUR")  # fmt: skip


def _ledger(intent: Intent = TRIP) -> tuple[Ledger, FrozenClock]:
    clock = FrozenClock(start=10_000.0)
    ledger = Ledger(MemoryStore(), clock=clock, signing_keys=KEYS)
    ledger.intents.put(intent)
    return ledger, clock


def _key(intent: Intent = TRIP) -> Any:
    return intent_key(intent, "pay", tenant="t", actor="ana")


def _refused(call: Any, message: str) -> None:
    with pytest.raises(UsageError) as err:
        call()
    assert str(err.value) == message


# --- intents ------------------------------------------------------------------------------------


def test_an_unknown_intent_is_named_with_its_version() -> None:
    ledger, _ = _ledger()
    _refused(lambda: ledger.intents.get("nope"), "no intent 'nope'")
    _refused(lambda: ledger.intents.get("trip", 9), "no intent 'trip' version 9")
    _refused(lambda: ledger.intents.chain("nope"), "no intent 'nope'")
    _refused(lambda: ledger.intents.history("nope"), "no intent 'nope'")
    assert ledger.intents.get("trip", 1).version == 1


def test_a_new_intent_starts_at_version_one() -> None:
    ledger, _ = _ledger()
    _refused(
        lambda: ledger.intents.put(Intent("other", "booking", user="ana", version=2)),
        "a new intent starts at version 1; change one with revise()",
    )


def test_putting_an_intent_again_answers_the_recorded_one_or_refuses_other_fields() -> None:
    ledger, _ = _ledger()
    assert ledger.intents.put(TRIP) == ledger.intents.get("trip")
    other = Intent("trip", "booking", user="ana", provider="motel.example")
    _refused(
        lambda: ledger.intents.put(other),
        "intent 'trip' exists (now trip@v1) with other fields: change it with revise()",
    )
    ledger.intents.revise("trip", price_ceiling=Decimal("300"))
    _refused(
        lambda: ledger.intents.put(TRIP),
        "intent 'trip' exists (now trip@v2) with other fields: change it with revise()",
    )
    ledger.intents.revise("trip", price_ceiling=Decimal("250"))
    # the fields of the first version again, as version 3: answered, not refused
    assert ledger.intents.put(TRIP) == ledger.intents.get("trip")
    assert ledger.intents.put(TRIP).version == 3


def test_a_revision_says_what_changed_and_whether_it_is_material() -> None:
    ledger, _ = _ledger()
    same = ledger.intents.revise("trip", notes={"tone": "warm"})
    assert (same.material, same.changed, same.intent.version) == (False, ("notes",), 1)
    assert ledger.intents.get("trip").notes == {"tone": "warm"}
    nothing = ledger.intents.revise("trip", notes={"tone": "warm"})
    assert (nothing.material, nothing.changed) == (False, ())
    new = ledger.intents.revise("trip", price_ceiling=Decimal("300"))
    assert (new.material, new.changed, new.intent.version) == (True, ("price_ceiling",), 2)
    assert (new.closed, new.voided, new.in_flight, new.operations) == ((), (), (), ())
    assert [r.intent.version for r in ledger.intents.chain("trip")] == [1, 2]


# --- requests -----------------------------------------------------------------------------------


@pytest.mark.parametrize("ttl", [0, -1, 30 * 86400 + 1, "60", None, float("nan")])
def test_an_approval_lives_up_to_thirty_days(ttl: Any) -> None:
    ledger, _ = _ledger()
    _refused(
        lambda: ledger.approvals.request(TRIP, "pay", _key(), amount="240", ttl=ttl),
        f"an approval's ttl is 0 to 30 days in seconds, not {ttl!r}",
    )


def test_a_request_fills_in_what_its_intent_says() -> None:
    ledger, _ = _ledger()
    req = ledger.approvals.request(TRIP, "pay", _key(), amount="240", ttl=30 * 86400)
    packet = req.packet
    assert (packet.user, packet.destination, packet.ceiling, packet.currency) == (
        "ana", "hotel.example", Decimal("250"), "EUR",
    )  # fmt: skip
    assert (packet.created_at, packet.expires_at) == (10_000.0, 10_000.0 + 30 * 86400)
    assert packet.amount == Decimal("240") and packet.effect_key == _key().value
    assert packet.status.value == "pending" and req.code and req.link
    told = ledger.approvals.request(TRIP, "pay", _key(), amount="10", ceiling="20",
                                    currency="USD", destination="x", user="bo", ttl=1)  # fmt: skip
    assert (told.packet.user, told.packet.destination, told.packet.ceiling,
            told.packet.currency, told.packet.expires_at) == (
        "bo", "x", Decimal("20"), "USD", 10_001.0)  # fmt: skip


def test_a_request_needs_the_current_version_and_a_user() -> None:
    ledger, _ = _ledger()
    ledger.intents.revise("trip", price_ceiling=Decimal("300"))
    _refused(
        lambda: ledger.approvals.request(TRIP, "pay", _key(), amount="240"),
        "trip@v1 is not the current version of its intent",
    )
    nobody = Intent("solo", "booking", provider="hotel.example")
    ledger.intents.put(nobody)
    _refused(
        lambda: ledger.approvals.request(nobody, "pay", _key(nobody), amount="1"),
        "an approval needs the user who answers it (the intent's user)",
    )
    _refused(lambda: ledger.approvals.get("zz"), "no approval packet 'zz'")
    _refused(lambda: ledger.approvals.latest("zz"), "no approval packet 'zz'")
    _refused(lambda: ledger.approvals.history("zz"), "no approval packet 'zz'")


# --- answers ------------------------------------------------------------------------------------


def _pending(ledger: Ledger) -> Any:
    return ledger.approvals.request(TRIP, "pay", _key(), amount="240")


@pytest.mark.parametrize("by", ["", "  ", None])
def test_every_answer_names_who_answers(by: Any) -> None:
    ledger, _ = _ledger()
    req = _pending(ledger)
    words = "an answer needs the identity of who answers (by=...)"
    _refused(lambda: ledger.approvals.answer(req.packet.packet_id, "approve", by=by), words)
    _refused(lambda: ledger.approvals.answer_code(req.code, "approve", by=by), words)


@pytest.mark.parametrize("code", ["", "   ", None, 123])
def test_a_reply_code_is_a_non_empty_string(code: Any) -> None:
    ledger, _ = _ledger()
    _refused(
        lambda: ledger.approvals.answer_code(code, "approve", by="ana"),
        "a reply code is a non-empty string",
    )


def test_a_link_token_is_a_string() -> None:
    ledger, _ = _ledger()
    _refused(
        lambda: ledger.approvals.answer_link(b"x", "approve", by="ana"),  # type: ignore[arg-type]
        "a link token is a string",
    )


def test_a_link_to_another_packet_is_refused_and_the_packet_stays() -> None:
    ledger, _ = _ledger()
    first, second = _pending(ledger), _pending(ledger)
    pid = second.packet.packet_id
    got = ledger.approvals.answer_link(first.link, "approve", by="ana", packet_id=pid)
    assert (got.answer.value, got.status.value) == ("refused", "pending")
    assert got.reason == f"the link is for another packet than {pid}"
    assert ledger.approvals.get(pid).status.value == "pending"
    assert ledger.approvals.get(first.packet.packet_id).status.value == "pending"
    [note] = [e for e in ledger.approvals.history(pid) if e.type.value == "approval_refused"]
    assert note.message == got.reason and note.data == {"by": "ana", "via": "link"}
    ok = ledger.approvals.answer_link(second.link, "approve", by="ana", packet_id=pid)
    assert ok.status.value == "approved"


def test_a_wrong_reply_code_says_whose_and_which() -> None:
    ledger, _ = _ledger()
    req = _pending(ledger)
    pid = req.packet.packet_id
    wrong = "0" * len(req.code) if req.code != "0" * len(req.code) else "1" * len(req.code)
    got = ledger.approvals.answer_code(wrong, "approve", by="ana")
    assert (got.answer.value, got.status.value, got.reason) == (
        "refused", "pending", "no packet of yours has this reply code",
    )  # fmt: skip
    got = ledger.approvals.answer_code(req.code, "approve", by="ana", packet_id="other")
    assert got.reason == "this is not ana's reply code for other"
    got = ledger.approvals.answer_code(req.code, "approve", by="bo")
    assert got.reason == "no packet of yours has this reply code"
    assert ledger.approvals.get(pid).status.value == "pending"
    right = ledger.approvals.answer_code(req.code, "approve", by="ana", packet_id=pid)
    assert (right.answer.value, right.status.value) == ("accepted", "approved")
    again = ledger.approvals.answer_code(req.code, "approve", by="ana")
    assert again.answer.value == "same" and again.status.value == "approved"
    other = ledger.approvals.answer_code(req.code, "deny", by="ana")
    assert (other.answer.value, other.status.value, other.reason) == (
        "refused", "approved", "this reply code was already used",
    )  # fmt: skip


def test_too_many_wrong_codes_refuse_every_code_for_a_while() -> None:
    ledger, clock = _ledger()
    req = _pending(ledger)
    wrong = "0" * len(req.code) if req.code != "0" * len(req.code) else "1" * len(req.code)
    for _ in range(5):
        got = ledger.approvals.answer_code(wrong, "approve", by="ana")
        assert got.reason == "no packet of yours has this reply code"
    blocked = ledger.approvals.answer_code(req.code, "approve", by="ana")
    assert (blocked.answer.value, blocked.status.value, blocked.reason) == (
        "refused", "pending", "too many wrong codes: reply codes are refused for now",
    )  # fmt: skip
    clock.advance(901.0)  # the window (15 minutes) is over
    assert ledger.approvals.answer_code(req.code, "approve", by="ana").status.value == "approved"


def test_a_right_code_is_no_failure() -> None:
    ledger, _ = _ledger()
    reqs = [_pending(ledger) for _ in range(6)]
    wrong = "0" * len(reqs[0].code)
    if any(r.code == wrong for r in reqs):
        wrong = "1" * len(wrong)
    for _ in range(4):
        ledger.approvals.answer_code(wrong, "approve", by="ana")
    for req in reqs:  # every right code gives its attempt back
        assert (
            ledger.approvals.answer_code(req.code, "approve", by="ana").status.value == "approved"
        )
    # four failures still: a fifth wrong code is compared, the attempt after it is not
    fifth = ledger.approvals.answer_code(wrong, "approve", by="ana")
    assert fifth.reason == "no packet of yours has this reply code"
    last = _pending(ledger)
    blocked = ledger.approvals.answer_code(last.code, "approve", by="ana")
    assert blocked.reason == "too many wrong codes: reply codes are refused for now"


def test_a_new_code_only_for_a_pending_packet_and_the_old_one_stops() -> None:
    ledger, _ = _ledger()
    req = _pending(ledger)
    pid = req.packet.packet_id
    again = ledger.approvals.resend(pid)
    assert again.packet == ledger.approvals.get(pid) and again.code and again.link
    old = ledger.approvals.answer_code(req.code, "approve", by="ana")
    assert old.reason == "no packet of yours has this reply code"
    assert ledger.approvals.answer_code(again.code, "approve", by="ana").status.value == "approved"
    _refused(lambda: ledger.approvals.new_code(pid), f"packet {pid} is approved: no code to send")
    _refused(lambda: ledger.approvals.resend(pid), f"packet {pid} is approved: no code to send")
