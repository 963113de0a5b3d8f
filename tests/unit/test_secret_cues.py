"""The quick tests that let text pass unparsed are never wrong about a secret.

``detect.MAYBE`` lets free text skip every value detector and
``scrub.maybe_secret`` lets a stored text skip every rule. Each once missed a
case its rules scrub, so the secret was stored in clear:

- ``MAYBE`` named no cue for the labels ``cvn``, ``card verification``,
  ``reply code`` and ``one-time code`` (``"reply code 918273"`` kept its code);
- ``maybe_secret`` looked for ``cc n`` / ``one time`` with a space, dash or
  underscore only and for ``key_material`` as written, while the name rules
  split words on any mark and at capitals (``"cc.number=…"``,
  ``{"p-in": "4821"}``, ``{"keyMaterial": …}`` kept their values);
- a run of digits after a PIN-like word was judged with the linking words
  as part of the word (``"PIN is 4821"``: ``"pin is"`` does not end in
  ``pin``), so "your PIN is 4821" kept the PIN.
"""

from __future__ import annotations

import pytest

from actonce._rules.detect import MAYBE, scrub_values
from actonce._rules.scrub import maybe_secret, scrub_stored
from actonce._rules.secrets import scrub_text

pytestmark = pytest.mark.usefixtures("fresh_secret_rules")

LABELLED = [
    ("cvn 123", "cvn [redacted]"),
    ("CVN: 1234 ok", "CVN: [redacted] ok"),
    ("card verification 123", "card verification [redacted]"),
    ("card verification value 1234", "card verification value [redacted]"),
    ("card verification code is 987", "card verification code is [redacted]"),
    ("reply code 918273", "reply code [redacted]"),
    ("one-time code 918273", "one-time code [redacted]"),
    ("one time code: 918273.", "one time code: [redacted]."),
]


@pytest.mark.parametrize(("text", "scrubbed"), LABELLED)
def test_every_label_of_a_detector_is_a_cue(text: str, scrubbed: str) -> None:
    assert MAYBE.search(text) is not None
    assert scrub_values(text) == scrubbed
    assert scrub_text(text) == scrubbed
    assert maybe_secret(text)
    assert scrub_stored(text) == scrubbed


NAMES_PARTED = [
    ("cc.number=abc123def", "cc.number=[redacted]"),
    ("cc.num=4821x", "cc.num=[redacted]"),
    ("one.time=918273ab", "one.time=[redacted]"),
    ('{"cc.num": "x1"}', '{"cc.num":"[redacted]"}'),
    ('{"cc/number": "x1"}', '{"cc/number":"[redacted]"}'),
    ('{"p-in": "4821"}', '{"p-in":"[redacted]"}'),
    ('{"one+time": "zz"}', '{"one+time":"[redacted]"}'),
    ('{"keyMaterial": "zz"}', '{"keyMaterial":"[redacted]"}'),
    ('{"key-material": "zz"}', '{"key-material":"[redacted]"}'),
    ('{"key_material": "zz"}', '{"key_material":"[redacted]"}'),
    ('{"one time": "zz"}', '{"one time":"[redacted]"}'),
    ('{"one_time": "zz"}', '{"one_time":"[redacted]"}'),
    ('{"oneTime": "zz"}', '{"oneTime":"[redacted]"}'),
    ('{"cc number": "zz"}', '{"cc number":"[redacted]"}'),
    ('{"cc-num": "zz"}', '{"cc-num":"[redacted]"}'),
    ('{"credit_card": "zz"}', '{"credit_card":"[redacted]"}'),
    ('{"DebitCard": "zz"}', '{"DebitCard":"[redacted]"}'),
]


@pytest.mark.parametrize(("text", "stored"), NAMES_PARTED)
def test_a_secret_name_parted_by_any_mark_is_scrubbed_when_stored(text: str, stored: str) -> None:
    assert maybe_secret(text)
    assert scrub_stored(text) == stored


@pytest.mark.parametrize(
    "text",
    ["cc.total=12", "one.two=3", '{"p-out": "4821"}', "status: done", "a.b.c", "x" * 300],
)
def test_a_text_whose_joined_words_hold_no_cue_is_still_passed_quickly(text: str) -> None:
    assert not maybe_secret(text)
    assert scrub_stored(text) == text


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("your PIN is 4821", "your PIN is [redacted]"),
        ("otp is 918273", "otp is [redacted]"),
        ("the passcode was 4821.", "the passcode was [redacted]."),
        ("reply code is now 918273", "reply code is now [redacted]"),
        ("pin was 123", "pin was 123"),  # three digits: no PIN
        ("token is 1234", "token is 1234"),  # a token is not a PIN: four digits are not enough
        ("token is 12345678", "token is [redacted]"),  # eight are, after any word
    ],
)
def test_digits_after_a_pin_word_and_its_linking_words_are_a_secret(
    text: str, scrubbed: str
) -> None:
    assert scrub_values(text) == scrubbed
    assert scrub_text(text) == scrubbed


def test_an_approval_refusal_naming_a_packet_keeps_the_packet_id() -> None:
    """The product's own message names no secret word right before an id."""
    why = "this is not ana's reply code for apv-bd4d52bb8da08891f732"
    assert scrub_text(why) == why
    assert scrub_text("the reply code of apv-bd4d52bb8da08891f732") == (
        "the reply code of [redacted]"  # why the message does not say "code of <id>"
    )
