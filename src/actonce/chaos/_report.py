"""The figures of one ``actonce chaos`` campaign (see ``_chaos``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ChaosReport"]


@dataclass(frozen=True, slots=True)
class ChaosReport:
    """The figures of one campaign.

    Attributes:
        backend: the ledger backend (``sqlite`` or ``postgres``).
        schedules: how many schedules ran.
        intents: how many intents in total (``schedules * intents``).
        workers: worker processes per schedule (first round).
        seed: the campaign seed.
        duplicates: intents with more than one accepted effect.
        lost: intents with no honest final account.
        unresolved: effects left claimed, executing or unknown.
        inconsistent: ledger records contradicted by the ground truth.
        unmarked: intents the provider accepted more often than the ledger
            holds ``executing`` marks for them (a perform without its mark).
        crash_points_hit: point -> kills that happened at that armed point.
        kills: every ``SIGKILL`` that ended a worker.
        random_kills: kills sent by the parent at a random moment.
        zombies: workers stopped (SIGSTOP) through the end of their round and
            resumed after the next one had begun, their clock moved on.
        pauses: shorter stops, resumed within the round (clock unchanged).
        connection_kills: worker database connections the parent terminated
            (``pg_terminate_backend``; PostgreSQL only).
        ledger_errors: ``LedgerError``\\ s the workers got from their store
            (after which a worker opens a new store and goes on).
        outcome_unknown: those of them that were ``LedgerOutcomeUnknown``:
            a write that may have committed.
        worker_errors: workers that ended with an unexpected exception.
        statuses: final ledger status -> number of intents.
        rounds: worker rounds run, all schedules together.
        accepted: effects the provider accepted, all schedules together.
        wall_s: wall-clock seconds.
        findings: the first few problems, each naming its schedule.
    """

    backend: str
    schedules: int
    intents: int
    workers: int
    seed: int
    duplicates: int
    lost: int
    unresolved: int
    inconsistent: int
    crash_points_hit: dict[str, int]
    kills: int
    random_kills: int
    zombies: int
    pauses: int
    worker_errors: int
    statuses: dict[str, int]
    rounds: int
    accepted: int
    wall_s: float
    findings: tuple[str, ...] = ()
    unmarked: int = 0
    connection_kills: int = 0
    ledger_errors: int = 0
    outcome_unknown: int = 0

    @property
    def ok(self) -> bool:
        """True when no duplicate, loss, lie, unmarked perform or worker error was found."""
        return not (
            self.duplicates or self.lost or self.inconsistent or self.unmarked or self.worker_errors
        )

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-able dict."""
        return {
            "backend": self.backend,
            "schedules": self.schedules,
            "intents": self.intents,
            "workers": self.workers,
            "seed": self.seed,
            "duplicates": self.duplicates,
            "lost": self.lost,
            "unresolved": self.unresolved,
            "inconsistent": self.inconsistent,
            "unmarked": self.unmarked,
            "crash_points_hit": dict(self.crash_points_hit),
            "kills": self.kills,
            "random_kills": self.random_kills,
            "zombies": self.zombies,
            "pauses": self.pauses,
            "connection_kills": self.connection_kills,
            "ledger_errors": self.ledger_errors,
            "outcome_unknown": self.outcome_unknown,
            "worker_errors": self.worker_errors,
            "statuses": dict(self.statuses),
            "rounds": self.rounds,
            "accepted": self.accepted,
            "wall_s": round(self.wall_s, 3),
            "ok": self.ok,
            "findings": list(self.findings),
        }

    def summary(self) -> str:
        """A few human lines."""
        points = ", ".join(f"{p} {n}" for p, n in self.crash_points_hit.items())
        statuses = ", ".join(f"{s} {n}" for s, n in sorted(self.statuses.items()))
        lines = [
            f"chaos on {self.backend}: {self.schedules} schedules, {self.intents} intents, "
            f"{self.workers} workers, seed {self.seed}, {self.wall_s:.1f}s",
            f"duplicates {self.duplicates}, lost {self.lost}, unresolved {self.unresolved}, "
            f"inconsistent {self.inconsistent}, unmarked {self.unmarked}, "
            f"worker errors {self.worker_errors}",
            f"kills {self.kills} ({self.random_kills} at random moments), zombies "
            f"{self.zombies}, short pauses {self.pauses}; kills at points: {points}",
        ]
        if self.backend == "postgres" or self.connection_kills:
            lines.append(
                f"connections terminated {self.connection_kills}; "
                f"ledger errors seen by workers {self.ledger_errors} "
                f"({self.outcome_unknown} outcome unknown)"
            )
        lines.append(
            f"final statuses: {statuses}; accepted effects {self.accepted}; rounds {self.rounds}"
        )
        lines += [f"  ! {f}" for f in self.findings]
        lines.append("OK" if self.ok else "FAILED")
        return "\n".join(lines)
