"""``actonce demo --scenario booking`` end to end, as a user runs it, in real Chromium.

The report's zero-duplicate figures come from the sandbox's ground truth;
the test reads that ground truth again, itself, from the sandbox's database
file the demo leaves behind, and the receipts through the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from actonce.sandbox import BookingDB


def test_booking_demo_has_no_duplicate_and_nothing_over_a_ceiling(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "actonce", "demo", "--scenario", "booking",
         "--workdir", str(workdir), "--json"],
        capture_output=True,
        text=True,
        timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["scenario"] == "booking"
    # The figures the scenario exists for, from the provider's ground truth.
    assert report["duplicate_payments"] == 0
    assert report["duplicate_bookings"] == 0
    assert report["duplicate_messages"] == 0
    assert report["commits_over_ceiling"] == 0, report["over_ceiling_details"]
    # What happened on the way: every kind of ending, approvals refused and repeated, a kill.
    assert report["operations"] == 9 and report["in_progress"] == 0
    assert report["complete"] == 5 and report["compensated"] == 3 and report["in_review"] == 1
    assert report["receipts"] == report["operations"]
    assert report["approvals_refused"] >= 2 and report["approvals_answered_twice"] >= 2
    assert report["approvals_consumed"] >= 6
    assert report["kills"] == 1
    assert report["open_authorizations"] == 1  # the trip in review: money held, a human decides
    assert "actonce demo report: booking" in proc.stdout

    # The ground truth again, read by the test from the sandbox's own file.
    db = BookingDB(str(workdir / "booking" / "sandbox.db"))
    try:
        truth = db.ground_truth()
    finally:
        db.close()
    assert [d for d in truth["duplicates"] if d["kind"] in ("authorizations", "bookings")] == []
    assert truth["totals"]["bookings"] == report["complete"]
    # A receipt, through the CLI, as the report says to inspect it.
    receipt = subprocess.run(
        [sys.executable, "-m", "actonce", "receipt", "booking:trip-c2@v1",
         "--ledger", report["ledger"], "--json"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert receipt.returncode == 0, receipt.stderr
    data = json.loads(receipt.stdout)
    assert data["state"] == "complete"
    pay = next(s for s in data["data"]["steps"] if s["name"] == "pay")
    assert pay["status"] == "confirmed" and pay["attempts"] == 1  # verified after the kill


def test_the_scenario_option_is_checked() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "actonce", "demo", "--scenario", "nope"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "--scenario" in proc.stderr
