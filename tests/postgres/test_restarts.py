"""PostgreSQL server restarts: workers and reconcile go on, nothing is done twice or lost.

Never the shared server: every test here runs its own throwaway cluster
(``actonce.chaos._cluster``: ``initdb`` into a temporary folder, ``pg_ctl`` on
a free port of 127.0.0.1, trust authentication), removed however the test
ends. The campaign is ``actonce chaos --backend postgres --restart-server``:
real worker processes on the public API, real ``pg_ctl restart -m fast`` and
``-m immediate``, the provider's ground truth as the judge.

- CI runs a short campaign (250 intents, restarts every 1-2.5 s, at least 4
  of them) and a deterministic one: restarts at planned points of the
  workers' own progress, so that running workers are certainly hit.
- The long campaign (``ACTONCE_RESTART_INTENTS=2500``, restarts every 5-40 s)
  runs only when asked for; see docs/chaos.md.

Skips without the PostgreSQL programs (``initdb``, ``pg_ctl``); under CI
that is a failure.
"""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from actonce import Ledger, Policy, Registry, SystemClock
from actonce.chaos import _campaign, _cluster, _round, run_campaign
from actonce.chaos import _pg as chaos_pg
from actonce.chaos import _worker as chaos_worker
from actonce.testing import FakeProvider, Faults

pytestmark = pytest.mark.postgres


def _programs() -> str:
    try:
        return _cluster.find_bin()
    except ValueError as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


@pytest.fixture
def cluster() -> Iterator[_cluster.Cluster]:
    # In the system's temp folder: run as root, the server runs as the
    # postgres user, who cannot enter pytest's private tmp_path.
    with _cluster.throwaway_cluster(_programs()) as c:
        yield c


def _assert_clean(report: object) -> None:
    from actonce.chaos import ChaosReport

    assert isinstance(report, ChaosReport)
    assert report.duplicates == 0, report.findings
    assert report.lost == 0, report.findings
    assert report.unresolved == 0, report.findings  # every record settled
    assert report.inconsistent == 0, report.findings
    assert report.unmarked == 0, report.findings
    assert report.worker_errors == 0, report.findings
    assert report.stuck == 0 and report.gave_up == 0, report.findings
    assert report.workers_recovered == report.workers_hit, report.summary()
    assert report.ok, report.summary()


def test_short_restart_campaign_is_clean() -> None:
    _programs()
    report = run_campaign(
        backend="postgres",
        restart_server=True,
        restart_every=(1.0, 2.5),
        min_restarts=4,
        schedules=25,
        workers=3,
        intents=10,
        seed=3,
    )
    print(report.summary())  # the figures, with -s
    _assert_clean(report)
    assert report.server_restarts >= 4, report.summary()
    assert set(report.restart_modes) == {"fast", "immediate"}
    assert not report.restart_failures
    # Somebody saw the server go: a worker's store, a reopen, or the parent.
    assert report.ledger_errors + report.reopen_retries + report.parent_retries > 0
    assert report.intents >= 250 and sum(report.statuses.values()) == report.intents
    assert report.wall_s < 90, report.summary()


class _RestartAt:
    """A striker (``_round.Striker``) that restarts the server at planned points of every worker.

    A restart happens once *each* running worker has reported ``every`` more
    crash-point passes since the last one: a worker slow to start (a loaded
    machine) is still running, and has its connection, when the server goes.
    """

    def __init__(self, cluster: _cluster.Cluster, every: int, restarts: int) -> None:
        self.cluster = cluster
        self.every = every
        self.left = restarts
        self.since: dict[int, int] = {}
        self.modes: list[str] = []

    def step(self, passes: int, children: Sequence[_round.Child]) -> None:
        running = [c for c in children if c.open]
        if not self.left or not running:
            return
        if all(c.passes - self.since.get(c.worker, 0) >= self.every for c in running):
            mode = ("fast", "immediate")[len(self.modes) % 2]
            self.cluster.restart(mode)
            self.modes.append(mode)
            self.left -= 1
            self.since = {c.worker: c.passes for c in children}


