"""Receipts: durable, secret-free evidence of how an operation stands, in words.

Theory of operation. A receipt is built from the ledger alone — the
operation's steps, their records and their events, the intent version, the
approval packets, the decisions people made — through an **allowlist**: only
the fields named here are copied, so nothing a payload or a provider carried
can slip through. :func:`build_receipt` is the one renderer (pure: the CLI,
the console and the operation's own passes all call it), with two faces:

- ``text``, for the user, in plain words, one fact per line: what was done
  and what was not, the amount charged, the amount released or refunded,
  the approved ceiling and whether a later approval raised it, the
  cancellation terms, the exceptions, what happens next and who to contact;
  each line starts with its label (``Charged: 240.00 EUR.``), so a person
  reads it and a program can check it;
- ``data``, a JSON document for operators: intent and version, the approval
  chain, attempts per step, provider references, refreshed facts,
  verification verdicts and their times, **how we know**, what is still
  uncertain, the notification's state, the decisions; ``data["user"]``
  holds the user's facts as fields.

It says what is true when it is built: a receipt read later is built again
from the ledger (``Ledger.receipt``), so "the confirmation is sent again at
12:05" never outlives the retry it announced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from .model import EffectRecord, Event, EventType, Status
from .operations import Assessment, DecisionRecord, Next, OperationDecision, OperationState, Role

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
_DOUBT = (Status.UNKNOWN, Status.NEEDS_REVIEW, Status.EXECUTING, Status.CLAIMED)
_MONEY_FACTS = ("total", "price", "amount")

#: The only fields of an intent and of an approval that a receipt copies.
_INTENT_FIELDS = ("intent_id", "version", "kind", "provider", "items", "when", "destination",
                  "recipient", "price_ceiling", "currency", "current")  # fmt: skip
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
    max_attempts: int = 1


@dataclass(frozen=True, slots=True)
class Receipt:
    """A receipt: the user's text and the operators' JSON."""

    operation_id: str
    state: OperationState
    text: str
    data: Mapping[str, Any] = field(default_factory=dict)


# --- the operators' JSON -------------------------------------------------------------------


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
            "attempts": 0 if u is None else u.fence,
            "provider_ref": None if u is None else u.result_ref,
            "verdicts": _verdicts(s.undo_events),
        },
    }


def _how_we_know(name: str, events: Sequence[Event]) -> str | None:
    last = next(
        (e for e in reversed(events) if e.type in (EventType.CONFIRMED, EventType.FAILED)), None
    )
    if last is None:
        return None
    who = "a reviewer" if last.run_id.startswith("review:") else "verification"
    verb = "found" if last.type is EventType.CONFIRMED else "proved the absence of"
    return f"{who} {verb} {name} (attempt {last.fence})"


# --- the facts a person needs --------------------------------------------------------------


def _status(record: EffectRecord | None) -> Status | None:
    return None if record is None else record.status


def _money(value: Any) -> Decimal | None:
    try:
        out = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return out if out.is_finite() else None


def _claimed_amount(step: StepView) -> Decimal | None:
    """The total refreshed right before the step's last claim (what its commit cost)."""
    latest: Decimal | None = None
    at_claim: Decimal | None = None
    for e in step.events:
        if e.type is EventType.FACTS_REFRESHED and isinstance(e.data.get("facts"), list):
            for f in e.data["facts"]:
                if isinstance(f, Mapping) and f.get("name") in _MONEY_FACTS:
                    latest = _money(f.get("value")) or latest
        elif e.type is EventType.CLAIMED:
            at_claim = latest
    return at_claim


@dataclass(slots=True)
class _Facts:
    """What the user is told, as fields (``data["user"]``)."""

    outcome: str
    headline: str
    done: list[str] = field(default_factory=list)
    not_done: list[str] = field(default_factory=list)
    uncertain: list[str] = field(default_factory=list)
    charged: str | None = None
    charged_state: str = "none"
    released: str | None = None
    ceiling: str | None = None
    ceiling_raised_from: str | None = None
    currency: str | None = None
    terms: str | None = None
    exceptions: list[str] = field(default_factory=list)
    next: str = ""
    contact: str = ""

    def as_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


