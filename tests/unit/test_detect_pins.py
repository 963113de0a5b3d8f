"""The value detectors of free text (``_rules/detect.py``), pinned whole.

Each detector's boundaries are stated here as exact text in and text out:
how many digits make a card and which separators and neighbours it may have,
the Luhn check digit by digit, which words announce a CVV and how many digits
follow, where a cookie header ends, which user:password@host is a credential,
and, after a secret word, which linking words may come between and which
values look secret (lengths, digits, letters, entropy). What is kept is
pinned as exactly as what is replaced: the words around a secret and the
punctuation after it.
"""

from __future__ import annotations

import random

import pytest

from actonce._rules.detect import MAYBE, looks_secret, luhn_ok, scrub_values
from actonce._rules.secrets import scrub_text

pytestmark = pytest.mark.usefixtures("fresh_secret_rules")

R = "[redacted]"


def _luhn_reference(digits: str) -> bool:
    """Luhn as the card schemes state it: double every second digit from the right."""
    total = 0
    for i, ch in enumerate(digits[::-1]):
        n = int(ch) * (2 if i % 2 == 1 else 1)
        total += n // 10 + n % 10
    return total % 10 == 0


def _luhn_complete(body: str) -> str:
    """``body`` with the one check digit that makes it Luhn-valid."""
    return next(body + d for d in "0123456789" if _luhn_reference(body + d))


@pytest.mark.parametrize(
    ("digits", "valid"),
    [
        ("4111111111111111", True),
        ("4111111111111112", False),
        ("378282246310005", True),
        ("6011000990139424", True),
        ("5555555555554444", True),
        ("5555555555554440", False),
        ("79927398713", True),  # the textbook example
        ("79927398710", False),
        ("0", True),
        ("18", True),  # 1 doubled is 2, 2 + 8 = 10
        ("59", True),  # 5 doubled is 10, 1 + 0 + 9 = 10: a doubled digit over 9 loses 9
        ("91", True),  # 9 doubled is 18, less 9 is 9; 9 + 1 = 10
        ("19", False),  # 1 doubled is 2; 2 + 9 = 11
        ("1", False),
        ("9", False),
    ],
)
def test_luhn_known_values(digits: str, valid: bool) -> None:
    assert luhn_ok(digits) is valid
    assert _luhn_reference(digits) is valid


def test_luhn_agrees_with_the_reference_on_every_kind_of_number() -> None:
    rng = random.Random(23)
    for length in range(1, 21):
        for _ in range(40):
            digits = "".join(rng.choice("0123456789") for _ in range(length))
            assert luhn_ok(digits) is _luhn_reference(digits), digits
    for d in "0123456789":  # each digit doubled and not doubled
        for body in (d, d + "0", "0" + d, d + d):
            assert luhn_ok(body) is _luhn_reference(body), body


# --- card numbers -------------------------------------------------------------------------

CARD_13 = _luhn_complete("422222222222")  # 13 digits
CARD_19 = _luhn_complete("411111111111111111")  # 19 digits
CARD_12 = _luhn_complete("41111111111")  # 12 digits: too short
CARD_20 = _luhn_complete("4111111111111111111")  # 20 digits: too long


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("4111111111111111", R),
        ("pay 4111111111111111 now", f"pay {R} now"),
        ("4111 1111 1111 1111", R),
        ("4111-1111-1111-1111", R),
        ("4111 1111-1111 1111", R),
        ("3782 822463 10005", R),  # amex groups
        ("411 111 111 111 1111", R),  # groups of three are a card's
        ("378282246310005", R),
        (CARD_13, R),
        (CARD_19, R),
        (f"{CARD_19[:4]} {CARD_19[4:8]} {CARD_19[8:12]} {CARD_19[12:16]} {CARD_19[16:]}", R),
        ("0000000000000", R),  # 13 zeros pass Luhn
        ("0000000000000000000", R),  # 19 zeros too
        ("4111111111111111.", f"{R}."),  # a sentence's end is not a decimal
        ("4111111111111111,", f"{R},"),
        ("4111111111111111-", f"{R}-"),
        ("(4111111111111111)", f"({R})"),
        ("card:4111111111111111", f"card:{R}"),
        ("a 4111111111111111 b 5555555555554444 c", f"a {R} b {R} c"),
    ],
)
def test_a_card_number_is_replaced_and_its_neighbours_kept(text: str, scrubbed: str) -> None:
    assert scrub_values(text) == scrubbed
    assert scrub_values(scrubbed) == scrubbed


