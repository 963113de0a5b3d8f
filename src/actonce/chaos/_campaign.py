"""``actonce chaos``: real processes, real SIGKILLs, and a ground truth to check.

Theory of operation. A *campaign* runs many independent *schedules*. Each
schedule gets a fresh folder with a ledger (a SQLite file, or on PostgreSQL
a schema of its own) and a :class:`~actonce.testing.FakeProvider` file, whose table of accepted effects
is the ground truth. ``workers`` processes are forked; each opens its own
connections and runs the same ``intents`` in its own random order, racing the
others. A seeded random plan decides, per schedule, the policy (settle
window, authoritative absence, verify-after-claim, verification attempts),
the provider's faults (lost responses, failures before commit, unavailable
lookups, visibility delay), which worker has a crash point armed
(``actonce.testing.arm(point, nth=k, mode="kill")``: a real ``SIGKILL`` of itself),
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
  with one);
- ``unmarked``: the provider accepted an intent more often than the ledger
  holds ``executing`` marks for it (a perform without its mark).

On PostgreSQL the parent may also terminate random workers' connections
(``pg_terminate_backend``) at random pass counts (``_chaos_pg.Killer``), or
run the whole campaign on a throwaway cluster that a restarter process
restarts now and then (``restart_server``, ``_cluster``): workers reopen
their stores, the parent retries its steps (``_tally.steady``), and a
worker silent for too long is *stuck*. With ``slow_rate``, a fraction of
the performs take longer than lease + settle (``_slow``).

The plan of schedule ``i`` depends only on ``(seed, i)``; process timing
does not, so a failing schedule is replayed with the same plan, not the same
interleaving. The worker's body lives in ``_chaos_worker``, the parent's
handling of one round of worker processes in ``_chaos_round``, the plan in
``_chaos_plan``, the report in ``_chaos_report``, the PostgreSQL parts in
``_chaos_pg``, what is counted in ``_tally``, the command line in ``_cli``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from actonce import (
    EventType,
    Ledger,
    LedgerError,
    Policy,
    Registry,
    SQLiteStore,
    Status,
    SystemClock,
    effect_key,
)
from actonce.testing import POINTS, FakeProvider, Faults, disarm

from . import _pg as _chaos_pg
from . import _slow
from ._cluster import Restarter, throwaway_cluster
from ._plan import Plan as _Plan
from ._plan import plan as _plan
from ._report import ChaosReport
from ._round import Child, Zombie, abandon, consume, resume, run_round
from ._tally import Again as _Again
from ._tally import Options as _Options
from ._tally import Tally as _Tally
from ._tally import build_report, check, check_restarts
from ._tally import steady as _steady
from ._worker import WorkerSpec

__all__ = ["ChaosReport", "run_campaign"]

#: Virtual seconds between two rounds: longer than any lease or settle window.
ROUND = 10_000.0
#: Statuses that end the work on an intent (in review counts as resolved).
_RESOLVED = frozenset({Status.CONFIRMED, Status.NEEDS_REVIEW, Status.ABANDONED})


# --- one schedule ----------------------------------------------------------------------


def _key(ref: str) -> str:
    return effect_key(
        tenant="test", actor="tester", kind="fake", object=ref, operation="create"
    ).value


@dataclass(frozen=True, slots=True)
class _Where:
    """Where one schedule keeps its files, and its PostgreSQL ledger (if any)."""

    folder: str
    conninfo: str | None = None
    schema: str | None = None

    def file(self, name: str) -> str:
        return os.path.join(self.folder, name)


@contextlib.contextmanager
def _world(
    where: _Where, offset: float, policy: Policy, faults: Faults, seed: int
) -> Iterator[tuple[Ledger, FakeProvider]]:
    """The parent's view for one step: ledger and provider under one clock.

    Never open while workers are forked: a child must not inherit the
    parent's ledger connection.
    """
    clock = SystemClock(offset=offset)
    provider = FakeProvider(where.file("provider.db"), faults=faults, clock=clock, seed=seed)
    registry = Registry()
    registry.register("fake", provider.verifier, policy=policy)
    try:
        if where.conninfo is None:
            store: Any = SQLiteStore(where.file("ledger.db"), create=True)
        else:
            assert where.schema is not None
            store = _chaos_pg.open_store(
                where.conninfo, where.schema, _chaos_pg.app_name(where.schema, _chaos_pg.PARENT)
            )
    except BaseException:
        provider.close()
        raise
    ledger = Ledger(store, clock=clock, registry=registry)
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


def _reconcile(ledger: Ledger, *, complete: bool = False) -> None:
    # A ledger failure here leaves the effects open: the next pass retries.
    # A final pass (``complete``) must look at every one: it raises instead.
    try:
        report = ledger.reconcile()
    except LedgerError:
        if complete:
            raise
        return
    if complete and report.errors:
        raise _Again(f"reconcile failed for {len(report.errors)}: {report.errors[0][1]}")


def _strikes(
    krng: random.Random | None, conninfo: str | None, pending: int, running: int
) -> _chaos_pg.Killer | None:
    """The connection killer of one chaotic round: 1-3 strikes at random pass counts."""
    if krng is None or conninfo is None or not running or krng.random() < 0.2:
        return None
    top = 3 * pending * running + 1
    return _chaos_pg.Killer(
        conninfo, [krng.randint(1, top) for _ in range(krng.randint(1, 3))], krng
    )


@contextlib.contextmanager
def _place(index: int, root: str, conninfo: str | None, patience: float) -> Iterator[_Where]:
    """The schedule's folder (and schema), removed (dropped) however the schedule ends."""
    folder = tempfile.mkdtemp(prefix=f"chaos-{index}-", dir=root)
    try:
        if conninfo is None:
            yield _Where(folder)
        else:
            with _chaos_pg.schedule_schema(conninfo, index, patience) as schema:
                yield _Where(folder, conninfo, schema)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run_schedule(
    index: int,
    rng: random.Random,
    *,
    workers: int,
    intents: int,
    root: str,
    max_rounds: int,
    tally: _Tally,
    conninfo: str | None = None,
    krng: random.Random | None = None,
    opts: _Options | None = None,
    srng: random.Random | None = None,
) -> None:
    opts = opts or _Options()
    slow = (srng, opts.slow_seconds) if srng is not None and opts.slow_rate > 0 else None
    plan = _plan(rng, workers, intents, slow=slow)
    refs = [f"intent-{i}" for i in range(intents)]
    calm = Faults(visibility_delay=plan.faults.visibility_delay)
    carried: list[Child] = []
    with _place(index, root, conninfo, opts.patience) as where:
        try:
            _rounds(
                index, rng, plan, where, refs, calm, workers, max_rounds, tally, carried, krng, opts
            )
        finally:
            abandon(carried)