def _subject(op_id: str, intent: Mapping[str, Any] | None) -> str:
    if intent is None:
        return f"Operation {op_id}"
    kind = str(intent.get("kind") or "operation")
    what = [str(i) for i in intent.get("items") or []]
    if intent.get("when"):
        what.append(str(intent["when"]))
    where = f" with {intent['provider']}" if intent.get("provider") else ""
    detail = f" ({', '.join(what)})" if what else ""
    return f"Your {kind}{where}{detail}"


_OUTCOMES = {
    OperationState.COMPLETE: ("done", "is done."),
    OperationState.COMPENSATED: ("undone", "did not go through; what had been done was undone."),
    OperationState.NEEDS_REVIEW: ("in review", "is stopped: a person checks it before anything "
                                                "else is done."),
    OperationState.ABANDONED: ("abandoned", "was abandoned."),
    OperationState.ACCEPTED: ("accepted", "was accepted as it stands."),
    OperationState.IN_PROGRESS: ("in progress", "is in progress."),
    OperationState.NEEDS_COMPENSATION: ("being undone", "did not go through; what was done "
                                                        "is being undone."),
    OperationState.COMPENSATING: ("being undone", "did not go through; what was done is being "
                                                  "undone."),
}  # fmt: skip


def _decided(decisions: Sequence[DecisionRecord], kind: OperationDecision) -> DecisionRecord | None:
    return next((d for d in reversed(decisions) if d.decision is kind), None)


def _next(state: OperationState, a: Assessment, kind: str) -> str:
    if state is OperationState.COMPLETE:
        if a.next is Next.WAIT and a.due is not None:
            return "Nothing from you: the message is sent again shortly, under the same reference."
        if a.next is Next.RUN:
            return "Nothing from you: the confirmation message is being sent."
        return f"Nothing: the {kind} is done."
    if state in (OperationState.COMPENSATED, OperationState.ABANDONED, OperationState.ACCEPTED):
        return f"Nothing more is done for this {kind}."
    if state is OperationState.NEEDS_REVIEW:
        return (
            "A person checks what is not known or not undone and decides; nothing is retried "
            "blindly, and you are told the outcome."
        )
    if state in (OperationState.NEEDS_COMPENSATION, OperationState.COMPENSATING):
        return "What was done is being undone; you are told when it is."
    return "It goes on by itself; you are asked if your approval is needed."


def _facts(
    op_id: str,
    a: Assessment,
    steps: Sequence[StepView],
    intent: Mapping[str, Any] | None,
    chain: Sequence[Mapping[str, Any]],
    decisions: Sequence[DecisionRecord],
    contact: str | None,
) -> _Facts:
    state = a.state
    outcome, verb = _OUTCOMES[state]
    withdrawn = _decided(decisions, OperationDecision.WITHDRAW)
    if withdrawn is not None and state in (
        OperationState.COMPENSATED, OperationState.COMPENSATING,
        OperationState.NEEDS_COMPENSATION,
    ):  # fmt: skip
        outcome = "withdrawn"
        verb = f"was withdrawn ({withdrawn.reason}); what had been done was undone."
        if state is not OperationState.COMPENSATED:
            verb = f"was withdrawn ({withdrawn.reason}); what was done is being undone."
    ended = _decided(decisions, OperationDecision.ACCEPT if state is OperationState.ACCEPTED
                     else OperationDecision.ABANDON)  # fmt: skip
    if state in (OperationState.ACCEPTED, OperationState.ABANDONED) and ended is not None:
        verb = f"{verb[:-1]} by {ended.by}: {ended.reason}."
    subject = _subject(op_id, intent)
    kind = str((intent or {}).get("kind") or "operation")
    facts = _Facts(outcome=outcome, headline=f"{subject} {verb}")
    approval = chain[-1] if chain else None
    facts.currency = str((approval or {}).get("currency") or (intent or {}).get("currency") or "")
    facts.currency = facts.currency or None
    by_hand = {
        d.step for d in decisions if d.decision is OperationDecision.UNDONE_BY_HAND and d.step
    }
    for s in steps:
        status, undo = _status(s.record), _status(s.undo_record)
        after_pivot = s.role is Role.RETRIABLE
        if status is Status.CONFIRMED:
            ref = s.record.result_ref if s.record else None
            item = f"{s.name} ({ref})" if ref else s.name
            if undo is Status.CONFIRMED or s.name in by_hand:
                item += ", then undone" + (" by hand" if s.name in by_hand else "")
            elif undo is Status.FAILED:
                item += ", its undo was refused: it still stands"
            elif undo in _DOUBT:
                facts.uncertain.append(f"the undo of {s.name}")
            facts.done.append(item)
        elif status in _DOUBT:
            facts.uncertain.append(s.name)
        elif not after_pivot:
            facts.not_done.append(s.name + (" (it did not happen)" if status else ""))
    _money_facts(facts, steps, chain, by_hand)
    if approval is not None and approval.get("terms"):
        facts.terms = str(approval["terms"])
    _exceptions(facts, a, steps)
    facts.next = _next(state, a, kind)
    provider = (intent or {}).get("provider")
    who = contact or "the team that runs this agent for you"
    facts.contact = f"{who}, with the reference {op_id}" + (
        f"; for the {kind} itself, {provider}" if provider else ""
    )
    return facts


