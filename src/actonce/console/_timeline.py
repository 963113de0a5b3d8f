"""An effect's history as a reviewer reads it: a timeline, its verdicts, its evidence.

The ledger's events are the source: each one becomes an :class:`Entry`
with a plain label and a category — the claim and its fencing token, the
durable ``executing`` mark, the perform (its duration, its error, the
requests it sent), each verification, reconcile passes (run ids
``reconcile-…``), duplicates detected (``data.duplicate``), alarms of
overtaken owners (``data.alarm``), gates that refused a claim, refreshed
facts, and human decisions (run ids ``review:<name>``) with the reviewer's
identity and reason. Nothing is inferred that the events do not say.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actonce import Event, EventType, Status

from ._words import clean, shown_json

__all__ = ["Entry", "EvidenceRef", "entries", "evidence_refs", "last_error", "verdicts"]

REVIEW_PREFIX = "review:"
RECONCILE_PREFIX = "reconcile-"

_TRANSITIONS = {EventType(s.value) for s in Status}
_PLAIN = {
    EventType.CLAIM_REJECTED: ("claim lost", "claim"),
    EventType.CLAIM_REFUSED: ("claim refused by its gate", "refused"),
    EventType.PAYLOAD_MISMATCH: ("refused: the same key with another payload", "refused"),
    EventType.VERIFICATION_UNAVAILABLE: ("verification unavailable", "verdict"),
    EventType.PRECONDITION_FAILED: ("precondition no longer holds", "claim"),
    EventType.PERFORM_ERROR: ("perform error", "perform"),
    EventType.EVIDENCE: ("evidence captured", "evidence"),
    EventType.HARD_STOP: ("hard stop", "alarm"),
    EventType.OVERTAKEN: ("alarm: performed after being overtaken", "alarm"),
    EventType.FACTS_REFRESHED: ("facts refreshed", "facts"),
}


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of the timeline."""

    seq: int
    at: float
    label: str
    category: str
    attempt: int
    run_id: str
    change: str
    message: str
    facts: tuple[tuple[str, str], ...] = ()
    data: str = ""
    by_reviewer: str = ""
    reconcile: bool = False
    tags: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class EvidenceRef:
    """An evidence folder an event names (files are checked when served)."""

    seq: int
    at: float
    folder: str
    label: str


def _label(e: Event) -> tuple[str, str]:
    reviewer = e.run_id.startswith(REVIEW_PREFIX)
    if e.type in _TRANSITIONS and e.to_status is not None:
        to = e.to_status
        if reviewer:
            return f"decision: {to.value}", "decision"
        if to is Status.CLAIMED:
            return f"claimed: attempt {e.fence} (fencing token {e.fence})", "claim"
        if to is Status.EXECUTING:
            if e.from_status is None or e.from_status is Status.FAILED:
                return f"claimed as the executing mark: attempt {e.fence}", "mark"
            return "executing mark (durable): the perform may start", "mark"
        if to is Status.ABANDONED:
            return "abandoned", "decision"
        return f"verdict: {to.value}", "verdict"
    return _PLAIN.get(e.type, (e.type.value.replace("_", " "), "other"))


def _facts(data: dict[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    perform = data.get("perform")
    if isinstance(perform, dict):
        if "seconds" in perform:
            out.append(("perform took", f"{perform['seconds']} s"))
        if perform.get("error"):
            out.append(("perform raised", clean(perform["error"])))
        details = perform.get("details")
        if isinstance(details, dict) and isinstance(details.get("wire"), list):
            sent = details.get("sent", len(details["wire"]))
            out.append(("mutating requests sent", clean(sent, 20)))
            if details.get("refused"):
                out.append(("requests refused by the guard", clean(details["refused"], 20)))
        if perform.get("overtaken"):
            out.append(("overtaken", "another claim took over while it performed"))
    duplicate = data.get("duplicate")
    if isinstance(duplicate, dict):
        refs = ", ".join(clean(r, 120) for r in duplicate.get("refs", [])[:20])
        out.append(("duplicate detected", f"{clean(duplicate.get('count'), 10)} results {refs}"))
    alarm = data.get("alarm")
    if isinstance(alarm, dict):
        out.append(
            (
                "alarm",
                f"attempt {clean(alarm.get('attempt'), 10)} performed while attempt "
                f"{clean(alarm.get('current_attempt'), 10)} held the effect",
            )
        )
    if data.get("result_ref"):
        out.append(("result", clean(data["result_ref"], 300)))
    if isinstance(data.get("evidence"), str):
        out.append(("evidence", clean(data["evidence"], 300)))
    if "waiting" in data:
        out.append(("waiting for", "an approval" if data["waiting"] else "nothing: refused"))
    return out


def entries(events: list[Event]) -> list[Entry]:
    """The timeline, oldest first."""
    out = []
    for e in events:
        label, category = _label(e)
        data = e.data if isinstance(e.data, dict) else {}
        reviewer = clean(data.get("reviewer") or "", 80) if category == "decision" else ""
        if category == "decision" and not reviewer and e.run_id.startswith(REVIEW_PREFIX):
            reviewer = clean(e.run_id[len(REVIEW_PREFIX) :], 80)
        tags = []
        if isinstance(data.get("duplicate"), dict):
            tags.append("duplicate")
        if isinstance(data.get("alarm"), dict) or e.type is EventType.OVERTAKEN:
            tags.append("alarm")
        if isinstance(data.get("perform"), dict):
            tags.append("perform")
        change = ""
        if e.to_status is not None:
            change = f"{e.from_status.value if e.from_status else '(new)'} → {e.to_status.value}"
        out.append(
            Entry(
                seq=e.seq or 0,
                at=e.at,
                label=label,
                category=category,
                attempt=e.fence,
                run_id=clean(e.run_id, 80),
                change=change,
                message=clean(e.message or "", 1000),
                facts=tuple(_facts(data)),
                data=shown_json(data) if data else "",
                by_reviewer=reviewer,
                reconcile=e.run_id.startswith(RECONCILE_PREFIX),
                tags=tuple(tags),
            )
        )
    return out


def verdicts(timeline: list[Entry]) -> list[Entry]:
    """What verification said, and what reviewers decided, oldest first."""
    return [e for e in timeline if e.category in ("verdict", "decision")]


def last_error(events: list[Event]) -> str:
    """The last perform error the history records (``""``: none)."""
    for e in reversed(events):
        perform = e.data.get("perform") if isinstance(e.data, dict) else None
        if isinstance(perform, dict) and perform.get("error"):
            return clean(perform["error"], 1000)
        if e.type is EventType.PERFORM_ERROR and e.message:
            return clean(e.message, 1000)
    return ""


def evidence_refs(events: list[Event]) -> list[EvidenceRef]:
    """The evidence folders the history names, in order."""
    out = []
    for e in events:
        folder = e.data.get("evidence") if isinstance(e.data, dict) else None
        if isinstance(folder, str) and folder.strip() and e.seq is not None:
            label = folder.rstrip("/").rsplit("/", 1)[-1]
            out.append(EvidenceRef(e.seq, e.at, folder, clean(label, 120)))
    return out
