"""What the key and payload checks say, and exactly where their limits are (issue 7).

A bad input ends in one clear line: these messages are what a user reads,
so they are pinned here, with the boundaries (the longest name, the
deepest nesting) and the edge cases mutation testing found loose (a value
shared by two branches is not a cycle; an owner's window is its own).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from actonce import InvalidKey, InvalidTransition, ProtocolError, Status, UsageError, effect_key
from actonce._rules.decision import Action, Observation, Situation, observe, outcome_of
from actonce._rules.keys import (
    MAX_DEPTH,
    MAX_KEY_LENGTH,
    canonical_json,
    check_json,
    check_name,
    stored_payload,
)
from actonce._rules.lifecycle import check_transition
from actonce._rules.model import Absent, EffectRecord, Policy
from actonce._rules.secrets import FingerprintKey

FIELDS = dict(tenant="t", actor="a", kind="k", object="o", operation="create")


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def test_name_messages_and_the_longest_name() -> None:
    with pytest.raises(UsageError, match=re.escape("a kind must be a non-empty string, not ''")):
        check_name("", "a kind")
    assert check_name("x" * MAX_KEY_LENGTH, "a kind") == "x" * MAX_KEY_LENGTH
    too_long = f"a kind is {MAX_KEY_LENGTH + 1} characters long; at most {MAX_KEY_LENGTH}"
    with pytest.raises(UsageError, match=re.escape(too_long)):
        check_name("x" * (MAX_KEY_LENGTH + 1), "a kind")
    with pytest.raises(UsageError, match=r"^a kind cannot contain a NUL character$"):
        check_name("a\x00b", "a kind")
    with pytest.raises(InvalidKey, match=r"^a kind holds a lone surrogate"):
        check_name("a\ud800", "a kind")


def test_json_messages() -> None:
    with pytest.raises(InvalidKey, match=r"^a string holds a lone surrogate"):
        check_json({"k": "\udc00"})
    with pytest.raises(InvalidKey, match=r"^an object key holds a lone surrogate"):
        check_json({"\udc00": 1})
    with pytest.raises(InvalidKey, match=r"^NaN and infinity have no canonical JSON form$"):
        check_json([float("nan")])
    with pytest.raises(InvalidKey, match=r"^JSON object keys must be strings, not int$"):
        check_json({1: "x"})
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(InvalidKey, match=r"^a value that contains itself has no JSON form$"):
        check_json(cycle)
    loop: dict[str, Any] = {}
    loop["self"] = {"again": loop}
    with pytest.raises(InvalidKey, match="contains itself"):
        check_json(loop)


def test_a_set_and_a_cyclic_payload_are_refused_before_anything_walks_them() -> None:
    with pytest.raises(InvalidKey, match=r"^set has no canonical JSON form$"):
        check_json({"tags": {"a", "b"}})
    cyclic: dict[str, Any] = {"password": "x"}
    cyclic["again"] = cyclic
    with pytest.raises(InvalidKey, match="contains itself"):
        stored_payload(cyclic)  # refused, not a RecursionError from the redaction


def test_a_value_shared_by_two_branches_is_not_a_cycle() -> None:
    shared = {"sku": "A-1"}
    tree = {"left": [shared, shared], "right": {"x": shared}}
    check_json(tree)
    assert (
        canonical_json(tree) == '{"left":[{"sku":"A-1"},{"sku":"A-1"}],"right":{"x":{"sku":"A-1"}}}'
    )


def test_the_deepest_nesting_is_exact() -> None:
    # MAX_DEPTH containers, one inside the other, and a leaf: the deepest allowed.
    check_json(nested(MAX_DEPTH))
    check_json({"a": nested(MAX_DEPTH - 1)})
    with pytest.raises(InvalidKey, match=f"^nested deeper than {MAX_DEPTH} levels$"):
        check_json(nested(MAX_DEPTH + 1))
    with pytest.raises(InvalidKey, match="nested deeper"):
        check_json({"a": nested(MAX_DEPTH)})
    assert canonical_json({"é": "ü"}) == '{"é":"ü"}'  # UTF-8 kept as is


def test_a_stored_payload_is_checked_and_fingerprinted_with_the_key() -> None:
    with pytest.raises(InvalidKey, match="NaN"):
        stored_payload({"amount": float("inf")})
    key = FingerprintKey("k1", b"s" * 32)
    text, _ = stored_payload({"password": "hunter2"}, key=key)
    assert key.fingerprint("hunter2") in text
    bare, _ = stored_payload({"password": "hunter2"})
    assert '"$secret":"redacted"' in bare


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"api_token": "x"},
            "key field 'api_token' looks like a secret; a key's fields are stored in clear",
        ),
        ({"part": 1.5}, "key field 'part' must be a string, number or boolean"),
        (
            {"target": "https://u:pw@example.com/x"},
            "key field 'target' holds a URL with credentials or a token; a key's fields are "
            "stored in clear (leave the secret out of the key)",
        ),
    ],
)
def test_key_field_messages(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidKey, match=f"^{re.escape(message)}$"):
        effect_key(**FIELDS, **extra)


def test_key_fields_that_are_fine() -> None:
    with pytest.raises(InvalidKey, match=r"^key field 'tenant' must be a non-empty string$"):
        effect_key(**{**FIELDS, "tenant": " "})
    # A plain URL, and a string that merely looks like a credential, are fine.
    plain = effect_key(**{**FIELDS, "object": "https://example.com/posts/1"})
    odd = effect_key(**{**FIELDS, "object": "user:pw@host"})
    assert plain.value != odd.value


def test_the_lifecycle_names_a_missing_edge() -> None:
    with pytest.raises(InvalidTransition, match=r"^the lifecycle has no edge \(none\) -> unknown$"):
        check_transition(None, Status.UNKNOWN)
    with pytest.raises(
        InvalidTransition, match=r"^the lifecycle has no edge confirmed -> claimed$"
    ):
        check_transition(Status.CONFIRMED, Status.CLAIMED)


def test_outcome_of_the_edges() -> None:
    # Releasing one's own claim (not a stale one) ends the run: deferred.
    out = outcome_of(
        Action.RELEASE, Situation.OWNED, reconcile=False, performed=False, hard_stop=False
    )
    assert out is not None and out.value == "deferred"
    stale = outcome_of(
        Action.RELEASE, Situation.STALE_CLAIM, reconcile=False, performed=False, hard_stop=False
    )
    assert stale is None  # a released stale claim is claimed next
    with pytest.raises(
        ProtocolError, match=r"^a claim ends only a reconcile or a run that performed$"
    ):
        outcome_of(Action.CLAIM, Situation.NEW, reconcile=False, performed=False, hard_stop=False)
    for who in ({"reconcile": True, "performed": False}, {"reconcile": False, "performed": True}):
        got = outcome_of(Action.CLAIM, Situation.NEW, hard_stop=False, **who)
        assert got is not None and got.value == "failed"
    with pytest.raises(ProtocolError, match=r"^verify does not end a run$"):
        outcome_of(Action.VERIFY, Situation.NEW, reconcile=False, performed=False, hard_stop=False)


def test_only_the_owner_counts_its_window_from_its_perform() -> None:
    policy = Policy(settle_seconds=5.0, absence_authoritative=True)
    theirs = EffectRecord(
        key="k", kind="x", status=Status.EXECUTING, fence=4, owner="b",
        lease_expires_at=1000.0 + 30, payload="{}", payload_hash="h", executing_at=999.0,
    )  # fmt: skip
    # Not my fence: my own perform's end (100 s ago) says nothing about theirs.
    got = observe(Absent(), theirs, policy=policy, now=1000.0, my_fence=3, since_perform=100.0)
    assert got is Observation.ABSENT_UNSETTLED
    with pytest.raises(ProtocolError, match=r"^not a verdict: 'maybe'$"):
        observe("maybe", theirs, policy=policy, now=1000.0)  # type: ignore[arg-type]
