"""What a chaos campaign counts and how it runs, beyond the plan (see ``_campaign``).

:class:`Tally` gathers the figures of every schedule; :func:`build_report`
turns them into the :class:`ChaosReport`. :class:`Options` says how the
schedules run (slow performs; on a restarting server: how long the parent
and the workers keep trying, and when a silent worker counts as stuck);
:func:`steady` runs one parent step again while the server is away.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from actonce import LedgerError
from actonce.testing import POINTS

from ._report import ChaosReport
from ._round import Stats
from ._slow import SlowTally

__all__ = ["Again", "Options", "Tally", "build_report", "check", "check_restarts", "steady"]

T = TypeVar("T")


@dataclass
class Tally(Stats):
    """What a campaign counts, all schedules together."""

    duplicates: int = 0
    lost: int = 0
    unresolved: int = 0
    inconsistent: int = 0
    zombies: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    rounds: int = 0
    accepted: int = 0
    unmarked: int = 0
    connection_kills: int = 0
    parent_retries: int = 0
    slow: SlowTally = field(default_factory=SlowTally)


@dataclass(frozen=True, slots=True)
class Options:
    """How the schedules of one campaign run, beyond the plan."""

    slow_rate: float = 0.0
    slow_seconds: float = 0.0
    #: Seconds the parent keeps trying a step whose ledger went away (0: never).
    patience: float = 0.0
    #: Seconds a worker keeps trying to open a new store (0: three tries).
    reconnect_s: float = 0.0
    #: A round whose running workers report nothing this long: they are stuck.
    stall: float | None = None


class Again(Exception):
    """A final reconcile that could not look at every effect (the server went away)."""


def steady(patience: float, tally: Tally, step: Callable[[], T]) -> T:
    """Run ``step``; while the server restarts, run it again, for up to ``patience`` s."""
    deadline = time.monotonic() + patience
    while True:
        try:
            return step()
        except (LedgerError, Again):
            if time.monotonic() >= deadline:
                raise
            tally.parent_retries += 1
            # The server is restarting: look again shortly.
            time.sleep(0.2)  # sync-ok: polling for a restarted server, with a deadline


def check(
    backend: str, schedules: int, workers: int, intents: int, max_rounds: int, first: int
) -> None:
    if backend not in ("sqlite", "postgres"):
        raise ValueError(f"unknown backend {backend!r}; use sqlite or postgres")
    for name, value, low in (
        ("schedules", schedules, 1),
        ("workers", workers, 1),
        ("intents", intents, 1),
        ("max_rounds", max_rounds, 1),
        ("first", first, 0),
    ):
        if value < low:
            raise ValueError(f"{name} must be at least {low}, not {value}")
    if workers > 64 or intents > 10_000:
        raise ValueError("at most 64 workers and 10000 intents per schedule")


def check_restarts(backend: str, dsn: str | None, every: tuple[float, float]) -> None:
    if backend != "postgres":
        raise ValueError("restarting the server needs --backend postgres")
    if dsn:
        raise ValueError(
            "--restart-server starts a throwaway cluster of its own and restarts only "
            "that one: drop --dsn"
        )
    low, high = every
    if not (math.isfinite(low) and math.isfinite(high) and 0.5 <= low <= high <= 3600):
        raise ValueError(
            f"restart_every must be LOW:HIGH seconds with 0.5 <= LOW <= HIGH <= 3600, "
            f"not {low!r}:{high!r}"
        )


def build_report(
    tally: Tally,
    backend: str,
    schedules: int,
    intents: int,
    workers: int,
    seed: int,
    wall_s: float,
    restarts: Sequence[dict[str, Any]],
) -> ChaosReport:
    slow = tally.slow
    done = [r for r in restarts if "mode" in r]
    return ChaosReport(
        backend=backend,
        schedules=schedules,
        intents=schedules * intents,
        workers=workers,
        seed=seed,
        duplicates=tally.duplicates,
        lost=tally.lost,
        unresolved=tally.unresolved,
        inconsistent=tally.inconsistent,
        crash_points_hit={p: tally.points[p] for p in POINTS},
        kills=tally.kills,
        random_kills=tally.random_kills,
        zombies=tally.zombies,
        pauses=tally.pauses,
        worker_errors=tally.worker_errors,
        statuses=dict(sorted(tally.statuses.items())),
        rounds=tally.rounds,
        accepted=tally.accepted,
        wall_s=wall_s,
        findings=tuple(tally.findings),
        unmarked=tally.unmarked,
        connection_kills=tally.connection_kills,
        ledger_errors=tally.ledger_errors,
        outcome_unknown=tally.outcome_unknown,
        slow_performs=slow.performs,
        slow_crossed=slow.crossed,
        slow_overtaken=slow.overtaken,
        slow_outcomes=dict(sorted(slow.outcomes.items())),
        slow_final=dict(sorted(slow.final.items())),
        slow_min_ratio=slow.min_ratio,
        slow_max_seconds=slow.max_seconds,
        slow_max_window=slow.max_window,
        server_restarts=sum(1 for r in done if "error" not in r),
        restart_modes=dict(sorted(Counter(str(r["mode"]) for r in done).items())),
        restart_failures=[str(r["error"]) for r in restarts if "error" in r],
        restart_max_s=max((float(r["seconds"]) for r in done), default=0.0),
        restart_log=list(restarts),
        reconnects=tally.reconnects,
        reopen_retries=tally.reopen_retries,
        parent_retries=tally.parent_retries,
        gave_up=tally.gave_up,
        stuck=tally.stuck,
        workers_hit=tally.workers_hit,
        workers_recovered=tally.workers_recovered,
    )
