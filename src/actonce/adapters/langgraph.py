"""LangGraph (``pip install 'actonce[langgraph]'``): an approval as an ``interrupt``.

Inside a node::

    from actonce.adapters.langgraph import approve_then_run

    def book(state):
        answer = approve_then_run(
            ledger, intent=intent, action="book", key=booking_key,
            effect=lambda gate: Effect(key=booking_key, kind="booking", payload=...,
                                       perform=..., verify=..., gate=gate),
            amount="250", currency="EUR", destination="Hotel du Nord",
        )
        return {"booking": answer}

    graph.invoke(inputs, config)                          # ends with an __interrupt__
    graph.invoke(Command(resume={"decision": "approve", "by": "ana"}), config)

LangGraph runs a node again **from its start** when it resumes, so
everything before the ``interrupt`` runs twice. Here that is safe by
construction: the approval packet is looked up before one is requested (the
second pass finds the first pass's packet), and the gated ``ledger.run``
before the interrupt cannot perform — its claim is refused while the packet
waits (``needs_approval``), and after the resume the one run that may
perform is the one after the answer. A node that runs again after the
effect was done is answered ``skipped``. The resume value is
``{"decision": "approve" | "deny", "by": user}`` (or just the decision,
answered as the intent's user); the ledger checks that ``by`` is the user
the approval belongs to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from langgraph.types import interrupt

from actonce import (
    Answered,
    Approvals,
    ApprovalStatus,
    Effect,
    EffectKey,
    Gate,
    Intent,
    IntentRef,
    Ledger,
    Outcome,
    Packet,
    Status,
)

from ._result import tool_result

__all__ = ["approve_then_run", "find_packet"]

_LIVE = (ApprovalStatus.PENDING, ApprovalStatus.APPROVED)
_FINAL = (Status.CONFIRMED, Status.ABANDONED)


def find_packet(ledger: Ledger, intent: Intent, key: EffectKey | str) -> Packet | None:
    """The live packet (pending or approved) for this intent version and effect, if any."""
    want = key.value if isinstance(key, EffectKey) else key
    ref = IntentRef(intent.intent_id, intent.version)
    found = None
    for packet in ledger.approvals.list(user=intent.user, limit=100_000):
        if packet.effect_key == want and packet.intent == ref and packet.status in _LIVE:
            found = packet  # oldest first: the last one is the newest revision
    return found


def _decision(value: Any, user: str) -> tuple[str, str]:
    if isinstance(value, Mapping):
        return str(value.get("decision", "")), str(value.get("by") or user)
    return str(value), user


def approve_then_run(
    ledger: Ledger,
    *,
    intent: Intent,
    action: str,
    key: EffectKey | str,
    effect: Callable[[Gate | None], Effect],
    amount: Decimal | int | str | None = None,
    currency: str | None = None,
    destination: str | None = None,
    details: Mapping[str, Any] | None = None,
    ttl: float = 3600.0,
) -> dict[str, Any]:
    """Ask for approval (a LangGraph interrupt), then run the gated effect once.

    ``effect(gate)`` builds the effect with that gate (``None`` only for an
    effect already confirmed or abandoned: it is then answered from the
    ledger). Returns the tool result (:func:`actonce.adapters.tool_result`)
    with the ``approval`` packet id.
    """
    record = ledger.get(key.value if isinstance(key, EffectKey) else key)
    if record is not None and record.status in _FINAL:
        # Done (or abandoned) already: answered from the ledger, no new approval asked.
        return {**tool_result(ledger.run(effect(None))), "approval": None}
    packet = find_packet(ledger, intent, key)
    if packet is None:
        packet = ledger.approvals.request(
            intent, action, key, amount=amount, currency=currency, destination=destination,
            details=details, ttl=ttl,
        ).packet  # fmt: skip
    result = ledger.run(effect(Approvals.gate(packet)))
    if result.outcome is Outcome.NEEDS_APPROVAL and packet.status is ApprovalStatus.PENDING:
        asked = {
            "approval": packet.packet_id,
            "action": packet.action,
            "user": packet.user,
            "intent": intent.intent_id,
            "version": intent.version,
            "destination": packet.destination,
            "amount": None if packet.amount is None else str(packet.amount),
            "currency": packet.currency,
            "expires_at": packet.expires_at,
        }
        decision, by = _decision(interrupt(asked), packet.user)
        answered = ledger.approvals.answer(packet.packet_id, decision, by=by)
        result = ledger.run(effect(Approvals.gate(packet)))
        if answered.answer is Answered.REFUSED:  # e.g. by someone else: still waiting
            return {**tool_result(result), "approval": packet.packet_id,
                    "answer_refused": answered.reason}  # fmt: skip
    return {**tool_result(result), "approval": packet.packet_id}
