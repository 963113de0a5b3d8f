"""Operators in real processes: two on one lease, one SIGKILLed in the middle of its run.

- Two processes start an operator on the same lease at once (released
  together through a pipe barrier). The one that gets the lease stops in its
  observe hook until the test has seen the other end: exactly one runs, the
  other ends ``locked_skip`` naming the holder, having done nothing.
- A process is SIGKILLed during its run (at a crash point, or by the test
  after it planned its second candidate). The next run (later: the dead
  run's leases have expired) reconciles everything the dead one left before
  it does anything new; the world's ground truth shows each candidate done
  exactly once, and nothing stays open.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actonce import Lease, Ledger, Operator, RunStatus, SQLiteStore, Status, SystemClock
from actonce.testing import FakeProvider
from pgtest import drop_schema, postgres_dsn

HERE = Path(__file__).parent
PROC = HERE / "_operator_proc.py"
LATER = 10_000.0


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    provider = str(tmp_path / "provider.db")
    FakeProvider(provider).close()
    if request.param == "sqlite":
        path = str(tmp_path / "ledger.db")
        SQLiteStore(path, create=True).close()
        yield {"ledger": path, "provider": provider}
        return
    from actonce import PostgresStore

    dsn = postgres_dsn()
    schema = f"actonce_optest_{uuid.uuid4().hex[:10]}"
    PostgresStore(dsn, schema=schema, min_size=0, create=True).close()
    try:
        yield {"dsn": dsn, "schema": schema, "provider": provider}
    finally:
        drop_schema(dsn, schema)


def spawn(cfg: dict[str, Any], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ACTONCE_CRASH")}
    full["PYTHONPATH"] = os.pathsep.join(sys.path)
    full.update(env or {})
    return subprocess.Popen([sys.executable, str(PROC), json.dumps(cfg)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=full)  # fmt: skip


def line(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    text = proc.stdout.readline()
    assert text, f"process {proc.pid} ended (returncode {proc.wait(30)}) without a word"
    out: dict[str, Any] = json.loads(text)
    return out


def send(proc: subprocess.Popen[str], word: str = "go") -> None:
    assert proc.stdin is not None
    proc.stdin.write(word + "\n")
    proc.stdin.flush()


def stop(proc: subprocess.Popen[str]) -> None:
    """Let the process end (EOF on its stdin unblocks any wait); kill it if it will not."""
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError, OSError):
        proc.stdin.close()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def ledger_of(where: dict[str, Any], offset: float = 0.0) -> Ledger:
    sys.path.insert(0, str(HERE))
    from _operator_proc import open_ledger

    return open_ledger(where, SystemClock(offset=offset))


def test_two_operators_on_one_lease_one_runs_one_skips(where: dict[str, Any]) -> None:
    refs = ["a", "b", "c"]
    with ledger_of(where) as ledger:
        ledger.budgets.define("original", 10)
    cfg = {**where, "name": "alice-browser", "refs": refs, "hold": True}
    procs = [spawn(cfg), spawn(cfg)]
    try:
        for p in procs:
            assert "ready" in line(p)
        for p in procs:  # the barrier opens: both race for the lease
            send(p)
        first = [line(p) for p in procs]  # the winner waits in observe; the other is done
        winners = [p for p, f in zip(procs, first, strict=True) if "observing" in f]
        losers = [f["summary"] for f in first if "summary" in f]
        assert len(winners) == 1 and len(losers) == 1, first
        (winner,) = winners
        skipped = losers[0]
        assert skipped["status"] == "locked_skip"
        assert skipped["held_by"] == f"proc-{winner.pid}"
        assert skipped["items"] == [] and skipped["fence"] == 0  # the lease token, as stored
        send(winner)  # now let it go on
        while "summary" not in (out := line(winner)):
            assert "planned" in out
        ran = out["summary"]
        assert ran["status"] == "completed"
        assert [i["label"] for i in ran["items"] if i["class"] == "done"] == refs
    finally:
        for p in procs:
            stop(p)
    assert [p.returncode for p in procs] == [0, 0]
    with ledger_of(where) as ledger:
        assert ledger.provider.accepted() == dict.fromkeys(refs, 1)  # type: ignore[attr-defined]
        stored = {s.status for s in ledger.summaries("alice-browser")}
        assert stored == {RunStatus.COMPLETED, RunStatus.LOCKED_SKIP}


POINTS = ["after_claim", "after_mark_executing", "provider_committed", "after_perform"]
#: Every crash point on SQLite; on PostgreSQL the worst one (committed, no answer) and a
#: kill by the test at a moment of its choosing.
KILLS = [("sqlite", p) for p in [*POINTS, "test"]] + [
    ("postgres", "provider_committed"), ("postgres", "test"),
]  # fmt: skip


@pytest.mark.parametrize(("where", "kill"), KILLS, indirect=["where"])
def test_a_killed_operator_leaves_nothing_the_next_run_does_not_settle(
    where: dict[str, Any], kill: str
) -> None:
    refs = ["a", "b", "c", "d"]
    with ledger_of(where) as ledger:
        ledger.budgets.define("original", 10)
    env = {} if kill == "test" else {"ACTONCE_CRASH_AT": f"{kill}:2", "ACTONCE_CRASH_MODE": "kill"}
    started = time.time()  # the dead run reserves in this moment's window
    proc = spawn({**where, "name": "alice-browser", "refs": refs}, env)
    try:
        assert "ready" in line(proc)
        send(proc)
        planned = 0
        while True:
            out = line(proc) if kill == "test" else _line_or_eof(proc)
            if out is None:
                break
            assert "summary" not in out, "the run ended before it was killed"
            planned += "planned" in out
            if kill == "test" and planned == 2:
                proc.send_signal(signal.SIGKILL)  # somewhere in the second candidate
                break
    finally:
        stop(proc)
    assert proc.returncode == -signal.SIGKILL

    # The next run, later: the dead run's leases (the operator's, its effects') ran out.
    with ledger_of(where, offset=LATER) as ledger:
        open_before = ledger.store.open_effects()
        if kill != "test":
            assert len(open_before) == 1  # died inside its second effect
        assert ledger.summaries("alice-browser") == []  # the dead run stored nothing
        sys.path.insert(0, str(HERE))
        from _operator_proc import Publisher

        hooks = Publisher(ledger, ledger.provider, refs, False)  # type: ignore[attr-defined]
        summary = Operator(ledger, "alice-browser", hooks, kinds=("fake",), ttl=30).run()
        assert summary.status is RunStatus.COMPLETED, summary.lines()
        assert sum(summary.reconciled.values()) == len(open_before)
        assert ledger.store.open_effects() == []
        assert ledger.list(Status.NEEDS_REVIEW) == []
        assert summary.token >= 2  # the dead run's acquisition was token 1
        # The next run is LATER seconds on, often in the next day's window (a day
        # pool); each reservation counts in the window it was made in: both count.
        windows = {u.start: u for at in (started, time.time() + LATER)
                   for u in ledger.budgets.usage("original", at=at)}  # fmt: skip
        reserved = sum(u.reserved for u in windows.values())
        consumed = sum(u.consumed for u in windows.values())
        confirmed = ledger.list(Status.CONFIRMED)
        assert (reserved, consumed) == (0, len(confirmed))
        assert ledger.provider.accepted() == dict.fromkeys(refs, 1)  # type: ignore[attr-defined]
        # Every candidate is done once, by the dead run or by this one.
        labels = {i.label: i.cls.value for i in summary.items}
        assert set(labels) == set(refs)
        assert set(labels.values()) <= {"done", "skipped"}
        assert Lease(ledger, "alice-browser").acquire() is True  # given back


def _line_or_eof(proc: subprocess.Popen[str]) -> dict[str, Any] | None:
    assert proc.stdout is not None
    text = proc.stdout.readline()
    return json.loads(text) if text else None
