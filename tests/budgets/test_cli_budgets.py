"""``actonce budgets``: limits, reserved, consumed and free per pool, read-only."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from actonce import Ledger, SQLiteStore
from actonce.testing import FrozenClock

from .conftest import World, unavailable


def actonce(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "actonce", *args], capture_output=True,
                          text=True, timeout=60)  # fmt: skip


def test_budgets_shows_each_pool_in_its_current_window(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.db")
    world = World()
    # A real clock: the command reads the pools in the window that holds *now*.
    with Ledger(SQLiteStore(path, create=True)) as ledger:
        ledger.budgets.define("original", 5)
        ledger.budgets.define("ads", "50.00", unit="EUR", window="week")
        ledger.run(world.effect("p1", ledger.budgets.gate("original")))
        world.answer["p2"] = unavailable()
        ledger.run(world.effect("p2", ledger.budgets.gate("original")))
        ledger.run(world.effect("a1", ledger.budgets.gate("ads", amount="12.50")))
    before = hashlib.sha256(Path(path).read_bytes()).hexdigest()

    proc = actonce("budgets", "--ledger", path, "--json")
    assert proc.returncode == 0, proc.stderr
    pools = {p["name"]: p for p in json.loads(proc.stdout)["pools"]}
    assert {k: pools["original"][k] for k in ("limit", "reserved", "consumed", "free")} == {
        "limit": "5", "reserved": "1", "consumed": "1", "free": "3",
    }  # fmt: skip
    assert (pools["ads"]["unit"], pools["ads"]["consumed"], pools["ads"]["free"]) == (
        "EUR", "12.50", "37.50",
    )  # fmt: skip
    assert pools["ads"]["window_end"] - pools["ads"]["window_start"] == 7 * 86400

    text = actonce("budgets", "--ledger", path)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[1].split()[:7] == ["pool", "unit", "per", "limit", "reserved", "consumed", "free"]
    assert lines[3].split()[:7] == ["original", "count", "day", "5", "1", "1", "3"]

    only = actonce("budgets", "--ledger", path, "ads", "--json")
    assert only.returncode == 0 and [p["name"] for p in json.loads(only.stdout)["pools"]] == ["ads"]
    # A pool that does not exist is an error, as ledger.budgets.usage("nope") is: one line.
    for extra in ((), ("--json",)):
        nope = actonce("budgets", "--ledger", path, "ads", "nope", *extra)
        assert (nope.returncode, nope.stdout) == (1, ""), nope
        assert nope.stderr.strip() == "actonce: error: no budget pool 'nope'"
    # Read-only: the file is exactly as it was.
    assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == before


def test_budgets_without_pools(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.db")
    Ledger(SQLiteStore(path, create=True), clock=FrozenClock()).close()
    proc = actonce("budgets", "--ledger", path)
    assert (proc.returncode, proc.stdout.splitlines()[-1]) == (0, "no budget pools")
    missing = actonce("budgets", "--ledger", str(tmp_path / "nowhere.db"))
    assert missing.returncode == 1 and "no ledger" in missing.stderr
    assert not (tmp_path / "nowhere.db").exists()
