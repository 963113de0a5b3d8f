"""What each page shows, read from the ledger through the public API.

Each function runs in a worker thread (the ledger is synchronous), reads
what its page needs and returns plain values for the template. None of
them writes.
"""

from __future__ import annotations

import math
from typing import Any

from actonce import (
    ActOnceError,
    ApprovalStatus,
    EffectRecord,
    Event,
    EventType,
    Fact,
    Hold,
    HoldKind,
    Packet,
    Status,
    scrub_url,
)

from ._console import Console, ref_of
from ._decide import CLASSES, consequences
from ._evidence import folder_view
from ._operations import operations_in_review
from ._receipts import effect_receipt
from ._timeline import entries, evidence_refs, last_error, verdicts
from ._words import actor_of, age, at, clean, question, scope_of, shown, shown_json, subject

__all__ = [
    "REVIEW",
    "approvals_page",
    "effect_page",
    "hold_view",
    "overview_page",
    "packet_page",
    "parse_cursor",
    "queue_page",
]

REVIEW = (Status.UNKNOWN, Status.NEEDS_REVIEW)
#: Queue filters: the review queue, or any one status.
STATUS_FILTERS: dict[str, tuple[Status, ...]] = {"review": REVIEW} | {s.value: (s,) for s in Status}
PENDING_SHOWN = 20


def parse_cursor(text: str | None) -> tuple[float, str] | None:
    """A queue cursor (``<updated_at>:<key>``) from the URL; ``None`` when absent or bad."""
    if not text:
        return None
    stamp, sep, key = text.partition(":")
    try:
        value = float(stamp)
    except ValueError:
        return None
    return (value, key) if sep and key and math.isfinite(value) else None


def _cursor(record: EffectRecord) -> str:
    return f"{record.updated_at!r}:{record.key}"


def hold_view(console: Console, key: str, reviewer: str) -> dict[str, Any]:
    """Who holds ``key`` now, for a page."""
    state = console.holds.state(key, reviewer)
    return {
        "free": state.free,
        "holder": clean(state.holder or "", 80),
        "until": at(state.until, date=False) if state.until else "",
        "mine": state.mine,
        "here": state.here,
    }


def queue_page(
    console: Console, reviewer: str, status: str, kind: str, after: str | None
) -> dict[str, Any]:
    """The review queue: open effects oldest first, a page at a time, and pending approvals."""
    ledger = console.ledger
    size = console.settings.page_size
    # An unknown filter is the review queue, operations in review included.
    status = status if status in STATUS_FILTERS else "review"
    wanted = STATUS_FILTERS[status]
    records = ledger.list(wanted, kind=kind or None, limit=size + 1, after=parse_cursor(after))
    now = ledger.clock.now()
    rows = []
    for r in records[:size]:
        rows.append(
            {
                "ref": ref_of(r.key),
                "short": r.key[:12],
                "kind": clean(r.kind, 80),
                "status": r.status.value,
                "subject": subject(r),
                "actor": actor_of(r),
                "age": age(now - r.updated_at),
                "since": at(r.updated_at),
                "reason": clean(r.reason or "", 200)
                or (f"duplicate detected: {r.matches} results" if r.matches > 1 else ""),
                "matches": r.matches,
                "hold": hold_view(console, r.key, reviewer),
            }
        )
    counts = ledger.counts(REVIEW)
    pending = ledger.approvals.list(ApprovalStatus.PENDING, limit=PENDING_SHOWN + 1)
    # Operations stopped for a person, beside the effects (the first page of the review queue).
    operations = operations_in_review(console) if status == "review" and after is None else []
    return {
        "rows": rows,
        "status": status,
        "statuses": list(STATUS_FILTERS),
        "kind": kind,
        "kinds": ledger.registry.kinds(),
        "next": _cursor(records[size - 1]) if len(records) > size else None,
        "paged": after is not None,
        "counts": {s.value: counts.get(s, 0) for s in REVIEW},
        "pending": [_packet_row(p, now) for p in pending[:PENDING_SHOWN]],
        "operations": operations,
        "pending_more": len(pending) > PENDING_SHOWN,
    }


