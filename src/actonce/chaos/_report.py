"""The figures of one ``actonce chaos`` campaign (see ``_chaos``)."""

from __future__ import annotations

from dataclasses import dataclass, field
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
        slow_performs: performs made slow (the page loaded for longer than
            lease + settle before the request; ``slow_rate``).
        slow_crossed: those whose measured duration crossed lease + settle
            (a slow perform whose worker was killed is not measured).
        slow_overtaken: those whose run said it performed after being
            overtaken (the effect then goes to review, never ``failed``).
        slow_outcomes: how each slow perform's run ended: ``confirmed``,
            ``overtaken -> <status>``, ``<outcome> (<status>)``, ``killed``.
        slow_final: the final ledger status and accepted count of the
            intents that had a slow perform.
        slow_min_ratio: the smallest measured duration / (lease + settle).
        slow_max_seconds, slow_max_window: the longest slow perform, and the
            longest lease + settle of a schedule with one.
        server_restarts: PostgreSQL server restarts (``restart_server``).
        restart_modes: ``fast`` / ``immediate`` -> restarts.
        restart_failures: restarts whose ``pg_ctl`` failed (then started again).
        restart_max_s: the longest restart, seconds.
        restart_log: one entry per restart (``n``, ``mode``, ``at`` and
            ``seconds``; the server log's last lines when it took over 5 s).
        reconnects: new stores workers opened after a ledger error.
        reopen_retries: failed tries to open one, tried again.
        parent_retries: parent steps (reconcile, judge, schema) run again
            because the server was away.
        gave_up: workers that ended without being able to open a store again.
        stuck: workers killed because no running worker reported anything
            for two minutes (``restart_server``).
        workers_hit: workers (not SIGKILLed) that got at least one ledger error.
        workers_recovered: those of them that ended normally, with a working
            store (each reconnects before it ends).
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
    slow_performs: int = 0
    slow_crossed: int = 0
    slow_overtaken: int = 0
    slow_outcomes: dict[str, int] = field(default_factory=dict)
    slow_final: dict[str, int] = field(default_factory=dict)
    slow_min_ratio: float | None = None
    slow_max_seconds: float = 0.0
    slow_max_window: float = 0.0
    server_restarts: int = 0
    restart_modes: dict[str, int] = field(default_factory=dict)
    restart_failures: list[str] = field(default_factory=list)
    restart_max_s: float = 0.0
    restart_log: list[dict[str, Any]] = field(default_factory=list)
    reconnects: int = 0
    reopen_retries: int = 0
    parent_retries: int = 0
    gave_up: int = 0
    stuck: int = 0
    workers_hit: int = 0
    workers_recovered: int = 0

    @property
    def ok(self) -> bool:
        """True when no duplicate, loss, lie, unmarked perform, worker error, stuck or
        given-up worker was found."""
        return not (
            self.duplicates
            or self.lost
            or self.inconsistent
            or self.unmarked
            or self.worker_errors
            or self.stuck
            or self.gave_up
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
            "slow_performs": self.slow_performs,
            "slow_crossed": self.slow_crossed,
            "slow_overtaken": self.slow_overtaken,
            "slow_outcomes": dict(self.slow_outcomes),
            "slow_final": dict(self.slow_final),
            "slow_min_ratio": None
            if self.slow_min_ratio is None
            else round(self.slow_min_ratio, 3),
            "slow_max_seconds": round(self.slow_max_seconds, 3),
            "slow_max_window": round(self.slow_max_window, 3),
            "server_restarts": self.server_restarts,
            "restart_modes": dict(self.restart_modes),
            "restart_failures": list(self.restart_failures),
            "restart_max_s": round(self.restart_max_s, 3),
            "restart_log": [dict(r) for r in self.restart_log],
            "reconnects": self.reconnects,
            "reopen_retries": self.reopen_retries,
            "parent_retries": self.parent_retries,
            "gave_up": self.gave_up,
            "stuck": self.stuck,
            "workers_hit": self.workers_hit,
            "workers_recovered": self.workers_recovered,
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
        if self.server_restarts or self.restart_failures:
            modes = ", ".join(f"{m} {n}" for m, n in self.restart_modes.items())
            lines.append(
                f"server restarts {self.server_restarts} ({modes}; longest "
                f"{self.restart_max_s:.2f}s; failed {len(self.restart_failures)}); workers hit "
                f"{self.workers_hit}, recovered {self.workers_recovered}, gave up "
                f"{self.gave_up}, stuck {self.stuck}; reconnects {self.reconnects}, retries: "
                f"{self.reopen_retries} store opens, {self.parent_retries} parent steps"
            )
        if self.slow_performs:
            ratio = "-" if self.slow_min_ratio is None else f"{self.slow_min_ratio:.2f}"
            ended = ", ".join(f"{k} {n}" for k, n in self.slow_outcomes.items())
            final = ", ".join(f"{k}: {n}" for k, n in self.slow_final.items())
            lines.append(
                f"slow performs {self.slow_performs}: {self.slow_crossed} measured past lease + "
                f"settle (duration / window at least {ratio}; longest {self.slow_max_seconds:.1f}s"
                f", window at most {self.slow_max_window:.2f}s); overtaken {self.slow_overtaken}"
            )
            lines.append(f"  ended: {ended}; final: {final}")
        lines.append(
            f"final statuses: {statuses}; accepted effects {self.accepted}; rounds {self.rounds}"
        )
        lines += [f"  ! {f}" for f in self.findings]
        lines.append("OK" if self.ok else "FAILED")
        return "\n".join(lines)
