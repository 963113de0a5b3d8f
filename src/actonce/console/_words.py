"""Ledger rows in words a reviewer reads: the question, ages, times, values.

Everything shown passes through :func:`shown` or :func:`clean`: payloads are
stored with secret-named fields redacted already, but a value can still
hold a secret in passing (a URL with ``?token=``, ``Bearer ...`` in a
note), so every string is scrubbed again on its way to a page and every
field named like a secret is masked, at any depth.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Mapping
from typing import Any

from actonce import EffectRecord, is_secret_name, scrub_text

__all__ = [
    "actor_of",
    "age",
    "at",
    "clean",
    "object_of",
    "question",
    "scope_of",
    "shown",
    "shown_json",
    "subject",
]

MASK = "[redacted]"
_OBJECT_FIELDS = ("reference", "ref", "object", "order", "external_reference", "id", "url")
_AMOUNT_FIELDS = ("amount", "total", "price")


def clean(text: Any, limit: int = 500) -> str:
    """``text`` fit for a page: scrubbed of anything secret-looking, cut to ``limit``."""
    if text is None:
        return ""
    return _clean(str(text), limit)


@functools.lru_cache(maxsize=4096)
def _clean(text: str, limit: int) -> str:
    # Scrubbing runs a few dozen patterns; a queue page shows the same kinds,
    # actors, tenants and reasons again and again.
    value = scrub_text(text)
    return value if len(value) <= limit else value[: limit - 1] + "…"


def shown(value: Any, depth: int = 0) -> Any:
    """A JSON value fit for a page: secret-named fields masked, strings scrubbed."""
    if depth > 20:
        return "…"
    if isinstance(value, Mapping):
        if set(value) == {"$secret"}:
            return MASK  # a value the ledger stored redacted (or as a fingerprint)
        return {
            str(k): MASK if is_secret_name(str(k)) else shown(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [shown(v, depth + 1) for v in value]
    if isinstance(value, str):
        return clean(value, 2000)
    return value


def shown_json(value: Any) -> str:
    """:func:`shown`, as indented JSON text."""
    return json.dumps(shown(value), indent=2, ensure_ascii=False, sort_keys=True, default=str)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def scope_of(record: EffectRecord) -> dict[str, Any]:
    """The fields the effect's key was made of, raw (empty for a plain-string key).

    Raw: pass what you show through :func:`clean` or :func:`shown`.
    """
    scope = _loads(record.scope)
    return scope if isinstance(scope, dict) else {}


def actor_of(record: EffectRecord) -> str:
    """Who acts, from the key's scope (``""`` when the key does not say)."""
    return clean(scope_of(record).get("actor") or "", 80)


def _object(scope: dict[str, Any], payload: Any) -> str:
    if scope.get("object"):
        return clean(scope["object"], 120)
    if isinstance(payload, dict):
        for name in _OBJECT_FIELDS:
            value = payload.get(name)
            if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
                return clean(value, 120)
    return ""


def object_of(record: EffectRecord) -> str:
    """What the effect is about: the scope's object, else a reference in the payload."""
    return _object(scope_of(record), _loads(record.payload))


def _amount(payload: Any) -> str:
    if not isinstance(payload, dict):
        return ""
    currency = payload.get("currency")
    for name in _AMOUNT_FIELDS:
        value = payload.get(name)
        if isinstance(value, Mapping):
            currency, value = value.get("currency", currency), value.get("amount")
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            text = f"{value} {currency}" if isinstance(currency, str) else str(value)
            return clean(text, 40)
    return ""


def subject(record: EffectRecord) -> str:
    """The effect in a few words: ``create invoice ORDER-9201 for acme (120.00)``."""
    scope = scope_of(record)
    payload = _loads(record.payload)
    operation = clean(scope.get("operation") or "", 40)
    kind = clean(scope.get("kind") or record.kind, 40)
    thing = _object(scope, payload)
    words = [w for w in (operation, kind, thing) if w]
    if not thing and isinstance(payload, dict) and isinstance(payload.get("text"), str):
        words.append(f"“{clean(payload['text'], 60)}”")
    phrase = " ".join(words)
    tenant = clean(scope.get("tenant") or "", 60)
    if tenant:
        phrase += f" for {tenant}"
    amount = _amount(payload)
    if amount:
        phrase += f" ({amount})"
    return phrase


def question(record: EffectRecord) -> str:
    """The question a reviewer answers: ``Did <subject> happen?``."""
    return f"Did {subject(record)} happen?"


def age(seconds: float) -> str:
    """A duration as a person says it: ``40 s``, ``4 min``, ``2 h 5 min``, ``3 d 2 h``."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        h, m = divmod(s // 60, 60)
        return f"{h} h {m} min" if m else f"{h} h"
    d, h = divmod(s // 3600, 24)
    return f"{d} d {h} h" if h else f"{d} d"


def at(ts: float | None, *, date: bool = True) -> str:
    """Ledger time in UTC: ``2026-05-04 12:05:33 UTC`` (or just the time)."""
    if ts is None:
        return "-"
    try:
        fmt = "%Y-%m-%d %H:%M:%S UTC" if date else "%H:%M:%S UTC"
        return time.strftime(fmt, time.gmtime(ts))
    except (OverflowError, OSError, ValueError):
        return repr(ts)
