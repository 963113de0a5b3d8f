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
import hmac
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ._errors import InvalidKey

__all__ = [
    "EffectKey",
    "canonical_json",
    "effect_key",
    "fingerprint",
    "payload_hash",
    "redact",
]

_VOLATILE_NAMES = frozenset(
    {"run_id", "runid", "attempt", "timestamp", "time", "now", "created_at", "nonce", "uuid"}
)
#: Field names whose values are never stored, only fingerprinted.
SECRET_NAMES = frozenset(
    {
        "password",
        "passwd",
        "secret",
        "token",
        "access_token",
        "refresh_token",
        "session",
        "session_id",
        "sessionid",
        "cookie",
        "cookies",
        "authorization",
        "api_key",
        "apikey",
        "card",
        "card_number",
        "cardnumber",
        "pan",
        "cvv",
        "cvc",
    }
)


def canonical_json(value: Any) -> str:
    """Serialize ``value`` to one canonical JSON text.

    Sorted keys, no insignificant whitespace, UTF-8 kept as is, no NaN or
    infinity. Tuples become lists; sets are refused (their order is not
    stable across processes).

    Raises:
        InvalidKey: ``value`` holds something JSON cannot represent exactly.
    """
    _check_jsonable(value)
    try:
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise InvalidKey(f"not canonical JSON: {exc}") from exc


def _check_jsonable(value: Any) -> None:
    if value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidKey("NaN and infinity have no canonical JSON form")
        return
    if isinstance(value, list | tuple):
        for item in value:
            _check_jsonable(item)
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidKey(f"JSON object keys must be strings, not {type(k).__name__}")
            _check_jsonable(v)
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
        InvalidKey: a field is empty or named like a volatile value.
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
        fields[name] = value
    scope = canonical_json(fields)
    return EffectKey(hashlib.sha256(scope.encode()).hexdigest(), scope)


def payload_hash(canonical_payload: str) -> str:
    """SHA-256 (hex) of an already canonical, already redacted payload."""
    return hashlib.sha256(canonical_payload.encode()).hexdigest()


def fingerprint(value: Any, salt: bytes) -> str:
    """A keyed fingerprint of a secret value: equal inputs, equal output.

    HMAC-SHA-256 under the ledger's own salt, so that a leaked ledger cannot
    be checked against a precomputed table. Low-entropy secrets (a PIN) are
    still guessable by someone who holds the salt: keep them out of payloads.
    """
    digest = hmac.new(salt, canonical_json(value).encode(), hashlib.sha256).hexdigest()
    return f"hmac-sha256:{digest}"


def redact(payload: Any, salt: bytes, secret_fields: Iterable[str] = ()) -> Any:
    """Replace secret fields of ``payload`` by their fingerprints.

    A field is secret when its name (at any depth) is in ``SECRET_NAMES`` or
    in ``secret_fields``; dotted names (``card.number``) address nested
    fields. The result is what the ledger stores.
    """
    declared = set(secret_fields)
    return _redact(payload, salt, declared, "")


def _redact(value: Any, salt: bytes, declared: set[str], path: str) -> Any:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            here = f"{path}.{k}" if path else str(k)
            if str(k).lower() in SECRET_NAMES or here in declared or str(k) in declared:
                out[k] = {"$fingerprint": fingerprint(v, salt)}
            else:
                out[k] = _redact(v, salt, declared, here)
        return out
    if isinstance(value, list | tuple):
        return [_redact(v, salt, declared, path) for v in value]
    return value
