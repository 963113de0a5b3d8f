"""``actonce chaos``: real processes, real SIGKILLs, and a ground truth to check.

Theory of operation. A *campaign* runs many independent *schedules*. Each
schedule gets a fresh folder with a ledger (SQLite file) and a
:class:`~actonce.testing.FakeProvider` file, whose table of accepted effects
is the ground truth. ``workers`` processes are forked; each opens its own
connections and runs the same ``intents`` in its own random order, racing the
others. A seeded random plan decides, per schedule, the policy (settle
window, authoritative absence, verify-after-claim, verification attempts),
the provider's faults (lost responses, failures before commit, unavailable
lookups, visibility delay), which worker has a crash point armed
(``_crash.arm(point, nth=k, mode="kill")``: a real ``SIGKILL`` of itself),
whether the parent ``SIGKILL``\\ s a worker at a random moment (after a
random number of crash-point passes reported by the workers through a pipe:
progress is observed, never waited for with sleeps), and whether a worker
becomes a *zombie*: it stops itself (``SIGSTOP``) at a point, for a short
pause or past the end of its round, when its lease has expired and others
take over; resumed, it finds its clock moved on.

Time is virtual: round ``r`` runs under ``SystemClock(offset=r * ROUND)``,
ledger and provider alike, so the next round finds the previous round's
leases expired and settle windows passed without waiting. After each round
the parent reconciles (the provider's verifier registered for the kind), then
restarts the killed workers over the intents still pending, until every
intent is confirmed or in review, or the round budget is spent. The last
rounds are calm (no kills, no faults), and a final reconcile runs with
faults off. Then the ledger is compared with the ground truth:

- ``duplicates``: intents with more than one accepted effect;
- ``lost``: intents with no honest final account (neither confirmed with an
  effect, failed without one, in review, nor explicitly unresolved);
- ``unresolved``: effects still claimed, executing or unknown;
- ``inconsistent``: the ledger lies (confirmed without an effect, failed
  with one).

The plan of schedule ``i`` depends only on ``(seed, i)``; process timing
does not, so a failing schedule is replayed with the same plan, not the same
interleaving. The worker's body lives in ``_chaos_worker``, the parent's
handling of one round of worker processes in ``_chaos_round``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _crash
from ._chaos_round import Child, Stats, Zombie, abandon, consume, resume, run_round
from ._chaos_worker import WorkerSpec
from ._clock import SystemClock
from ._errors import LedgerError
from ._keys import effect_key
from ._ledger import Ledger
from ._model import OPEN_STATUSES, Policy, Status
from ._registry import Registry
from .testing import FakeProvider, Faults

__all__ = ["ChaosReport", "main", "run_campaign"]

#: Virtual seconds between two rounds: longer than any lease or settle window.
ROUND = 10_000.0
#: Statuses that end the work on an intent (in review counts as resolved).
_RESOLVED = frozenset({Status.CONFIRMED, Status.NEEDS_REVIEW, Status.ABANDONED})


@dataclass(frozen=True, slots=True)
class ChaosReport:
    """The figures of one campaign.

    Attributes:
        backend: the ledger backend (``sqlite``).
        schedules: how many schedules ran.
        intents: how many intents in total (``schedules * intents``).
        workers: worker processes per schedule (first round).
        seed: the campaign seed.
        duplicates: intents with more than one accepted effect.
        lost: intents with no honest final account.
        unresolved: effects left claimed, executing or unknown.
        inconsistent: ledger records contradicted by the ground truth.
        crash_points_hit: point -> kills that happened at that armed point.
        kills: every ``SIGKILL`` that ended a worker.
        random_kills: kills sent by the parent at a random moment.
        zombies: workers stopped (SIGSTOP) through the end of their round and
            resumed after the next one had begun, their clock moved on.
        pauses: shorter stops, resumed within the round (clock unchanged).
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

    @property
    def ok(self) -> bool:
        """True when no duplicate, loss, lie or worker error was found."""
        return not (self.duplicates or self.lost or self.inconsistent or self.worker_errors)

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
            "crash_points_hit": dict(self.crash_points_hit),
            "kills": self.kills,
            "random_kills": self.random_kills,
            "zombies": self.zombies,
            "pauses": self.pauses,
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
            f"inconsistent {self.inconsistent}, worker errors {self.worker_errors}",
            f"kills {self.kills} ({self.random_kills} at random moments), zombies "
            f"{self.zombies}, short pauses {self.pauses}; kills at points: {points}",
            f"final statuses: {statuses}; accepted effects {self.accepted}; rounds {self.rounds}",
        ]
        lines += [f"  ! {f}" for f in self.findings]
        lines.append("OK" if self.ok else "FAILED")
        return "\n".join(lines)


