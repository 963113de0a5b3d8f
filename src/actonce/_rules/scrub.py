"""The one scrubbing rule set for everything the ledger stores.

Theory of operation. Every value a store binds into a statement, in every
table, passes :func:`scrub_params` (``actonce._store.scrubbing`` is where:
the SQLite connection and the PostgreSQL cursors of both pools). A text
value is scrubbed as text (:func:`~.secrets.scrub_text`: credentials in
URLs, ``name=value`` pairs, bearer tokens, JWTs, and the value detectors of
:mod:`.detect`); a text value that is a JSON object or array is scrubbed as
JSON (:func:`scrub_json`): a field with a secret name keeps only
``[redacted]``, a secret-named header pair ``[name, value]`` too, and every
string inside is scrubbed as text. Numbers, ``None`` and bytes pass as they
are: they are the ledger's own (fences, times, counts).

The rules are deterministic and idempotent, ``scrub(scrub(x)) == scrub(x)``:
what was scrubbed once is stored as it is. That is what lets a compare-and-set
work on scrubbed data: an intent put twice is compared in its stored form
(:func:`stored_form`), and a payload is hashed after the same rules
(:func:`~.keys.stored_payload`), so that the store finds nothing left to
change and the hash is the hash of what is stored.

What passes through unchanged: ids and keys (hex digests, packet and run
ids: no detector matches them), ``{"$secret": …}`` markers, ``[redacted]``,
the booleans and ``null`` under secret names (``"cookie": false`` says
nothing secret).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .secrets import REDACTED, is_header_pair, is_secret_name, scrub_text

__all__ = ["CUES", "maybe_secret", "scrub_json", "scrub_params", "scrub_stored", "stored_form"]

#: Texts up to this length are remembered once scrubbed (keys, kinds and
#: payloads are written again on every transition of an effect).
_CACHED = 16_384
_JSON_TEXT = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
#: Every text a rule could change holds one of these, lower-cased, as it is or
#: with its letters and digits joined (a secret name's words, whatever parts
#: them: ``one-time``, ``cc.num``, ``keyMaterial``; a detector's cue; a URL's
#: userinfo), or a long run of digits;
#: most stored texts (keys, statuses, events' data) hold none and are kept
#: without a parse. tests/hardening/test_secrets.py checks it is never wrong.
CUES = (
    "pass", "pw", "secret", "token", "cookie", "session", "sid", "csrf", "xsrf", "auth",
    "bearer", "basic", "jwt", "eyj", "otp", "pin", "cvv", "cvc", "cvn", "ccv", "csc", "pan",
    "card", "api", "private", "access", "signing", "encryption", "security", "verification",
    "reply", "onetime", "ccn", "sort", "social", "signature", "ssn", "iban", "keymaterial",
    "credential", "@",
)  # fmt: skip
_DIGITS = re.compile(r"\d[\d -]{11,}\d")
_NO_DIGITS = str.maketrans("", "", "0123456789")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")


def maybe_secret(text: str) -> bool:
    """False only when no rule of this module could change ``text`` (a quick test)."""
    return _maybe_short(text) if len(text) <= 256 else _maybe(text)


def _maybe(text: str) -> bool:
    low = text.lower()
    if any(cue in low for cue in CUES):
        return True
    # A name's words may be parted by any mark ("cc.number", "one time", "p-in"): the
    # name rules join them (secrets.words), so the cues are looked for joined too.
    joined = _NOT_ALNUM.sub("", text).lower()
    if len(joined) < len(low) and any(cue in joined for cue in CUES):
        return True
    return len(text) - len(text.translate(_NO_DIGITS)) >= 13 and _DIGITS.search(text) is not None


def _is_marker(value: Any) -> bool:
    return isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get("$secret"), str)


def _kept(value: Any) -> bool:
    """A value under a secret name that holds nothing secret (already redacted, or empty)."""
    return value is None or isinstance(value, bool) or value in ("", REDACTED) or _is_marker(value)


def scrub_json(value: Any) -> Any:
    """A JSON value with every secret it holds replaced (see the module docstring)."""
    if isinstance(value, str):
        return scrub_text(value) if maybe_secret(value) else value
    if isinstance(value, Mapping):
        if _is_marker(value):
            return value
        out: dict[Any, Any] = {}
        for k, v in value.items():
            secret = isinstance(k, str) and is_secret_name(k) and not _kept(v)
            out[scrub_json(k)] = REDACTED if secret else scrub_json(v)
        return out
    if isinstance(value, list | tuple):
        if is_header_pair(value) and is_secret_name(value[0]) and not _kept(value[1]):
            return [scrub_json(value[0]), REDACTED]
        return [scrub_json(v) for v in value]
    return value


def _scrub_stored(text: str) -> str:
    if not maybe_secret(text):
        return text
    head, tail = text[:1], text[-1:]
    if (head == "{" and tail == "}") or (head == "[" and tail == "]"):
        try:
            data = json.loads(text)
        except ValueError:
            return scrub_text(text)
        clean = scrub_json(data)
        return text if clean == data else _JSON_TEXT.encode(clean)
    return scrub_text(text)


_maybe_short = functools.lru_cache(maxsize=8192)(_maybe)  # statuses, kinds, keys: again and again
_scrub_cached = functools.lru_cache(maxsize=4096)(_scrub_stored)


def scrub_stored(text: str) -> str:
    """A text value as the ledger stores it: scrubbed as JSON when it is JSON, else as text."""
    if not text:
        return text
    return _scrub_cached(text) if len(text) <= _CACHED else _scrub_stored(text)


def scrub_params(params: Any) -> Any:
    """The bound values of one statement, their texts scrubbed (:func:`scrub_stored`)."""
    if not params:
        return params
    if isinstance(params, Mapping):
        return {k: scrub_stored(v) if type(v) is str else v for k, v in params.items()}
    if isinstance(params, Sequence) and not isinstance(params, str | bytes):
        if not any(type(v) is str for v in params):
            return params
        return tuple(scrub_stored(v) if type(v) is str else v for v in params)
    return params


def stored_form(value: Any) -> Any:
    """``value`` (JSON-able) as it reads back from the ledger: through :func:`scrub_json`
    and a JSON round trip (tuples become lists)."""
    return json.loads(_JSON_TEXT.encode(scrub_json(value)))
