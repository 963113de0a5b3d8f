"""An operation's recorded definition: how it is read back, when a second one is the
same, and each refusal in its own words (issue 23 item 2, the ``_run`` area).

The definition names the intent version and each step's name, role, key,
undo key, attempts and backoff; the approval, the contact and a step's
backoff may change between two definitions of one operation (a refresh
replaces the packet), nothing else may. Memory store, a frozen clock.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from actonce import (
    Absent,
    Confirmed,
    Effect,
    Ledger,
    MemoryStore,
    Operation,
    Step,
    UsageError,
)
from actonce._rules.intents import IntentRef
from actonce._rules.operations import RETRY_BACKOFF, Role
from actonce._run.operation import _same_definition
from actonce._run.operation_view import Spec, StepSpec, parse_spec
from actonce.testing import FrozenClock


def _spec(**changes: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "intent": "trip@v2",
        "approval": "pk-1",
        "contact": "ana@example.org",
        "steps": [
            {"name": "hold", "role": "compensatable", "key": "k-hold", "undo": "k-unhold",
             "attempts": 1, "backoff": 30.0},
            {"name": "notify", "role": "retriable", "key": "k-notify", "undo": None,
             "attempts": 3, "backoff": 5.0},
        ],
    }  # fmt: skip
    spec.update(changes)
    return spec


def _text(spec: dict[str, Any]) -> str:
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def test_a_definition_reads_back_whole() -> None:
    assert parse_spec(_text(_spec())) == Spec(
        IntentRef("trip", 2),
        "pk-1",
        "ana@example.org",
        (
            StepSpec("hold", Role.COMPENSATABLE, "k-hold", "k-unhold", 1, 30.0),
            StepSpec("notify", Role.RETRIABLE, "k-notify", None, 3, 5.0),
        ),
    )


def test_a_definition_without_the_later_fields_reads_with_their_defaults() -> None:
    old = {"steps": [{"name": "book", "role": "pivot", "key": 7, "attempts": 0}]}
    assert parse_spec(json.dumps(old)) == Spec(
        None, None, None, (StepSpec("book", Role.PIVOT, "7", None, 1, RETRY_BACKOFF),)
    )
    assert parse_spec(json.dumps({"intent": "a@vb@v3", "steps": []})).intent == IntentRef("a@vb", 3)
    assert parse_spec(json.dumps({"intent": "", "steps": []})).intent is None


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("not json", "Expecting value: line 1 column 1 (char 0)"),
        ("[]", "'list' object has no attribute 'get'"),
        ("{}", "'steps'"),
        ('{"steps": [{"name": "a", "key": "k"}]}', "'role'"),
        ('{"steps": [{"name": "a", "role": "boss", "key": "k"}]}', "'boss' is not a valid Role"),
        ('{"intent": "trip@vX", "steps": []}',
         "invalid literal for int() with base 10: 'X'"),
        ('{"steps": 3}', "'int' object is not iterable"),
    ],
)  # fmt: skip
def test_anything_else_is_not_a_definition(text: str, why: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_spec(text)
    assert str(err.value) == f"not an operation's definition: {why}"


def test_two_definitions_are_the_same_but_for_approval_contact_and_backoff() -> None:
    base = _text(_spec())
    assert _same_definition(base, base)
    changed = _spec(approval="pk-2", contact="other@example.org")
    changed["steps"][1]["backoff"] = 60.0
    assert _same_definition(base, _text(changed))
    assert _same_definition(_text(_spec(approval=None, contact=None)), base)
    for field, value in (("key", "k-other"), ("undo", None), ("attempts", 2), ("role", "pivot"),
                         ("name", "keep")):  # fmt: skip
        other = _spec()
        other["steps"][0][field] = value
        assert not _same_definition(base, _text(other)), field
    assert not _same_definition(base, _text(_spec(intent="trip@v3")))
    assert not _same_definition(base, _text(_spec(steps=_spec()["steps"][:1])))


def test_what_is_no_definition_is_never_the_same() -> None:
    base = _text(_spec())
    assert not _same_definition("not json", base)
    assert not _same_definition("[1]", base)
    assert not _same_definition(base, "[1]")
    assert not _same_definition('{"steps": [1]}', base)
    assert _same_definition('{"steps": [1]}', '{"steps": [1], "approval": "x"}')


# --- through the ledger ------------------------------------------------------------------------


def _step(name: str, key: str, made: list[str]) -> Step:
    effect = Effect(key=key, kind="pin", payload={}, perform=lambda: made.append(key),
                    verify=lambda: Confirmed(key) if key in made else Absent())  # fmt: skip
    return Step(name, effect, "pivot")


def test_an_operation_s_steps_never_change() -> None:
    made: list[str] = []
    with Ledger(MemoryStore(), clock=FrozenClock()) as ledger:
        assert Operation(ledger, "op-1", [_step("book", "k1", made)]).run().done
        again = Operation(ledger, "op-1", [_step("book", "k2", made)])
        with pytest.raises(UsageError) as err:
            again.run()
        assert str(err.value) == (
            "operation 'op-1' was defined with other steps or keys; an operation's steps "
            "never change (make a new one for a new intent version)"
        )
        assert made == ["k1"]


def test_unknown_operations_and_decisions_without_their_words_are_refused() -> None:
    made: list[str] = []
    with Ledger(MemoryStore(), clock=FrozenClock()) as ledger:
        with pytest.raises(UsageError) as err:
            ledger.operations.get("op-nope")
        assert str(err.value) == "no operation 'op-nope' in this ledger"
        Operation(ledger, "op-1", [_step("book", "k1", made)]).run()
        cases = [
            ({"by": "", "reason": "r"}, "an operation decision needs who decides (by=...)"),
            ({"by": "ana", "reason": "  "}, "an operation decision needs a reason"),
            ({"by": "ana", "reason": "r", "attempt": True},
             "an attempt is a whole number, not True"),
            ({"by": "ana", "reason": "r", "attempt": "1"},
             "an attempt is a whole number, not '1'"),
        ]  # fmt: skip
        for kwargs, message in cases:
            with pytest.raises(UsageError) as err:
                ledger.operations.decide("op-1", "accept", **kwargs)
            assert str(err.value) == message
