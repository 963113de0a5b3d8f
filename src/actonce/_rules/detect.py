"""Secrets found by their *values* in free text, whatever the text calls them.

A name tells :mod:`.secrets` that a field is secret; free text has no names
("card 4111 1111 1111 1111 for the deposit", "session cookie a8f3…"), so
these detectors look at what the value is, or at the words right before it:

- card numbers: 13 to 19 digits, Luhn-valid, plain or in groups of at least
  three separated by spaces or dashes, not part of a longer word or number
  (a hex key, an id, a decimal);
- a CVV next to a card word (``cvv 123``, ``security code: 1234``);
- cookie headers (``Cookie: a=1; b=2``, ``Set-Cookie: …``), up to the end of
  the header;
- credentials in a URL without a scheme (``ann:pw@host.example``);
- a value right after a secret word, with at most a few linking words
  between (``session cookie X``, ``password is X``, ``token X``, ``PIN
  4821``): a value that looks like a secret (letters and digits, a long
  high-entropy run, or digits for a PIN-like word).

Every detector is deterministic and leaves what it produced alone:
``scrub_values(scrub_values(t)) == scrub_values(t)`` (``[redacted]`` is never
a value). What is kept: the words around a secret, so that a person still
reads what happened.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = ["MAYBE", "looks_secret", "luhn_ok", "scrub_values"]

REDACTED = "[redacted]"  # the same text as secrets.REDACTED (secrets imports this module)

#: Any text a detector below could change contains one of these.
MAYBE = re.compile(
    r"\d[\d -]{11,}\d|cvv|cvc|cvn|ccv|csc|security code|card code|card verification|cookie|pass"
    r"|pwd|secret|session|sid|pin|otp|credential|token|api|auth|bearer|reply code"
    r"|one[ -]time code|@",
    re.IGNORECASE,
)

_CARD = re.compile(r"(?<![\w.,/+-])\d(?:[ -]?\d){12,18}(?![\w]|[.,-]\d)")
_CVV = re.compile(
    r"(?P<label>\b(?:cvv2?|cvc2?|cvn|ccv|csc|security code|card code|card verification"
    r"(?: code| value)?)\b(?:\s*(?:is|was|code|number|no\.?|[:=#])\s*|\s+)*)"
    r"(?P<value>\d{3,4})\b",
    re.IGNORECASE,
)
_COOKIE = re.compile(r"(?P<label>\b(?:set-)?cookie\s*:\s*)(?P<value>[^\r\n)\]}\"']+)", re.I)
_USERINFO = re.compile(
    r"(?<![\w/:@.%+-])(?P<user>[A-Za-z0-9._%+-]{1,64}):(?P<value>[^\s@/:\[\]]{1,128})"
    r"@(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})"
)
_LABEL = (
    r"(?:session[ _-]?)?cookies?|passwords?|passwd|passcode|passphrase|pwd|secrets?"
    r"|(?:access|auth|refresh|session|bearer|api|id)?[ _-]?tokens?|session(?:[ _-]?id)?|sid"
    r"|api[ _-]?key|apikey|credentials?|otp|pin|reply code|security code|one[ -]time code"
)
_PHRASE = re.compile(
    rf"(?P<label>\b(?:{_LABEL})\b(?P<link>(?:\s+(?:is|was|value|of|set to|now|=|:))*\s*[:=]?\s*))"
    r"(?P<value>[^\s,;&'\"<>()\[\]{}]+)",
    re.IGNORECASE,
)
#: Words after which a run of digits is a secret on its own (a PIN, a one-time code).
_DIGIT_LABELS = ("pin", "otp", "passcode", "code")
_TRAILING = ".:!?"


def luhn_ok(digits: str) -> bool:
    """Whether ``digits`` (digits only) pass the Luhn check of card numbers."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card(m: re.Match[str]) -> str:
    text = m.group(0)
    groups = re.split(r"[ -]", text)
    if len(groups) > 1 and any(len(g) < 3 for g in groups):
        return text  # "2026 12 24 …": dates and lists of small numbers are not cards
    digits = "".join(groups)
    return REDACTED if 13 <= len(digits) <= 19 and luhn_ok(digits) else text


def _entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def looks_secret(label: str, value: str) -> bool:
    """Whether ``value``, written right after the secret word ``label``, is a secret."""
    value = value.rstrip(_TRAILING)
    if not value or value.lower().startswith(("[redacted", "%5bredacted")):
        return False
    if value.isdigit():
        return len(value) >= 8 or (
            len(value) >= 4 and label.lower().rstrip().endswith(_DIGIT_LABELS)
        )
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    if len(value) >= 6 and has_digit and has_alpha:
        return True
    return len(value) >= 16 and _entropy(value) >= 3.5


def _phrase(m: re.Match[str]) -> str:
    value = m.group("value")
    word = m.string[m.start("label") : m.start("link")]  # "PIN is 4821": the word is "PIN"
    if not m.group("link") or not looks_secret(word, value):
        return m.group(0)
    kept = value[len(value.rstrip(_TRAILING)) :]
    return f"{m.group('label')}{REDACTED}{kept}"


def _labelled(m: re.Match[str]) -> str:
    if m.group("value").lstrip().startswith("[redacted"):
        return m.group(0)
    return f"{m.group('label')}{REDACTED}"


def _userinfo(m: re.Match[str]) -> str:
    if m.group("value") == "***":  # masked already (mask_url)
        return m.group(0)
    return f"{m.group('user')}:{REDACTED}@{m.group('host')}"


def scrub_values(text: str) -> str:
    """``text`` with card numbers, CVVs, cookies and secrets after secret words redacted."""
    if MAYBE.search(text) is None:
        return text
    if any(ch.isdigit() for ch in text):
        text = _CARD.sub(_card, text)
        text = _CVV.sub(_labelled, text)
    text = _COOKIE.sub(_labelled, text)
    if "@" in text:
        text = _USERINFO.sub(_userinfo, text)
    return _PHRASE.sub(_phrase, text)