def overview_page(console: Console) -> dict[str, Any]:
    """Every status counted, and duplicates (a full read of the index: not for every page)."""
    counts = console.ledger.counts()
    return {
        "counts": [(s.value, counts.get(s, 0)) for s in Status],
        "total": sum(counts.values()),
        "duplicates": console.ledger.duplicates(),
    }


def _fact(fact: Fact, now: float) -> dict[str, Any]:
    return {
        "name": clean(fact.name, 80),
        "value": shown_json(fact.value) if not isinstance(fact.value, str) else clean(fact.value),
        "observed": at(fact.observed_at),
        "valid_until": at(fact.valid_until),
        "freshness": fact.freshness(now).value,
        "source": clean(scrub_url(fact.source), 200) if fact.source else "",
    }


def _packet_row(p: Packet, now: float) -> dict[str, Any]:
    return {
        "id": p.packet_id,
        "summary": clean(p.summary(), 300),
        "user": clean(p.user, 80),
        "status": p.status.value,
        "expires": at(p.expires_at),
        "expired": p.expired(now),
        "age": age(now - p.created_at),
        "stale": any(f.freshness(now).value != "fresh" for f in p.facts),
    }


def _packet(p: Packet, now: float, reviewer: str) -> dict[str, Any]:
    row = _packet_row(p, now)

    def money(value: Any) -> str:
        return "" if value is None else f"{value} {p.currency or ''}".strip()

    row.update(
        {
            "intent": f"{clean(p.intent.intent_id, 120)} version {p.intent.version}",
            "action": clean(p.action, 80),
            "effect_ref": ref_of(p.effect_key),
            "effect_short": p.effect_key[:12],
            "destination": clean(p.destination or "", 200),
            "amount": money(p.amount),
            "ceiling": money(p.ceiling),
            "details": [(clean(k, 80), clean(v, 300)) for k, v in shown(dict(p.details)).items()],
            "terms": clean(p.terms, 2000),
            "facts": [_fact(f, now) for f in p.facts],
            "created": at(p.created_at),
            "revision": p.revision,
            "replaces": p.replaces or "",
            "replaced_by": p.replaced_by or "",
            "decided_by": clean(p.decided_by or "", 80),
            "decided_at": at(p.decided_at) if p.decided_at else "",
            "note": clean(p.note or "", 500),
            "held_by": ref_of(p.held_by) if p.held_by else "",
            "answerable": p.status is ApprovalStatus.PENDING and not p.expired(now),
            "mine": reviewer == p.user,
        }
    )
    return row


def _history(events: list[Event]) -> list[dict[str, Any]]:
    return [
        {
            "at": at(e.at),
            "what": e.type.value.replace("approval_", "").replace("_", " "),
            "duplicate": e.type is EventType.APPROVAL_DUPLICATE,
            "refused": e.type is EventType.APPROVAL_REFUSED,
            "message": clean(e.message or "", 500),
            "data": shown_json(e.data) if e.data else "",
        }
        for e in events
    ]


def approvals_page(console: Console, status: str) -> dict[str, Any]:
    """Approval packets of one status (pending by default), oldest first."""
    try:
        wanted = ApprovalStatus(status)
    except ValueError:
        wanted = ApprovalStatus.PENDING
    now = console.ledger.clock.now()
    packets = console.ledger.approvals.list(wanted, limit=200)
    return {
        "status": wanted.value,
        "statuses": [s.value for s in ApprovalStatus],
        "packets": [_packet_row(p, now) for p in packets],
    }


def packet_page(console: Console, packet_id: str, reviewer: str) -> dict[str, Any]:
    """One packet: every bound field, its facts' freshness, its answers (raises if unknown)."""
    p = console.ledger.approvals.get(packet_id)
    now = console.ledger.clock.now()
    return {
        "p": _packet(p, now, reviewer),
        "effect_recorded": console.ledger.get(p.effect_key) is not None,
        "history": _history(console.ledger.approvals.history(packet_id)),
    }


def _holds_of(console: Console, key: str) -> list[Hold]:
    try:
        return console.ledger.holds(key)
    except (ActOnceError, AttributeError):  # a store of one's own may keep no holds
        return []


