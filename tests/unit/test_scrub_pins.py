"""What the ledger stores of a text (``_rules/scrub.py``) and of world text and
event data (``_rules/text.py``), pinned whole.

The quick test (``maybe_secret``) is pinned cue by cue, each with a text only
that cue announces and whose stored form the rules change; the JSON rules
field by field (which values under a secret name are kept, markers, header
pairs, keys, tuples); the stored text as written or re-encoded; the bound
parameters of a statement by kind; and the storable text and event data by
their exact bounds (lengths, depth, item counts, the marks that say so).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from actonce._rules.scrub import (
    maybe_secret,
    scrub_json,
    scrub_params,
    scrub_stored,
    stored_form,
)
from actonce._rules.text import MAX_TEXT, storable, storable_data, world_text

pytestmark = pytest.mark.usefixtures("fresh_secret_rules")

R = "[redacted]"

#: (text, its stored form): each holds one cue of the quick test and no other.
ONE_CUE = [
    ("user_pass=abc", f"user_pass={R}"),  # pass
    ("db_pw=abc", f"db_pw={R}"),  # pw
    ("secret=abc", f"secret={R}"),
    ("token=abc", f"token={R}"),
    ("cookie=abc", f"cookie={R}"),
    ("session=abc", f"session={R}"),
    ("sid=abc", f"sid={R}"),
    ("csrf=abc", f"csrf={R}"),
    ("xsrf=abc", f"xsrf={R}"),
    ("auth=abc", f"auth={R}"),
    ("bearer=abc", f"bearer={R}"),
    ("Basic YWJjOmRlZg==", f"Basic {R}"),
    ("jwt=abc", f"jwt={R}"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.c2ln", R),
    ("otp=abc", f"otp={R}"),
    ("pin=abc", f"pin={R}"),
    ("cvv=abc", f"cvv={R}"),
    ("cvc=abc", f"cvc={R}"),
    ("cvn=abc", f"cvn={R}"),
    ("ccv=abc", f"ccv={R}"),
    ("csc 123", f"csc {R}"),
    ("pan=abc", f"pan={R}"),
    ("card=abc", f"card={R}"),
    ("apikey=abc", f"apikey={R}"),
    ("private_key=abc", f"private_key={R}"),
    ("access_key=abc", f"access_key={R}"),
    ("signing_key=abc", f"signing_key={R}"),
    ("encryption_key=abc", f"encryption_key={R}"),
    ("security_code=abc", f"security_code={R}"),
    ("verification_code=abc", f"verification_code={R}"),
    ("reply_code=abc", f"reply_code={R}"),
    ("oneTime=abc", f"oneTime={R}"),
    ("ccNumber=abc", f"ccNumber={R}"),
    ("sort_code=abc", f"sort_code={R}"),
    ("signature=abc", f"signature={R}"),
    ("ssn=abc", f"ssn={R}"),
    ("iban=abc", f"iban={R}"),
    ("keyMaterial=abc", f"keyMaterial={R}"),
    ("credential=abc", f"credential={R}"),
    ("ann:x@h.example", f"ann:{R}@h.example"),  # @
    ("4111111111111111", R),  # a run of digits
    ("4111 1111-1111 1111", R),
]


@pytest.mark.parametrize(("text", "stored"), ONE_CUE)
def test_each_cue_of_the_quick_test_lets_its_rule_run(text: str, stored: str) -> None:
    assert maybe_secret(text)
    assert scrub_stored(text) == stored
    long = text + " " + "x" * 300  # past the cached quick test
    assert maybe_secret(long)
    assert scrub_stored(long) == stored + " " + "x" * 300


@pytest.mark.parametrize(
    "text",
    [
        "done",
        "effect:book-1",
        "6b33ba3828cf883456b0c7ddc2070ee5827abae8871414a4cf390420b509755d",
        "411111111111",  # twelve digits
        "1 2 3 4 5 6 7 8 9 0 1 2",  # twelve digits in a spaced run
        "a1b2c3d4e5f6g7h8i9j0k1l2m3",  # thirteen digits, no run of them
        "on 2026-12-24 for 110.00 EUR",
        "x" * 300,
    ],
)
def test_text_with_no_cue_and_no_digit_run_is_stored_as_it_is(text: str) -> None:
    assert not maybe_secret(text)
    assert not maybe_secret(text + " " + "y" * 300)
    assert scrub_stored(text) is text


def test_thirteen_digits_in_a_run_are_a_cue_and_twelve_are_not() -> None:
    assert maybe_secret("ref 1234567890123")
    assert maybe_secret("ref 1234 5678 9012 3")
    assert maybe_secret("ref 1234-5678-9012-3" + " " * 300)
    assert not maybe_secret("ref 123456789012")
    assert not maybe_secret("ref 123456789012" + " " * 300)
    # thirteen digits in all, but no run: the count alone is not enough
    assert not maybe_secret("ref 1234567890 and 123" + " " * 300)


# --- JSON ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        (None, True),
        (False, True),
        (True, True),
        ("", True),
        (R, True),
        ({"$secret": "redacted"}, True),
        ({"$secret": "hmac-sha256:k1:ab"}, True),
        (0, False),
        (1, False),
        ("x", False),
        (" ", False),
        ("[redacted] ", False),
        ([], False),
        ({}, False),
        ({"$secret": 1}, False),  # not a marker: the value is no text
        ({"$secret": "x", "a": 1}, False),  # not a marker: a second field
        ({"secret": "x"}, False),
    ],
)
def test_what_a_secret_name_keeps(value: Any, kept: bool) -> None:
    out = scrub_json({"token": value})
    assert out == {"token": value if kept else R}
    pair = scrub_json(["Cookie", value])
    if isinstance(value, dict):  # a mapping is no header value: the list is scrubbed item by item
        assert pair[0] == "Cookie"
    else:
        assert pair == ["Cookie", value if kept else R]


def test_a_marker_is_kept_whole_wherever_it_is() -> None:
    marker = {"$secret": "password=abc123x"}
    assert scrub_json(marker) == marker
    assert scrub_json({"card": marker, "list": [marker]}) == {"card": marker, "list": [marker]}


def test_json_is_scrubbed_at_every_depth_keys_included() -> None:
    doc = {
        "memo": "password=hunter22 and token abcdefghijklmnop",
        "n": 3,
        "f": 1.5,
        "ok": True,
        "none": None,
        "headers": [["Authorization", "Bearer abc"], ("Accept", "text/html")],
        "nested": {"deep": [{"apiKey": "k-1"}, "pin 4821"]},
        "password=abc123x": "v",
        1: "one",
    }
    assert scrub_json(doc) == {
        "memo": f"password={R} and token {R}",
        "n": 3,
        "f": 1.5,
        "ok": True,
        "none": None,
        "headers": [["Authorization", R], ["Accept", "text/html"]],
        "nested": {"deep": [{"apiKey": R}, f"pin {R}"]},
        f"password={R}": R,  # the key is text too; its name is secret
        1: "one",
    }


def test_a_pair_whose_first_item_is_no_secret_name_is_scrubbed_item_by_item() -> None:
    assert scrub_json(["note", "password=abc123x"]) == ["note", f"password={R}"]
    assert scrub_json(("a", 1)) == ["a", 1]
    assert scrub_json(("Cookie", "a", "b")) == ["Cookie", "a", "b"]  # three: no pair
    assert scrub_json([1, "Cookie"]) == [1, "Cookie"]
    assert scrub_json(("Cookie", {"v": "a=1"})) == ["Cookie", {"v": "a=1"}]


def test_non_text_values_pass_as_they_are() -> None:
    for value in (None, True, 0, 12345678901234567, 1.5, b"password=abc"):
        assert scrub_json(value) is value


def test_a_text_with_no_cue_is_not_scrubbed_in_json() -> None:
    text = "user ann:x@h"  # "@" is a cue; this text is scrubbed only when it has one
    assert scrub_json("plain words") == "plain words"
    assert scrub_json(text) == text


# --- a stored text ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ('{ "password" : "x" }', '{"password":"[redacted]"}'),
        ('{"note": "token abcdefghijklmnop", "b": 1}', '{"b":1,"note":"token [redacted]"}'),
        ('["Cookie", "a=1"]', '["Cookie","[redacted]"]'),
        ('{"é": "password=abc123x"}', '{"é":"password=[redacted]"}'),  # not escaped
        ("{password: x}", "{password: [redacted]}"),  # no JSON: scrubbed as text
        ("[password=abc]", f"[password={R}]"),
        ('{"a": "password=x"', '{"a": "password=[redacted]"'),  # not closed: text
        ('"password=x"}', '"password=[redacted]"}'),
        ("password=abc", f"password={R}"),
        # JSON only from its first character to its last: around blanks, text
        ('["Cookie", "a=1"] ', f'["Cookie", "{R}"] '),
        (' ["Cookie", "a=1"]', f' ["Cookie", "{R}"]'),
        ('{"password": "x"} ', f'{{"password": "{R}"}} '),
        ('\n{"password": "x"}', f'\n{{"password": "{R}"}}'),
        ('["Cookie", "a=1"', f'["Cookie", "{R}"'),
        ('"Cookie", "a=1"]', f'"Cookie", "{R}"]'),
        ('{"password": "x"]', f'{{"password": "{R}"]'),
        ('["password", "x"}', f'["password", "{R}"}}'),
    ],
)
def test_a_stored_text_is_scrubbed_as_json_when_it_is_json(text: str, stored: str) -> None:
    assert scrub_stored(text) == stored
    assert scrub_stored(stored) == stored


@pytest.mark.parametrize(
    "text",
    [
        '{"note": "nothing", "token": null}',  # a cue, but nothing to change: as written
        '{"token":  "[redacted]"}',
        '[ "Cookie",  ""]',
        '{"cookie": false}',
    ],
)
def test_json_with_nothing_to_change_is_stored_as_written(text: str) -> None:
    assert maybe_secret(text)
    assert scrub_stored(text) is text


def test_an_empty_text_and_a_long_one_are_stored_alike() -> None:
    assert scrub_stored("") == ""
    long = "password=abc " + "x" * 20_000
    assert scrub_stored(long) == f"password={R} " + "x" * 20_000
    doc = json.dumps({"token": "t", "pad": "x" * 20_000})
    assert json.loads(scrub_stored(doc)) == {"token": R, "pad": "x" * 20_000}


# --- the bound values of a statement ------------------------------------------------------


class _Text(str):
    """A str subclass: not a plain text, not scrubbed."""


def test_a_statements_values_keep_their_kind() -> None:
    assert scrub_params(None) is None
    assert scrub_params(()) == ()
    assert scrub_params([]) == []
    assert scrub_params({}) == {}
    numbers = (1, 2.5, None, b"password=x")
    assert scrub_params(numbers) is numbers
    numbers_list = [1, 2]
    assert scrub_params(numbers_list) is numbers_list
    assert scrub_params(["password=x", 1, None, b"token=x"]) == (
        f"password={R}",
        1,
        None,
        b"token=x",
    )
    assert scrub_params({"a": "token=x", "b": 3, "c": b"pin=1"}) == {
        "a": f"token={R}",
        "b": 3,
        "c": b"pin=1",
    }
    odd = _Text("password=x")
    assert scrub_params((odd, "pin=1")) == (odd, f"pin={R}")
    assert scrub_params({"a": odd}) == {"a": odd}
    assert scrub_params("password=x") == "password=x"  # one text is no parameter list
    assert scrub_params(b"password=x") == b"password=x"
    assert scrub_params(7) == 7


def test_the_stored_form_reads_back_as_json() -> None:
    value = {"b": ("Cookie", "a=1"), "a": [1, 2.5, None], "token": "t", "é": "ü"}
    assert stored_form(value) == {
        "a": [1, 2.5, None],
        "b": ["Cookie", R],
        "token": R,
        "é": "ü",
    }
    assert stored_form(("x", 1)) == ["x", 1]


# --- storable text ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "limit", "out"),
    [
        ("abcd", 4, "abcd"),
        ("abcde", 4, "abc…"),
        ("abcdef", 4, "abc…"),
        ("", 4, ""),
        ("a\ud800b", 10, "a?b"),
        ("a\x00b", 10, "a\\x00b"),
        ("a\x00b\x00", 10, "a\\x00b\\x00"),
        ("\x00\x00\x00", 5, "\\x00…"),  # repaired first, then cut
        ("\ud800\udfff", 10, "??"),
        ("é✓", 10, "é✓"),
    ],
)
def test_storable_repairs_then_cuts(text: str, limit: int, out: str) -> None:
    assert storable(text, limit=limit) == out
    assert len(storable(text, limit=limit)) <= limit


def test_storable_keeps_two_thousand_characters_by_default() -> None:
    assert MAX_TEXT == 2000
    assert storable("x" * 2000) == "x" * 2000
    assert storable("x" * 2001) == "x" * 1999 + "…"


def test_world_text_is_any_value_scrubbed_repaired_and_bounded() -> None:
    assert world_text("token abcdefghijklmnop \x00") == f"token {R} \\x00"
    assert world_text(ValueError("password=hunter22")) == f"password={R}"
    assert world_text(12) == "12"
    assert world_text("code K7QF2M9X sent", known=["K7QF2M9X"]) == f"code {R} sent"
    assert world_text("x" * 3000) == "x" * 1999 + "…"
    assert world_text("x" * 30, limit=10) == "x" * 9 + "…"


# --- event data ---------------------------------------------------------------------------


def test_event_data_keeps_json_values_and_makes_the_rest_text() -> None:
    data = {
        "a": float("nan"),
        "b": float("inf"),
        "c": -float("inf"),
        "d": 1.5,
        "e": True,
        "f": None,
        "g": 3,
        "h": b"password=abc123x",
        "i": ("x", 2),
        7: "seven",
    }
    assert storable_data(data) == {
        "a": "nan",
        "b": "inf",
        "c": "-inf",
        "d": 1.5,
        "e": True,
        "f": None,
        "g": 3,
        "h": f"b'password={R}'",
        "i": ["x", 2],
        "7": "seven",
    }


def test_event_data_redacts_every_value_under_a_secret_name() -> None:
    data = {
        "token": None,
        "password": {"a": 1},
        "x": ("Cookie", "a=1"),
        "y": ["note", "a"],
        "z": ["X-Api-Key", "k" * 300],
        "memo": "pin 4821",
    }
    assert storable_data(data) == {
        "token": R,
        "password": R,
        "x": ["Cookie", R],
        "y": ["note", "a"],
        "z": ["X-Api-Key", R],
        "memo": f"pin {R}",
    }


def test_event_data_strings_are_cut_at_500_and_names_at_100() -> None:
    out = storable_data({"n" * 150: "v" * 600, "s": ["w" * 501]})
    assert out == {"n" * 99 + "…": "v" * 499 + "…", "s": ["w" * 499 + "…"]}
    assert storable_data("v" * 500) == "v" * 500


def test_event_data_keeps_a_hundred_items_and_says_how_many_more() -> None:
    assert storable_data(list(range(100))) == list(range(100))
    assert storable_data(list(range(102))) == [*range(100), "… 2 more"]
    assert storable_data(tuple(range(101))) == [*range(100), "… 1 more"]
    hundred = {f"k{i}": i for i in range(100)}
    assert storable_data(hundred) == hundred
    many = {f"k{i}": i for i in range(103)}
    assert storable_data(many) == {**{f"k{i}": i for i in range(100)}, "…": "3 more"}


def test_event_data_nesting_stops_past_eight_levels() -> None:
    nested: Any = "leaf"
    for _ in range(9):
        nested = [nested]
    # depth 0 to 8 are kept: the ninth list holds the leaf at depth 9
    out = storable_data(nested)
    for _ in range(9):
        assert isinstance(out, list)
        out = out[0]
    assert out == "…"
    assert storable_data(nested, depth=1) is not None
    eight: Any = "leaf"
    for _ in range(8):
        eight = {"k": eight}
    out = storable_data(eight)
    for _ in range(8):
        out = out["k"]
    assert out == "leaf"


def test_event_data_scrubs_the_known_values_at_every_depth() -> None:
    data = {"a": ["K7QF2M9X here", {"b": "and K7QF2M9X"}], "c": 5}
    assert storable_data(data, ["K7QF2M9X"]) == {
        "a": [f"{R} here", {"b": f"and {R}"}],
        "c": 5,
    }
    assert storable_data(iter(()), ["abcd"]) != ""  # any object becomes its text


def test_any_other_object_becomes_its_scrubbed_text_cut_at_500() -> None:
    assert storable_data(b"x" * 497) == "b'" + "x" * 497 + "'"  # 500 characters
    assert storable_data(b"x" * 498) == "b'" + "x" * 497 + "…"
    assert storable_data(b"x" * 600) == "b'" + "x" * 497 + "…"
    assert storable_data(b"token=abc", ["abcd"]) == f"b'token={R}'"
    assert storable_data({1, 2}) == "{1, 2}"
