"""``_rules`` pinned where the area's held-out mutation sample (seed 4) found it loose
(issue 23 item 2): what an intent refuses and says, a packet's bad ceiling named as
such, the redaction mark in URL form, and the reasons an operation's assessment gives.
Pure rules, no store.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from actonce import Confirmed, Intent, Status, UsageError, scrub_text
from actonce._rules.approvals import Answered, ApprovalStatus, Packet, SigningKeys, answer
from actonce._rules.detect import looks_secret, luhn_ok
from actonce._rules.firewall import SubmitWindow
from actonce._rules.operations import (
    DecisionRecord,
    Next,
    OperationDecision,
    OperationState,
    Role,
    StepState,
    assess,
)
from actonce._rules.receipts import _Facts, _lines

from .test_rules_pins import _packets


@pytest.mark.parametrize("bad", ["", "   ", 5, None])
@pytest.mark.parametrize("field", ["intent_id", "kind"])
def test_an_intent_without_its_id_or_kind_is_refused_with_a_reason(field: str, bad: Any) -> None:
    good = {"intent_id": "trip", "kind": "booking"}
    with pytest.raises(UsageError) as err:
        Intent(**(good | {field: bad}))
    assert str(err.value) == f"an intent needs {field} (a non-empty string)"


def test_unknown_material_fields_are_named_in_order() -> None:
    with pytest.raises(UsageError) as err:
        Intent("trip", "booking", material=("when", "zeta", "alpha"))
    assert str(err.value) == "unknown material field(s): alpha, zeta"


def test_a_packets_bad_ceiling_is_named_as_the_ceiling() -> None:
    _, priced, _ = _packets()
    with pytest.raises(UsageError) as err:
        replace(priced, ceiling="a lot")  # type: ignore[arg-type]
    assert str(err.value).startswith("ceiling must be a finite, non-negative decimal"), err.value
    assert replace(priced, ceiling=Decimal("300")).ceiling == Decimal("300")
    assert isinstance(priced, Packet)


@pytest.mark.parametrize("marker", ["%5Bredacted%5D", "%5bredacted%5d"])
def test_the_redaction_mark_in_url_form_is_no_secret(marker: str) -> None:
    assert not looks_secret("token", marker)
    assert looks_secret("token", "a1b2c3d4e5")
    said = f"the session token {marker} was sent"  # scrubbed once, then written again
    assert scrub_text(said) == said


def _step(name: str, role: Role, status: Status | None, **kw: Any) -> StepState:
    return StepState(name, role, status, 0 if status is None else 1, **kw)


def test_a_retriable_step_after_the_pivot_runs_and_says_so() -> None:
    steps = [
        _step("book", Role.PIVOT, Status.CONFIRMED),
        _step("notify", Role.RETRIABLE, None, max_attempts=3),
    ]
    a = assess(steps)
    assert (a.state, a.next, a.index) == (OperationState.COMPLETE, Next.RUN, 1)
    assert a.reason == "notify runs (retriable)"
    failed = [steps[0], replace(steps[1], status=Status.FAILED, since=None)]
    again = assess(failed)
    assert (again.next, again.index, again.reason) == (Next.RUN, 1, "notify runs (retriable)")


def test_a_withdrawal_waits_for_a_step_on_its_way_and_says_why() -> None:
    steps = [
        _step("hold", Role.COMPENSATABLE, Status.EXECUTING, has_undo=True),
        _step("book", Role.PIVOT, None),
    ]
    withdraw = DecisionRecord(OperationDecision.WITHDRAW, "ana", 1.0, "plans changed", None, 0, 1)
    a = assess(steps, decisions=[withdraw])
    assert (a.state, a.next, a.index) == (OperationState.COMPENSATING, Next.WAIT, 0)
    assert a.reason == "withdrawn (plans changed); hold is executing: waiting for it", a.reason


@pytest.mark.parametrize(
    ("state", "line"),
    [
        ("charged", "Charged: 240 EUR."),
        ("release unknown", "Charged: 240 EUR; whether it was given back is not known yet."),
        ("unknown", "Charged: not known yet; up to 240 EUR may have been charged."),
    ],
)
def test_a_receipt_says_what_was_charged(state: str, line: str) -> None:
    facts = _Facts("needs_review", "Operation x needs a person.", charged="240",
                   charged_state=state, currency="EUR")  # fmt: skip
    lines = _lines(facts)
    assert line in lines, lines
    assert sum(x.startswith("Charged:") for x in lines) == 1, lines
    nothing = _lines(_Facts("done", "Operation x is done.", ceiling="250", currency="EUR"))
    assert "Charged: nothing." in nothing and "Charged: 240 EUR." not in nothing


def test_an_answer_to_a_superseded_intent_is_refused_and_voids_the_packet() -> None:
    _, priced, _ = _packets()
    got = answer(priced, "approve", by="ana", now=priced.created_at + 1, intent_current=False)
    assert (got.answer, got.status) == (Answered.REFUSED, ApprovalStatus.VOIDED), got
    assert got.reason == f"{priced.intent} has been superseded"


# --- held-out seed 5 -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["packet_id", "action", "effect_key", "user"])
def test_a_packet_without_a_required_field_names_it(name: str) -> None:
    _, priced, _ = _packets()
    with pytest.raises(UsageError) as err:
        replace(priced, **{name: " "})
    assert str(err.value) == f"an approval packet needs {name}"


@pytest.mark.parametrize("kid", ["", "a b", "k" * 33, "é"])
def test_a_bad_signing_key_id_says_what_an_id_is(kid: str) -> None:
    with pytest.raises(UsageError) as err:
        SigningKeys(((kid, b"k" * 32),))
    assert str(err.value) == "a signing key id is 1-32 characters of [A-Za-z0-9._-]"


def test_a_submit_window_without_declared_requests_says_what_it_needs() -> None:
    with pytest.raises(UsageError) as err:
        SubmitWindow("https://shop.example", declared=())
    assert str(err.value) == "an effect declares at least one request (RequestPattern values)"


def test_confirmed_refs_of_other_types_are_refused_with_a_reason() -> None:
    with pytest.raises(UsageError) as err:
        Confirmed("r", count=2, refs=("a", 2))  # type: ignore[arg-type]
    assert str(err.value) == "Confirmed.refs holds strings only"


@pytest.mark.parametrize(
    ("number", "secret"),
    [
        ("4111 1111 1111 1111", True),  # a Luhn-valid test card, in groups
        ("4111-1111-1111-1111", True),
        ("5500005555555559", True),
        ("4111 1111 1111 1112", False),  # one digit off: Luhn fails
        ("1234567812345678", False),
    ],
)
def test_a_card_number_is_told_by_its_luhn_check(number: str, secret: bool) -> None:
    digits = number.replace(" ", "").replace("-", "")
    assert luhn_ok(digits) is secret
    scrubbed = scrub_text(f"paid with {number} today")
    assert (number not in scrubbed) is secret, scrubbed


def test_a_failed_retriable_step_waits_for_its_backoff_and_says_so() -> None:
    steps = [
        _step("book", Role.PIVOT, Status.CONFIRMED),
        _step("notify", Role.RETRIABLE, Status.FAILED, max_attempts=3, since=100.0, backoff=60.0),
    ]
    a = assess(steps, now=110.0)
    assert (a.state, a.next, a.index) == (OperationState.COMPLETE, Next.WAIT, 1), a
    assert a.reason == "notify failed (attempt 1 of 3): it is tried again after its backoff"
    assert a.due is not None and a.due > 110.0
