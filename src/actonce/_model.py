"""Plain data: statuses, verdicts, records, events, policies, results.

Everything here is a frozen, slotted dataclass or an enum whose values equal
the strings stored in the ledger. No I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Absent",
    "Confirmed",
    "EffectRecord",
    "Event",
    "EventType",
    "Outcome",
    "Policy",
    "RunResult",
    "Status",
    "Unavailable",
    "Verdict",
]


class Status(enum.StrEnum):
    """Where one effect stands. The values are the stored strings."""

    CLAIMED = "claimed"
    EXECUTING = "executing"
    UNKNOWN = "unknown"
    NEEDS_REVIEW = "needs_review"
    CONFIRMED = "confirmed"
    FAILED = "failed"
    ABANDONED = "abandoned"

    @property
    def is_open(self) -> bool:
        """True for statuses that reconcile must look at."""
        return self in OPEN_STATUSES


OPEN_STATUSES = frozenset({Status.CLAIMED, Status.EXECUTING, Status.UNKNOWN})


class EventType(enum.StrEnum):
    """What an event records. Transitions are named after their target."""

    CLAIMED = "claimed"
    EXECUTING = "executing"
    CONFIRMED = "confirmed"
    FAILED = "failed"
    UNKNOWN = "unknown"
    NEEDS_REVIEW = "needs_review"
    ABANDONED = "abandoned"
    # Observations that change nothing but belong in the history.
    CLAIM_REJECTED = "claim_rejected"
    PAYLOAD_MISMATCH = "payload_mismatch"
    VERIFICATION_UNAVAILABLE = "verification_unavailable"
    PRECONDITION_FAILED = "precondition_failed"
    PERFORM_ERROR = "perform_error"
    EVIDENCE = "evidence"
    HARD_STOP = "hard_stop"


# --- verification verdicts -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Confirmed:
    """The expected result exists; ``result_ref`` identifies it (URL, id).

    ``count`` is how many matching results the verifier saw (seed 004:
    "verify the intended outcome exists exactly once"). More than one is a
    *duplicate detected*, never a silent success; ``refs`` then lists every
    match (``result_ref`` is the first).
    """

    result_ref: str | None = None
    count: int = 1
    refs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Absent:
    """The check ran reliably and the result does not exist (yet)."""


@dataclass(frozen=True, slots=True)
class Unavailable:
    """The result could not be checked reliably; ``reason`` says why."""

    reason: str


Verdict = Confirmed | Absent | Unavailable
"""What a verifier returns: three states, never a boolean."""


# --- policy -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Policy:
    """How carefully one kind of effect is run and verified.

    Attributes:
        settle_seconds: after the ``executing`` mark, how long a result may
            take to become visible. An ``Absent`` verdict inside this window
            proves nothing.
        absence_authoritative: whether an ``Absent`` verdict after the settle
            window proves that the effect did not happen. Off by default:
            absence then sends the effect to human review.
        verify_attempts: how many times one verification round may ask the
            verifier (read-only, so retrying is safe).
        verify_backoff: seconds before the second attempt; doubles after each
            attempt, capped at ``verify_backoff_max``.
        verify_backoff_max: longest pause between two attempts.
        lease_seconds: how long a claim stays owned without progress. A
            ``claimed`` effect past its lease may be re-claimed; an
            ``executing`` one never is.
        verify_after_claim: verify once more between the claim and the
            perform (catches results made by someone else meanwhile). Costs
            one extra commit per effect; without it the claim itself is the
            durable ``executing`` mark.
    """

    settle_seconds: float = 5.0
    absence_authoritative: bool = False
    verify_attempts: int = 4
    verify_backoff: float = 0.25
    verify_backoff_max: float = 4.0
    lease_seconds: float = 60.0
    verify_after_claim: bool = True

    def __post_init__(self) -> None:
        if self.settle_seconds < 0 or self.lease_seconds <= 0:
            raise ValueError("settle_seconds must be >= 0 and lease_seconds > 0")
        if self.verify_attempts < 1:
            raise ValueError("verify_attempts must be at least 1")
        if self.verify_backoff < 0 or self.verify_backoff_max < 0:
            raise ValueError("verify_backoff must be >= 0")

    def backoff(self, attempt: int) -> float:
        """Pause after the given (1-based) attempt."""
        return float(min(self.verify_backoff * (2 ** (attempt - 1)), self.verify_backoff_max))


# --- ledger rows ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EffectRecord:
    """The current state of one effect, as the ledger holds it.

    ``fence`` is the fencing token: it grows by one with every claim of the
    key and doubles as the attempt number. Every transition compares
    ``(status, fence)``.
    """

    key: str
    kind: str
    status: Status
    fence: int
    owner: str
    lease_expires_at: float
    payload: str
    payload_hash: str
    scope: str = "{}"
    result_ref: str | None = None
    reason: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    executing_at: float | None = None

    def lease_live(self, now: float) -> bool:
        """True while the owner's lease has not expired."""
        return now < self.lease_expires_at


@dataclass(frozen=True, slots=True)
class Event:
    """One line of an effect's append-only history."""

    key: str
    type: EventType
    at: float
    fence: int = 0
    run_id: str = ""
    from_status: Status | None = None
    to_status: Status | None = None
    message: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    seq: int | None = None


# --- run results ------------------------------------------------------------


class Outcome(enum.StrEnum):
    """What one call to ``run`` ended with.

    - ``completed``: this call performed the effect and verified it.
    - ``skipped``: the effect was already done (``result_ref`` says where).
    - ``needs_review``: the effect may have happened; reconcile or a human
      must resolve it before anything else is tried.
    - ``failed``: the effect provably did not happen; it may be replanned.
    - ``hard_stop``: continuing was unsafe; nothing further was mutated.
    - ``deferred``: nothing was done by this call (another worker owns the
      effect, or verification was unavailable before the claim); calling
      again later is safe.
    - ``abandoned``: a human decided the effect must not happen.
    """

    COMPLETED = "completed"
    SKIPPED = "skipped"
    NEEDS_REVIEW = "needs_review"
    FAILED = "failed"
    HARD_STOP = "hard_stop"
    DEFERRED = "deferred"
    ABANDONED = "abandoned"


@dataclass(frozen=True, slots=True)
class RunResult:
    """The answer of ``Ledger.run``.

    Attributes:
        outcome: which of the outcomes this call ended with.
        key: the effect key.
        status: the ledger status after the call (``None`` if no record).
        result_ref: the verified result reference, when there is one.
        reason: why, for every outcome but ``completed``/``skipped``.
        attempt: the fencing token / attempt number this call worked under.
        performed: whether this call invoked ``perform``.
    """

    outcome: Outcome
    key: str
    status: Status | None = None
    result_ref: str | None = None
    reason: str | None = None
    attempt: int = 0
    performed: bool = False

    @property
    def done(self) -> bool:
        """True when the effect is verified to exist."""
        return self.outcome in (Outcome.COMPLETED, Outcome.SKIPPED)