@pytest.mark.parametrize(
    "text",
    [
        "4111111111111112",  # Luhn fails
        "1234567890123",
        CARD_12,
        CARD_20,
        "00000000000000000000",  # 20 digits: no card, and no card inside it
        "4111  1111 1111 1111",  # two separators in a row
        "4111--1111-1111-1111",
        "41 11 1111 1111 1111",  # a group of two: a date or a list
        "2026 12 24 1111 1111 1",
        "x4111111111111111",  # part of a word
        "4111111111111111x",
        "_4111111111111111",
        "a.4111111111111111",  # part of a dotted id or a decimal
        "4111111111111111.5",
        "4111111111111111,5",
        "4111111111111111-5",
        "/4111111111111111",  # part of a path
        "+4111111111111111",  # a phone number
        "-4111111111111111",
        ",4111111111111111",
    ],
)
def test_what_only_looks_like_a_card_is_kept(text: str) -> None:
    assert scrub_values(text) == text


def test_a_card_of_exactly_three_digit_groups_and_one_of_two_digit_groups() -> None:
    card = "411 111 111 111 1111"
    assert luhn_ok(card.replace(" ", ""))
    assert scrub_values(card) == R
    two = _luhn_complete("41 11 11 11 11 11 11 1".replace(" ", ""))
    grouped = " ".join(two[i : i + 2] for i in range(0, len(two), 2))
    assert scrub_values(grouped) == grouped


# --- CVVs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("cvv 123", f"cvv {R}"),
        ("cvv 1234", f"cvv {R}"),
        ("CVV2 123", f"CVV2 {R}"),
        ("CVC2: 987", f"CVC2: {R}"),
        ("cvc 987", f"cvc {R}"),
        ("cvn 987", f"cvn {R}"),
        ("ccv 987", f"ccv {R}"),
        ("csc 987", f"csc {R}"),
        ("card code 987", f"card code {R}"),
        ("card verification 987", f"card verification {R}"),
        ("card verification value: 987", f"card verification value: {R}"),
        ("card verification code is 9876", f"card verification code is {R}"),
        ("security code no. 1234", f"security code no. {R}"),
        ("security code no 1234", f"security code no {R}"),
        ("security code number 1234", f"security code number {R}"),
        ("security code # 1234", f"security code # {R}"),
        ("security code=1234", f"security code={R}"),
        ("cvv was 123", f"cvv was {R}"),
        ("cvv is: 123", f"cvv is: {R}"),
        ("cvv: 1234.", f"cvv: {R}."),
        ("card ending soon, cvv 737 exp 12/29", f"card ending soon, cvv {R} exp 12/29"),
    ],
)
def test_a_cvv_after_its_word_is_replaced(text: str, scrubbed: str) -> None:
    assert scrub_values(text) == scrubbed
    assert scrub_text(text) == scrubbed


@pytest.mark.parametrize(
    "text",
    [
        "cvv 12",  # too short
        "cvv 12345",  # too long
        "xcvv 123",  # not the word
        "cvvs 123",
        "cvv123",
        "cvv 123x",
        "card 123",
        "code 1234",
    ],
)
def test_digits_that_are_no_cvv_are_kept(text: str) -> None:
    assert scrub_values(text) == text


# --- cookie headers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("Cookie: a=1; b=2", f"Cookie: {R}"),
        ("cookie:a=1", f"cookie:{R}"),
        ("cookie : v", f"cookie : {R}"),
        ("COOKIE: v", f"COOKIE: {R}"),
        ("Set-Cookie: sid=s3cr3t; HttpOnly", f"Set-Cookie: {R}"),
        ("set-cookie:sid=1", f"set-cookie:{R}"),
        ("(Cookie: a=1) next", f"(Cookie: {R}) next"),
        ("[Cookie: a=1] next", f"[Cookie: {R}] next"),
        ("{Cookie: a=1} next", f"{{Cookie: {R}}} next"),
        ("x Cookie: a=1 'q' y", f"x Cookie: {R}'q' y"),
        ('x Cookie: a=1 "q" y', f'x Cookie: {R}"q" y'),
        ("Cookie: a=1\nnext line", f"Cookie: {R}\nnext line"),
        ("Cookie: a=1\r\nHost: h", f"Cookie: {R}\r\nHost: h"),
    ],
)
def test_a_cookie_header_is_replaced_to_its_end(text: str, scrubbed: str) -> None:
    assert scrub_values(text) == scrubbed
    assert scrub_values(scrubbed) == scrubbed


@pytest.mark.parametrize(
    "text",
    ["Cookie: [redacted]", "Cookie:  [redacted]", "mycookie: a=1", "cookie consent shown"],
)
def test_a_redacted_or_unrelated_cookie_is_kept(text: str) -> None:
    assert scrub_values(text) == text


