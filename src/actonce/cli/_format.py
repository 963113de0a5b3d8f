"""How the CLI shows records, events and tables (text and JSON)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from actonce import EffectRecord, Event, Hold, IntentRow, Packet, is_secret_name, scrub_text

__all__ = [
    "event_json",
    "hold_json",
    "intent_json",
    "money",
    "packet_json",
    "payload_of",
    "print_json",
    "record_json",
    "table",
    "utc",
    "when",
]


def when(ts: float | None) -> str:
    """A timestamp as local time, to the second."""
    if ts is None:
        return "-"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
    except (OverflowError, OSError, ValueError):
        return f"{ts!r}"


def utc(ts: float) -> str:
    """A timestamp in UTC, to the minute (budget windows are aligned in UTC)."""
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ts))
    except (OverflowError, OSError, ValueError):
        return f"{ts!r}"


def table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
    """Rows under headers, columns padded."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    return "\n".join(lines)


def payload_of(text: str) -> Any:
    """A stored JSON text decoded; the text itself when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def clean(text: str | None) -> str | None:
    """Text fit to print: scrubbed of anything secret-looking."""
    return None if text is None else scrub_text(text)


def record_json(r: EffectRecord) -> dict[str, Any]:
    """One record as JSON."""
    return {
        "key": r.key,
        "kind": r.kind,
        "status": r.status.value,
        "attempt": r.fence,
        "owner": r.owner,
        "lease_expires_at": r.lease_expires_at,
        "payload": payload_of(r.payload),
        "scope": payload_of(r.scope),
        "result_ref": clean(r.result_ref),
        "matches": r.matches,
        "reason": clean(r.reason),
        "created_at": r.created_at,
        "updated_at": r.updated_at,
        "executing_at": r.executing_at,
    }


def event_json(e: Event) -> dict[str, Any]:
    """One event as JSON."""
    return {
        "seq": e.seq,
        "type": e.type.value,
        "at": e.at,
        "attempt": e.fence,
        "run_id": e.run_id,
        "from": None if e.from_status is None else e.from_status.value,
        "to": None if e.to_status is None else e.to_status.value,
        "message": clean(e.message),
        "data": e.data,
    }


def print_json(value: Any) -> None:
    """One JSON document on one line, scrubbed again (a ledger written before the
    store scrubbed every table may hold secrets in clear)."""
    print(json.dumps(shown(value), sort_keys=True, ensure_ascii=False, default=str))


def shown(value: Any) -> Any:
    """A JSON value fit to print: secret-named fields ``[redacted]``, strings scrubbed."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        if set(value) == {"$secret"} and isinstance(value["$secret"], str):
            # a stored marker: "redacted", or the fingerprint an operator compares
            return {"$secret": scrub_text(value["$secret"])}
        return {k: "[redacted]" if _hidden(k, v) else shown(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [shown(v) for v in value]
    return value


def _hidden(name: Any, value: Any) -> bool:
    kept = value is None or isinstance(value, bool) or value in ("", "[redacted]")
    marker = isinstance(value, dict) and set(value) == {"$secret"}
    return isinstance(name, str) and is_secret_name(name) and not (kept or marker)


def money(amount: Any, currency: str | None) -> str:
    """An amount with its currency, or ``-``."""
    return "-" if amount is None else f"{amount} {currency or ''}".strip()


def packet_json(p: Packet, now: float) -> dict[str, Any]:
    """One approval packet as JSON (a packet holds no carrier secret), with ``expired``."""
    out = p.as_json()
    out["summary"] = clean(p.summary())
    out["expired"] = p.expired(now)
    return out


def intent_json(row: IntentRow) -> dict[str, Any]:
    """One intent version as JSON: its fields and where it stands."""
    return {
        "intent_id": row.intent.intent_id,
        "version": row.intent.version,
        "status": row.status.value,
        "created_at": row.created_at,
        "superseded_at": row.superseded_at,
        "fields": row.intent.as_json(),
    }


def hold_json(h: Hold) -> dict[str, Any]:
    """One hold of one claim attempt as JSON."""
    return {
        "attempt": h.fence,
        "kind": h.kind.value,
        "ref": h.ref,
        "amount": str(h.amount),
        "status": h.status.value,
        "at": h.at,
        "settled_at": h.settled_at,
    }
