"""Seed 004, concurrent workers: real processes race to commit one approved intent.

Every worker runs the same gated effect at once (released together by a
barrier on their stdin). The one that wins holds its perform open until every
other worker has reported: the others run *while* it owns the commit. One
owns the commit, the others observe it; exactly one side effect.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actonce import (
    ApprovalStatus,
    EventType,
    HoldKind,
    HoldStatus,
    Intent,
    Ledger,
    SQLiteStore,
    intent_key,
)
from actonce.testing import FakeProvider

from .conftest import KEYS

WORKER = Path(__file__).with_name("worker.py")
WORKERS = 4
DEADLINE = 120.0


class Worker:
    """One worker process; its stdout lines go to a shared queue."""

    def __init__(self, cfg: dict[str, Any], lines: queue.Queue[tuple[int, dict[str, Any]]]):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), json.dumps(cfg)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.reader = threading.Thread(target=self._read, args=(lines,), daemon=True)
        self.reader.start()

    def _read(self, lines: queue.Queue[tuple[int, dict[str, Any]]]) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            lines.put((self.proc.pid, json.loads(line)))
        lines.put((self.proc.pid, {"exited": self.proc.wait()}))

    def send(self, word: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(word + "\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


def _next(lines: queue.Queue[tuple[int, dict[str, Any]]]) -> tuple[int, dict[str, Any]]:
    try:
        pid, facts = lines.get(timeout=DEADLINE)
    except queue.Empty:
        raise AssertionError("a worker went silent") from None
    assert "exited" not in facts or facts["exited"] == 0, f"worker {pid} failed: {facts}"
    return pid, facts


@pytest.fixture(params=["sqlite", "postgres"])
def target(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Ledger, dict[str, Any]]]:
    if request.param == "sqlite":
        path = str(tmp_path / "ledger.db")
        ledger = Ledger(SQLiteStore(path, create=True), signing_keys=KEYS)
        cfg: dict[str, Any] = {"ledger": path}
    else:
        from actonce import PostgresStore

        dsn, schema = request.getfixturevalue("pg_schema")
        ledger = Ledger(PostgresStore(dsn, schema=schema, create=True), signing_keys=KEYS)
        cfg = {"dsn": dsn, "schema": schema}
    try:
        yield ledger, cfg
    finally:
        ledger.close()


def test_concurrent_workers_one_owns_the_commit_the_others_observe(
    target: tuple[Ledger, dict[str, Any]], tmp_path: Path
) -> None:
    ledger, cfg = target
    provider_path = str(tmp_path / "provider.db")
    provider = FakeProvider(provider_path)
    trip = ledger.intents.put(
        Intent("trip", "booking", user="ana", provider="Hotel Ibis", price_ceiling="120",
               currency="EUR")
    )  # fmt: skip
    key = intent_key(trip, "book", tenant="t1", actor="agent")
    req = ledger.approvals.request(trip, "book", key, amount="110")
    ledger.approvals.answer_code(req.code, "approve", by="ana")
    cfg.update(provider=provider_path, intent_id="trip", version=1, packet=req.packet.packet_id)
    lines: queue.Queue[tuple[int, dict[str, Any]]] = queue.Queue()
    workers = {w.proc.pid: w for w in (Worker(cfg, lines) for _ in range(WORKERS))}
    try:
        ready = {_next(lines)[0] for _ in range(WORKERS)}
        assert ready == set(workers)
        for w in workers.values():
            w.send("go")
        performing: list[int] = []
        results: dict[int, dict[str, Any]] = {}
        while len(results) < WORKERS - 1 or not performing:
            pid, facts = _next(lines)
            if "performing" in facts:
                performing.append(pid)
            elif "outcome" in facts:
                results[pid] = facts
        # Every other worker has reported while the winner holds its perform open.
        assert len(performing) == 1
        owner = performing[0]
        assert owner not in results
        assert ledger.approvals.get(req.packet.packet_id).status is ApprovalStatus.HELD
        workers[owner].send("finish")
        while owner not in results:
            pid, facts = _next(lines)
            if "outcome" in facts:
                results[pid] = facts
        for w in workers.values():
            assert w.proc.wait(60) == 0
    finally:
        for w in workers.values():
            w.stop()
    assert results[owner]["outcome"] == "completed" and results[owner]["performed"]
    observers = [r for pid, r in results.items() if pid != owner]
    assert all(r["outcome"] in ("deferred", "skipped") and not r["performed"] for r in observers), (
        observers
    )
    assert all(r["outcome"] != "refused" for r in observers), observers
    # Exactly one side effect, one hold, one consumed approval; the history shows one owner.
    assert provider.count("trip@v1") == 1
    provider.close()
    holds = [h for h in ledger.holds(key.value) if h.kind is HoldKind.APPROVAL]
    assert [(h.fence, h.status) for h in holds] == [(1, HoldStatus.CONSUMED)]
    assert ledger.approvals.get(req.packet.packet_id).status is ApprovalStatus.CONSUMED
    events = ledger.events(key.value)
    owners = {e.run_id for e in events if e.to_status is not None}
    assert len(owners) == 1
    assert [e.type for e in events if e.to_status is not None] == [
        EventType.CLAIMED,
        EventType.EXECUTING,
        EventType.CONFIRMED,
    ]
    history = [e.type for e in ledger.approvals.history(req.packet.packet_id)]
    assert history.count(EventType.APPROVAL_HELD) == 1