# --- credentials in a URL without a scheme ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("see ann:pw-9876@git.example.com/repo", f"see ann:{R}@git.example.com/repo"),
        ("ann:pw@host.co", f"ann:{R}@host.co"),
        ("a.b_c%d+e-f:p@h.example", f"a.b_c%d+e-f:{R}@h.example"),
        ("-ann:pw@host.example", f"-ann:{R}@host.example"),
        ("x ann:pw@a-b.c-d.example ok", f"x ann:{R}@a-b.c-d.example ok"),
        ("u:" + "p" * 128 + "@h.example", f"u:{R}@h.example"),
        ("u" * 64 + ":p@h.example", "u" * 64 + f":{R}@h.example"),
    ],
)
def test_a_user_and_password_before_a_host_lose_the_password(text: str, scrubbed: str) -> None:
    assert scrub_values(text) == scrubbed
    assert scrub_values(scrubbed) == scrubbed


@pytest.mark.parametrize(
    "text",
    [
        "ann:***@host.example",  # masked already
        "ann:pw@host",  # no top-level domain
        "ann:pw@host.c",  # a one-letter one
        "ann:pw@host.c0",
        "/ann:pw@host.example",  # the tail of a path
        "x/ann:pw@host.example",
        "ann:p w@host.example",
        "ann::pw@host.example",
        "ann:p/w@host.example",
        "u:" + "p" * 129 + "@h.example",  # longer than a password is taken to be
        "ann@example.com wrote: see you",
    ],
)
def test_what_is_no_user_and_password_is_kept(text: str) -> None:
    assert scrub_values(text) == text


def test_a_user_name_longer_than_64_characters_is_cut_at_its_start() -> None:
    long_user = "u" * 65 + ":p@h.example"
    # the lookbehind refuses a match inside a word: no user name starts mid-run
    assert scrub_values(long_user) == long_user


# --- a secret after a secret word ---------------------------------------------------------

LABELS = [
    "session cookie",
    "session-cookie",
    "session_cookie",
    "sessioncookie",
    "cookie",
    "cookies",
    "password",
    "passwords",
    "passwd",
    "passcode",
    "passphrase",
    "pwd",
    "secret",
    "secrets",
    "token",
    "tokens",
    "access token",
    "auth_token",
    "refresh-token",
    "session token",
    "bearer token",
    "api token",
    "id token",
    "idtoken",
    "session",
    "session id",
    "session_id",
    "session-id",
    "sessionid",
    "sid",
    "api key",
    "api_key",
    "api-key",
    "apikey",
    "credential",
    "credentials",
    "otp",
    "pin",
    "reply code",
    "security code",
    "one-time code",
    "one time code",
]


@pytest.mark.parametrize("label", LABELS)
def test_every_secret_word_announces_the_value_after_it(label: str) -> None:
    assert scrub_values(f"the {label} hunter22 was sent") == f"the {label} {R} was sent"
    assert scrub_values(f"{label.upper()} hunter22") == f"{label.upper()} {R}"


@pytest.mark.parametrize("link", [" is ", " was ", " value ", " of ", " set to ", " now ", " = ",
                                  ": ", "=", ":", " is now: ", " was set to ", "  ", "\t"])  # fmt: skip
def test_linking_words_between_the_word_and_the_value_are_kept(link: str) -> None:
    assert scrub_values(f"password{link}hunter22 ok") == f"password{link}{R} ok"


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("password hunter22.", f"password {R}."),
        ("password hunter22!?", f"password {R}!?"),
        ("password hunter22...", f"password {R}..."),
        ("password hunter22:", f"password {R}:"),
        ("password hunter22, ok", f"password {R}, ok"),
        ("password hunter22; ok", f"password {R}; ok"),
        ("password hunter22&x=1", f"password {R}&x=1"),
        ("password hunter22<br>", f"password {R}<br>"),
        ("password hunter22)", f"password {R})"),
        ("password hunter2.2!", f"password {R}!"),
    ],
)
def test_the_punctuation_after_a_secret_is_kept(text: str, scrubbed: str) -> None:
    assert scrub_values(text) == scrubbed


