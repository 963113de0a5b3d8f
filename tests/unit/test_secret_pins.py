"""Pins for the secret scrubbing's mutants the area's tests let through (issue 23, item 2).

``python tests/mutants/areas.py --area secrets --sample 40 --seed 1`` showed
these behaviours of ``_rules/secrets.py`` and ``_rules/text.py`` unstated:
a secret pair keeps its quotes, a known value of exactly four characters is
scrubbed, a header pair's value is fingerprinted (not its absence), a blank
query value survives the rewrite, the refusals' words, and the bounds of
event data (NaN and infinity as text, 100 keys, 100 items, 100-character
names).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest

from actonce import FingerprintKey, UsageError
from actonce._rules.secrets import check_secret_fields, redact, scrub_text, scrub_url
from actonce._rules.text import storable_data, world_text

pytestmark = pytest.mark.usefixtures("fresh_secret_rules")


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ('login password="hunter22" user=ana', 'login password="[redacted]" user=ana'),
        ("login password='hunter22' user=ana", "login password='[redacted]' user=ana"),
        ("login password=hunter22 user=ana", "login password=[redacted] user=ana"),
    ],
)
def test_a_secret_pair_in_text_keeps_its_quotes(text: str, scrubbed: str) -> None:
    assert scrub_text(text) == scrubbed


def test_a_known_value_of_four_characters_is_scrubbed_and_three_are_not() -> None:
    assert scrub_text("the code is 1234 ok", ["1234"]) == "the code is [redacted] ok"
    assert scrub_text("the code is 123 ok", ["123"]) == "the code is 123 ok"


def test_a_secret_header_pair_is_fingerprinted_by_its_value() -> None:
    key = FingerprintKey("k1", b"x" * 32)
    out = redact([["Authorization", "Bearer abcd1234"]], key=key)
    assert out.payload == [["Authorization", {"$secret": key.fingerprint("Bearer abcd1234")}]]
    assert out.values == ("Bearer abcd1234", "abcd1234")


def test_a_blank_query_value_survives_the_rewrite_of_a_secret_one() -> None:
    assert scrub_url("https://h.example/x?a=&password=x") == (
        "https://h.example/x?a=&password=[redacted]"
    )


def test_the_refusals_say_what_is_wrong() -> None:
    with pytest.raises(UsageError, match=r"^a URL is a string, not int$"):
        scrub_url(3)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"^scrub_text\(\) takes a string, not bytes$"):
        scrub_text(b"x")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"^secret_fields must be a sequence of field names$"):
        check_secret_fields(3)
    with pytest.raises(
        UsageError, match=r"^a secret field name must be a non-empty string, not ' '$"
    ):
        check_secret_fields(["iban", " "])


def test_event_data_is_bounded_and_json() -> None:
    assert storable_data([float("nan"), float("inf"), 1.5]) == ["nan", "inf", 1.5]
    many = storable_data({f"k{i}": i for i in range(105)})
    assert len(many) == 101 and many["…"] == "5 more"
    items = storable_data(list(range(103)))
    assert len(items) == 101 and items[-1] == "… 3 more"
    (name,) = storable_data({"x" * 150: 1})
    assert name == "x" * 99 + "…"


# --- a second seeded sample (seed 2) -------------------------------------------------------


def test_the_credential_after_basic_or_token_is_a_known_secret_too() -> None:
    found = redact({"authorization": "Basic abcd1234", "x": {"auth": "Token wxyz9876"}}).values
    assert set(found) == {"Basic abcd1234", "Token wxyz9876", "abcd1234", "wxyz9876"}


def test_only_secret_strings_and_numbers_become_known_values() -> None:
    assert redact({"password": True, "pin": None, "token": 12345}).values == ("12345",)


def test_a_nested_secret_is_fingerprinted_and_a_declared_path_matches_only_there() -> None:
    key = FingerprintKey("K1", b"x" * 32)
    out = redact({"booking": {"password": "hunter22"}}, key=key).payload
    assert out == {"booking": {"password": {"$secret": key.fingerprint("hunter22")}}}
    out = redact({"booking": {"number": "4111"}, "number": "5"}, secret_fields=["booking.number"])
    assert out.payload == {"booking": {"number": {"$secret": "redacted"}}, "number": "5"}


def test_a_lone_long_user_name_in_a_url_is_a_token() -> None:
    assert scrub_url("https://abcdefghijklmnopqrstu@host.example/x") == (
        "https://[redacted]@host.example/x"
    )


def test_a_fingerprint_is_an_hmac_of_the_values_json_as_written() -> None:
    key = FingerprintKey("K1", b"x" * 32)  # capitals are a key id's characters too
    text = '"é"'.encode()  # not "\u00e9": a stored fingerprint must not change
    expected = hmac.new(b"x" * 32, text, hashlib.sha256).hexdigest()
    assert key.fingerprint("é") == f"hmac-sha256:K1:{expected}"


def test_event_data_stops_at_nine_levels_of_nesting() -> None:
    nested: Any = {"a": 1}
    listed: Any = [1]
    for _ in range(11):
        nested, listed = {"a": nested}, [listed]
    out, items = storable_data(nested), storable_data(listed)
    for _ in range(9):
        out, items = out["a"], items[0]
    assert out == "…" and items == "…"


def test_event_data_keeps_a_secret_headers_name_and_world_text_its_limit() -> None:
    assert storable_data(["Cookie", "sid=1"]) == ["Cookie", "[redacted]"]
    assert world_text("x" * 600, limit=10) == "x" * 9 + "…"


# --- a third seeded sample (seed 3) --------------------------------------------------------


def test_four_characters_are_enough_for_a_known_credential_or_number() -> None:
    assert redact({"authorization": "Bearer abcd"}).values == ("Bearer abcd", "abcd")
    assert redact({"pin": 1234}).values == ("1234",)


def test_a_declared_header_name_makes_its_pair_secret() -> None:
    out = redact([["X-Trace", "v1234"]], secret_fields=["X-Trace"])
    assert out.payload == [["X-Trace", {"$secret": "redacted"}]]


def test_a_secret_headers_name_in_event_data_is_cut_to_100_characters() -> None:
    name = "x" * 120 + "-cookie"
    assert storable_data([name, "v"]) == ["x" * 99 + "…", "[redacted]"]
