"""Plain data: statuses, verdicts, records, events, policies, results.

Everything here is a frozen, slotted dataclass or an enum whose values equal
the strings stored in the ledger. No I/O.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import UsageError

__all__ = [
    "Absent",
    "Confirmed",
    "EffectRecord",
    "Event",
    "EventType",
    "Outcome",
    "Policy",
    "ReconcileReport",
    "Resolution",
    "RunResult",
    "Status",
    "Unavailable",
    "Verdict",
    "evolve",
    "new_event",
    "new_record",
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
    # An unperformed claim given back: the row as it was before it (or no row).
    RELEASED = "released"
    # Observations that change nothing but belong in the history.
    CLAIM_REJECTED = "claim_rejected"
    PAYLOAD_MISMATCH = "payload_mismatch"
    VERIFICATION_UNAVAILABLE = "verification_unavailable"
    PRECONDITION_FAILED = "precondition_failed"
    PERFORM_ERROR = "perform_error"
    EVIDENCE = "evidence"
    HARD_STOP = "hard_stop"
    OVERTAKEN = "performed_after_overtaken"
    CLAIM_REFUSED = "claim_refused"  # a gate (intent, approval, budget) said no
    FACTS_REFRESHED = "facts_refreshed"
    # Intents and approvals (history keys "intent:<id>", "approval:<packet>").
    INTENT_CREATED = "intent_created"
    INTENT_REVISED = "intent_revised"
    APPROVAL_REQUESTED = "approval_requested"
    APPROVAL_ANSWERED = "approval_answered"
    APPROVAL_DUPLICATE = "approval_duplicate"
    APPROVAL_REFUSED = "approval_refused"
    APPROVAL_EXPIRED = "approval_expired"
    APPROVAL_VOIDED = "approval_voided"
    APPROVAL_INVALIDATED = "approval_invalidated"
    APPROVAL_HELD = "approval_held"
    APPROVAL_RELEASED = "approval_released"
    APPROVAL_CONSUMED = "approval_consumed"
    BUDGET_DEFINED = "budget_defined"
    OPERATION_STARTED = "operation_started"
    OPERATION_DECIDED = "operation_decided"  # a person's decision, or a withdrawal
    RECEIPT_WRITTEN = "receipt_written"
    # Operator runs (history key "operator:<name>"): one event per stored summary.
    OPERATOR_RUN = "operator_run"


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

    def __post_init__(self) -> None:
        if not isinstance(self.count, int) or isinstance(self.count, bool) or self.count < 1:
            raise UsageError(f"Confirmed.count must be a whole number >= 1, not {self.count!r}")
        if self.result_ref is not None and not isinstance(self.result_ref, str):
            raise UsageError(
                f"Confirmed.result_ref is a string or None, not {type(self.result_ref).__name__}"
            )
        # A string is a sequence too: "abc" would become three references.
        refs = self.refs
        if isinstance(refs, str) or not isinstance(refs, tuple | list):
            raise UsageError(f"Confirmed.refs is a tuple of strings, not {type(refs).__name__}")
        if not all(isinstance(r, str) for r in refs):
            raise UsageError("Confirmed.refs holds strings only")
        object.__setattr__(self, "refs", tuple(refs))
        if self.count == 1 and self.refs in ((), (self.result_ref,)):
            # One match: its ref is result_ref. Confirmed(url) == Confirmed(url, 1, (url,)).
            object.__setattr__(self, "refs", ())


@dataclass(frozen=True, slots=True)
class Absent:
    """The check ran reliably and the result does not exist (yet)."""


@dataclass(frozen=True, slots=True)
class Unavailable:
    """The result could not be checked reliably; ``reason`` says why."""

    reason: str

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str):
            raise UsageError(f"Unavailable.reason is a string, not {type(self.reason).__name__}")


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
        wait_for_settle: after its own perform, while verification finds
            the result absent inside the settle window, the owner keeps
            verifying (backoff capped at ``verify_backoff_max``) until the
            window has passed, instead of giving up after
            ``verify_attempts`` and leaving the effect ``unknown`` for
            reconcile. Off by default: ``run`` then returns within about
            the sum of the backoffs. Keep ``settle_seconds`` below
            ``lease_seconds`` (the owner's lease is not extended while it
            waits).
    """

    settle_seconds: float = 5.0
    absence_authoritative: bool = False
    verify_attempts: int = 4
    verify_backoff: float = 0.25
    verify_backoff_max: float = 4.0
    lease_seconds: float = 60.0
    verify_after_claim: bool = True
    wait_for_settle: bool = False

    def __post_init__(self) -> None:
        for name in ("settle_seconds", "verify_backoff", "verify_backoff_max", "lease_seconds"):
            _seconds(name, getattr(self, name), positive=name == "lease_seconds")
        attempts = self.verify_attempts
        if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 1:
            raise UsageError(
                f"Policy.verify_attempts must be a whole number >= 1, not {attempts!r}"
            )
        for name in ("absence_authoritative", "verify_after_claim", "wait_for_settle"):
            if not isinstance(getattr(self, name), bool):
                raise UsageError(
                    f"Policy.{name} must be True or False, not {getattr(self, name)!r}"
                )

    @property
    def heartbeat_seconds(self) -> float:
        """How often an owner extends its lease while it performs (a third of it)."""
        return self.lease_seconds / 3.0

    def backoff(self, attempt: int) -> float:
        """Pause after the given (1-based) attempt."""
        return float(min(self.verify_backoff * (2 ** (attempt - 1)), self.verify_backoff_max))


