"""Which names are secret, what ``redact`` keeps and remembers, and how URLs and
text are scrubbed (``_rules/secrets.py``), pinned whole.

Every secret word, pair and infix is stated with a name that only it makes
secret (so that each entry of each table is pinned, not the table as a
whole), next to the near misses each rule must leave plain; the words of a
name; header pairs; the fingerprint key's checks and its exact HMAC; the
values ``redact`` remembers, in their order; URL userinfo, query and
fragment; and the text patterns (``Bearer``, JWTs, printed pairs, ``name=value``).
"""

from __future__ import annotations

import hashlib
import hmac
from collections import OrderedDict
from typing import Any

import pytest

from actonce import FingerprintKey, UsageError
from actonce._rules.secrets import (
    check_secret_fields,
    is_header_pair,
    is_secret_name,
    mask_url,
    redact,
    scrub_text,
    scrub_url,
    words,
)

pytestmark = pytest.mark.usefixtures("fresh_secret_rules")

R = "[redacted]"


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("X-Api-Key", ("x", "api", "key")),
        ("accessToken", ("access", "token")),
        ("HTTPServer", ("http", "server")),
        ("myURLToken", ("my", "url", "token")),
        ("ABC", ("abc",)),
        ("abc123Def", ("abc", "123", "def")),
        ("a_b-c d.e/f", ("a", "b", "c", "d", "e", "f")),
        ("", ()),
        ("---", ()),
        ("cvv2", ("cvv", "2")),
        ("p@ss", ("p", "ss")),
    ],
)
def test_the_words_of_a_name(name: str, parts: tuple[str, ...]) -> None:
    assert words(name) == parts


#: A name that each entry of the secret words alone makes secret: the word
#: among others (``my_pin``: its words joined are no secret word, and it holds
#: no infix).
ALONE_WORDS = [
    "pwd", "sid", "session", "auth", "oauth", "jwt", "otp", "totp", "pin", "cvv", "cvc",
    "cvn", "pan", "signature", "ssn", "iban", "ccv", "debitcard", "secrets", "passphrase",
    "passcodes", "credentials", "tokens", "cookies",
]  # fmt: skip


@pytest.mark.parametrize("word", ALONE_WORDS)
def test_each_secret_word_makes_a_name_secret(word: str) -> None:
    assert is_secret_name(f"my_{word}")
    assert is_secret_name(f"{word}_value")
    assert is_secret_name(word.upper())


@pytest.mark.parametrize(
    "name",
    ["p_in", "s-id", "O.T.P", "c_v_v", "ss-n", "i_ban", "pa.n", "j-w-t", "s_e_s_s_i_o_n"],
)
def test_a_secret_word_spelled_in_parts_is_secret(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "access_key", "signing_key", "encryption_key", "card_num", "card_no", "security_code",
        "verification_code", "reply_code", "one_time", "cc_number", "cc_num", "card_code",
        "sort_code", "social_security", "x-access-key-id", "OneTimeCode", "ccNumber",
        "the_card_no_here",
    ],
)  # fmt: skip
def test_each_secret_pair_of_neighbouring_words_makes_a_name_secret(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "key_access", "access_x_key", "key_signing", "code_security", "time_one", "number_cc",
        "code_card", "card_holder", "card_type", "cc_no", "api", "key", "access", "code",
        "security", "one", "time_zone", "sort_order", "social_media", "reply_to",
    ],
)  # fmt: skip
def test_words_of_a_pair_apart_or_reversed_are_plain(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    "infix",
    [
        "password", "passwd", "passphrase", "secret", "token", "cookie", "csrf", "xsrf",
        "apikey", "authorization", "credential", "bearer", "cardnumber", "sessionid",
        "privatekey", "passcode", "creditcard",
    ],
)  # fmt: skip
def test_each_infix_makes_a_run_together_name_secret(infix: str) -> None:
    assert is_secret_name(f"x{infix}y")
    assert is_secret_name(f"my_x{infix}y_file")