def test_running_workers_recover_from_restarts(cluster: _cluster.Cluster, tmp_path: Path) -> None:
    """Restarts at known points of the workers' progress: every worker is hit, and recovers."""
    conninfo = chaos_pg.base_conninfo(cluster.dsn)
    refs = [f"intent-{i}" for i in range(40)]
    policy = Policy(settle_seconds=0.0, absence_authoritative=True, verify_backoff=0.001)
    provider_path = str(tmp_path / "provider.db")
    FakeProvider(provider_path).close()
    rng = random.Random(5)
    with chaos_pg.schedule_schema(conninfo, 0) as schema:
        specs = []
        for w in range(3):
            order = refs[:]
            rng.shuffle(order)
            spec = chaos_worker.WorkerSpec(
                ledger_path="",
                provider_path=provider_path,
                error_path=str(tmp_path / f"worker-{w}.err"),
                offset=0.0,
                refs=tuple(order),
                policy=policy,
                faults=Faults(),
                seed=w,
                conninfo=conninfo,
                schema=schema,
                app_name=chaos_pg.app_name(schema, f"w{w}"),
                reconnect_s=60.0,
            )
            specs.append((w, spec, None))
        stats = _round.Stats()
        # 8 points per intent at most, 40 intents each: both restarts land
        # while all three run.
        striker = _RestartAt(cluster, every=5, restarts=2)
        killed, stopped = _round.run_round([], specs, None, 0.0, stats, striker, stall=60.0)
        assert striker.modes == ["fast", "immediate"]
        assert not killed and not stopped, stats.findings
        assert stats.worker_errors == 0, [p.read_text() for p in tmp_path.glob("*.err")]
        assert stats.stuck == 0 and stats.gave_up == 0
        # Not every worker need see an error: a CI run (2026-12-03) had 2 of 3
        # hit, the third got no ledger error from either restart (it had finished
        # its share, or used no connection across them) and needed no recovery.
        # What must hold: every worker that was hit recovered, and each restart
        # reached one at least.
        assert stats.workers_hit >= 1 and stats.ledger_errors >= len(striker.modes), stats
        assert stats.workers_recovered == stats.workers_hit, stats
        assert stats.reconnects >= stats.workers_hit, stats
        tally = _campaign._Tally()
        clock = SystemClock(offset=_campaign.ROUND)  # every lease expired, every window passed
        provider = FakeProvider(provider_path, clock=clock)
        registry = Registry()
        registry.register("fake", provider.verifier, policy=policy)
        store = chaos_pg.open_store(conninfo, schema, chaos_pg.app_name(schema, "judge"))
        with Ledger(store, clock=clock, registry=registry) as ledger:
            report = ledger.reconcile()
            assert not report.errors
            _campaign._judge(0, ledger, provider, refs, tally)
        provider.close()
    assert tally.duplicates == 0 and tally.lost == 0, tally.findings
    assert tally.unresolved == 0 and tally.inconsistent == 0 and tally.unmarked == 0
    # The intents a worker was on when its connection died were finished by
    # the others, or by reconcile; all of them are accounted for.
    assert sum(tally.statuses.values()) == len(refs)


def test_a_worker_that_cannot_reconnect_gives_up_and_says_so(tmp_path: Path) -> None:
    spec = chaos_worker.WorkerSpec(
        ledger_path="",
        provider_path=str(tmp_path / "provider.db"),
        error_path=str(tmp_path / "worker.err"),
        offset=0.0,
        refs=("a", "b"),
        policy=Policy(),
        faults=Faults(),
        seed=1,
        # Port 1 on loopback: refused at once, nothing listens there.
        conninfo="host=127.0.0.1 port=1 user=postgres dbname=postgres connect_timeout=2",
        schema="actonce_chaos_nowhere",
        app_name="nowhere",
        reconnect_s=0.5,
    )
    FakeProvider(spec.provider_path).close()
    stats = _round.Stats()
    killed, _ = _round.run_round([], [(0, spec, None)], None, 0.0, stats, stall=30.0)
    assert not killed and stats.worker_errors == 0, (tmp_path / "worker.err").read_text()
    assert stats.gave_up == 1 and stats.reopen_retries >= 1
    assert stats.workers_hit == 1 and stats.workers_recovered == 0
    assert any("gave up" in f for f in stats.findings)


def test_the_cluster_is_removed_even_when_the_test_fails() -> None:
    seen: dict[str, object] = {}
    with pytest.raises(RuntimeError, match="planned"), _cluster.throwaway_cluster(_programs()) as c:
        pid = int(Path(c.data, "postmaster.pid").read_text().split()[0])
        seen.update(folder=c.folder, pid=pid, port=c.port)
        assert c.port != 5432 and c.dsn.startswith("postgresql://postgres@127.0.0.1:")
        raise RuntimeError("planned failure")
    assert not os.path.exists(str(seen["folder"]))
    assert not _running(int(str(seen["pid"])))  # the server is gone ...
    with socket.socket() as sock:  # ... and nothing listens on its port
        assert sock.connect_ex(("127.0.0.1", int(str(seen["port"])))) != 0


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (an unreaped zombie is not: init reaps it)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("ACTONCE_RESTART_INTENTS"),
    reason="the long restart campaign runs with ACTONCE_RESTART_INTENTS=2500 (or more)",
)
def test_long_restart_campaign_is_clean() -> None:
    _programs()
    intents = int(os.environ["ACTONCE_RESTART_INTENTS"])
    report = run_campaign(
        backend="postgres",
        restart_server=True,
        restart_every=(5.0, 40.0),
        schedules=max(1, intents // 5),
        workers=3,
        intents=5,
        seed=int(os.environ.get("ACTONCE_RESTART_SEED", "0")),
    )
    print(report.summary())
    _assert_clean(report)
    assert report.server_restarts >= 2