# --- the plan of one schedule -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Plan:
    policy: Policy
    faults: Faults
    arms: dict[int, tuple[str, int]]
    kill: tuple[int, int] | None  # (after this many point passes, victim worker)
    zombie: Zombie | None
    chaos_rounds: int


_FOREVER = 1 << 60


def _plan(rng: random.Random, workers: int, intents: int) -> _Plan:
    authoritative = rng.random() < 0.5
    settle = rng.choice([0.0, 0.001, 0.05, 5.0, 30.0])
    if authoritative:
        # Authoritative absence is the user's promise that a result shows up
        # within the settle window; keep the fake world honest to it, with a
        # margin far larger than the time between the mark and the perform.
        delay = rng.choice([0.0, settle / 2]) if settle >= 5 else 0.0
    else:
        delay = rng.choice([0.0, 0.0, 0.01, 1.0, 60.0])
    policy = Policy(
        settle_seconds=settle,
        absence_authoritative=authoritative,
        verify_attempts=rng.randint(1, 4),
        verify_backoff=0.0005,
        verify_backoff_max=0.002,
        lease_seconds=rng.choice([30.0, 60.0, 600.0]),
        verify_after_claim=rng.random() < 0.5,
    )
    faults = Faults(
        lose_response=rng.choice([0.0, 0.0, 0.2, 0.5]),
        fail_before_commit=rng.choice([0.0, 0.0, 0.2, 0.5]),
        unavailable=rng.choice([0.0, 0.0, 0.1, 0.3]),
        visibility_delay=delay,
    )
    arms = {}
    for w in rng.sample(range(workers), k=min(workers, rng.choice([0, 1, 1, 1, 2]))):
        arms[w] = (rng.choice(_crash.POINTS), rng.randint(1, max(1, min(3, intents))))
    kill = None
    if rng.random() < 0.5:
        kill = (rng.randint(1, 6 * intents), rng.randrange(workers))
    zombie = None
    if rng.random() < 0.5:
        zombie = _zombie(rng, workers, policy)
    return _Plan(policy, faults, arms, kill, zombie, chaos_rounds=rng.randint(1, 3))


def _zombie(rng: random.Random, workers: int, policy: Policy) -> Zombie:
    """Where a worker pauses: long (past its lease, into the next round) or short.

    Every point is fair game: a pause past the lease before the mark must be
    fenced by the claim's token, and one after the mark by the owner's lease
    check right before its perform. (Only a pause between that check and the
    perform's first byte is out of reach: no point lies there, and only
    provider-side idempotency could fence it.)
    """
    # A direct claim is the executing mark itself: the perform comes next.
    mark = "after_mark_executing" if policy.verify_after_claim else "after_claim"
    stops: list[tuple[str, int, bool]] = []
    if rng.random() < 0.7:
        # Half of the long pauses fall before the mark.
        split = _crash.POINTS.index(mark)
        before, after = _crash.POINTS[:split], _crash.POINTS[split:]
        point = rng.choice(before if rng.random() < 0.5 else after)
        stops.append((point, rng.choice([1, 1, 1, 2]), True))
        if point in before and rng.random() < 0.8:
            # Resumed past its lease, it writes its mark, then pauses briefly
            # before the perform: a mark stamped with a stale time would look
            # orphaned to the others during that short pause.
            stops.append((mark, 1, False))
    else:
        # A pause shorter than the lease is safe anywhere.
        stops.append((rng.choice(_crash.POINTS), rng.randint(1, 2), False))
    # A short pause ends after a few more passes, or once the others are done.
    short_after = rng.choice([rng.randint(0, 12), _FOREVER])
    return Zombie(rng.randrange(workers), tuple(stops), rng.random() < 0.5, short_after)


@dataclass
class _Tally(Stats):
    duplicates: int = 0
    lost: int = 0
    unresolved: int = 0
    inconsistent: int = 0
    zombies: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    rounds: int = 0
    accepted: int = 0


# --- one schedule ----------------------------------------------------------------------


def _key(ref: str) -> str:
    return effect_key(
        tenant="test", actor="tester", kind="fake", object=ref, operation="create"
    ).value


@contextlib.contextmanager
def _world(
    folder: str, offset: float, policy: Policy, faults: Faults, seed: int
) -> Iterator[tuple[Ledger, FakeProvider]]:
    """The parent's view for one step: ledger and provider under one clock."""
    from ._sqlite import SQLiteStore

    clock = SystemClock(offset=offset)
    provider = FakeProvider(
        os.path.join(folder, "provider.db"), faults=faults, clock=clock, seed=seed
    )
    registry = Registry()
    registry.register("fake", provider.verifier, policy=policy)
    ledger = Ledger(SQLiteStore(os.path.join(folder, "ledger.db")), clock=clock, registry=registry)
    try:
        yield ledger, provider
    finally:
        ledger.close()
        provider.close()


