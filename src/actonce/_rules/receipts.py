"""Receipts: durable, secret-free evidence of how an operation ended.

Theory of operation. A receipt is built from the ledger alone — the
operation's steps, their records and their events, the intent version, the
approval packet — through an **allowlist**: only the fields named here are
copied, so nothing a payload or a provider carried can slip through (and the
ledger holds no secrets to begin with). It has two faces:

- ``text``: concise, for the user (seed 004): the outcome, the cost, the
  cancellation terms, the exceptions and the follow-up; if the operation was
  abandoned or compensated, what did and what did not happen;
- ``data``: a JSON document for operators: intent and version, approval,
  attempts per step, provider references, refreshed facts, verification
  verdicts and their times, notification status.

Both say **how we know** (which verification, when) and **what is still
uncertain**.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .model import EffectRecord, Event, EventType, Status
from .operations import Assessment, OperationState, Role

__all__ = ["Receipt", "StepView", "build_receipt"]

#: The event types whose times and messages say how we know.
_VERDICTS = {
    EventType.CONFIRMED,
    EventType.FAILED,
    EventType.UNKNOWN,
    EventType.NEEDS_REVIEW,
    EventType.ABANDONED,
    EventType.VERIFICATION_UNAVAILABLE,
    EventType.OVERTAKEN,
    EventType.FACTS_REFRESHED,
}


#: The only fields of an intent and of an approval that a receipt copies.
_INTENT_FIELDS = ("intent_id", "version", "kind", "provider", "when", "destination", "recipient",
                  "price_ceiling", "currency", "current")  # fmt: skip
_APPROVAL_FIELDS = ("packet_id", "status", "amount", "ceiling", "currency", "terms",
                    "decided_by", "decided_at", "expires_at", "revision")  # fmt: skip


@dataclass(frozen=True, slots=True)
class StepView:
    """What the ledger holds about one step (and its undo)."""

    name: str
    role: Role
    key: str
    record: EffectRecord | None
    events: Sequence[Event] = ()
    undo_key: str | None = None
    undo_record: EffectRecord | None = None
    undo_events: Sequence[Event] = ()


@dataclass(frozen=True, slots=True)
class Receipt:
    """A receipt: the user's text and the operators' JSON."""

    operation_id: str
    state: OperationState
    text: str
    data: Mapping[str, Any] = field(default_factory=dict)


def _verdicts(events: Sequence[Event]) -> list[dict[str, Any]]:
    out = []
    for e in events:
        if e.type not in _VERDICTS:
            continue
        item: dict[str, Any] = {"type": e.type.value, "at": e.at, "attempt": e.fence}
        if e.message:
            item["message"] = e.message
        if e.type is EventType.FACTS_REFRESHED and isinstance(e.data.get("facts"), list):
            item["facts"] = [
                {k: f.get(k) for k in ("name", "value", "observed_at", "valid_until", "source")}
                for f in e.data["facts"]
                if isinstance(f, Mapping)
            ]
        if "result_ref" in e.data:
            item["result_ref"] = e.data["result_ref"]
        if isinstance(e.data.get("duplicate"), Mapping):
            item["duplicate"] = {"count": e.data["duplicate"].get("count")}
        out.append(item)
    return out


def _step_json(s: StepView) -> dict[str, Any]:
    r, u = s.record, s.undo_record
    return {
        "name": s.name,
        "role": s.role.value,
        "key": s.key,
        "status": None if r is None else r.status.value,
        "attempts": 0 if r is None else r.fence,
        "provider_ref": None if r is None else r.result_ref,
        "matches": 0 if r is None else r.matches,
        "verdicts": _verdicts(s.events),
        "undo": None
        if s.undo_key is None
        else {
            "key": s.undo_key,
            "status": None if u is None else u.status.value,
            "provider_ref": None if u is None else u.result_ref,
            "verdicts": _verdicts(s.undo_events),
        },
    }


def _how_we_know(s: StepView) -> str | None:
    last = next(
        (e for e in reversed(s.events) if e.type in (EventType.CONFIRMED, EventType.FAILED)), None
    )
    if last is None:
        return None
    who = "a reviewer" if last.run_id.startswith("review:") else "verification"
    verb = "found" if last.type is EventType.CONFIRMED else "proved the absence of"
    return f"{who} {verb} {s.name} (attempt {last.fence})"


def build_receipt(
    operation_id: str,
    assessment: Assessment,
    steps: Sequence[StepView],
    *,
    intent: Mapping[str, Any] | None,
    approval: Mapping[str, Any] | None,
    now: float,
) -> Receipt:
    """The receipt of an operation as the ledger holds it now."""
    state = assessment.state
    done = [s for s in steps if s.record is not None and s.record.status is Status.CONFIRMED]
    undone = [
        s for s in steps if s.undo_record is not None and s.undo_record.status is Status.CONFIRMED
    ]
    uncertain = [
        s.name
        for s in steps
        if s.record is not None
        and s.record.status in (Status.UNKNOWN, Status.NEEDS_REVIEW, Status.EXECUTING)
    ] + [
        f"undo of {s.name}"
        for s in steps
        if s.undo_record is not None
        and s.undo_record.status in (Status.UNKNOWN, Status.NEEDS_REVIEW, Status.EXECUTING)
    ]
    notify = next((s for s in steps if s.role is Role.RETRIABLE), None)
    notification = (
        None
        if notify is None
        else "delivered"
        if notify.record is not None and notify.record.status is Status.CONFIRMED
        else "pending"
        if notify.record is None or notify.record.status is Status.FAILED
        else notify.record.status.value
    )
    cost = None
    currency = None
    terms = None
    if approval is not None:
        cost = approval.get("amount") or approval.get("ceiling")
        currency = approval.get("currency")
        terms = approval.get("terms") or None
    lines = [_headline(state, operation_id, assessment.reason)]
    if state is OperationState.COMPLETE and cost:
        lines.append(f"Cost: {cost} {currency or ''}".rstrip() + ".")
    if terms:
        lines.append(f"Cancellation terms: {terms}")
    if done:
        lines.append(
            "Done: "
            + ", ".join(
                f"{s.name} ({s.record.result_ref})" if s.record and s.record.result_ref else s.name
                for s in done
            )
            + "."
        )
    if undone:
        lines.append("Undone: " + ", ".join(s.name for s in undone) + ".")
    # An undo the provider refused (proven not done): what it should have
    # undone still stands — the escalation a reviewer acts on.
    not_undone = [
        s.name for s in steps if s.undo_record is not None and s.undo_record.status is Status.FAILED
    ]
    if not_undone:
        lines.append(
            "Not undone: "
            + ", ".join(not_undone)
            + f" ({'its undo was' if len(not_undone) == 1 else 'their undos were'} refused: "
            + f"{'it still stands' if len(not_undone) == 1 else 'they still stand'}). "
            + "A reviewer decides."
        )
    not_done = [s.name for s in steps if s not in done and s.role is not Role.RETRIABLE]
    if state in (OperationState.COMPENSATED, OperationState.ABANDONED) and not_done:
        lines.append("Did not happen: " + ", ".join(not_done) + ".")
    if state is OperationState.COMPLETE and notification not in (None, "delivered"):
        lines.append(f"Exception: the notification is {notification}; it is retried on its own.")
    know = [k for k in (_how_we_know(s) for s in steps) if k]
    if know:
        lines.append("How we know: " + "; ".join(know) + ".")
    if uncertain:
        lines.append(
            "Still uncertain: "
            + ", ".join(uncertain)
            + ". A reviewer decides; nothing is retried blindly."
        )
    elif state is OperationState.NEEDS_REVIEW and not not_undone:
        lines.append("Still uncertain: see the steps in review.")
    data: dict[str, Any] = {
        "operation_id": operation_id,
        "state": state.value,
        "reason": assessment.reason,
        "written_at": now,
        "intent": None if intent is None else {k: intent.get(k) for k in _INTENT_FIELDS},
        "approval": None if approval is None else {k: approval.get(k) for k in _APPROVAL_FIELDS},
        "steps": [_step_json(s) for s in steps],
        "notification": notification,
        "uncertain": uncertain,
        "not_undone": not_undone,
    }
    return Receipt(operation_id, state, "\n".join(lines), data)


def _headline(state: OperationState, operation_id: str, reason: str) -> str:
    return {
        OperationState.COMPLETE: f"{operation_id}: done.",
        OperationState.COMPENSATED: f"{operation_id}: did not go through, and what had been done was undone ({reason}).",
        OperationState.ABANDONED: f"{operation_id}: abandoned ({reason}).",
        OperationState.NEEDS_REVIEW: f"{operation_id}: waiting for a reviewer ({reason}).",
        OperationState.NEEDS_COMPENSATION: f"{operation_id}: being undone ({reason}).",
        OperationState.COMPENSATING: f"{operation_id}: being undone ({reason}).",
        OperationState.IN_PROGRESS: f"{operation_id}: in progress ({reason}).",
    }[state]