def _seconds(name: str, value: Any, *, positive: bool) -> None:
    # NaN compares false with everything: "nan < 0" is False, so a plain range
    # check would let it through and every window would count as passed.
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (positive and value == 0):
        need = "> 0" if positive else ">= 0"
        raise UsageError(f"Policy.{name} must be a finite number of seconds {need}, not {value!r}")


# --- ledger rows ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EffectRecord:
    """The current state of one effect, as the ledger holds it.

    ``fence`` is the fencing token: it grows by one with every claim of the
    key and doubles as the attempt number. Every transition compares
    ``(status, fence)``. ``matches`` is how many results the last verdict
    that settled it saw (more than one: a duplicate was detected). ``gated``
    says that its claim took holds (an intent version, an approval, budget
    draws) that its verdict settles.
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
    matches: int = 0
    gated: bool = False

    def lease_live(self, now: float) -> bool:
        """True while the owner's lease has not expired."""
        return now < self.lease_expires_at

    @property
    def data(self) -> Any:
        """The stored payload, decoded (``payload`` is its canonical JSON text)."""
        return json.loads(self.payload)


def _fast_factory(cls: type, name: str) -> Any:
    """A straight-line ``evolve`` for a frozen, slotted dataclass.

    A frozen dataclass's ``__init__`` and ``dataclasses.replace`` set every
    field through ``object.__setattr__``; the protocol builds a few records
    per effect, so this goes through the slot descriptors directly, one C
    call per field, with no loop.
    """
    return _slot_setter(
        cls, name, "r, c", lambda slot: f"c[{slot!r}] if {slot!r} in c else r.{slot}"
    )


def _fast_init(cls: type, name: str) -> Any:
    """A straight-line positional constructor of a frozen, slotted dataclass.

    Every field is passed, in slot order; nothing is validated (for values
    the protocol itself built).
    """
    params = ", ".join(cls.__slots__)  # type: ignore[attr-defined]
    return _slot_setter(cls, name, params, lambda slot: slot)


def _slot_setter(cls: type, name: str, params: str, value_of: Callable[[str], str]) -> Any:
    """``def name(params)`` that makes a ``cls`` and sets each slot to ``value_of(slot)``."""
    env: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    lines = [f"def {name}({params}):", "    n = _new(_cls)"]
    for i, slot in enumerate(cls.__slots__):  # type: ignore[attr-defined]
        env[f"_s{i}"] = getattr(cls, slot).__set__
        lines.append(f"    _s{i}(n, {value_of(slot)})")
    lines.append("    return n")
    exec("\n".join(lines), env)  # generated from the class's own slots, nothing else
    return env[name]


_evolve_record = _fast_factory(EffectRecord, "_evolve_record")


def evolve(record: EffectRecord, **changes: Any) -> EffectRecord:
    """A copy of ``record`` with ``changes`` (``dataclasses.replace``, faster)."""
    new: EffectRecord = _evolve_record(record, changes)
    return new


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


#: ``new_event(key, type, at, fence, run_id, from_status, to_status, message, data, seq)``:
#: an ``Event`` without ``__init__``'s per-field ``object.__setattr__``.
new_event = _fast_init(Event, "new_event")
#: ``new_record(<every EffectRecord field, in order>)``, likewise.
new_record = _fast_init(EffectRecord, "new_record")


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
    - ``needs_approval``: nothing was done; the effect waits for a user's
      approval (a pending packet, or a refreshed one issued because a fact
      left the approved boundary).
    - ``refused``: nothing was done; what the effect needs does not
      authorize it (a denied, expired, voided or used approval, a superseded
      intent version): a new intent version or approval is needed.
    - ``over_budget``: nothing was done; a budget pool the effect draws on
      has no room left in this window (its reservations are held, not lost).
    """

    COMPLETED = "completed"
    SKIPPED = "skipped"
    NEEDS_REVIEW = "needs_review"
    FAILED = "failed"
    HARD_STOP = "hard_stop"
    DEFERRED = "deferred"
    ABANDONED = "abandoned"
    NEEDS_APPROVAL = "needs_approval"
    REFUSED = "refused"
    OVER_BUDGET = "over_budget"


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


class Resolution(enum.StrEnum):
    """A reviewer's decision on an unresolved effect."""

    HAPPENED = "happened"
    NOT_HAPPENED = "not_happened"
    ABANDON = "abandon"


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    """What one reconcile pass found and did.

    Attributes:
        results: one result per effect that was verified.
        live: open effects left alone because their owner's lease is live.
        no_verifier: keys of open effects whose kind has no registered verifier.
        errors: ``(key, message)`` of effects whose reconcile failed (a
            ledger error, a verifier that could not be called); the pass went
            on with the others.
        operations: ``(op id, state)`` of each operation with work due that
            ``reconcile(resume=...)`` gave a pass, and the state it left.
    """

    results: tuple[RunResult, ...] = ()
    live: int = 0
    no_verifier: tuple[str, ...] = ()
    errors: tuple[tuple[str, str], ...] = ()
    operations: tuple[tuple[str, str], ...] = ()

    @property
    def unresolved(self) -> list[RunResult]:
        """Results still open (claimed, executing or unknown) after the pass."""
        return [r for r in self.results if r.status in OPEN_STATUSES]