@pytest.mark.parametrize(
    "text",
    [
        "password hunter",  # letters only, short
        "password 1234567",  # seven digits after a word that is no PIN word
        "token 1234",
        "pin 123",
        "otp 999",
        "code 1234",  # "code" alone announces nothing
        "password.hunter22",  # no space or mark: part of a name
        "password-hunter22",
        "passwordx hunter22",
        "xpassword hunter22",
        "mypin 4821",
        'password "hunter22"',
        "password (hunter22)",
        "password ...",
        "password ::::",
        "password [redacted]",
        "password %5Bredacted%5D",
        "password aabbccddeeffgghhii",  # long, but eight letters twice: low entropy
        "the pinned spinner gave an opinion",
        "lease token 3 held by op-1",
    ],
)
def test_a_value_that_does_not_look_secret_is_kept(text: str) -> None:
    assert scrub_values(text) == text


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("password hunter2", f"password {R}"),  # six: letters and a digit
        ("password 12345678", f"password {R}"),  # eight digits after any word
        ("token 12345678", f"token {R}"),
        ("pin 1234", f"pin {R}"),  # four after a PIN word
        ("PIN 4821", f"PIN {R}"),
        ("otp 1234", f"otp {R}"),
        ("passcode 1234", f"passcode {R}"),
        ("reply code 1234", f"reply code {R}"),
        ("security code 1234", f"security code {R}"),
        ("one-time code 1234", f"one-time code {R}"),
        ("password abcdefghijklmnop", f"password {R}"),  # sixteen letters, all different
    ],
)
def test_a_value_that_looks_secret_is_replaced(text: str, scrubbed: str) -> None:
    assert scrub_values(text) == scrubbed


# --- looks_secret, on its own -------------------------------------------------------------

# Sixteen letters: eight once and four twice have an entropy of exactly 3.5
# bits; six once and five twice, 3.375.
AT_3_5 = "abcdefgh" + "ijkl" * 2
BELOW_3_5 = "abcdef" + "ghijk" * 2


@pytest.mark.parametrize(
    ("label", "value", "secret"),
    [
        ("password", "", False),
        ("password", "...", False),
        ("password", "[redacted]", False),
        ("password", "[REDACTED]xyz123", False),
        ("password", "%5bredacted%5d", False),
        ("password", "%5BREDACTED%5D", False),
        ("password", "[redact1", True),  # not the mark
        ("password", "1234567", False),
        ("password", "12345678", True),
        ("password", "12345678.", True),
        ("password", "1234567.", False),  # the full stop is not a digit
        ("pin", "123", False),
        ("pin", "1234", True),
        ("PIN ", "1234", True),  # the word's case and trailing space do not matter
        ("otp", "1234", True),
        ("passcode", "1234", True),
        ("reply code", "1234", True),
        ("pin code", "1234", True),
        ("token", "1234", False),
        ("pins", "1234", False),
        ("pin", "1234567", True),
        ("password", "abc12", False),  # five: too short
        ("password", "abc123", True),  # six, letters and digits
        ("password", "abc123!?", True),
        ("password", "abcdef", False),  # no digit
        ("password", "123-45", False),  # no letter
        ("password", "ab-12-", True),  # six characters, letters and digits among them
        ("password", "ab-1", False),
        ("password", AT_3_5, True),
        ("password", BELOW_3_5, False),
        ("password", AT_3_5[:15], False),  # fifteen: too short whatever its entropy
        ("password", "abcdefghijklmno", False),
        ("password", "abcdefghijklmnop", True),
        ("password", "a" * 40, False),
    ],
)
def test_looks_secret(label: str, value: str, secret: bool) -> None:
    assert looks_secret(label, value) is secret


# --- MAYBE: the quick test is a superset of every detector --------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "4111111111111111",
        "4111 1111 1111 1111",
        "cvv 123",
        "CVC 123",
        "cvn 123",
        "ccv 123",
        "csc 123",
        "security code 1234",
        "card code 1234",
        "card verification 123",
        "Cookie: a=1",
        "passcode hunter22",
        "pwd hunter22",
        "secret hunter22",
        "session hunter22",
        "sid hunter22",
        "pin 4821",
        "otp 918273",
        "credential hunter22",
        "token hunter22",
        "apikey hunter22",
        "reply code 918273",
        "one time code 918273",
        "ann:pw@host.example",
    ],
)
def test_every_detector_has_a_cue(text: str) -> None:
    assert MAYBE.search(text) is not None
    assert scrub_values(text) != text


@pytest.mark.parametrize(
    "text",
    ["", "hello", "order 41111111111 shipped", "key 6b33ba3828cf8834", "code 1234", "a b c"],
)
def test_text_with_no_cue_is_returned_as_it_is(text: str) -> None:
    assert MAYBE.search(text) is None
    assert scrub_values(text) is text


def test_cards_and_cvvs_are_only_looked_for_in_text_with_a_digit() -> None:
    # Mixed text: the card and the CVV are found though most characters are no digits.
    text = "card 4111111111111111, cvv 737, Cookie: a=1"
    assert scrub_values(text) == f"card {R}, cvv {R}, Cookie: {R}"
    assert scrub_values("token abcdefghijklmnop @ ann:pw@h.example") == (
        f"token {R} @ ann:{R}@h.example"
    )
