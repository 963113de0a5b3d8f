"""Where the domains beside effects keep their history, and how an event is appended.

Events of intents, approvals, budget pools, operations and operator runs
live in the same history as effects (one ``events`` table), each under a
key of its own: ``intent:<id>``, ``approval:<packet id>``, ``budget:<pool>``,
``operation:<op id>``, ``operator:<name>``. The statement work of those
domains appends one event per change (invariant 5) with :func:`event_stmt`,
inside the transaction of the change.
"""

from __future__ import annotations

from typing import Any

from .._rules.model import Event, EventType
from . import sql as q
from .rows import event_params
from .stmts import Stmt

__all__ = [
    "approval_event_key",
    "budget_event_key",
    "event_stmt",
    "intent_event_key",
    "operation_event_key",
    "operator_event_key",
]


def intent_event_key(intent_id: str) -> str:
    """The history key of an intent's events."""
    return f"intent:{intent_id}"


def approval_event_key(packet_id: str) -> str:
    """The history key of an approval packet's events."""
    return f"approval:{packet_id}"


def budget_event_key(name: str) -> str:
    """The history key of a budget pool's events."""
    return f"budget:{name}"


def operation_event_key(op_id: str) -> str:
    """The history key of an operation's events."""
    return f"operation:{op_id}"


def operator_event_key(name: str) -> str:
    """The history key of an operator's runs."""
    return f"operator:{name}"


def event_stmt(
    key: str, type_: EventType, now: float, run_id: str, message: str, **data: Any
) -> Stmt:
    """The statement that appends one event (attempt 0) under ``key``."""
    e = Event(key=key, type=type_, at=now, run_id=run_id, message=message, data=data)
    return Stmt(q.EVENT, event_params(e), True)