@pytest.mark.parametrize(
    "name",
    ["shipping", "company", "spin", "pins", "panel", "japan", "sidebar", "tokyo", "passenger",
     "otpx", "xjwt", "secre", "tok", "cooki", "passwor", "bear", "sec"],
)  # fmt: skip
def test_short_words_count_only_whole_and_partial_infixes_not_at_all(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("user_pass", True),
        ("dbPass", True),
        ("db_pw", True),
        ("dbPW", True),
        ("a_b_pass", True),
        ("pass", True),  # a whole name
        ("Pass", True),
        ("pw", False),  # alone, not a whole name
        ("pass_count", False),  # first, not last
        ("pw_reset", False),
        ("pass_user", False),
        ("passenger", False),
        ("card", True),
        ("Card", True),
        ("my_card", False),
        ("card_x", False),
        ("key_material", True),
        ("Key-Material", True),
        ("keyMaterial", True),
        ("key_material_id", False),
        ("the_key_material", False),
        ("", False),
        ("---", False),
        ("123", False),
    ],
)
def test_last_words_and_whole_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_a_name_that_is_no_text_is_refused_naming_its_type() -> None:
    with pytest.raises(UsageError, match=r"^a field name is a string, not int$"):
        is_secret_name(3)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"^a field name is a string, not NoneType$"):
        is_secret_name(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "pair"),
    [
        (["Cookie", "a=1"], True),
        (("Cookie", "a=1"), True),
        (["Cookie", None], True),
        (["Cookie", ["a", "b"]], True),
        (["Cookie", 3], True),
        (["Cookie", {"a": 1}], False),  # a mapping is no header value
        (["Cookie", OrderedDict(a=1)], False),
        ([1, "a=1"], False),
        (["Cookie"], False),
        (["Cookie", "a", "b"], False),
        ("Co", False),  # a two-character text is no pair
        ({"Cookie": "a"}, False),
        (None, False),
    ],
)
def test_a_header_pair_is_a_name_and_a_value(value: Any, pair: bool) -> None:
    assert is_header_pair(value) is pair


# --- fingerprint keys ---------------------------------------------------------------------


@pytest.mark.parametrize("key_id", ["k", "a" * 32, "A.z_0-9"])
def test_a_fingerprint_key_id_of_one_to_32_safe_characters_is_taken(key_id: str) -> None:
    key = FingerprintKey(key_id, b"s" * 16)
    assert repr(key) == f"FingerprintKey(key_id={key_id!r}, secret=<16 bytes>)"


@pytest.mark.parametrize("key_id", ["", "a" * 33, "a b", "a/b", "é", 3, None, "a\n"])
def test_a_fingerprint_key_id_out_of_bounds_is_refused(key_id: Any) -> None:
    with pytest.raises(
        UsageError, match=r"^a fingerprint key id is 1-32 characters of \[A-Za-z0-9\._-\]$"
    ):
        FingerprintKey(key_id, b"s" * 16)


def test_a_fingerprint_key_secret_is_bytes_of_at_least_16() -> None:
    with pytest.raises(UsageError, match=r"^a fingerprint key needs at least 16 bytes$"):
        FingerprintKey("k", b"s" * 15)
    with pytest.raises(UsageError, match=r"not bytearray \(bytes\.fromhex\(\.\.\.\) of the hex"):
        FingerprintKey("k", bytearray(16))  # type: ignore[arg-type]
    assert repr(FingerprintKey("k", b"s" * 40)) == "FingerprintKey(key_id='k', secret=<40 bytes>)"


def test_a_fingerprint_is_the_hmac_of_the_canonical_json() -> None:
    key = FingerprintKey("k1", b"0123456789abcdef")
    for value, text in [
        ("4821", '"4821"'),
        (4821, "4821"),
        ({"b": 1, "a": "é"}, '{"a":"é","b":1}'),
        (["x", None], '["x",null]'),
    ]:
        digest = hmac.new(b"0123456789abcdef", text.encode(), hashlib.sha256).hexdigest()
        assert key.fingerprint(value) == f"hmac-sha256:k1:{digest}"


# --- secret_fields and redact -------------------------------------------------------------