def _context(console: Console, holds: list[Hold], events: list[Event], reviewer: str) -> Any:
    ledger = console.ledger
    now = ledger.clock.now()
    intents, packets, seen = [], [], set()
    for h in holds:
        if (h.kind, h.ref) in seen:
            continue
        seen.add((h.kind, h.ref))
        try:
            if h.kind is HoldKind.INTENT:
                intent_id, _, version = h.ref.rpartition("@v")
                intent = ledger.intents.get(intent_id, int(version))
                values = shown(intent.as_json())
                fields = [
                    (name, clean(values[name], 300), name in intent.material)
                    for name in sorted(values)
                    if values[name] not in (None, "", [], {}) and name != "material"
                ]
                intents.append({"ref": clean(h.ref, 200), "fields": fields})
            elif h.kind is HoldKind.APPROVAL:
                packets.append(_packet(ledger.approvals.get(h.ref), now, reviewer))
        except (ActOnceError, ValueError):
            continue
    refreshed = None
    for e in reversed(events):
        if e.type is EventType.FACTS_REFRESHED:
            facts = e.data.get("facts") if isinstance(e.data, dict) else None
            rows = []
            for f in facts or []:
                try:
                    rows.append(_fact(Fact(**f), now))
                except (ActOnceError, TypeError):
                    continue
            refreshed = {"at": at(e.at), "message": clean(e.message or ""), "facts": rows}
            break
    return {"intents": intents, "packets": packets, "refreshed": refreshed}


def effect_page(console: Console, key: str, reviewer: str) -> dict[str, Any]:
    """One effect on one screen (raises :class:`~actonce.UnknownEffect` if there is none)."""
    ledger = console.ledger
    record = ledger.find(key)
    events = ledger.events(record.key)
    now = ledger.clock.now()
    timeline = entries(events)
    holds = _holds_of(console, record.key)
    seen = console.seen.get(record.key)
    if seen is not None and seen.fence != record.fence:
        seen = None
    folders = [
        folder_view(events, ref.seq, ref.label, console.settings.evidence_roots)
        for ref in evidence_refs(events)
    ]
    since = record.updated_at
    reviewable = record.status in REVIEW
    operation = effect_receipt(console, record.key)
    undone = operation is not None and operation["undone"]
    return {
        "ref": ref_of(record.key),
        "key": clean(record.key, 600),
        "question": question(record),
        "kind": clean(record.kind, 80),
        "actor": actor_of(record),
        "status": record.status.value,
        # A payment verified, then voided by its operation, is not shown as a plain success.
        "status_words": "confirmed, then undone" if undone else record.status.value,
        "status_css": "s-undone" if undone else f"s-{record.status.value}",
        "open": reviewable or record.status.is_open,
        "since": at(since),
        "age": age(now - since),
        "created": at(record.created_at),
        "attempt": record.fence,
        "owner": clean(record.owner, 120),
        "lease": at(record.lease_expires_at),
        "lease_live": record.lease_live(now),
        "result_ref": clean(record.result_ref or "", 300),
        "matches": record.matches,
        "reason": clean(record.reason or "", 1000),
        "error": last_error(events),
        "last_verdicts": [e for e in verdicts(timeline) if e.category == "verdict"][-3:],
        "verdicts": verdicts(timeline),
        "timeline": timeline,
        "evidence": folders,
        "payload": shown_json(record.data),
        "scope": shown_json(scope_of(record)),  # shown_json masks and scrubs
        "holds": [
            {
                "attempt": h.fence,
                "kind": h.kind.value,
                "ref": clean(h.ref, 200),
                "amount": str(h.amount),
                "status": h.status.value,
            }
            for h in holds
        ],
        "context": _context(console, holds, events, reviewer),
        "operation": operation,
        "reviewable": reviewable,
        "hold": hold_view(console, record.key, reviewer),
        "hold_minutes": round(console.settings.hold_seconds / 60),
        "classes": list(CLASSES.values()),
        "consequences": consequences(record, holds) if reviewable else {},
        "verifier": ledger.registry.get(record.kind) is not None,
        "seen": seen,
        "verifying": record.key in console.verifying,
    }
