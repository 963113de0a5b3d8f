"""Zero overspend: 64 real processes claim against one pool, some SIGKILLed.

Each process runs a few intents (chosen at random from a shared set, so they
also race for the same keys) against a fake provider that loses responses,
fails before committing and answers ``Unavailable``; every effect draws on a
shared pool whose limit is far below the demand. Sixteen processes are
SIGKILLed by the test at random moments, eight kill themselves at crash
points (one of them right after the provider committed). Then the ledger is
reconciled the way a later run would, and three measures are compared with
the limit:

- a sampler reads the pool's usage while the processes run;
- the ledger's history is replayed in event order (each claim's event and
  its holds are written in one transaction, each settlement's likewise).
  On SQLite that is commit order; on PostgreSQL claims on one pool are
  ordered by its row lock, and a release may show a moment before its
  commit (the replay can only under-count by the releases in flight);
- the provider's ground truth: every accepted effect must be covered by a
  hold that was consumed or is still held, never by one that was released.

The figures are printed (``pytest -s``) for the record.
"""

from __future__ import annotations

import json
import os
import random
import selectors
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from actonce import Ledger, Policy, Registry, SQLiteStore, Status, SystemClock, effect_key
from actonce.testing import FakeProvider
from pgtest import drop_schema, postgres_dsn

CLAIMER = Path(__file__).with_name("_claimer.py")
PROCESSES = 64
KEYS = 80
REFS_EACH = 3
LIMIT = 20
KILLED_BY_TEST = 16
SELF_KILLED = 8
POINTS = ["provider_committed", "after_mark_executing", "after_perform", "after_claim"]
WINDOW = 10**9  # one window for the whole campaign, whatever the clock offset
LATER = 10_000.0  # seconds: every lease expired, every settle window passed
POLICY = {"settle_seconds": 0.2, "absence_authoritative": True, "verify_attempts": 3,
          "verify_backoff": 0.05, "lease_seconds": 5.0}  # fmt: skip
FAULTS = {"lose_response": 0.15, "fail_before_commit": 0.15, "unavailable": 0.1}


@dataclass
class Backend:
    name: str
    config: dict[str, Any]
    open: Callable[..., Any]
    rows: Callable[[str], list[tuple[Any, ...]]]


@dataclass
class Figures:
    backend: str
    processes: int = PROCESSES
    limit: int = LIMIT
    killed: int = 0
    killed_by_test: int = 0
    self_killed: int = 0
    runs_reported: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    submits: int = 0
    effects_performed: int = 0
    confirmed: int = 0
    max_used_sampled: int = 0
    samples: int = 0
    max_used_replayed: int = 0
    final: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        path = str(tmp_path / "ledger.db")

        def sqlite_rows(text: str) -> list[tuple[Any, ...]]:
            with sqlite3.connect(path) as conn:
                return list(conn.execute(text).fetchall())

        yield Backend("sqlite", {"ledger": path},
                      lambda **kw: SQLiteStore(path, create=True, **kw), sqlite_rows)  # fmt: skip
        return
    import psycopg

    from actonce import PostgresStore

    dsn = postgres_dsn()
    schema = f"actonce_overspend_{uuid.uuid4().hex[:10]}"

    def pg_rows(text: str) -> list[tuple[Any, ...]]:
        with psycopg.connect(dsn, options=f"-c search_path={schema}") as conn:
            return list(conn.execute(text.encode()).fetchall())

    def pg_open(**kw: Any) -> Any:
        return PostgresStore(dsn, schema=schema, min_size=0, max_size=1, create=True)

    try:
        yield Backend("postgres", {"dsn": dsn, "schema": schema}, pg_open, pg_rows)
    finally:
        drop_schema(dsn, schema)


