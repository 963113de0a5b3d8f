"""Races, zombies, hand-out and killed connections, with real processes.

Every worker is its own process with its own connection. Synchronisation is
by pipes (a barrier: all ``ready`` before any ``go``), never by sleeping.
Performs are counted in a file each perform appends one line to.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psycopg
import pytest

from actonce import Ledger, PostgresStore, Status, SystemClock, WorkQueue

from .conftest import Worker, start_all

pytestmark = pytest.mark.postgres


def performs(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


@pytest.mark.parametrize("n", [2, 16, 64])
def test_race_on_one_key_performs_exactly_once(pg: tuple[str, str], tmp_path: Path, n: int) -> None:
    dsn, schema = pg
    log = tmp_path / "performs.log"
    workers = [
        Worker("race", dsn=dsn, schema=schema, key="race-key", log=str(log)) for _ in range(n)
    ]
    start_all(workers)
    results = [w.finish() for w in workers]
    assert len(performs(log)) == 1
    assert sum(r["performed"] for r in results) == 1
    store = PostgresStore(dsn, schema=schema, min_size=0, create=True)
    try:
        record = store.get("race-key")
        assert record is not None and record.status is Status.CONFIRMED and record.fence == 1
    finally:
        store.close()


def test_stopped_zombie_is_fenced_out_of_its_lease_and_its_effect(
    pg: tuple[str, str], tmp_path: Path
) -> None:
    dsn, schema = pg
    log = tmp_path / "performs.log"
    zombie = Worker(
        "zombie", dsn=dsn, schema=schema, key="z-key", log=str(log), lease="nightly", ttl=30
    )
    ready = zombie.read()
    assert ready["token"] == 1
    zombie.send("go")
    assert zombie.read() == {"state": "claimed"}  # claimed fence 1, not yet marked executing
    os.kill(zombie.proc.pid, signal.SIGSTOP)
    try:
        # An hour later (by this clock), both the lease and the claim have expired.
        later = SystemClock(offset=3600)
        store = PostgresStore(dsn, schema=schema, min_size=0, create=True)
        from actonce import Lease

        taker = Lease(store, "nightly", owner="taker", ttl=30, clock=later)
        assert taker.acquire() and taker.token == 2
        from .worker import effect

        result = Ledger(store, clock=later).run(effect("z-key", str(log)))
        assert result.performed and result.attempt == 2
    finally:
        os.kill(zombie.proc.pid, signal.SIGCONT)
    zombie.send("go2")
    facts = zombie.finish()
    assert facts["heartbeat"] == "lost"
    assert facts["performed"] is False  # its executing mark (fence 1) was refused
    assert len(performs(log)) == 1
    record = store.get("z-key")
    assert record is not None and record.fence == 2 and record.status is Status.CONFIRMED
    assert [e.fence for e in store.events("z-key") if e.type == "executing"] == [2]
    store.close()


def test_skip_locked_hand_out_under_many_workers(pg: tuple[str, str]) -> None:
    dsn, schema = pg
    store = PostgresStore(dsn, schema=schema, min_size=0, create=True)
    producer = WorkQueue(store)
    total = 600
    for i in range(total):
        producer.put("job", i)
    workers = [Worker("queue", dsn=dsn, schema=schema, batch=b) for b in (1, 2, 3, 5) * 3]
    start_all(workers)
    taken = [i for w in workers for i in w.finish()["taken"]]
    assert len(taken) == total  # none taken twice ...
    assert sorted(taken) == list(range(total))  # ... none lost
    assert producer.counts() == {"queued": 0, "taken": 0, "done": total}
    store.close()


def _wait_until_blocked(conn: psycopg.Connection[object], backend: int) -> None:
    # Polls an observable condition (the worker's backend waits on our lock);
    # nothing is timed: the deadline only turns a hang into a failure.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        row = conn.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (backend,)
        ).fetchone()
        if row is not None and row[0] == "Lock":
            return
        time.sleep(0.01)  # sync-ok: the pause of a poll on pg_stat_activity, with a deadline
    raise AssertionError("the worker never blocked on the lock")


@pytest.mark.parametrize("phase", ["claim", "mark_executing"])
def test_connection_killed_mid_write_never_performs(
    pg: tuple[str, str], tmp_path: Path, phase: str
) -> None:
    dsn, schema = pg
    log = tmp_path / "performs.log"
    key = f"killed-{phase}"
    worker = Worker("killed", dsn=dsn, schema=schema, key=key, log=str(log))
    backend = worker.read()["backend"]
    with (
        psycopg.connect(dsn, options=f"-c search_path={schema}") as locker,
        psycopg.connect(dsn, autocommit=True) as admin,
    ):
        if phase == "claim":
            # Block the claim's event insert: the claim statement stays open.
            locker.execute("LOCK TABLE events IN EXCLUSIVE MODE")
            worker.send("go")
        else:
            worker.send("go")
            assert worker.read() == {"state": "claimed"}
            # Block the executing mark: hold the effect's row.
            locker.execute("SELECT 1 FROM effects WHERE key = %s FOR UPDATE", (key,))
            worker.send("go2")
        _wait_until_blocked(admin, backend)
        admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        locker.rollback()
    facts = worker.finish()
    assert facts["error"] == "LedgerOutcomeUnknown"
    assert performs(log) == []
    store = PostgresStore(dsn, schema=schema, min_size=0, create=True)
    record = store.get(key)
    if phase == "claim":
        assert record is None  # the terminated statement rolled back
    else:
        assert record is not None and record.status is Status.CLAIMED
    # Once the dead worker's claim lease is over, the effect runs exactly once.
    from .worker import effect

    result = Ledger(store, clock=SystemClock(offset=3600)).run(effect(key, str(log)))
    assert result.performed and result.done
    assert len(performs(log)) == 1
    store.close()


def test_lease_expiry_and_reacquisition_across_processes(
    pg: tuple[str, str], tmp_path: Path
) -> None:
    dsn, schema = pg
    log = tmp_path / "performs.log"
    # A process takes the lease and is killed outright (no release).
    holder = Worker(
        "zombie", dsn=dsn, schema=schema, key="unused", log=str(log), lease="ops", ttl=30
    )
    assert holder.read()["token"] == 1
    holder.proc.kill()
    holder.proc.wait(30)
    from actonce import Lease, LeaseHeld

    store = PostgresStore(dsn, schema=schema, min_size=0, create=True)
    with pytest.raises(LeaseHeld), Lease(store, "ops", owner="now", ttl=30):
        pass  # pragma: no cover - the dead holder's lease is still live
    # After its expiry (a clock 31 s ahead), the lease is free again, token 2.
    with Lease(store, "ops", owner="later", ttl=30, clock=SystemClock(offset=31)) as lease:
        assert lease.token == 2
    lease_row = store.lease_get("ops")
    assert lease_row is not None and lease_row.owner == "" and lease_row.token == 2
    store.close()