def _pending(ledger: Ledger, refs: Sequence[str]) -> list[str]:
    out = []
    for ref in refs:
        record = ledger.get(_key(ref))
        if record is None or record.status not in _RESOLVED:
            out.append(ref)
    return out


def _reconcile(ledger: Ledger) -> None:
    # A ledger failure here leaves the effects open: the next pass retries.
    with contextlib.suppress(LedgerError):
        ledger.reconcile()


def _run_schedule(
    index: int,
    rng: random.Random,
    *,
    workers: int,
    intents: int,
    root: str,
    max_rounds: int,
    tally: _Tally,
) -> None:
    plan = _plan(rng, workers, intents)
    folder = tempfile.mkdtemp(prefix=f"chaos-{index}-", dir=root)
    refs = [f"intent-{i}" for i in range(intents)]
    calm = Faults(visibility_delay=plan.faults.visibility_delay)
    carried: list[Child] = []
    try:
        with _world(folder, 0.0, plan.policy, calm, 0):
            pass  # create and migrate both files before any worker races for it
        running = list(range(workers))
        arms, kill = plan.arms, plan.kill
        pending = refs
        r = 0
        while True:
            chaos = r < plan.chaos_rounds
            specs: list[tuple[int, WorkerSpec, Zombie | None]] = []
            for w in running:
                order = pending[:]
                rng.shuffle(order)
                zombie = plan.zombie if r == 0 and plan.zombie and plan.zombie.worker == w else None
                spec = WorkerSpec(
                    ledger_path=os.path.join(folder, "ledger.db"),
                    provider_path=os.path.join(folder, "provider.db"),
                    error_path=os.path.join(folder, f"worker-{w}.err"),
                    offset=r * ROUND,
                    refs=tuple(order),
                    policy=plan.policy,
                    faults=plan.faults if chaos else calm,
                    seed=rng.getrandbits(32),
                    arm=arms.get(w) if chaos else None,
                    stops=tuple((p, n) for p, n, _ in zombie.stops) if zombie else (),
                )
                specs.append((w, spec, zombie))
            killed, carried = run_round(carried, specs, kill if chaos else None, r * ROUND, tally)
            tally.rounds += 1
            r += 1
            for z in carried:
                # Stopped through the end of its round: when it goes on, the
                # others' clocks have moved on, and so has its own.
                tally.zombies += 1
                if plan.zombie is not None and plan.zombie.early:
                    # Let it take one step (up to its next point) before the
                    # reconcile looks at what it left.
                    resume(z, r * ROUND)
                    consume(z, 0, tally)
                else:
                    z.resume_after = rng.randint(0, 4 * intents)
            chaos = r < plan.chaos_rounds
            faults = Faults(unavailable=plan.faults.unavailable) if chaos else Faults()
            with _world(folder, r * ROUND, plan.policy, faults, rng.getrandbits(32)) as (ledger, _):
                _reconcile(ledger)
                pending = _pending(ledger, refs)
            if not carried and (not pending or r >= max_rounds):
                break
            running = [] if r >= max_rounds else (killed or list(range(workers)))
            arms = {}
            kill = None
            if chaos:
                for w in running:
                    if rng.random() < 0.3:
                        arms[w] = (rng.choice(_crash.POINTS), rng.randint(1, 2))
                if running and rng.random() < 0.3:
                    kill = (rng.randint(1, 4 * len(pending) + 1), rng.randrange(len(running)))
        with _world(folder, (r + 1) * ROUND, plan.policy, Faults(), 0) as (ledger, provider):
            _reconcile(ledger)
            _judge(index, ledger, provider, refs, tally)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".err"):
                with open(os.path.join(folder, name), encoding="utf-8") as fh:
                    last = fh.read().strip().splitlines()[-1:]
                tally.find(f"schedule {index}: {name}: {' '.join(last)}")
    finally:
        abandon(carried)
        shutil.rmtree(folder, ignore_errors=True)


def _judge(
    index: int, ledger: Ledger, provider: FakeProvider, refs: Sequence[str], tally: _Tally
) -> None:
    accepted = provider.accepted()
    tally.accepted += sum(accepted.values())
    for ref in refs:
        n = accepted.get(ref, 0)
        record = ledger.get(_key(ref))
        status = None if record is None else record.status
        tally.statuses[str(status) if status else "none"] += 1
        if n > 1:
            tally.duplicates += 1
            tally.find(f"schedule {index}: {ref} accepted {n} times (ledger: {status})")
        if status is Status.CONFIRMED and n == 0:
            tally.inconsistent += 1
            tally.find(f"schedule {index}: {ref} confirmed in the ledger, absent at the provider")
        if status is Status.FAILED and n > 0:
            tally.inconsistent += 1
            tally.find(f"schedule {index}: {ref} failed in the ledger, accepted {n} times")
        if status in OPEN_STATUSES:
            tally.unresolved += 1
            continue
        honest = (
            (status is Status.CONFIRMED and n > 0)
            or (status is Status.FAILED and n == 0)
            or status in (Status.NEEDS_REVIEW, Status.ABANDONED)
        )
        if not honest:
            tally.lost += 1
            tally.find(f"schedule {index}: {ref} lost (ledger: {status}, accepted {n})")