def test_secret_fields_are_checked_and_given_back_as_a_tuple() -> None:
    default: tuple[str, ...] = ()
    assert check_secret_fields(default) is default
    assert check_secret_fields(["a", "b.c"]) == ("a", "b.c")
    assert check_secret_fields([]) == ()
    assert check_secret_fields(iter(["x"])) == ("x",)
    with pytest.raises(UsageError, match=r"^secret_fields must be a sequence of names, not the "):
        check_secret_fields("iban")
    with pytest.raises(UsageError, match=r"not the string b'iban' \(did you mean \(b'iban',\)\?\)"):
        check_secret_fields(b"iban")
    with pytest.raises(
        UsageError, match=r"^a secret field name must be a non-empty string, not 3$"
    ):
        check_secret_fields(("a", 3))
    with pytest.raises(UsageError, match=r"not ''$"):
        check_secret_fields(("",))


def test_redact_replaces_secret_fields_at_any_depth_and_keeps_the_rest() -> None:
    payload = {
        "amount": 12,
        "rate": 1.5,
        "ok": True,
        "none": None,
        "note": "password=hunter22 ok",
        "raw": b"bytes",
        "items": ({"pin": 4821, "sku": "A-1"}, ["Authorization", "Bearer abcd1234"]),
        "billing": {"iban": "DE89370400440532013000", "name": "Ann"},
    }
    out = redact(payload)
    assert out.payload == {
        "amount": 12,
        "rate": 1.5,
        "ok": True,
        "none": None,
        "note": f"password={R} ok",
        "raw": b"bytes",
        "items": [
            {"pin": {"$secret": "redacted"}, "sku": "A-1"},
            ["Authorization", {"$secret": "redacted"}],
        ],
        "billing": {"iban": {"$secret": "redacted"}, "name": "Ann"},
    }
    # longest first, each once
    assert out.values == ("DE89370400440532013000", "Bearer abcd1234", "abcd1234", "4821")


def test_declared_names_match_at_any_depth_and_dotted_ones_one_path() -> None:
    payload = {
        "memo": "memo-1",
        "a": {"memo": "memo-2", "b": {"memo": "memo-3"}},
        "b": {"memo": "memo-4"},
    }
    out = redact(payload, secret_fields=["a.b.memo"])
    assert out.payload == {
        "memo": "memo-1",
        "a": {"memo": "memo-2", "b": {"memo": {"$secret": "redacted"}}},
        "b": {"memo": "memo-4"},
    }
    assert out.values == ("memo-3",)
    out = redact(payload, secret_fields=("memo",))
    assert out.payload == {
        "memo": {"$secret": "redacted"},
        "a": {"memo": {"$secret": "redacted"}, "b": {"memo": {"$secret": "redacted"}}},
        "b": {"memo": {"$secret": "redacted"}},
    }
    assert sorted(out.values) == ["memo-1", "memo-2", "memo-3", "memo-4"]
    # a path through a list keeps the path of the list
    out = redact({"rows": [{"memo": "memo-5"}]}, secret_fields=["rows.memo"])
    assert out.payload == {"rows": [{"memo": {"$secret": "redacted"}}]}
    # a declared name makes a header pair secret; a path does not name a pair's first item
    out = redact([["X-Memo", "v-12"]], secret_fields=["X-Memo"])
    assert out.payload == [["X-Memo", {"$secret": "redacted"}]]
    assert redact({3: "v"}, secret_fields=["3"]).payload == {3: {"$secret": "redacted"}}


def test_redact_with_a_key_fingerprints_each_secret_value() -> None:
    key = FingerprintKey("k1", b"0123456789abcdef")
    out = redact({"card": {"n": "4111", "cvv": 737}, "x": 1}, key=key)
    assert out.payload == {"card": {"$secret": key.fingerprint({"n": "4111", "cvv": 737})}, "x": 1}
    assert out.values == ("4111",)  # 737: three digits


