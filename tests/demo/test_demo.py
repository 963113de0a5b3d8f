"""The main job end to end: ``actonce demo`` as a user runs it, in real Chromium."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_demo_under_faults_and_kills_has_no_duplicate(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "actonce",
            "demo",
            "--intents",
            "10",
            "--workers",
            "2",
            "--seed",
            "5",
            "--workdir",
            str(tmp_path / "demo"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["duplicates"] == 0, report["duplicate_details"]
    assert report["unresolved"] == 0
    assert report["intents_done"] == report["intents"] >= 10
    assert report["kills"] >= 1
    assert sum(report["faults_fired"].values()) >= 5
    # The agents ran as operators: their run summaries are in the ledger, counted.
    assert report["operator_runs"].get("completed", 0) >= 1
    # Every effect the ledger calls confirmed exists in the sandbox exactly once:
    # the report's ground truth never shows fewer objects than confirmed effects.
    assert sum(report["observed"].values()) >= report["confirmed"]
    # The human report is printed too, and the ledger is left for inspection.
    assert "actonce demo report" in proc.stdout
    status = subprocess.run(
        [sys.executable, "-m", "actonce", "status", "--ledger", report["ledger"], "--json"],
        capture_output=True,
        text=True,
    )
    assert json.loads(status.stdout)["open"] == 0


def test_demo_rejects_bad_options() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "actonce", "demo", "--workers", "0"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "--workers" in proc.stderr


def test_batch_intents_have_unique_ids_and_keys() -> None:
    from actonce.demo._intents import build_batch

    for n in (1, 8, 24, 60, 150):
        for seed in range(4):
            batch = build_batch(n, seed=seed, like_targets=["/posts/1", "/posts/2", "/posts/3"])
            assert len({i.id for i in batch}) == len(batch)
            assert len({i.key().value for i in batch}) == len(batch)
