"""What one operator run did, in the failure taxonomy of seed 000 (section 9).

Theory of operation. An operator run (see :mod:`actonce._run.operator`)
ends with a :class:`RunSummary`: every candidate it looked at lands in
exactly one class, and the classes are the taxonomy's, never merged:

- **done**: performed and verified in this run (``completed``);
- **skipped**, by reason class: ``already_done``, ``over_budget``,
  ``deferred`` (another worker owns it, or verification was unavailable
  before the claim), ``needs_approval``, ``refused``, ``abandoned``,
  ``nothing_to_do`` (the plan made no effect);
- **definitive failures**: the effect provably did not happen (replannable);
- **ambiguous**: it may have happened (``unknown``, ``needs_review``, or
  still open): reconcile or a human decides before anything else is tried;
- **hard stops**: continuing was unsafe (identity, a login wall, an
  ambiguous effect at reconcile, a lost lease, a ledger that cannot record):
  the run ended there, with no further mutation;
- **quality skips**: allowed and affordable, but not worth doing. A quality
  skip is the quality boundary working, not an error.

:func:`classify` maps a :class:`~actonce.RunResult` to its class; it is the
only place that mapping lives. The summary is pure data, stored as JSON in
the ledger (``operator_runs``), and renders itself as text.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .model import EffectRecord, Outcome, RunResult, Status

__all__ = [
    "AMBIGUOUS_STATUSES",
    "ItemClass",
    "RunStage",
    "RunStatus",
    "RunStop",
    "RunSummary",
    "SummaryItem",
    "classify",
    "may_have_happened",
    "open_why",
]


class RunStage(enum.StrEnum):
    """The stages of an operator run, in order. The values are stored."""

    LEASE = "lease"
    RECONCILE = "reconcile"
    IDENTITY = "identity"
    OPERATIONS = "operations"  # the due work of its operations (a resend, a queued undo)
    OBSERVE = "observe"
    RANK = "rank"
    QUALITY = "quality"
    PLAN = "plan"
    BUDGET = "budget"
    ACT = "act"
    HEARTBEAT = "heartbeat"


class RunStatus(enum.StrEnum):
    """How a run ended."""

    COMPLETED = "completed"  # the loop went through every candidate
    HARD_STOP = "hard_stop"  # it stopped early: see ``stops``
    LOCKED_SKIP = "locked_skip"  # another run holds the operator's lease: nothing done


class ItemClass(enum.StrEnum):
    """Where one candidate (or one of its effects) landed."""

    DONE = "done"
    SKIPPED = "skipped"
    FAILED = "failed"
    AMBIGUOUS = "ambiguous"
    QUALITY_SKIP = "quality_skip"
    STOPPED = "stopped"  # the run hard-stopped here (the stop is in ``stops``)


#: Statuses that leave an effect's outcome open: new work waits for them.
AMBIGUOUS_STATUSES = frozenset(
    {Status.CLAIMED, Status.EXECUTING, Status.UNKNOWN, Status.NEEDS_REVIEW}
)

_SKIPS = {
    Outcome.SKIPPED: "already_done",
    Outcome.OVER_BUDGET: "over_budget",
    Outcome.DEFERRED: "deferred",
    Outcome.NEEDS_APPROVAL: "needs_approval",
    Outcome.REFUSED: "refused",
    Outcome.ABANDONED: "abandoned",
}


def classify(result: RunResult) -> tuple[ItemClass, str | None]:
    """The class of one effect's result, and a skip's reason class.

    A ``hard_stop`` result whose effect is still open or in doubt is
    *ambiguous* (and the run stops); one that did nothing is ``stopped``: the
    run records the stop itself, once, among its hard stops.
    """
    out = result.outcome
    if out is Outcome.COMPLETED:
        return ItemClass.DONE, None
    if out in _SKIPS:
        return ItemClass.SKIPPED, _SKIPS[out]
    if out is Outcome.NEEDS_REVIEW or result.status in AMBIGUOUS_STATUSES:
        return ItemClass.AMBIGUOUS, None
    if out is Outcome.HARD_STOP:
        return ItemClass.STOPPED, None
    return ItemClass.FAILED, None


def may_have_happened(record: EffectRecord, now: float, trusted: bool) -> bool:
    """Whether an open effect blocks new work: its outcome may be an effect in the world.

    A claim is reversible until the ``executing`` mark, so a claim whose
    owner's lease ran out (on a trusted clock) is provably harmless: nothing
    was performed, and the next run of its key takes it over as a new
    attempt. A live claim may still cross the boundary; an ``executing``,
    ``unknown`` or ``needs_review`` record may have happened.
    """
    if record.status is Status.CLAIMED:
        return not trusted or record.lease_live(now)
    return record.status in AMBIGUOUS_STATUSES


def open_why(status: Status) -> str:
    """Why an open effect is still open, when its record does not say."""
    if status in (Status.CLAIMED, Status.EXECUTING):
        return "its owner's lease is still live"
    return "outcome not proven"


@dataclass(frozen=True, slots=True)
class SummaryItem:
    """One candidate's (or one of its effects') place in the summary.

    Attributes:
        label: what the operator's ``label`` hook called the candidate.
        cls: its class in the taxonomy.
        stage: the stage that decided it.
        why: the skip's reason class (``over_budget`` ...), else ``None``.
        key: the effect key, when an effect was made.
        outcome: the run's outcome, when the effect was run.
        status: the ledger status after it.
        reason: the reason the ledger or the hook gave.
        result_ref: where the verified result is.
    """

    label: str
    cls: ItemClass
    stage: RunStage
    why: str | None = None
    key: str | None = None
    outcome: str | None = None
    status: str | None = None
    reason: str | None = None
    result_ref: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "class": self.cls.value,
            "stage": self.stage.value,
            "why": self.why,
            "key": self.key,
            "outcome": self.outcome,
            "status": self.status,
            "reason": self.reason,
            "result_ref": self.result_ref,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SummaryItem:
        return cls(
            label=str(data["label"]),
            cls=ItemClass(data["class"]),
            stage=RunStage(data["stage"]),
            why=data.get("why"),
            key=data.get("key"),
            outcome=data.get("outcome"),
            status=data.get("status"),
            reason=data.get("reason"),
            result_ref=data.get("result_ref"),
        )


@dataclass(frozen=True, slots=True)
class RunStop:
    """Why a run stopped early: the stage and the reason, and the effects it names."""

    stage: RunStage
    reason: str
    keys: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"stage": self.stage.value, "reason": self.reason, "keys": list(self.keys)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunStop:
        return cls(RunStage(data["stage"]), str(data["reason"]), tuple(data.get("keys", ())))


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What one operator run did, honestly counted (see the module's doc).

    Attributes:
        run_id: the run's id; every effect it ran carries it in the history.
        operator: the operator's (lease's) name.
        owner: who ran it (host, process).
        token: the lease's fencing token of this run (0: never held).
        status: ``completed``, ``hard_stop`` or ``locked_skip``.
        started_at, ended_at: ledger time.
        reconciled: what the reconcile stage settled, by resulting status.
        items: every candidate's (and effect's) place, in order.
        stops: why the run stopped early (at most one, the first).
        budget: every budget pool at the end of the run (``PoolUsage.as_json``).
        candidates: how many candidates the ranking handed over.
        held_by: for a ``locked_skip``, who held the lease.
        stored: whether the summary reached the ledger.
        operations: the passes it made of operations with due work, by the
            state each pass left (``complete``, ``compensated`` ...), and how
            many operations wait for a person at its end (``in_review``).
    """

    run_id: str
    operator: str
    owner: str
    token: int
    status: RunStatus
    started_at: float
    ended_at: float
    reconciled: dict[str, int] = field(default_factory=dict)
    items: tuple[SummaryItem, ...] = ()
    stops: tuple[RunStop, ...] = ()
    budget: tuple[dict[str, Any], ...] = ()
    candidates: int = 0
    held_by: str | None = None
    stored: bool = True
    operations: dict[str, int] = field(default_factory=dict)

    def of(self, cls: ItemClass) -> list[SummaryItem]:
        """The items of one class, in order."""
        return [i for i in self.items if i.cls is cls]

    @property
    def done(self) -> list[SummaryItem]:
        return self.of(ItemClass.DONE)

    @property
    def skipped(self) -> list[SummaryItem]:
        return self.of(ItemClass.SKIPPED)

    @property
    def failures(self) -> list[SummaryItem]:
        """Definitive failures: provably did not happen."""
        return self.of(ItemClass.FAILED)

    @property
    def ambiguous(self) -> list[SummaryItem]:
        return self.of(ItemClass.AMBIGUOUS)

    @property
    def quality_skips(self) -> list[SummaryItem]:
        return self.of(ItemClass.QUALITY_SKIP)

    def skipped_by_reason(self) -> dict[str, int]:
        """How many were skipped, per reason class."""
        out: dict[str, int] = {}
        for item in self.skipped:
            why = item.why or "other"
            out[why] = out.get(why, 0) + 1
        return out

    def counts(self) -> dict[str, Any]:
        """The taxonomy's counts."""
        return {
            "done": len(self.done),
            "skipped": self.skipped_by_reason(),
            "failures": len(self.failures),
            "ambiguous": len(self.ambiguous),
            "hard_stops": len(self.stops),
            "quality_skips": len(self.quality_skips),
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "operator": self.operator,
            "owner": self.owner,
            # "fence", not "token": a value named like a secret is scrubbed at rest.
            "fence": self.token,
            "status": self.status.value,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "reconciled": dict(self.reconciled),
            "counts": self.counts(),
            "items": [i.as_json() for i in self.items],
            "stops": [s.as_json() for s in self.stops],
            "budget": list(self.budget),
            "candidates": self.candidates,
            "held_by": self.held_by,
            "operations": dict(self.operations),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunSummary:
        return cls(
            run_id=str(data["run_id"]),
            operator=str(data["operator"]),
            owner=str(data["owner"]),
            token=int(data["fence"] if "fence" in data else data["token"]),
            status=RunStatus(data["status"]),
            started_at=float(data["started_at"]),
            ended_at=float(data["ended_at"]),
            reconciled={str(k): int(v) for k, v in data.get("reconciled", {}).items()},
            items=tuple(SummaryItem.from_json(i) for i in data.get("items", ())),
            stops=tuple(RunStop.from_json(s) for s in data.get("stops", ())),
            budget=tuple(dict(b) for b in data.get("budget", ())),
            candidates=int(data.get("candidates", 0)),
            held_by=data.get("held_by"),
            operations={str(k): int(v) for k, v in data.get("operations", {}).items()},
        )

    def lines(self) -> list[str]:
        """The summary as text, one line per fact (what ``actonce summary`` prints)."""
        c = self.counts()
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(c["skipped"].items()))
        out = [
            f"run        {self.run_id}",
            f"operator   {self.operator} (lease token {self.token}, {self.owner})",
            f"status     {self.status.value}"
            + (f": held by {self.held_by}" if self.held_by else ""),
            f"reconciled {_counts(self.reconciled) or 'nothing open'}",
            f"operations {self.operations.get('in_review', 0)} in review"
            + (
                f"; driven {sum(_passes(self.operations).values())} "
                f"({_counts(_passes(self.operations))})"
                if _passes(self.operations)
                else ""
            ),
            f"candidates {self.candidates}",
            f"done       {c['done']}",
        ]
        out += _items(self.done, lambda i: i.result_ref or "")
        out.append(f"skipped    {len(self.skipped)}" + (f" ({skipped})" if skipped else ""))
        out += _items(self.skipped, lambda i: f"{i.why or 'other'}: {i.reason or ''}".rstrip(": "))
        out.append(f"failures   {c['failures']} (definitive: did not happen, replannable)")
        out += _items(self.failures, lambda i: i.reason or "")
        out.append(f"ambiguous  {c['ambiguous']} (may have happened: reconcile or review first)")
        out += _items(self.ambiguous, lambda i: f"{i.status}: {i.reason}" if i.reason else i.status)
        out.append(f"hard stops {c['hard_stops']}")
        out += [f"    {s.stage.value}: {s.reason}" for s in self.stops]
        out += _items(
            self.of(ItemClass.STOPPED),
            lambda i: f"stopped here: {i.reason}" if i.reason else "stopped here",
        )
        out.append(f"quality    {c['quality_skips']} skipped as not worth doing")
        out += _items(self.quality_skips, lambda i: i.reason or "")
        out.append("budget left" + ("" if self.budget else "  (no pools)"))
        for b in self.budget:
            unit = "" if b.get("unit") == "count" else f" {b.get('unit')}"
            out.append(
                f"    {b['name']}: {b['free']}{unit} free of {b['limit']}{unit} "
                f"(reserved {b['reserved']}, consumed {b['consumed']})"
            )
        if not self.stored:
            out.append("(this summary could not be stored in the ledger)")
        return out


def _passes(operations: Mapping[str, int]) -> dict[str, int]:
    """The passes the run made, by the state each left its operation in."""
    return {k: v for k, v in operations.items() if k != "in_review"}


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v)


def _items(items: Iterable[SummaryItem], detail: Any) -> list[str]:
    lines = []
    for item in items:
        key = f" [{item.key[:12]}]" if item.key else ""
        text = str(detail(item))
        lines.append(f"    {item.label}{key}" + (f": {text}" if text else ""))
    return lines
