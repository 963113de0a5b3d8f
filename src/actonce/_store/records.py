"""Rows that are not effects: operator leases and queued work items.

Plain data, shared by every backend and by the facades that hand them out
(:mod:`actonce._leases`, :mod:`actonce._queue`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from .._rules.approvals import Refusal
from .._rules.intents import Intent, IntentStatus
from .._rules.model import EffectRecord

__all__ = [
    "ClaimResult",
    "IntentRow",
    "ItemStatus",
    "LeaseRecord",
    "LeaseResult",
    "QueueItem",
    "RevisionResult",
]


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """The answer of a claim: who holds the key now.

    A gated claim that did not get what its gate asks for is ``refused``
    (nothing was written): ``record`` is then the current record, if any.
    """

    acquired: bool
    record: EffectRecord | None
    refused: Refusal | None = None


@dataclass(frozen=True, slots=True)
class IntentRow:
    """One intent version as the ledger holds it."""

    intent: Intent
    status: IntentStatus
    created_at: float
    superseded_at: float | None = None


@dataclass(frozen=True, slots=True)
class RevisionResult:
    """What a revision did in its transaction.

    ``applied`` is False when the old version was no longer current (another
    revision won): ``current`` is then the version that is. ``closed`` names
    effects of the old version that had not crossed the boundary (now
    ``failed``), ``voided`` its approvals that authorize nothing any more,
    ``in_flight`` its effects left to reconcile, ``operations`` its
    operations withdrawn (their next pass undoes what they did).
    """

    applied: bool
    current: IntentRow | None
    closed: tuple[str, ...]
    voided: tuple[str, ...]
    in_flight: tuple[str, ...]
    operations: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """One operator lease as the ledger holds it.

    ``owner`` is empty once the lease was released; ``token`` is the fencing
    token of the latest acquisition.
    """

    name: str
    owner: str
    token: int
    acquired_at: float
    heartbeat_at: float
    expires_at: float

    def live(self, now: float) -> bool:
        """True while an owner holds the lease and it has not expired."""
        return bool(self.owner) and now < self.expires_at


@dataclass(frozen=True, slots=True)
class LeaseResult:
    """The answer of an acquisition: who holds the lease now."""

    acquired: bool
    record: LeaseRecord


class ItemStatus(enum.StrEnum):
    """Where one queued item stands. The values are the stored strings."""

    QUEUED = "queued"
    TAKEN = "taken"
    DONE = "done"


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One unit of work as the ledger holds it.

    ``payload`` is the JSON value given to ``put`` (secret fields redacted);
    ``attempts`` counts the takes and fences the current taker.
    """

    id: int
    kind: str
    payload: Any
    status: ItemStatus
    taken_by: str | None
    lease_expires_at: float | None
    attempts: int
    created_at: float
    updated_at: float