@pytest.mark.parametrize(
    ("secret", "remembered"),
    [
        ("abc", ()),
        ("abcd", ("abcd",)),
        ("Bearer abcd", ("Bearer abcd", "abcd")),
        ("basic abcd", ("basic abcd", "abcd")),
        ("TOKEN abcd", ("TOKEN abcd", "abcd")),
        ("Bearer abcd efgh", ("Bearer abcd efgh", "abcd efgh")),  # all after the first blank
        ("Bearer  abcd", ("Bearer  abcd", " abcd")),
        ("x Bearer abcd", ("x Bearer abcd",)),  # the word comes first or not at all
        ("Bearer abc", ("Bearer abc",)),  # the credential alone is too short
        ("Other abcd", ("Other abcd",)),
        ("Bearer ", ("Bearer ",)),
        (123, ()),
        (1234, ("1234",)),
        (-123, ("-123",)),
        (1.25, ("1.25",)),
        (1.5, ()),
        (True, ()),
        (None, ()),
        (b"abcdef", ()),
        ({"a": "abcd", "b": ["efgh", 12345]}, ("12345", "abcd", "efgh")),
        (("abcd", "abcd"), ("abcd",)),
    ],
)
def test_what_redact_remembers_of_a_secret_value(secret: Any, remembered: tuple[str, ...]) -> None:
    values = redact({"password": secret}).values
    assert sorted(values, key=lambda v: (-len(v), v)) == list(remembered)
    assert [len(v) for v in values] == sorted((len(v) for v in values), reverse=True)


# --- URLs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "scrubbed", "masked"),
    [
        ("https://ann:pw@h.example/p", f"https://ann:{R}@h.example/p", "https://ann:***@h.example/p"),
        ("https://ann:@h.example", f"https://ann:{R}@h.example", "https://ann:***@h.example"),
        ("https://ann:***@h.example", "https://ann:***@h.example", "https://ann:***@h.example"),
        ("https://ann@h.example", "https://ann@h.example", "https://ann@h.example"),
        ("https://0123456789abcdef@h.example", f"https://{R}@h.example", "https://***@h.example"),
        ("https://0123456789abcde@h.example", "https://0123456789abcde@h.example",
         "https://0123456789abcde@h.example"),
        ("https://h.example/?token=abc&x=1", f"https://h.example/?token={R}&x=1",
         "https://h.example/?token=***&x=1"),
        ("https://h.example/?x=1&y=", "https://h.example/?x=1&y=", "https://h.example/?x=1&y="),
        ("https://h.example/?token=&x=1", f"https://h.example/?token={R}&x=1",
         "https://h.example/?token=***&x=1"),
        ("https://h.example/#access_token=abc&x=1", f"https://h.example/#{R}",
         "https://h.example/#***"),
        ("https://h.example/#section", "https://h.example/#section", "https://h.example/#section"),
        ("https://h.example/#a=b", "https://h.example/#a=b", "https://h.example/#a=b"),
        ("https://h.example/#token", "https://h.example/#token", "https://h.example/#token"),
        ("https://h.example/?a=%5Bredacted%5D", "https://h.example/?a=%5Bredacted%5D",
         "https://h.example/?a=***"),
        (f"https://h.example/?token={R}&a=1", f"https://h.example/?token={R}&a=1",
         "https://h.example/?token=***&a=1"),
        (f"https://ann:{R}@h.example/?token={R}", f"https://ann:{R}@h.example/?token={R}",
         "https://ann:***@h.example/?token=***"),
        ("http://[::1:80/", R, "***"),
        ("ftp://u:p@h/x?apiKey=1#f", f"ftp://u:{R}@h/x?apiKey={R}#f", "ftp://u:***@h/x?apiKey=***#f"),
        ("https://a:b@c@h.example", f"https://a:{R}@h.example", "https://a:***@h.example"),
        ("https://h.example/p?q=1", "https://h.example/p?q=1", "https://h.example/p?q=1"),
    ],
)  # fmt: skip
def test_a_url_loses_its_password_and_secret_parameters(
    url: str, scrubbed: str, masked: str
) -> None:
    assert scrub_url(url) == scrubbed
    assert mask_url(url) == masked
    assert scrub_url(scrubbed) == scrubbed


def test_an_unchanged_url_is_the_same_text() -> None:
    url = "https://h.example/p?b=2&a=1&a=%20#frag"
    assert scrub_url(url) is url