def _rounds(
    index: int,
    rng: random.Random,
    plan: _Plan,
    where: _Where,
    refs: list[str],
    calm: Faults,
    workers: int,
    max_rounds: int,
    tally: _Tally,
    carried: list[Child],
    krng: random.Random | None,
    opts: _Options,
) -> None:
    intents = len(refs)
    patience = opts.patience

    def migrate() -> None:
        with _world(where, 0.0, plan.policy, calm, 0):
            pass  # create and migrate both ledgers before any worker races for them

    _steady(patience, tally, migrate)
    policy = plan.policy
    slow_window = policy.lease_seconds + policy.settle_seconds
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
                ledger_path=where.file("ledger.db"),
                provider_path=where.file("provider.db"),
                error_path=where.file(f"worker-{w}.err"),
                offset=r * ROUND,
                refs=tuple(order),
                policy=plan.policy,
                faults=plan.faults if chaos else calm,
                seed=rng.getrandbits(32),
                arm=arms.get(w) if chaos else None,
                stops=tuple((p, n) for p, n, _ in zombie.stops) if zombie else (),
                conninfo=where.conninfo,
                schema=where.schema,
                app_name=_chaos_pg.app_name(where.schema, f"w{w}r{r}") if where.schema else None,
                reconnect_s=opts.reconnect_s,
            )
            if chaos and opts.slow_rate > 0:
                # Slow performs, and peers that come back to an owned intent
                # while its page may still be loading.
                spec = replace(
                    spec,
                    slow_rate=opts.slow_rate,
                    slow_seconds=opts.slow_seconds,
                    slow_path=where.file("slow.jsonl"),
                    revisit_s=2 * opts.slow_seconds + slow_window,
                )
            specs.append((w, spec, zombie))
        killer = _strikes(krng, where.conninfo, len(pending), len(running)) if chaos else None
        try:
            killed, after = run_round(
                carried, specs, kill if chaos else None, r * ROUND, tally, killer, opts.stall
            )
        finally:
            if killer is not None:
                tally.connection_kills += killer.kills
                killer.close()
        carried[:] = after
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
        seed = rng.getrandbits(32)

        def settle(
            offset: float = r * ROUND, faults: Faults = faults, seed: int = seed
        ) -> list[str]:
            with _world(where, offset, plan.policy, faults, seed) as (ledger, _):
                _reconcile(ledger)
                return _pending(ledger, refs)

        pending = _steady(patience, tally, settle)
        if not carried and (not pending or r >= max_rounds):
            break
        running = [] if r >= max_rounds else (killed or list(range(workers)))
        arms = {}
        kill = None
        if chaos:
            for w in running:
                if rng.random() < 0.3:
                    arms[w] = (rng.choice(POINTS), rng.randint(1, 2))
            if running and rng.random() < 0.3:
                kill = (rng.randint(1, 4 * len(pending) + 1), rng.randrange(len(running)))
    slow_refs = tally.slow.add(*_slow.read(where.file("slow.jsonl")))

    def judge() -> None:
        with _world(where, (r + 1) * ROUND, plan.policy, Faults(), 0) as (ledger, provider):
            _reconcile(ledger, complete=patience > 0)
            _judge(index, ledger, provider, refs, tally, slow_refs)

    _steady(patience, tally, judge)
    for name in sorted(os.listdir(where.folder)):
        if name.endswith(".err"):
            with open(where.file(name), encoding="utf-8") as fh:
                last = fh.read().strip().splitlines()[-1:]
            tally.find(f"schedule {index}: {name}: {' '.join(last)}")


