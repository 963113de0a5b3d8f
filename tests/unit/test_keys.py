"""Effect keys and canonical JSON: properties over generated inputs."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actonce import FingerprintKey, InvalidKey, canonical_json, effect_key
from actonce._rules.keys import payload_hash
from actonce._rules.secrets import redact

names = st.text(alphabet="abcdefghijXYZ_0123456789éß", min_size=1, max_size=8)
values = st.one_of(st.text(max_size=10), st.integers(), st.booleans(), st.none())
extra_names = names.filter(
    lambda n: (
        n.lower()
        not in {
            "run_id",
            "runid",
            "attempt",
            "timestamp",
            "time",
            "now",
            "created_at",
            "nonce",
            "uuid",
        }
        and n not in {"tenant", "actor", "kind", "object", "operation"}
    )
)
base = st.fixed_dictionaries(
    {f: names for f in ("tenant", "actor", "kind", "object", "operation")}
).filter(lambda d: all(v.strip() for v in d.values()))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(base, st.dictionaries(extra_names, values, max_size=4), st.randoms())
def test_same_fields_in_any_order_give_the_same_key(
    fields: dict[str, str], extra: dict[str, Any], rnd: Any
) -> None:
    items = list({**fields, **extra}.items())
    shuffled = items[:]
    rnd.shuffle(shuffled)
    a = effect_key(**dict(items))
    b = effect_key(**dict(shuffled))
    assert a == b
    assert a.value == str(a) and len(a.value) == 64
    assert json.loads(a.scope) == {**fields, **extra}


@given(base, st.sampled_from(["tenant", "actor", "kind", "object", "operation"]), names)
def test_any_field_change_gives_another_key(fields: dict[str, str], name: str, new: str) -> None:
    changed = {**fields, name: fields[name] + new}
    assert effect_key(**changed).value != effect_key(**fields).value


@given(base, extra_names, values, values)
def test_any_extra_field_change_gives_another_key(
    fields: dict[str, str], name: str, v1: Any, v2: Any
) -> None:
    k1 = effect_key(**fields, **{name: v1})
    k2 = effect_key(**fields, **{name: v2})
    # JSON distinguishes 1 from True and "1" from 1; equal JSON means equal key.
    assert (k1 == k2) == (canonical_json(v1) == canonical_json(v2))
    assert effect_key(**fields).value != k1.value


@pytest.mark.parametrize(
    "name",
    ["run_id", "RunId", "attempt", "timestamp", "time", "now", "created_at", "nonce", "uuid"],
)
def test_volatile_field_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidKey, match="volatile"):
        effect_key(tenant="t", actor="a", kind="k", object="o", operation="op", **{name: "x"})


@pytest.mark.parametrize("field", ["tenant", "actor", "kind", "object", "operation"])
@pytest.mark.parametrize("bad", ["", "   "])
def test_empty_scope_fields_are_refused(field: str, bad: str) -> None:
    fields = {"tenant": "t", "actor": "a", "kind": "k", "object": "o", "operation": "op"}
    with pytest.raises(InvalidKey):
        effect_key(**{**fields, field: bad})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused(bad: float) -> None:
    with pytest.raises(InvalidKey):
        canonical_json({"amount": bad})
    with pytest.raises(InvalidKey):
        canonical_json([1, [bad]])


@pytest.mark.parametrize("bad", [{1, 2}, {1: "int key"}, object(), b"bytes"])
def test_values_without_a_canonical_form_are_refused(bad: Any) -> None:
    with pytest.raises(InvalidKey):
        canonical_json({"x": bad})


@given(json_values)
def test_canonical_json_round_trips(value: Any) -> None:
    text = canonical_json(value)
    back = json.loads(text)
    assert canonical_json(back) == text
    assert back == value


@given(st.dictionaries(st.text(), json_values, max_size=5))
def test_canonical_json_ignores_insertion_order(value: dict[str, Any]) -> None:
    reversed_ = dict(reversed(list(value.items())))
    assert canonical_json(value) == canonical_json(reversed_)


def test_canonical_json_is_compact_sorted_and_keeps_unicode() -> None:
    assert canonical_json({"b": 1, "a": [1, 2], "é": "ü"}) == '{"a":[1,2],"b":1,"é":"ü"}'
    assert canonical_json((1, 2)) == "[1,2]"


KEY = FingerprintKey("k1", b"s" * 32)
#: The secret spellings of the old exact-name list, and the ones users tried.
SECRET_NAMES = (
    "password", "passwd", "secret", "token", "access_token", "refresh_token", "session",
    "session_id", "sessionid", "cookie", "cookies", "authorization", "api_key", "apikey",
    "card", "card_number", "cardnumber", "pan", "cvv", "cvc", "auth_token", "accessToken",
    "client_secret", "private_key", "X-Api-Key", "set-cookie", "csrf_token", "card-number",
    "passphrase", "x-csrf-token", "otp", "pin",
)  # fmt: skip


@given(st.sampled_from(SECRET_NAMES), st.text(min_size=1), st.booleans())
def test_redact_fingerprints_secret_names_at_any_depth(name: str, secret: str, upper: bool) -> None:
    field = name.upper() if upper else name
    payload = {"a": {"b": [{field: secret}]}, "keep": "visible"}
    out = redact(payload, key=KEY).payload
    assert out["keep"] == "visible"
    assert out["a"]["b"][0][field] == {"$secret": KEY.fingerprint(secret)}
    assert KEY.fingerprint(secret).startswith("hmac-sha256:k1:")
    # Without a key (none is kept in the ledger), the value is only redacted.
    bare = redact(payload).payload
    assert bare["a"]["b"][0][field] == {"$secret": "redacted"}


def test_redact_declared_fields_by_name_and_dotted_path() -> None:
    payload = {"pin": "1234", "card": {"holder": "Ann"}, "billing": {"iban": "DE00", "name": "x"}}
    out = redact(payload, key=KEY, secret_fields=("pin", "billing.iban")).payload
    assert out["pin"] == {"$secret": KEY.fingerprint("1234")}
    assert out["billing"]["iban"] == {"$secret": KEY.fingerprint("DE00")}
    assert out["billing"]["name"] == "x"
    assert "Ann" not in canonical_json(out)  # "card" is a secret name: the whole object


def test_fingerprints_depend_on_the_key_and_the_value() -> None:
    assert KEY.fingerprint("a") == KEY.fingerprint("a")
    assert KEY.fingerprint("a") != KEY.fingerprint("b")
    assert KEY.fingerprint("a") != FingerprintKey("k1", b"t" * 32).fingerprint("a")
    assert payload_hash("{}") == payload_hash("{}") != payload_hash("[]")