def _money_facts(
    facts: _Facts,
    steps: Sequence[StepView],
    chain: Sequence[Mapping[str, Any]],
    by_hand: set[str],
) -> None:
    """Charged, released, the ceiling: the step the approval authorizes is the money step."""
    if not chain:
        return
    approval, first = chain[-1], chain[0]
    ceiling, before = _money(approval.get("ceiling")), _money(first.get("ceiling"))
    if ceiling is not None:
        facts.ceiling = str(ceiling)
        if before is not None and ceiling > before:
            facts.ceiling_raised_from = str(before)
    pay = next((s for s in steps if s.key == approval.get("effect_key")), None)
    if pay is None:
        return
    amount = _claimed_amount(pay) or _money(approval.get("amount")) or ceiling
    status, undo = _status(pay.record), _status(pay.undo_record)
    if status is Status.CONFIRMED and (undo is Status.CONFIRMED or pay.name in by_hand):
        facts.charged, facts.charged_state = "0", "undone"
        facts.released = None if amount is None else str(amount)
    elif status is Status.CONFIRMED:
        facts.charged, facts.charged_state = (None if amount is None else str(amount)), "charged"
        if undo in _DOUBT:
            facts.charged_state = "release unknown"
    elif status in _DOUBT:
        facts.charged, facts.charged_state = (None if amount is None else str(amount)), "unknown"


def _exceptions(facts: _Facts, a: Assessment, steps: Sequence[StepView]) -> None:
    for s in steps:
        r = s.record
        if r is not None and r.matches > 1:
            facts.exceptions.append(f"{s.name} was found {r.matches} times at the provider")
        if s.role is not Role.RETRIABLE:
            continue
        if r is None or r.status is Status.CONFIRMED or a.state is not OperationState.COMPLETE:
            continue
        if r.status is Status.FAILED and r.fence >= s.max_attempts:
            why = f" (the last: {r.reason})" if r.reason else ""
            facts.exceptions.append(
                f"the {s.name} message could not be delivered after {r.fence} "
                f"attempt{'s' if r.fence != 1 else ''}{why}; nothing more is sent"
            )
        elif r.status is Status.FAILED:
            facts.exceptions.append(
                f"the {s.name} message is not delivered yet: it is sent again "
                f"(attempt {r.fence + 1} of {s.max_attempts})"
            )
        else:
            facts.exceptions.append(f"the {s.name} message is {r.status.value}: not confirmed yet")


