"""Secrets never reach the ledger: which names are secret, and how to scrub.

Theory of operation. A payload field is secret when its *name* says so, at
any depth, however it is spelled: names are split into words (``-``, ``_``,
spaces, camelCase: ``X-Api-Key`` → ``x api key``, ``accessToken`` →
``access token``) and a name is secret when one of its words is a secret
word (``password``, ``token``, ``cookie``, ``secret``, ``csrf``, ``cvv``,
``pin``, ``otp`` …), when two neighbouring words form a secret pair (``api
key``, ``private key``, ``card number`` …), or when its words run together
around an unmistakable one (``sslpassword``, ``authtoken``,
``clientsecret``: see :data:`SECRET_INFIXES`). Header pairs
(``[["Authorization", "Bearer …"]]``) are secret by their first element.
The caller may declare more names (``secret_fields``: plain names match at
any depth, dotted names one path).

A secret value is replaced by ``{"$secret": "redacted"}``, or, when a
fingerprint key is configured (outside the ledger: see
:class:`FingerprintKey`), by ``{"$secret": "hmac-sha256:<key id>:<hex>"}`` so
that an operator holding the key can tell whether two effects used the same
card. The ledger never holds the key: a leaked ledger gives no way to test
guesses of a 4-digit PIN.

Text from the world (exception messages, verifier reasons, URLs) is scrubbed
before storage and before printing (:func:`scrub_text`): credentials in
URLs, secret-named query parameters and ``name=value`` pairs, ``Bearer`` /
``Basic`` credentials, JSON Web Tokens, and the exact values that were
redacted from the same payload.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import itertools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from .detect import scrub_values
from .errors import UsageError

__all__ = [
    "REDACTED",
    "SECRET_INFIXES",
    "SECRET_PAIRS",
    "SECRET_WORDS",
    "FingerprintKey",
    "Redaction",
    "check_secret_fields",
    "is_header_pair",
    "is_secret_name",
    "mask_url",
    "redact",
    "scrub_text",
    "scrub_url",
    "words",
]

#: What a scrubbed piece of text becomes.
REDACTED = "[redacted]"

#: A name holding one of these words is secret.
SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "secret",
        "secrets",
        "token",
        "tokens",
        "cookie",
        "cookies",
        "session",
        "sessionid",
        "sid",
        "csrf",
        "xsrf",
        "authorization",
        "auth",
        "oauth",
        "bearer",
        "jwt",
        "otp",
        "totp",
        "pin",
        "cvv",
        "cvc",
        "cvn",
        "pan",
        "cardnumber",
        "apikey",
        "credential",
        "credentials",
        "signature",
        "ssn",
        "passcode",
        "passcodes",
        "iban",
        "ccv",
        "cvv2",
        "cvc2",
        "creditcard",
        "debitcard",
    }
)
#: Two neighbouring words that make a name secret.
SECRET_PAIRS = frozenset(
    {
        ("api", "key"),
        ("private", "key"),
        ("secret", "key"),
        ("access", "key"),
        ("signing", "key"),
        ("encryption", "key"),
        ("card", "number"),
        ("card", "num"),
        ("card", "no"),
        ("security", "code"),
        ("verification", "code"),
        ("reply", "code"),
        ("one", "time"),
        ("credit", "card"),
        ("debit", "card"),
        ("cc", "number"),
        ("cc", "num"),
        ("card", "code"),
        ("sort", "code"),
        ("social", "security"),
    }
)
#: Words so unmistakable that a name holding them anywhere is secret, even run
#: together with others (``sslpassword``, ``xauthtoken``, ``setcookie``).
#: Short words (``pin``, ``otp``, ``sid``, ``pan``) only count as whole words:
#: ``shipping`` and ``company`` are not secrets.
SECRET_INFIXES = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "cookie",
    "csrf",
    "xsrf",
    "apikey",
    "authorization",
    "credential",
    "bearer",
    "cardnumber",
    "sessionid",
    "privatekey",
    "passcode",
    "creditcard",
)
#: Words that make a name secret as its last word after another (``user_pass``,
#: ``dbPass``), not alone or first (``pass_count`` and ``passenger`` are not).
_SECRET_LAST = frozenset({"pass", "pw"})
#: Whole names that are secret though no word is (a card object, a bare "pass").
_SECRET_WHOLE = frozenset({"card", "pass", "key_material"})

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def words(name: str) -> tuple[str, ...]:
    """The words of a field name, lower case (``X-Api-Key`` → ``("x", "api", "key")``)."""
    return tuple(w.lower() for w in _WORD.findall(name))


def is_secret_name(name: str) -> bool:
    """Whether a field, header or parameter of this name holds a secret.

    Raises:
        UsageError: ``name`` is not a string.
    """
    if not isinstance(name, str):
        raise UsageError(f"a field name is a string, not {type(name).__name__}")
    return _is_secret_name(name)


@functools.lru_cache(maxsize=4096)
def _is_secret_name(name: str) -> bool:
    w = words(name)
    if not w:
        return False
    joined = "".join(w)
    if "_".join(w) in _SECRET_WHOLE or joined in SECRET_WORDS:
        return True
    if any(x in SECRET_WORDS for x in w):
        return True
    if any(pair in SECRET_PAIRS for pair in itertools.pairwise(w)):
        return True
    if len(w) > 1 and w[-1] in _SECRET_LAST:
        return True
    return any(infix in joined for infix in SECRET_INFIXES)


def is_header_pair(value: Any) -> bool:
    """Whether ``value`` is a ``[name, value]`` pair (an HTTP header, a form field)."""
    return (
        isinstance(value, list | tuple)
        and len(value) == 2
        and isinstance(value[0], str)
        and not isinstance(value[1], Mapping)
    )


def _secret_pair(value: Any, declared: frozenset[str] = frozenset()) -> bool:
    return is_header_pair(value) and (value[0] in declared or _is_secret_name(value[0]))


@dataclass(frozen=True, slots=True)
class FingerprintKey:
    """A key for fingerprints of secret values, kept outside the ledger.

    ``key_id`` names it in every fingerprint so that keys can be rotated
    (fingerprints made under an older key stay recognisable as such).
    """

    key_id: str
    secret: bytes

    def __post_init__(self) -> None:
        if not isinstance(self.key_id, str) or not re.fullmatch(
            r"[A-Za-z0-9._-]{1,32}", self.key_id
        ):
            raise UsageError("a fingerprint key id is 1-32 characters of [A-Za-z0-9._-]")
        if not isinstance(self.secret, bytes):
            raise UsageError(
                f"a fingerprint key's secret is bytes, not {type(self.secret).__name__} "
                "(bytes.fromhex(...) of the hex key)"
            )
        if len(self.secret) < 16:
            raise UsageError("a fingerprint key needs at least 16 bytes")

    def __repr__(self) -> str:
        return f"FingerprintKey(key_id={self.key_id!r}, secret=<{len(self.secret)} bytes>)"

    def fingerprint(self, value: Any) -> str:
        """``hmac-sha256:<key id>:<hex>`` of the canonical JSON of ``value``."""
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        digest = hmac.new(self.secret, text.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return f"hmac-sha256:{self.key_id}:{digest.hexdigest()}"


@dataclass(frozen=True, slots=True)
class Redaction:
    """A payload with its secrets replaced, and the values that were replaced.

    ``values`` stays in memory, never in the ledger: the protocol scrubs them
    out of messages about the same effect.
    """

    payload: Any
    values: tuple[str, ...]


def check_secret_fields(fields: Any) -> tuple[str, ...]:
    """Validate a ``secret_fields`` argument: a sequence of non-empty names."""
    if type(fields) is tuple and not fields:  # the default, on every effect: nothing to check
        return fields
    if isinstance(fields, str | bytes):
        raise UsageError(
            f"secret_fields must be a sequence of names, not the string {fields!r} "
            f"(did you mean ({fields!r},)?)"
        )
    try:
        names = tuple(fields)
    except TypeError:
        raise UsageError("secret_fields must be a sequence of field names") from None
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise UsageError(f"a secret field name must be a non-empty string, not {name!r}")
    return names


def redact(
    payload: Any, *, key: FingerprintKey | None = None, secret_fields: Iterable[str] = ()
) -> Redaction:
    """Replace the secret fields of ``payload`` (see the module docstring)."""
    declared = frozenset(check_secret_fields(secret_fields))
    found: list[str] = []
    out = _redact(payload, key, declared, "", found)
    return Redaction(out, tuple(sorted(set(found), key=len, reverse=True)) if found else ())


def _secret(value: Any, key: FingerprintKey | None, found: list[str]) -> dict[str, str]:
    _collect(value, found)
    return {"$secret": key.fingerprint(value) if key is not None else "redacted"}


def _collect(value: Any, found: list[str]) -> None:
    if isinstance(value, str):
        if len(value) >= 4:
            found.append(value)
            # "Bearer abc…": the credential alone may appear in messages too.
            head, _, tail = value.partition(" ")
            if tail and head.lower() in ("bearer", "basic", "token") and len(tail) >= 4:
                found.append(tail)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if len(str(value)) >= 4:
            found.append(str(value))
    elif isinstance(value, Mapping):
        for v in value.values():
            _collect(v, found)
    elif isinstance(value, list | tuple):
        for v in value:
            _collect(v, found)


_PLAIN = frozenset({int, float, bool, type(None)})  # nothing to redact, no ABC check needed


def _redact(
    value: Any, key: FingerprintKey | None, declared: frozenset[str], path: str, found: list[str]
) -> Any:
    if type(value) in _PLAIN:
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            name = str(k)
            here = f"{path}.{name}" if path else name
            if name in declared or here in declared or _is_secret_name(name):
                out[k] = _secret(v, key, found)
            else:
                out[k] = _redact(v, key, declared, here, found)
        return out
    if isinstance(value, list | tuple):
        if _secret_pair(value, declared):
            return [value[0], _secret(value[1], key, found)]
        return [_redact(v, key, declared, path, found) for v in value]
    if isinstance(value, str):
        return scrub_text(value)
    return value


# --- text and URLs -------------------------------------------------------------------------

#: Anything the patterns below could match starts with one of these.
_SUSPECT = re.compile(r"://|[=:'\"]|bearer|basic|token|eyJ", re.IGNORECASE)
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>]+")
# A URL without its slashes whose userinfo holds a password: ``postgresql:u:pw@h/db``.
_BARE_URL = re.compile(
    r"(?<![\w/.+-])[a-zA-Z][a-zA-Z0-9+.-]*:[^\s/:@\"'<>]+:[^\s/@\"'<>]+@[^\s\"'<>]+"
)
_BEARER = re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{4,}", re.IGNORECASE)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
# ``name=value``, ``name: value``, ``"name": "value"``; a name is not the tail
# of a path or a longer word (``/etc/passwd: file`` names no secret).
_PAIR = re.compile(
    r"(?<![\w/.-])(?P<name>[A-Za-z][A-Za-z0-9_.-]{1,40})"
    r"(?P<sep>\s*[=:]\s*|\"\s*:\s*\"|'\s*:\s*')"
    r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s,;&\"'}\]]+)"
)
# A pair as Python or JSON prints it: ``('X-Api-Key', 'k-1')``, ``["Cookie", "sid=1"]``.
_TUPLE = re.compile(
    r"(?P<head>(?P<q>['\"])(?P<name>[A-Za-z][A-Za-z0-9_.-]{0,60})(?P=q)\s*,\s*)"
    r"(?P<q2>['\"])(?P<value>[^'\"]*)(?P=q2)"
)


_MARK = quote(REDACTED)


def scrub_url(url: str) -> str:
    """``url`` without a password in its userinfo and without secret query values.

    Raises:
        UsageError: ``url`` is not a string.
    """
    if not isinstance(url, str):
        raise UsageError(f"a URL is a string, not {type(url).__name__}")
    if REDACTED in url:  # scrubbed before: "[…]" would read as an IPv6 host
        return scrub_url(url.replace(REDACTED, _MARK)).replace(_MARK, REDACTED)
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, _, password = userinfo.partition(":")
        if ":" in userinfo and password != "***":  # "***": masked already (mask_url)
            netloc = f"{user}:{REDACTED}@{host}"
        elif len(userinfo) >= 16:  # a lone long user name is a token (https://TOKEN@host)
            netloc = f"{REDACTED}@{host}"
    path = parts.path
    if not netloc and parts.scheme and "@" in path:
        # No authority ("postgresql:u:pw@h/db", a URL without its slashes): urlsplit
        # reads the userinfo as the path, and its password is a password all the same.
        head = path.partition("/")[0]
        userinfo, at, host = head.rpartition("@")
        user, colon, password = userinfo.partition(":")
        if at and colon and password != "***":
            path = f"{user}:{REDACTED}@{host}{path[len(head) :]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(is_secret_name(n) for n, _ in pairs):
            query = urlencode(
                [(n, REDACTED if is_secret_name(n) else v) for n, v in pairs], safe="[]"
            )
    fragment = parts.fragment
    if fragment and ("=" in fragment and any(is_secret_name(n) for n, _ in parse_qsl(fragment))):
        fragment = REDACTED
    if (netloc, path, query, fragment) == (parts.netloc, parts.path, parts.query, parts.fragment):
        return url
    return urlunsplit(parts._replace(netloc=netloc, path=path, query=query, fragment=fragment))


def mask_url(url: str) -> str:
    """A ledger URL fit to print: password and secret parameters masked."""
    return scrub_url(url).replace(quote(REDACTED), "***").replace(REDACTED, "***")


def scrub_text(text: str, known: Iterable[str] = ()) -> str:
    """``text`` with credentials, tokens and the ``known`` secret values removed.

    Raises:
        UsageError: ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise UsageError(f"scrub_text() takes a string, not {type(text).__name__}")
    if not text:
        return text
    for value in known:
        if len(value) >= 4 and value in text:
            text = text.replace(value, REDACTED)
    if "://" in text:
        text = _URL.sub(lambda m: scrub_url(m.group(0)), text)
    if "@" in text:
        text = _BARE_URL.sub(lambda m: scrub_url(m.group(0)), text)
    text = scrub_values(text)  # cards, CVVs, cookies, secrets after secret words
    if _SUSPECT.search(text) is None:  # one pass for the common, harmless text
        return text
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _JWT.sub(REDACTED, text)
    text = _TUPLE.sub(_tuple, text)
    return _PAIR.sub(_pair, text)


def _tuple(m: re.Match[str]) -> str:
    if not _is_secret_name(m.group("name")) or m.group("value").startswith("[redacted"):
        return m.group(0)
    return f"{m.group('head')}{m.group('q2')}{REDACTED}{m.group('q2')}"


def _pair(m: re.Match[str]) -> str:
    if not _is_secret_name(m.group("name")) or m.group("value").lstrip("\"'").startswith(
        "[redacted"
    ):
        return m.group(0)
    value = m.group("value")
    quoted = value[:1] if value[:1] in ("'", '"') else ""
    return f"{m.group('name')}{m.group('sep')}{quoted}{REDACTED}{quoted}"