def test_no_overspend_with_64_processes_and_kills(backend: Backend, tmp_path: Path) -> None:
    started = time.monotonic()
    figures = Figures(backend.name)
    rng = random.Random(20261201)
    provider_path = str(tmp_path / "provider.db")
    with Ledger(backend.open()) as ledger:
        ledger.budgets.define("original", LIMIT, window=WINDOW)
        ledger.budgets.define("posts", 1000, window=WINDOW)  # two pools: locked in name order
    FakeProvider(provider_path).close()  # the world's file, made before anyone races for it

    plans = []
    victims = rng.sample(range(PROCESSES), KILLED_BY_TEST + SELF_KILLED)
    for n in range(PROCESSES):
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACTONCE_CRASH")}
        env["PYTHONPATH"] = os.pathsep.join(sys.path)
        kill_after = None
        if n in victims[:KILLED_BY_TEST]:
            kill_after = rng.randrange(REFS_EACH)  # after this many results (0: at once)
        elif n in victims[KILLED_BY_TEST:]:
            point = POINTS[victims.index(n) % len(POINTS)]
            env.update(ACTONCE_CRASH_AT=f"{point}:1", ACTONCE_CRASH_MODE="kill")
        config = {**backend.config, "provider": provider_path, "pools": ["original", "posts"],
                  "refs": [f"k{i}" for i in rng.sample(range(KEYS), REFS_EACH)],
                  "policy": POLICY, "faults": FAULTS, "seed": n}  # fmt: skip
        plans.append((config, env, kill_after))

    procs = [
        subprocess.Popen(
            [sys.executable, str(CLAIMER), json.dumps(cfg)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for cfg, env, _ in plans
    ]
    try:
        results = _race(procs, [k for _, _, k in plans], figures, backend)
    finally:
        for proc in procs:  # nothing outlives the test
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    figures.killed = sum(p.returncode == -signal.SIGKILL for p in procs)
    figures.self_killed = figures.killed - figures.killed_by_test
    assert all(p.returncode in (0, -signal.SIGKILL) for p in procs), [p.returncode for p in procs]

    figures.max_used_replayed = _replay(backend)
    _reconcile_later(backend, provider_path)
    _check_ground_truth(backend, provider_path, figures)
    for r in results:
        key = r.get("outcome") or "error"
        figures.outcomes[key] = figures.outcomes.get(key, 0) + 1
    figures.runs_reported = len(results)
    figures.seconds = round(time.monotonic() - started, 1)
    print("\noverspend campaign:", json.dumps(figures.__dict__, sort_keys=True))

    assert figures.max_used_sampled <= LIMIT
    assert figures.max_used_replayed <= LIMIT
    assert figures.samples > 0
    assert figures.outcomes.get("over_budget", 0) > 0  # the demand did exceed the limit
    # A process chosen for a kill may end its last intent between the test's
    # poll() and its signal (the kill then finds it gone): most kills land,
    # never all of them for certain.
    assert figures.killed >= KILLED_BY_TEST * 3 // 4, figures
    assert figures.outcomes.get("error", 0) == 0, results


def _race(procs: list[subprocess.Popen[str]], kill_after: list[int | None],
          figures: Figures, backend: Backend) -> list[dict[str, Any]]:  # fmt: skip
    """Gate the processes, release them together, kill the chosen ones, sample usage."""
    for proc in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line and "ready" in json.loads(line), f"process {proc.pid} did not start"
    stop = threading.Event()
    sampler = threading.Thread(target=_sample, args=(backend, stop, figures), daemon=True)
    sampler.start()
    for proc in procs:  # the barrier opens
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.close()
    seen = [0] * len(procs)

    def maybe_kill(n: int) -> None:
        if kill_after[n] is not None and seen[n] >= kill_after[n] and procs[n].poll() is None:
            kill_after[n] = None
            procs[n].send_signal(signal.SIGKILL)
            figures.killed_by_test += 1

    for n in range(len(procs)):
        maybe_kill(n)
    results: list[dict[str, Any]] = []
    sel = selectors.DefaultSelector()
    for n, proc in enumerate(procs):
        assert proc.stdout is not None
        sel.register(proc.stdout, selectors.EVENT_READ, n)
    streams = len(procs)
    deadline = time.monotonic() + 600
    while streams and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=30):
            n = key.data
            line = key.fileobj.readline()  # type: ignore[union-attr]
            if not line:
                sel.unregister(key.fileobj)
                streams -= 1
                continue
            results.append(json.loads(line))
            seen[n] += 1
            maybe_kill(n)
    stop.set()
    sampler.join(timeout=60)
    assert streams == 0, "some processes never finished"
    return results


def _sample(backend: Backend, stop: threading.Event, figures: Figures) -> None:
    """Read the pool's usage while the processes run (paced; it only reads)."""
    store = backend.open()
    try:
        while not stop.is_set():
            (u,) = store.budget_usage(["original"], time.time())
            figures.max_used_sampled = max(figures.max_used_sampled, int(u.used))
            figures.samples += 1
            stop.wait(0.05)  # pacing of a read-only sampler, not a synchronization
    finally:
        store.close()


def _replay(backend: Backend) -> int:
    """The pool's reserved + consumed after every commit, from the history."""
    held = {(str(k), int(f)): str(s) for k, f, s in backend.rows(
        "SELECT key, fence, status FROM holds WHERE kind = 'budget' AND ref = 'original'")}  # fmt: skip
    events = backend.rows("SELECT seq, key, fence, type FROM events ORDER BY seq")
    used, peak, started, settled = 0, 0, set(), set()
    for _seq, key, fence, type_ in events:
        attempt = (str(key), int(fence))
        if attempt not in held:
            continue
        if type_ in ("claimed", "executing") and attempt not in started:
            started.add(attempt)  # the claim's event: its holds were taken with it
            used += 1
            peak = max(peak, used)
        elif (
            type_ in ("failed", "abandoned")
            and held[attempt] == "released"
            and (attempt not in settled)
        ):
            settled.add(attempt)
            used -= 1
    assert started == set(held), "every hold belongs to a claim in the history"
    return peak


def _reconcile_later(backend: Backend, provider_path: str) -> None:
    """What the next run does: reconcile every effect the dead processes left."""
    clock = SystemClock(offset=LATER)
    provider = FakeProvider(provider_path, clock=clock)  # no faults: the world answers
    registry = Registry()
    registry.register("fake", provider.verifier, policy=Policy(**POLICY))
    with Ledger(backend.open(), clock=clock, registry=registry) as ledger:
        for _ in range(3):
            if not ledger.reconcile().results:
                break
        assert ledger.store.open_effects() == []
    provider.close()


def _check_ground_truth(backend: Backend, provider_path: str, figures: Figures) -> None:
    provider = FakeProvider(provider_path)
    accepted = provider.accepted()
    figures.submits = provider.calls("submit")
    provider.close()
    figures.effects_performed = sum(accepted.values())
    assert all(n == 1 for n in accepted.values()), f"duplicates: {accepted}"
    with Ledger(backend.open()) as ledger:
        (u,) = ledger.budgets.usage("original", at=time.time())
        figures.final = {"reserved": str(u.reserved), "consumed": str(u.consumed),
                         "free": str(u.free)}  # fmt: skip
        by_status: dict[Status, int] = {}
        for ref in (f"k{i}" for i in range(KEYS)):
            key = effect_key(tenant="test", actor="tester", kind="fake", object=ref,
                             operation="create").value  # fmt: skip
            record = ledger.get(key)
            holds = [h for h in ledger.store.holds_of(key) if h[2] == "original"]  # type: ignore[attr-defined]
            kept = [h for h in holds if h[4] in ("held", "consumed")]
            if ref in accepted:
                # It happened: the budget covers it, never released.
                assert record is not None and record.status is Status.CONFIRMED, (ref, record)
                assert [h[4] for h in kept] == ["consumed"], (ref, holds)
            else:
                assert record is None or record.status is not Status.CONFIRMED, (ref, record)
                assert kept == [], (ref, holds)  # nothing happened: nothing kept
            if record is not None:
                by_status[record.status] = by_status.get(record.status, 0) + 1
        figures.confirmed = by_status.get(Status.CONFIRMED, 0)
    assert figures.effects_performed == figures.confirmed == int(Decimal(figures.final["consumed"]))
    assert figures.effects_performed <= LIMIT
    assert Decimal(figures.final["reserved"]) == 0  # every doubt resolved by the reconcile