def _lines(f: _Facts) -> list[str]:
    cur = f" {f.currency}" if f.currency else ""
    lines = [f.headline]
    lines.append("What was done: " + ("; ".join(f.done) if f.done else "nothing") + ".")
    if f.not_done:
        lines.append("What was not done: " + ", ".join(f.not_done) + ".")
    if f.uncertain:
        lines.append("Still uncertain: " + ", ".join(f.uncertain) + " (a person checks).")
    if f.charged_state == "charged":
        lines.append(f"Charged: {f.charged}{cur}.")
    elif f.charged_state == "release unknown":
        lines.append(f"Charged: {f.charged}{cur}; whether it was given back is not known yet.")
    elif f.charged_state == "unknown":
        lines.append(f"Charged: not known yet; up to {f.charged}{cur} may have been charged.")
    elif f.ceiling is not None or f.released is not None:
        lines.append("Charged: nothing.")
    if f.released is not None:
        lines.append(f"Released or refunded: {f.released}{cur}.")
    if f.ceiling is not None:
        raised = (
            f", raised from {f.ceiling_raised_from}{cur} by a later approval"
            if f.ceiling_raised_from
            else ""
        )
        lines.append(f"Approved ceiling: {f.ceiling}{cur}{raised}.")
    if f.terms:
        lines.append(f"Cancellation terms: {f.terms}")
    lines.append("Exceptions: " + ("; ".join(f.exceptions) if f.exceptions else "none") + ".")
    lines.append(f"What happens next: {f.next}")
    lines.append(f"Who to contact: {f.contact}.")
    return lines


def build_receipt(
    operation_id: str,
    assessment: Assessment,
    steps: Sequence[StepView],
    *,
    intent: Mapping[str, Any] | None,
    approval: Mapping[str, Any] | None,
    now: float,
    approvals: Sequence[Mapping[str, Any]] = (),
    decisions: Sequence[DecisionRecord] = (),
    contact: str | None = None,
) -> Receipt:
    """The receipt of an operation as the ledger holds it now.

    ``approval`` is the packet that could authorize the commit (the newest
    of its chain); ``approvals`` the whole chain, oldest first (the first
    one's ceiling tells whether a later approval raised it).
    """
    chain = list(approvals) or ([approval] if approval is not None else [])
    facts = _facts(operation_id, assessment, steps, intent, chain, decisions, contact)
    know = [
        k
        for s in steps
        for k in (
            _how_we_know(s.name, s.events),
            _how_we_know(f"the undo of {s.name}", s.undo_events),
        )
        if k
    ]
    lines = _lines(facts)
    if know:
        lines.append("How we know: " + "; ".join(know) + ".")
    notify = next((s for s in steps if s.role is Role.RETRIABLE), None)
    notification = None
    if notify is not None:
        r = notify.record
        if r is not None and r.status is Status.CONFIRMED:
            notification = "delivered"
        elif r is not None and r.status is Status.FAILED and r.fence >= notify.max_attempts:
            notification = "given up"
        elif r is None or r.status is Status.FAILED:
            notification = "pending"
        else:
            notification = r.status.value
    not_undone = [
        s.name
        for s in steps
        if _status(s.undo_record) is Status.FAILED
        and not any(
            d.step == s.name and d.decision is OperationDecision.UNDONE_BY_HAND for d in decisions
        )
    ]
    uncertain = [s.name for s in steps if _status(s.record) in _DOUBT] + [
        f"undo of {s.name}" for s in steps if _status(s.undo_record) in _DOUBT
    ]
    data: dict[str, Any] = {
        "operation_id": operation_id,
        "state": assessment.state.value,
        "reason": assessment.reason,
        "written_at": now,
        "intent": None if intent is None else {k: intent.get(k) for k in _INTENT_FIELDS},
        "approval": None if approval is None else {k: approval.get(k) for k in _APPROVAL_FIELDS},
        "approvals": [{k: p.get(k) for k in _APPROVAL_FIELDS} for p in chain],
        "steps": [_step_json(s) for s in steps],
        "notification": notification,
        "uncertain": uncertain,
        "not_undone": not_undone,
        "how_we_know": know,
        "decisions": [d.as_json() for d in decisions],
        "user": facts.as_json(),
    }
    # One line a fact: a value from the world (a contact, a reason, terms) that
    # holds a line break must not forge a line of its own ("Refund: 500 EUR paid").
    text = "\n".join(" ".join(line.split()) for line in lines)
    return Receipt(operation_id, assessment.state, text, data)
