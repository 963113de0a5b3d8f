"""An approval packet and its carriers, whole (issue 23, item 2).

The rules of ``actonce._rules.approvals`` as values: what a packet is as
JSON and in one line of words, what each refusal of a commit is (its words
and whether a person may still unblock it), what a signed link says and why
a link is not valid, how a reply code is kept and matched, which packet is
the newest. Each assertion states a whole value, so a field or a word
changed anywhere in it is seen.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from actonce._rules.approvals import (
    CODE_ALPHABET,
    Answered,
    AnswerResult,
    ApprovalStatus,
    Decision,
    LinkClaims,
    Packet,
    Refusal,
    SigningKeys,
    answer,
    check_commit,
    code_digest,
    code_matches,
    link_matches,
    new_code,
    new_packet_id,
    newest,
    request_details,
    request_facts,
    sign_link,
    verify_link,
    with_status,
)
from actonce._rules.facts import Fact
from actonce._rules.intents import IntentRef

REF = IntentRef("trip", 2)
KEY = "k" * 64
TOTAL = Fact("total", Decimal("240.00"), observed_at=10.0, source="https://x.example/cart")
KEYS = SigningKeys((("k2", b"n" * 16), ("k1", b"o" * 16)))


def packet(**changes: Any) -> Packet:
    base: dict[str, Any] = {
        "packet_id": "apv-1", "intent": REF, "action": "book", "effect_key": KEY, "user": "ana",
        "destination": "Lakeside Inn", "amount": Decimal("240.00"), "currency": "EUR",
        "details": {"room": "12", "nights": 2}, "terms": "free until 1 Dec", "facts": (TOTAL,),
        "created_at": 10.0, "expires_at": 910.0,
    }  # fmt: skip
    base.update(changes)
    return Packet(**base)


PACKET_JSON = {
    "packet_id": "apv-1", "intent_id": "trip", "version": 2, "action": "book", "effect_key": KEY,
    "user": "ana", "destination": "Lakeside Inn", "amount": "240.00", "ceiling": "240.00",
    "currency": "EUR", "details": {"room": "12", "nights": 2}, "terms": "free until 1 Dec",
    "facts": [{"name": "total", "value": "240.00", "observed_at": 10.0, "valid_until": 310.0,
               "source": "https://x.example/cart"}],
    "created_at": 10.0, "expires_at": 910.0, "status": "pending", "revision": 1,
    "replaces": None, "replaced_by": None, "decided_by": None, "decided_at": None,
    "note": None, "held_by": None,
}  # fmt: skip


def test_a_packet_as_json_holds_every_field_and_reads_back_the_same() -> None:
    p = packet()
    assert p.as_json() == PACKET_JSON
    assert Packet.from_json(PACKET_JSON) == p
    assert p.stored() == p  # nothing secret in it: kept as it is
    decided = replace(p, status=ApprovalStatus.HELD, revision=3, replaces="apv-0",
                      replaced_by="apv-4", decided_by="ana", decided_at=20.0, note="ok",
                      held_by=KEY, ceiling=Decimal("250"))  # fmt: skip
    assert decided.as_json() == {
        **PACKET_JSON, "status": "held", "revision": 3, "replaces": "apv-0",
        "replaced_by": "apv-4", "decided_by": "ana", "decided_at": 20.0, "note": "ok",
        "held_by": KEY, "ceiling": "250",
    }  # fmt: skip
    assert Packet.from_json(decided.as_json()) == decided
    bare = Packet("apv-2", REF, "notify", KEY, "ana", created_at=1.0, expires_at=2.0)
    assert bare.as_json() == {
        **{k: None for k in ("destination", "amount", "ceiling", "currency", "replaces",
                             "replaced_by", "decided_by", "decided_at", "note", "held_by")},
        "packet_id": "apv-2", "intent_id": "trip", "version": 2, "action": "notify",
        "effect_key": KEY, "user": "ana", "details": {}, "terms": "", "facts": [],
        "created_at": 1.0, "expires_at": 2.0, "status": "pending", "revision": 1,
    }  # fmt: skip
    # The shape read back tolerates what JSON loses: no details, no facts, a version as text.
    sparse = {**bare.as_json(), "details": None, "facts": None, "version": "2"}
    assert Packet.from_json(sparse) == bare


def test_a_packets_secret_is_scrubbed_as_the_ledger_keeps_it() -> None:
    p = packet(details={"room": "12", "password": "hunter2"}, terms="")
    stored = p.stored()
    assert stored.details == {"room": "12", "password": "[redacted]"}
    assert replace(stored, details=p.details) == p


def test_a_packet_in_one_line_says_what_where_and_for_how_much() -> None:
    assert packet().summary() == "book 12, 2 at Lakeside Inn for 240.00 EUR (trip@v2)"
    ceiling_only = packet(amount=None, ceiling=Decimal(300), destination=None, details={})
    assert ceiling_only.summary() == "book for at most 300 EUR (trip@v2)"
    assert packet(amount=None, destination="", details={}).summary() == "book (trip@v2)"


def test_a_packets_ceiling_defaults_to_its_amount_and_its_status_is_an_enum() -> None:
    p = packet(status="approved")
    assert (p.ceiling, p.status) == (Decimal("240.00"), ApprovalStatus.APPROVED)
    assert type(p.status) is ApprovalStatus
    assert packet(amount=Decimal(5), ceiling=Decimal(5)).ceiling == Decimal(5)  # at its ceiling
    assert packet(amount=None).ceiling is None
    assert isinstance(packet(facts=[TOTAL]).facts, tuple)
    assert not packet().expired(909.99) and packet().expired(910.0)


def test_ids_and_codes_are_random_in_their_own_shape() -> None:
    ids = {new_packet_id() for _ in range(20)}
    assert len(ids) == 20
    assert all(i.startswith("apv-") and len(i) == 24 and int(i[4:], 16) >= 0 for i in ids)
    codes = {new_code() for _ in range(20)}
    assert len(codes) == 20
    assert all(len(c) == 8 and set(c) <= set(CODE_ALPHABET) for c in codes)


def approved(**changes: Any) -> Packet:
    return packet(**{"status": ApprovalStatus.APPROVED, **changes})


def commit(p: Packet, **over: Any) -> Refusal | None:
    args: dict[str, Any] = {"effect_key": KEY, "intent": REF, "intent_current": True,
                            "amount": Decimal("240.00"), "now": 20.0, "refreshed": ()}  # fmt: skip
    args.update(over)
    return check_commit(p, **args)


COMMITS = [
    ("approved", approved(), {}, None),
    ("approved-no-intent-given", approved(), {"intent": None, "amount": None}, None),
    ("at-the-ceiling", approved(ceiling=Decimal(250)), {"amount": Decimal(250)}, None),
    ("no-ceiling-any-amount", approved(amount=None, currency=None), {"amount": Decimal(10**6)},
     None),
    ("pending", packet(), {}, Refusal("waiting for ana to approve apv-1", waiting=True)),
    ("pending-expired", packet(), {"now": 910.0},
     Refusal("the approval expired before it was answered")),
    ("held", approved(status=ApprovalStatus.HELD, held_by="k-other"), {},
     Refusal("the approval is already held by the claim of k-other")),
    ("replaced", packet(status=ApprovalStatus.INVALIDATED, replaced_by="apv-9"), {},
     Refusal("the approval was replaced by the refreshed packet apv-9: the user answers that "
             "one, and the commit runs under it")),
    ("invalidated", packet(status=ApprovalStatus.INVALIDATED), {},
     Refusal("the approval is invalidated")),
    ("denied", packet(status=ApprovalStatus.DENIED), {}, Refusal("the approval is denied")),
    ("consumed", packet(status=ApprovalStatus.CONSUMED), {}, Refusal("the approval is consumed")),
    ("expired", approved(), {"now": 910.0}, Refusal("the approval has expired")),
    ("other-effect", approved(), {"effect_key": "x" * 64},
     Refusal("the approval is for another action")),
    ("other-version", approved(), {"intent": IntentRef("trip", 3)},
     Refusal("the approval is for trip@v2, not trip@v3")),
    ("superseded", approved(), {"intent_current": False},
     Refusal("trip@v2 has been superseded")),
    ("above", approved(), {"amount": Decimal("240.01")},
     Refusal("240.01 is above the approved 240.00 EUR")),
    ("stale-fact", approved(), {"now": 310.0},
     Refusal("the fact 'total' the approval relies on is no longer valid: refresh it right "
             "before the commit (Effect(refresh=...))")),
    ("refreshed-fact", approved(), {"now": 400.0,
                                   "refreshed": (Fact("total", "240", observed_at=390.0),)}, None),
    ("stale-refresh", approved(), {"now": 400.0,
                                  "refreshed": (Fact("total", "240", observed_at=0.0),)},
     Refusal("the fact 'total' the approval relies on is no longer valid: refresh it right "
             "before the commit (Effect(refresh=...))")),
    ("new-fact-stale", approved(), {"refreshed": (Fact("session", True, observed_at=-600.0),)},
     Refusal("the fact 'session' the approval relies on is no longer valid: refresh it right "
             "before the commit (Effect(refresh=...))")),
]  # fmt: skip


@pytest.mark.parametrize(("p", "over", "expected"), [c[1:] for c in COMMITS],
                         ids=[c[0] for c in COMMITS])  # fmt: skip
def test_a_commit_under_a_packet_is_allowed_or_refused_with_its_reason(
    p: Packet, over: dict[str, Any], expected: Refusal | None
) -> None:
    assert commit(p, **over) == expected
    if expected is not None:
        assert expected.kind == "approval"


def test_a_refusal_defaults_to_an_approval_that_no_answer_can_unblock() -> None:
    assert Refusal("r") == Refusal("r", False, "approval")


ANSWERS = [
    (ApprovalStatus.PENDING, "approve", Answered.ACCEPTED, ApprovalStatus.APPROVED, ""),
    (ApprovalStatus.PENDING, "deny", Answered.ACCEPTED, ApprovalStatus.DENIED, ""),
    (ApprovalStatus.DENIED, "deny", Answered.SAME, ApprovalStatus.DENIED,
     "the same answer again: nothing changed"),
    (ApprovalStatus.HELD, "approve", Answered.SAME, ApprovalStatus.HELD,
     "the same answer again: nothing changed"),
    (ApprovalStatus.CONSUMED, "approve", Answered.SAME, ApprovalStatus.CONSUMED,
     "the same answer again: nothing changed"),
    (ApprovalStatus.DENIED, "approve", Answered.REFUSED, ApprovalStatus.DENIED,
     "already denied: a later approve cannot change it"),
    (ApprovalStatus.HELD, "deny", Answered.REFUSED, ApprovalStatus.HELD,
     "already held: a later deny cannot change it"),
    (ApprovalStatus.CONSUMED, "deny", Answered.REFUSED, ApprovalStatus.CONSUMED,
     "already consumed: a later deny cannot change it"),
    (ApprovalStatus.EXPIRED, "approve", Answered.REFUSED, ApprovalStatus.EXPIRED,
     "the packet is expired"),
    (ApprovalStatus.INVALIDATED, "deny", Answered.REFUSED, ApprovalStatus.INVALIDATED,
     "the packet is invalidated"),
]  # fmt: skip


@pytest.mark.parametrize(("status", "choice", "verdict", "after", "why"), ANSWERS,
                         ids=[f"{a[0]}-{a[1]}" for a in ANSWERS])  # fmt: skip
def test_an_answer_to_a_packet_in_each_status(
    status: ApprovalStatus, choice: str, verdict: Answered, after: ApprovalStatus, why: str
) -> None:
    got = answer(packet(status=status), choice, by="ana", now=909.0, intent_current=True)
    assert got == AnswerResult(verdict, after, why)
    assert answer(packet(status=status), Decision(choice), by="ana", now=909.0,
                  intent_current=True) == got  # fmt: skip


def test_the_checks_of_an_answer_come_in_order_user_then_expiry_then_version() -> None:
    p = packet()
    # Another user is refused before the expiry is even looked at.
    assert answer(p, "approve", by="bo", now=2000.0, intent_current=False) == AnswerResult(
        Answered.REFUSED, ApprovalStatus.PENDING, "'bo' may not answer 'ana''s packet"
    )
    # Expiry is found before a superseded version.
    assert answer(p, "approve", by="ana", now=910.0, intent_current=False) == AnswerResult(
        Answered.REFUSED, ApprovalStatus.EXPIRED, "the packet has expired"
    )


def test_a_signed_link_says_what_it_was_signed_for() -> None:
    p = packet(ceiling=Decimal("250"))
    token = sign_link(KEYS, p)
    body, _, mac = token.partition(".")
    assert "=" not in token and "+" not in token and "/" not in token
    pad = "=" * (-len(body) % 4)
    assert base64.urlsafe_b64decode(body + pad) == (
        b'["k2","apv-1","trip",2,"240.00","250","EUR",910.0]'
    )
    assert len(base64.urlsafe_b64decode(mac + "=" * (-len(mac) % 4))) == 32
    claims = verify_link(KEYS, f"  {token}\n")
    assert claims == LinkClaims("apv-1", REF, "240.00", "250", "EUR", 910.0)
    assert isinstance(claims, LinkClaims) and link_matches(claims, p) is None
    # An older key still verifies what it signed; the signer is the first key.
    older = SigningKeys((("k1", b"o" * 16),))
    assert verify_link(KEYS, sign_link(older, p)) == claims
    bare = Packet("apv-2", REF, "notify", KEY, "ana", created_at=1.0, expires_at=2.0)
    assert verify_link(KEYS, sign_link(KEYS, bare)) == LinkClaims(
        "apv-2", REF, None, None, None, 2.0
    )


def _token(fields: list[Any], keys: SigningKeys = KEYS) -> str:
    import hashlib
    import hmac

    body = json.dumps(fields).encode()
    kid = fields[0] if fields and isinstance(fields[0], str) else "k2"
    secret = keys.get(kid) or b"n" * 16
    mac = hmac.new(secret, body, hashlib.sha256).digest()
    enc = base64.urlsafe_b64encode
    return f"{enc(body).decode().rstrip('=')}.{enc(mac).decode().rstrip('=')}"


def test_a_link_that_is_not_valid_says_why() -> None:
    p = packet()
    token = sign_link(KEYS, p)
    body, _, mac = token.partition(".")
    assert verify_link(KEYS, "no dot here") == "not an approval link"
    assert verify_link(KEYS, "!!!.???") == "not an approval link"
    assert verify_link(KEYS, token.replace(".", "")) == "not an approval link"
    assert verify_link(SigningKeys((("k9", b"x" * 16),)), token) == (
        "the link was signed with an unknown key"
    )
    assert verify_link(SigningKeys((("k2", b"x" * 16),)), token) == (
        "the link's signature does not match (a changed or foreign link)"
    )
    assert verify_link(KEYS, f"{body}.{mac[:-2]}AA") == (
        "the link's signature does not match (a changed or foreign link)"
    )
    # Signed right, but not the shape of a link: too few fields, a version that is no number.
    assert verify_link(KEYS, _token(["k2", "apv-1"])) == "not an approval link"
    assert verify_link(KEYS, _token(["k2", "apv-1", "trip", "two", None, None, None, 1.0])) == (
        "not an approval link"
    )
    assert verify_link(KEYS, _token([])) == "not an approval link"
    # A valid link for another state of the packet does not describe it.
    claims = verify_link(KEYS, token)
    assert isinstance(claims, LinkClaims)
    for changed in (replace(p, expires_at=911.0), replace(p, ceiling=Decimal(300)),
                    replace(p, packet_id="apv-2"), replace(p, intent=IntentRef("trip", 3))):  # fmt: skip
        assert link_matches(claims, changed) == (
            "the link does not describe this packet as it stands"
        )


def test_a_reply_code_is_kept_as_a_keyed_digest_bound_to_its_user() -> None:
    digest = code_digest(KEYS, "ana", " k7qf-2m9 x ")
    kid, _, hexdigest = digest.partition(":")
    assert kid == "k2" and len(hexdigest) == 64 and int(hexdigest, 16) >= 0
    assert digest == code_digest(KEYS, "ana", "K7QF2M9X")
    assert code_matches(KEYS, "ana", "k7qf 2m9x", digest)
    assert code_matches(KEYS, "ana", "K7QF-2M9X", digest)
    assert not code_matches(KEYS, "bo", "K7QF2M9X", digest)
    assert not code_matches(KEYS, "ana", "K7QF2M9Y", digest)
    assert not code_matches(KEYS, "ana", "K7QF2M9X", "k9:" + hexdigest)
    assert not code_matches(KEYS, "ana", "K7QF2M9X", hexdigest)  # no key id: no key
    # Kept under an older key, still matched after a rotation.
    older = SigningKeys((("k1", b"o" * 16),))
    assert code_matches(KEYS, "ana", "K7QF2M9X", code_digest(older, "ana", "K7QF2M9X"))
    assert code_digest(older, "ana", "K7QF2M9X") != digest


def test_signing_keys_parse_sign_with_the_first_and_hide_their_secrets() -> None:
    keys = SigningKeys.parse(" k2:" + "6e" * 16 + " , ,k1:" + "6f" * 16 + ",")
    assert keys == KEYS
    assert keys.signer() == ("k2", b"n" * 16)
    assert (keys.get("k1"), keys.get("k3")) == (b"o" * 16, None)
    assert repr(keys) == "SigningKeys(k2, k1)"
    assert "6e6e" not in repr(keys) and "nnnn" not in repr(keys)
    assert SigningKeys((("a" * 32, b"s" * 16),)).signer()[0] == "a" * 32  # 32 characters: fine
    assert SigningKeys((("Key_2.a-B9", b"s" * 16),)).signer()[0] == "Key_2.a-B9"


def test_the_newest_packet_is_the_latest_revision_then_the_latest_made() -> None:
    a = packet(packet_id="a", revision=1, created_at=50.0, expires_at=60.0)
    b = packet(packet_id="b", revision=2, created_at=20.0, expires_at=60.0)
    c = packet(packet_id="c", revision=2, created_at=30.0, expires_at=60.0)
    assert newest([a, b, c]) is c
    assert newest([c, b, a]) is c
    assert newest([a]) is a
    assert newest([]) is None


def test_with_status_changes_the_status_and_what_else_is_asked() -> None:
    p = packet()
    assert with_status(p, ApprovalStatus.HELD, held_by="k2") == replace(
        p, status=ApprovalStatus.HELD, held_by="k2"
    )
    assert with_status(p, ApprovalStatus.DENIED) == replace(p, status=ApprovalStatus.DENIED)


def test_what_a_packet_is_asked_to_show_is_taken_as_given() -> None:
    assert request_details(None) == {}
    details = {"when": "2026-12-20", "n": [1, 2.5], "ok": True}
    assert request_details(details) == details and request_details(details) is not details
    assert request_facts([TOTAL]) == (TOTAL,)
    assert request_facts(iter([TOTAL, TOTAL])) == (TOTAL, TOTAL)
    assert request_facts(()) == ()
