"""Operations on the console: the ones in review beside effects, and one on one screen.

Everything is read through ``ledger.operations`` (the public API): an
operation's page answers what an effect's page answers — did it happen (the
receipt's first line, each step and its undo), how do we know (the
verifications), what happens next, who acts — and offers the decisions that
can move it from where it stands, each with its consequence spelled out
before the click. A decision is taken under a hold, like an effect's: the
lease ``review:operation:<op id>``.
"""

from __future__ import annotations

from typing import Any

from actonce import DecisionRecord, OperationDecision, OperationView, Status

from ._console import Console, ref_of
from ._receipts import step_rows
from ._words import age, at, clean

__all__ = [
    "CHOICES",
    "consequences",
    "hold_key",
    "operation_page",
    "operation_row",
    "operations_in_review",
]

#: What each decision is called on the page.
CHOICES: dict[str, tuple[OperationDecision, str, str]] = {
    d.value: (d, label, hint)
    for d, label, hint in (
        (OperationDecision.RETRY_UNDO, "Retry the undo",
         "Run the undo again at the operation's next pass."),
        (OperationDecision.UNDONE_BY_HAND, "Record it undone by hand",
         "Someone undid it outside actonce (at the provider, by phone)."),
        (OperationDecision.ACCEPT, "Accept as it stands",
         "What is done stays done; nothing more is done or undone."),
        (OperationDecision.ABANDON, "Abandon",
         "Nothing more happens to this operation."),
        (OperationDecision.WITHDRAW, "Withdraw",
         "It must commit nothing more: what was done is undone."),
    )
}  # fmt: skip


def hold_key(op_id: str) -> str:
    """The key of the review hold on an operation (``review:`` is added by the holds)."""
    return f"operation:{op_id}"


def _at(v: OperationView) -> str:
    if v.step is None:
        return ""
    return f"the undo of {v.step}" if v.undo else v.step


def _money(v: OperationView) -> str:
    user = v.receipt.data.get("user") or {}
    amount = user.get("charged")
    cur = f" {user['currency']}" if user.get("currency") else ""
    state = user.get("charged_state")
    if amount is None or state not in ("charged", "unknown", "release unknown"):
        return ""
    if state == "charged":
        return f"{amount}{cur} held"
    if state == "unknown":
        return f"up to {amount}{cur} may be held"
    return f"{amount}{cur} held, its release not known"


def operation_row(v: OperationView, now: float) -> dict[str, Any]:
    """One operation in review, as the queue lists it."""
    user = v.receipt.data.get("user") or {}
    return {
        "id": clean(v.op_id, 200),
        "link": ref_of(v.op_id),
        "state": v.state.value,
        "at": clean(_at(v), 120),
        "since": at(v.since) if v.since else "",
        "age": age(now - v.since) if v.since else "",
        "done": clean(", ".join(user.get("done") or []) or "nothing", 300),
        "not_done": clean(", ".join(user.get("not_done") or []) or "-", 300),
        "uncertain": clean(", ".join(user.get("uncertain") or []), 300),
        "money": clean(_money(v), 120),
        "reason": clean(v.reason, 300),
    }


def operations_in_review(console: Console, limit: int = 50) -> list[dict[str, Any]]:
    """The operations that wait for a person, oldest first (none when the store keeps none)."""
    try:
        views = console.ledger.operations.in_review(limit=limit)
    except AttributeError:  # a store of one's own may keep no operations
        return []
    now = console.ledger.clock.now()
    return [operation_row(v, now) for v in views]


def consequences(v: OperationView) -> dict[str, str]:
    """What each decision does to this operation, in words, before the click."""
    where = _at(v) or "where it stands"
    step = v.step or "the step"
    state = None
    if v.step is not None:
        s = next(x for x in v.steps if x.name == v.step)
        record = s.undo_record if v.undo else s.record
        state = None if record is None else record.status
    doubt = state in (Status.UNKNOWN, Status.NEEDS_REVIEW)
    money = _money(v)
    stands = f" What stands stays as it is ({money}); the receipt says so." if money else ""
    return {
        "retry_undo": (
            ("Records the undo of " + step + " as not happened first (its own effect: "
             "failed; refused while its owner may still be performing). " if doubt else "")
            + f"The next pass of the operation runs the undo of {step} again (attempt "
            f"{v.attempt + 1}); it verifies first, so an undo that landed meanwhile is found, "
            "never sent twice."
        ),
        "undone_by_hand": (
            f"{where[0].upper() + where[1:]} counts as done"
            + (" (its own effect: confirmed, 'undone by hand')" if doubt else "")
            + "; the next pass goes on undoing what is left, newest first. "
            "Only if it really was undone outside actonce."
        ),
        "accept": (
            "Ends the operation as it stands: nothing more is done or undone." + stands
        ),
        "abandon": (
            "Ends the operation: no pass does anything more." + stands
            + " Steps still in doubt stay in the effects queue."
        ),
        "withdraw": (
            "Closes it: no step that has not started runs any more; its verified steps are "
            "undone, newest first, at its next pass."
        ),
    }  # fmt: skip


def _decision(d: DecisionRecord) -> dict[str, Any]:
    return {
        "n": d.n,
        "at": at(d.at),
        "what": CHOICES[d.decision.value][1],
        "by": clean(d.by, 80),
        "reason": clean(d.reason, 500),
        "step": clean(d.step or "", 80),
        "attempt": d.attempt,
    }


def operation_page(console: Console, op_id: str, reviewer: str, hold: dict[str, Any]) -> Any:
    """One operation on one screen (raises :class:`~actonce.UsageError` if there is none)."""
    v = console.ledger.operations.get(op_id)
    now = console.ledger.clock.now()
    data = v.receipt.data
    user = data.get("user") or {}
    lines = v.receipt.text.splitlines()
    return {
        "op": {
            **operation_row(v, now),
            "intent": "" if v.intent is None else clean(str(v.intent), 200),
            "attempt": v.attempt,
            "closed": v.closed,
            "in_review": v.in_review,
            "headline": clean(lines[0] if lines else "", 500),
            "facts": [
                (clean(k, 60), clean(val, 500))
                for k, _, val in (line.partition(": ") for line in lines[1:])
                if val
            ],
            "know": [clean(k, 300) for k in data.get("how_we_know") or []],
            "next": clean(user.get("next") or "", 500),
            "steps": step_rows(data),
            "decisions": [_decision(d) for d in v.decisions],
        },
        "choices": [
            {"value": c.value, "label": CHOICES[c.value][1], "hint": CHOICES[c.value][2]}
            for c in v.choices
        ],
        "consequences": consequences(v),
        "hold": hold,
        "hold_minutes": round(console.settings.hold_seconds / 60),
    }