def _judge(
    index: int,
    ledger: Ledger,
    provider: FakeProvider,
    refs: Sequence[str],
    tally: _Tally,
    slow_refs: frozenset[str] | set[str] = frozenset(),
) -> None:
    accepted = provider.accepted()
    # Every read first: a read that fails (a restarting server) leaves the
    # tally untouched, and the whole judgement is made again.
    seen = []
    for ref in refs:
        n = accepted.get(ref, 0)
        record = ledger.get(_key(ref))
        events = ledger.events(_key(ref)) if n and record is not None else []
        seen.append((ref, n, record, events))
    tally.accepted += sum(accepted.values())
    for ref, n, record, events in seen:
        status = None if record is None else record.status
        tally.statuses[str(status) if status else "none"] += 1
        if ref in slow_refs:
            tally.slow.final[f"{status}, accepted {n}"] += 1
        if n > 1:
            tally.duplicates += 1
            tally.find(f"schedule {index}: {ref} accepted {n} times (ledger: {status})")
        if n > sum(1 for e in events if e.type == EventType.EXECUTING):
            # Marker first: every perform the provider saw follows its own
            # committed executing mark.
            tally.unmarked += 1
            tally.find(f"schedule {index}: {ref} accepted {n} times, fewer executing marks")
        if status is Status.CONFIRMED and n == 0:
            tally.inconsistent += 1
            tally.find(f"schedule {index}: {ref} confirmed in the ledger, absent at the provider")
        if status is Status.FAILED and n > 0:
            tally.inconsistent += 1
            tally.find(f"schedule {index}: {ref} failed in the ledger, accepted {n} times")
        if status is not None and status.is_open:
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
    terminate_connections: bool = False,
    slow_rate: float = 0.0,
    slow_seconds: float = 3.0,
    restart_server: bool = False,
    restart_every: tuple[float, float] = (5.0, 40.0),
    min_restarts: int = 0,
    pg_bin: str | None = None,
) -> ChaosReport:
    """Run ``schedules`` chaos schedules and compare the ledger with the ground truth.

    Args:
        backend: ``sqlite`` or ``postgres``.
        dsn: the PostgreSQL DSN, for ``backend="postgres"`` (default: a
            ``postgresql://`` URL in ``$ACTONCE_TEST_POSTGRES_DSN`` or
            ``$ACTONCE_LEDGER``). Each schedule gets its own schema,
            ``actonce_chaos_<pid>_<i>``, dropped when it ends.
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
        terminate_connections: PostgreSQL only: in chaotic rounds, the
            parent terminates random workers' connections
            (``pg_terminate_backend``) at random pass counts.
        slow_rate: the fraction of performs in chaotic rounds that are slow
            (0..1): the page loads for ``slow_seconds * [1, 1.5)`` seconds
            before the request, while the schedule's lease + settle window is
            at most ``0.65 * slow_seconds`` (see ``_slow``).
        slow_seconds: the least duration of a slow perform (2..120).
        restart_server: PostgreSQL only, without ``dsn``: start a throwaway
            cluster and restart it every ``restart_every`` seconds during the
            campaign (alternating ``-m fast`` and ``-m immediate``; see
            ``_cluster``). Workers keep reopening their store; the parent
            retries its steps; a worker silent for two minutes is stuck.
        restart_every: ``(low, high)`` seconds between two restarts.
        min_restarts: with ``restart_server``, more schedules run after the
            ``schedules`` asked for until the server has been restarted this
            often and at least one restart was seen (a worker's ledger error
            or reopen, or a parent step run again): a restart that landed
            between two schedules proves nothing. At most 100 times as many
            schedules; the report counts them all.
        pg_bin: the folder of ``initdb`` and ``pg_ctl`` (see ``find_bin``).

    Raises:
        ValueError: a count or rate is out of range, the backend is unknown,
            no DSN for PostgreSQL, connection terminations or restarts asked
            for on SQLite, a DSN given with ``restart_server``, no
            PostgreSQL programs.
        LedgerUnavailable: the PostgreSQL server cannot be reached.
        ClusterError: ``initdb`` or ``pg_ctl`` failed.
    """
    check(backend, schedules, workers, intents, max_rounds, first)
    _slow.check(slow_rate, slow_seconds)
    if terminate_connections and backend != "postgres":
        raise ValueError("terminating connections needs --backend postgres")
    if restart_server:
        check_restarts(backend, dsn, restart_every)
    if (
        not isinstance(min_restarts, int)
        or min_restarts < 0
        or (min_restarts and not restart_server)
    ):
        raise ValueError(
            f"min_restarts must be a whole number >= 0 with --restart-server, not {min_restarts!r}"
        )
    # A crash point armed in this (parent) process, e.g. by ACTONCE_CRASH_AT,
    # would kill the campaign itself during reconcile; workers arm their own.
    disarm()
    root = tmp_dir or _temp_root()
    tally = _Tally()
    opts = _Options(slow_rate=slow_rate, slow_seconds=slow_seconds)
    restarts: list[dict[str, Any]] = []
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        conninfo = None
        if restart_server:
            # The pool warns on stderr about every connection a restart broke;
            # the report counts them instead.
            pool_log = logging.getLogger("psycopg.pool")
            stack.callback(pool_log.setLevel, pool_log.level)
            pool_log.setLevel(logging.ERROR)
            cluster = stack.enter_context(throwaway_cluster(pg_bin))
            dsn = cluster.dsn
            opts = replace(
                opts, patience=120.0, reconnect_s=60.0, stall=max(120.0, 4 * slow_seconds)
            )
        if backend == "postgres":
            conninfo = _chaos_pg.base_conninfo(_chaos_pg.resolve_dsn(dsn))
        restarter = None
        if restart_server:
            restarter = Restarter(
                cluster, restart_every, seed, os.path.join(cluster.folder, "restarts.jsonl")
            )
            restarter.start()
            # Stopped first on the way out (after its current restart): the
            # schemas are dropped and the cluster removed with the server up.
            stack.callback(lambda: restarts.extend(restarter.stop() if restarter else []))
        if conninfo is not None:
            # Each schedule drops its own schema; this catches one whose drop
            # was itself interrupted.
            stack.callback(_drop_leftovers, conninfo)
        i = first
        while i < first + schedules or (
            restarter is not None
            and min_restarts > 0
            and (restarter.restarts() < min_restarts or not _restart_seen(tally))
            and i < first + 100 * schedules
        ):
            rng = random.Random(f"actonce-chaos:{seed}:{i}")
            # Streams of their own: the plan is the same with or without
            # terminations, and with slow performs only lease and settle change.
            krng = random.Random(f"actonce-chaos-terminate:{seed}:{i}")
            srng = random.Random(f"actonce-chaos-slow:{seed}:{i}")
            _run_schedule(
                i,
                rng,
                workers=workers,
                intents=intents,
                root=root,
                max_rounds=max_rounds,
                tally=tally,
                conninfo=conninfo,
                krng=krng if terminate_connections else None,
                opts=opts,
                srng=srng,
            )
            i += 1
            if progress:
                progress(i - first, max(schedules, i - first))
    return build_report(
        tally, backend, i - first, intents, workers, seed, time.monotonic() - started, restarts
    )


def _restart_seen(tally: _Tally) -> bool:
    """Somebody saw the server go: a worker's store, a reopen, or the parent."""
    return tally.ledger_errors + tally.reopen_retries + tally.parent_retries > 0


def _drop_leftovers(conninfo: str) -> None:
    with contextlib.suppress(Exception):
        _chaos_pg.drop_leftovers(conninfo)
