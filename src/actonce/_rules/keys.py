"""Effect keys, canonical JSON, payload hashing and secret fingerprints.

An effect key names one consequential external mutation and must be the same
across every retry, run and worker. It is the SHA-256 of the canonical JSON of
its scope fields: who acts (tenant, actor), on what (kind, object) and how
(operation), plus any extra stable fields such as an intent version.

What goes into a key: stable business identity (tenant, account, external
reference, target URL, intent id and version). What must never go in: run
ids, attempt numbers, timestamps, random values, or anything that changes
between two attempts of the same intent. :func:`effect_key` refuses field
names that look volatile (``run_id``, ``attempt``, ``timestamp`` ...).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .detect import scrub_values
from .errors import InvalidKey, UsageError
from .secrets import FingerprintKey, Redaction, is_secret_name, redact, scrub_url

__all__ = [
    "MAX_DEPTH",
    "MAX_KEY_LENGTH",
    "EffectKey",
    "canonical_json",
    "check_json",
    "check_name",
    "check_text",
    "effect_key",
    "is_name",
    "payload_hash",
    "stored_payload",
]

#: How deep a payload may nest (deeper is refused, not a RecursionError).
MAX_DEPTH = 100
#: The longest name actonce stores and indexes: an effect key or kind, a run
#: id, a lease name or owner, a queue kind or worker. Every backend indexes
#: some of them and PostgreSQL's btree refuses entries over about 2.7 kB:
#: 512 characters are at most 2,048 bytes of UTF-8.
MAX_KEY_LENGTH = 512

_VOLATILE_NAMES = frozenset(
    {"run_id", "runid", "attempt", "timestamp", "time", "now", "created_at", "nonce", "uuid"}
)


# One encoder for every canonical text (``json.dumps`` with options makes one per call).
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_json(value: Any) -> str:
    """Serialize ``value`` to one canonical JSON text.

    Sorted keys, no insignificant whitespace, UTF-8 kept as is, no NaN or
    infinity. Tuples become lists; sets are refused (their order is not
    stable across processes), and so are lone surrogates (no UTF-8 form),
    cycles and nesting deeper than :data:`MAX_DEPTH`.

    Raises:
        InvalidKey: ``value`` holds something JSON cannot represent exactly.
    """
    check_json(value)
    return _dumps(value)


def _dumps(value: Any) -> str:
    """The canonical JSON text of a value :func:`check_json` accepted."""
    try:
        return _CANONICAL.encode(value)
    except (TypeError, ValueError) as exc:
        raise InvalidKey(f"not canonical JSON: {exc}") from exc


def check_json(value: Any) -> None:
    """Raise :class:`InvalidKey` unless ``value`` has one exact canonical JSON form.

    The walk stops at :data:`MAX_DEPTH`: a payload nested a thousand levels
    deep, or one that contains itself, is refused, never a ``RecursionError``.
    """
    _check_jsonable(value, 0, set())


def check_text(text: str, what: str) -> str:
    """``text`` if it has a UTF-8 form, else :class:`InvalidKey` naming ``what``."""
    if text.isascii():  # no surrogate is ASCII: most names, checked without a copy
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidKey(f"{what} holds a lone surrogate, which has no UTF-8 form") from None
    return text


def check_name(value: Any, what: str) -> str:
    """A name actonce stores and indexes (see :data:`MAX_KEY_LENGTH`), checked.

    The one rule for every such name: a non-empty string with a UTF-8 form,
    no NUL (PostgreSQL's text type refuses it) and at most
    :data:`MAX_KEY_LENGTH` characters.

    Raises:
        UsageError: not such a string (:class:`InvalidKey` for a lone surrogate).
    """
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{what} must be a non-empty string, not {value!r:.60}")
    check_text(value, what)
    if len(value) > MAX_KEY_LENGTH:
        raise UsageError(f"{what} is {len(value)} characters long; at most {MAX_KEY_LENGTH}")
    if "\x00" in value:
        raise UsageError(f"{what} cannot contain a NUL character")
    return value


def is_name(value: Any) -> bool:
    """Whether ``value`` passes :func:`check_name`: could such a name be stored at all?

    A lookup by a name that cannot be stored (a NUL, a lone surrogate) finds
    nothing, without asking a backend that would refuse the text.
    """
    try:
        check_name(value, "a name")
    except UsageError:
        return False
    return True


def stored_payload(
    payload: Any, *, key: FingerprintKey | None = None, secret_fields: tuple[str, ...] = ()
) -> tuple[str, Redaction]:
    """A payload as the ledger keeps it: canonical JSON with its secrets redacted.

    The whole payload must be JSON (secret fields too: a set under
    ``password`` is as wrong as one anywhere else), checked before anything
    walks it.

    Raises:
        InvalidKey: the payload has no canonical JSON form.
    """
    check_json(payload)
    redaction = redact(payload, key=key, secret_fields=secret_fields)
    if redaction.payload == payload:  # nothing redacted (compared in C): checked once
        return _dumps(redaction.payload), redaction
    return canonical_json(redaction.payload), redaction


def _check_jsonable(value: Any, depth: int, path: set[int]) -> None:
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, str):
        check_text(value, "a string")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidKey("NaN and infinity have no canonical JSON form")
        return
    if depth >= MAX_DEPTH:
        raise InvalidKey(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, list | tuple | Mapping):
        if id(value) in path:
            raise InvalidKey("a value that contains itself has no JSON form")
        path.add(id(value))
        if isinstance(value, Mapping):
            for k, v in value.items():
                if not isinstance(k, str):
                    raise InvalidKey(f"JSON object keys must be strings, not {type(k).__name__}")
                check_text(k, "an object key")
                _check_jsonable(v, depth + 1, path)
        else:
            for item in value:
                _check_jsonable(item, depth + 1, path)
        path.discard(id(value))
        return
    raise InvalidKey(f"{type(value).__name__} has no canonical JSON form")


@dataclass(frozen=True, slots=True)
class EffectKey:
    """A stable effect identity: ``value`` is the hex SHA-256 of ``scope``."""

    value: str
    scope: str

    def __str__(self) -> str:
        return self.value


def effect_key(
    *,
    tenant: str,
    actor: str,
    kind: str,
    object: str,
    operation: str,
    **extra: str | int | bool | None,
) -> EffectKey:
    """Build the key of one effect from its named scope fields.

    Args:
        tenant: the customer or workspace the effect belongs to.
        actor: the account that acts (the signed-in identity).
        kind: the effect kind (``post``, ``invoice``, ``payment`` ...); the
            verifier registry is keyed by it.
        object: the business object (external reference, target URL).
        operation: what is done to it (``create``, ``like``, ``book``).
        **extra: further stable fields, e.g. ``intent_version=2`` or
            ``part=3`` for one part of a thread.

    Raises:
        InvalidKey: a field is empty, named like a volatile value or a
            secret, or holds a URL with credentials (the scope is stored in
            clear).
    """
    fields: dict[str, Any] = {
        "tenant": tenant,
        "actor": actor,
        "kind": kind,
        "object": object,
        "operation": operation,
    }
    for name in ("tenant", "actor", "kind", "object", "operation"):
        value = fields[name]
        if not isinstance(value, str) or not value.strip():
            raise InvalidKey(f"key field {name!r} must be a non-empty string")
    for name, value in extra.items():
        if name.lower() in _VOLATILE_NAMES:
            raise InvalidKey(
                f"key field {name!r} looks volatile; a key must be the same on every retry"
            )
        if is_secret_name(name):
            raise InvalidKey(
                f"key field {name!r} looks like a secret; a key's fields are stored in clear"
            )
        if value is not None and not isinstance(value, str | int | bool):
            raise InvalidKey(f"key field {name!r} must be a string, number or boolean")
        fields[name] = value
    for name, value in fields.items():
        if isinstance(value, str) and "://" in value and scrub_url(value) != value:
            raise InvalidKey(
                f"key field {name!r} holds a URL with credentials or a token; "
                "a key's fields are stored in clear (leave the secret out of the key)"
            )
        if isinstance(value, str) and scrub_values(value) != value:
            raise InvalidKey(
                f"key field {name!r} holds what looks like a secret (a card number, a "
                "cookie, a code after a secret word); a key's fields are stored in clear"
            )
    scope = canonical_json(fields)
    return EffectKey(hashlib.sha256(scope.encode()).hexdigest(), scope)


def payload_hash(canonical_payload: str) -> str:
    """SHA-256 (hex) of an already canonical, already redacted payload."""
    return hashlib.sha256(canonical_payload.encode()).hexdigest()
