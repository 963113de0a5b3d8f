"""A thread survives a SIGKILL: a real worker process dies after part 1, a fresh run resumes.

The worker is the demo's (``python -m actonce.demo._worker CONFIG.json``,
an operator run per actor): its own Python, its own Chromium, the same
SQLite ledger file. Part 2's
first verification (a search) is held by the sandbox, so the kill lands at a
known step: after part 1 is confirmed, while part 2 is claimed and not marked. The test
watches the ledger and the sandbox's request log (polling with a deadline),
then kills the process group it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from actonce import Ledger, Operator, Outcome, RunResult, Status
from actonce.browser import Browser
from actonce.demo._agent import KINDS, Agent, Stages
from actonce.demo._intents import ACTORS, Intent
from actonce.sandbox import FaultRule, SandboxServer

pytestmark = pytest.mark.browser

PARTS = (
    "Kill test 1/3: claims before clicks",
    "Kill test 2/3: receipts after",
    "Kill test 3/3: and nothing twice",
)


@contextlib.contextmanager
def worker(config: Path, out: Path) -> Iterator[subprocess.Popen[bytes]]:
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "actonce.demo._worker", str(config)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield proc
    finally:
        # The worker's own Chromium and driver share its process group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def wait_for(
    cond: Callable[[], bool], proc: subprocess.Popen[bytes], out: Path, timeout: float = 60.0
) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if proc.poll() is not None:
            pytest.fail(f"worker exited ({proc.returncode}): {out.read_text()}")
        assert time.monotonic() < deadline, f"condition not reached: {out.read_text()}"
        time.sleep(0.05)  # sync-ok: the pause of a poll on a condition, with a deadline


def test_thread_resumes_at_part_two_after_sigkill(
    server: SandboxServer,
    base: str,
    browser: Browser,
    ledger_path: Path,
    tmp_path: Path,
    truth: Callable[[], dict[str, Any]],
    faults: Callable[..., None],
) -> None:
    intent = Intent("thread-kill", "thread", "alice", parts=PARTS)
    keys = [intent.key(p).value for p in range(3)]
    # Hold part 2's first look-up (a search for its text) long enough to kill there.
    faults(FaultRule("view.search", "slow_response", seconds=30.0, match={"q": "2/3"}))
    config = tmp_path / "worker.json"
    config.write_text(
        json.dumps(
            {
                "batch": [asdict(intent)],
                "index": ACTORS.index("alice"),  # alice's operator first
                "ledger": str(ledger_path),
                "headed": False,
                "origin": base,
                "evidence_dir": str(tmp_path / "worker-evidence"),
                "worker": "doomed-worker",
            }
        )
    )
    out = tmp_path / "worker.out"

    with Ledger.open(str(ledger_path), create=True) as setup:
        setup.budgets.define("original", 1)  # the thread draws once, with its first part
    with Ledger.open(str(ledger_path)) as watcher, worker(config, out) as proc:

        def part_one_done_and_part_two_looking() -> bool:
            record = watcher.get(keys[0])
            held = any(
                r["action"] == "view.search" and "slow_response" in r["faults"]
                for r in server.sandbox.faults.log()
            )
            return record is not None and record.status is Status.CONFIRMED and held

        wait_for(part_one_done_and_part_two_looking, proc, out)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
        part_one = watcher.get(keys[0])
        assert part_one is not None and part_one.result_ref == base + "/posts/1"
        doomed_owner = part_one.owner
        assert watcher.get(keys[2]) is None
        # Claim first: killed during the look under its claim, part 2 is left claimed
        # (never executing: nothing was performed). It is the key's owner's until its
        # lease runs out; then a run finds a stale claim, proves absence, re-claims.
        stale = watcher.get(keys[1])
        assert stale is not None and stale.status is Status.CLAIMED
        assert stale.executing_at is None
    while time.time() <= stale.lease_expires_at:  # the dead owner's lease, in ledger time
        time.sleep(0.5)  # sync-ok: waiting for a time to pass, not for a thread
    assert truth()["totals"]["posts"] == 1
    lines = [json.loads(line) for line in out.read_text().splitlines() if line.startswith("{")]
    assert [(r["part"], r["outcome"]) for r in lines if "part" in r] == [(0, "completed")]

    # A fresh run (another process's worth of state: only the ledger file) resumes.
    faults()
    # Its operator is another one than the dead worker's (whose lease would
    # have to run out first): the thread's progress is in the effects alone.
    with Ledger.open(str(ledger_path)) as ledger:
        agent = Agent(browser, base, evidence_dir=tmp_path / "evidence")
        results: list[tuple[int | None, RunResult]] = []
        stages = Stages(agent, ledger, "alice", [intent], lambda _i, p, r: results.append((p, r)))
        try:
            summary = Operator(ledger, "fresh-alice", stages, kinds=KINDS, owner="fresh-run").run()
        finally:
            agent.close()
        assert summary.status.value == "completed", "\n".join(summary.lines())
        assert [(part, r.outcome, r.attempt) for part, r in results] == [
            (1, Outcome.COMPLETED, 2),  # the stale claim was attempt 1
            (2, Outcome.COMPLETED, 1),
        ]
        records = [ledger.get(k) for k in keys]
        assert [r.result_ref for r in records if r] == [f"{base}/posts/{i}" for i in (1, 2, 3)]
        assert [json.loads(r.payload)["parent"] for r in records if r] == [
            None,
            "/posts/1",
            "/posts/2",
        ]
        owners = [r.owner for r in records if r]
        assert owners[0] == doomed_owner and owners[1] == owners[2] != doomed_owner
    gt = truth()
    assert [g["key"] for g in gt["posts"]] == [
        {"author": "alice", "text": PARTS[0], "parent": None},
        {"author": "alice", "text": PARTS[1], "parent": 1},
        {"author": "alice", "text": PARTS[2], "parent": 2},
    ]
    assert gt["totals"]["posts"] == 3 and gt["duplicates"] == []
