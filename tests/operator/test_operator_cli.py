"""``actonce summary``: a stored run summary, as text and JSON (read-only)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from opworld import POLICY, Script, World

from actonce import Ledger, Operator, Registry, SQLiteStore
from actonce.testing import FrozenClock


def actonce(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "actonce", *args], capture_output=True,
                          text=True, timeout=60)  # fmt: skip


def test_summary_prints_a_stored_run(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.db")
    world = World()
    world.how.update(bad="declined", lost="lost")
    registry = Registry()
    registry.register("post", world.verifier, policy=POLICY)
    with Ledger(SQLiteStore(path, create=True), clock=FrozenClock(), registry=registry) as ledger:
        ledger.budgets.define("original", 5)
        hooks = Script(world, ["a", "short", "bad", "lost", "never"],
                       gate=ledger.budgets.gate("original"), quality={"short": "too short"})  # fmt: skip
        op = Operator(ledger, "alice-browser", hooks, kinds=("post",))
        first = op.run()
        second = op.run()

    text = actonce("summary", first.run_id, "--ledger", path)
    assert text.returncode == 0, text.stderr
    out = text.stdout
    for expected in ("status     hard_stop", "done       1", "failures   1", "ambiguous  1",
                     "hard stops 1", "quality    1", "short: too short", "original: 3 free of 5",
                     "no new work until it is reconciled or reviewed"):  # fmt: skip
        assert expected in out, (expected, out)
    data = json.loads(actonce("summary", first.run_id, "--ledger", path, "--json").stdout)
    assert data == first.as_json()
    latest = json.loads(actonce("summary", "--ledger", path, "--json").stdout)
    assert latest["run_id"] == second.run_id and latest["stops"][0]["stage"] == "reconcile"
    listing = actonce("summary", "--list", "--operator", "alice-browser", "--ledger", path)
    assert listing.returncode == 0
    assert [line.split()[0] for line in listing.stdout.splitlines()[1:]] == [
        second.run_id, first.run_id,
    ]  # fmt: skip
    missing = actonce("summary", "op-nope", "--ledger", path)
    assert missing.returncode == 1 and "no run summary 'op-nope'" in missing.stderr