# --- the campaign ---------------------------------------------------------------------------


def _temp_root() -> str:
    # SIGKILL tests process crashes, not power loss: the page cache survives a
    # killed process, so a RAM-backed folder loses nothing the test relies on.
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        return shm
    return tempfile.gettempdir()


def run_campaign(
    *,
    backend: str = "sqlite",
    dsn: str | None = None,
    schedules: int = 200,
    workers: int = 3,
    intents: int = 5,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    first: int = 0,
    max_rounds: int = 8,
    tmp_dir: str | None = None,
) -> ChaosReport:
    """Run ``schedules`` chaos schedules and compare the ledger with the ground truth.

    Args:
        backend: ``sqlite`` (``postgres`` is not implemented yet).
        dsn: the PostgreSQL DSN, for ``backend="postgres"``.
        schedules: how many schedules to run.
        workers: worker processes per schedule.
        intents: intents per schedule.
        seed: the campaign seed; schedule ``i``'s plan depends on ``(seed, i)``.
        progress: called with ``(done, schedules)`` after each schedule.
        first: index of the first schedule (replay schedule ``i`` with
            ``first=i, schedules=1``).
        max_rounds: the round budget of one schedule.
        tmp_dir: where the schedules' folders go (default: ``/dev/shm`` when
            writable, else the system's temp folder).

    Raises:
        ValueError: a count is out of range or the backend is unknown.
        NotImplementedError: ``backend="postgres"``.
    """
    if backend not in ("sqlite", "postgres"):
        raise ValueError(f"unknown backend {backend!r}; use sqlite or postgres")
    if backend == "postgres":
        raise NotImplementedError(f"chaos on PostgreSQL is not implemented yet (dsn {dsn!r})")
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
    # A crash point armed in this (parent) process, e.g. by ACTONCE_CRASH_AT,
    # would kill the campaign itself during reconcile; workers arm their own.
    _crash.disarm()
    root = tmp_dir or _temp_root()
    tally = _Tally()
    started = time.monotonic()
    for i in range(first, first + schedules):
        rng = random.Random(f"actonce-chaos:{seed}:{i}")
        _run_schedule(
            i,
            rng,
            workers=workers,
            intents=intents,
            root=root,
            max_rounds=max_rounds,
            tally=tally,
        )
        if progress:
            progress(i - first + 1, schedules)
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
        crash_points_hit={p: tally.points[p] for p in _crash.POINTS},
        kills=tally.kills,
        random_kills=tally.random_kills,
        zombies=tally.zombies,
        pauses=tally.pauses,
        worker_errors=tally.worker_errors,
        statuses=dict(sorted(tally.statuses.items())),
        rounds=tally.rounds,
        accepted=tally.accepted,
        wall_s=time.monotonic() - started,
        findings=tuple(tally.findings),
    )


# --- the command line ------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="actonce chaos",
        description="Race worker processes over the same intents with real SIGKILLs and "
        "faults; compare the ledger with the provider's ground truth.",
    )
    p.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    p.add_argument("--dsn", default=None, help="PostgreSQL DSN (backend postgres)")
    p.add_argument("--schedules", type=int, default=200)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--intents", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--first", type=int, default=0, help="index of the first schedule")
    p.add_argument("--json", action="store_true", help="print the report as JSON, last line")
    return p


def _progress_printer() -> Callable[[int, int], None]:
    tty = sys.stderr.isatty()
    started = time.monotonic()

    def show(done: int, total: int) -> None:
        step = max(1, total // 20)
        if not tty and done % step and done != total:
            return
        line = f"chaos: {done}/{total} schedules, {time.monotonic() - started:.1f}s"
        end = "\n" if done == total or not tty else ""
        print(("\r" if tty else "") + line, end=end, file=sys.stderr, flush=True)

    return show


def _interrupt(signum: int, frame: Any) -> None:
    # Unwind like Ctrl-C so that workers are killed and folders removed.
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """``actonce chaos``: 0 when clean, 1 on a duplicate or lost intent, 2 on bad input."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        report = run_campaign(
            backend=args.backend,
            dsn=args.dsn,
            schedules=args.schedules,
            workers=args.workers,
            intents=args.intents,
            seed=args.seed,
            first=args.first,
            progress=_progress_printer(),
        )
    except (ValueError, NotImplementedError) as exc:
        print(f"actonce chaos: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("actonce chaos: interrupted", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(report.summary())
    if args.json:
        print(json.dumps(report.to_json(), sort_keys=True))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