# --- text ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("Bearer abcd", f"Bearer {R}"),
        ("Token abcdefgh", f"Token {R}"),
        ("Basic YWJj", f"Basic {R}"),
        ("BASIC abcd+/=", f"BASIC {R}"),
        ("sent Bearer tok_3f9a8b7c6d5e.", f"sent Bearer {R}"),
        ("bearer abc", "bearer abc"),  # three characters: no credential
        ("xBearer abcd", "xBearer abcd"),
        (f"Bearer {R}", f"Bearer {R}"),
        ("eyJabcd.efgh.ij", R),
        ("eyJabcd.efgh.", R),
        ("a eyJabcd.efgh.ij b", f"a {R} b"),
        ("eyJabc.efgh.ij", "eyJabc.efgh.ij"),  # too short to be a JWT
        ("eyJabcd.efg.ij", "eyJabcd.efg.ij"),
        ("xeyJabcd.efgh.ij", "xeyJabcd.efgh.ij"),
        ("('X-Api-Key', 'k-1')", f"('X-Api-Key', '{R}')"),
        ('["Cookie", "sid=1"]', f'["Cookie", "{R}"]'),
        ("('Cookie' ,  'v')", f"('Cookie' ,  '{R}')"),
        ("('Cookie', \"v\")", f"('Cookie', \"{R}\")"),  # each item quoted its own way
        ("('note', 'k-1')", "('note', 'k-1')"),
        (f"('Cookie', '{R}')", f"('Cookie', '{R}')"),
        ('"password": "abc"', f'"password": "{R}"'),
        ("'password': 'abc'", f"'password': '{R}'"),
        ('password="a b"', f'password="{R}"'),
        ("password='a b' c", f"password='{R}' c"),
        ("password = abc", f"password = {R}"),
        ("x.password=abc", f"x.password={R}"),
        ("a-password=abc", f"a-password={R}"),
        ("/etc/passwd: file", "/etc/passwd: file"),
        ("x/password=abc", "x/password=abc"),
        ("password=[redacted]", "password=[redacted]"),
        ('password="[redacted]"', 'password="[redacted]"'),
        ("p=abc", "p=abc"),
        ("password=", "password="),
        ("token: abc, next", f"token: {R}, next"),
        ("token=abc;x=1", f"token={R};x=1"),
        ("token=abc&x=1", f"token={R}&x=1"),
        ("token=abc}", f"token={R}}}"),
        ("token=abc]", f"token={R}]"),
        ("note=abc token=def", f"note=abc token={R}"),
    ],
)
def test_text_loses_credentials_tokens_and_secret_pairs(text: str, scrubbed: str) -> None:
    assert scrub_text(text) == scrubbed
    assert scrub_text(scrubbed) == scrubbed


def test_known_values_go_first_longest_first_and_only_from_four_characters() -> None:
    assert scrub_text("a abcdef b abcd c", ["abcdef", "abcd"]) == f"a {R} b {R} c"
    assert scrub_text("abc and abcd", ["abc", "abcd"]) == f"abc and {R}"
    assert scrub_text("nothing here", ["abcd"]) == "nothing here"
    assert scrub_text("", ["abcd"]) == ""
    assert scrub_text("see https://h.example/?x=abcd", ["abcd"]) == f"see https://h.example/?x={R}"
    assert scrub_text("see https://h.example/?token=x y") == f"see https://h.example/?token={R} y"


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("('Authorization', '[redacted] x')", "('Authorization', '[redacted] x')"),
        ("('Cookie', '[redacted]x')", "('Cookie', '[redacted]x')"),
        ("('Cookie', '[redacte')", f"('Cookie', '{R}')"),  # not the mark
        ('password="[redacted] x"', 'password="[redacted] x"'),
        ("password='[redacted]x'", "password='[redacted]x'"),
        ("password=[redacted]x", "password=[redacted]x"),
        ("password=[redacte", f"password={R}"),
        ("Cookie: [redacted] more", "Cookie: [redacted] more"),
        ("Cookie: [redacted", "Cookie: [redacted"),
        ("token is %5Bredacted%5Dx", "token is %5Bredacted%5Dx"),
    ],
)
def test_a_value_that_begins_with_the_mark_was_scrubbed_already_and_is_kept(
    text: str, scrubbed: str
) -> None:
    assert scrub_text(text) == scrubbed
