"""Issue 7, item 1: a perform that is only slow is never overtaken.

A real worker process starts its perform and then waits (a slow page load
before the request; the process keeps running). Meanwhile its time passes
far beyond lease + settle window: the test moves the worker's clock on, as
the wall clock would, through the offset file it reads. The owner must keep
its lease alive (a fenced heartbeat), so that another worker and reconcile,
running at the same later time, leave the effect alone; then the request
lands once and the owner confirms it.
"""

from __future__ import annotations

import time
from pathlib import Path

from actonce import Outcome, Policy, Status

from .conftest import LATER, World, _key, finish, read_json
from .test_zombie import set_offset

POLICY = {
    "lease_seconds": 3.0,  # the heartbeat extends it every second
    "settle_seconds": 2.0,
    "absence_authoritative": True,
    "verify_attempts": 1,
}


def _lease_end(world: World, ref: str) -> float:
    with world.open(LATER) as (ledger, provider):
        record = ledger.get(_key(provider, ref))
    assert record is not None and record.status is Status.EXECUTING
    assert record.lease_expires_at is not None
    return record.lease_expires_at


def test_a_slow_perform_keeps_its_lease_and_lands_once(world: World, tmp_path: Path) -> None:
    offset = tmp_path / "offset"
    set_offset(offset, 0.0)
    owner = world.spawn(["r"], POLICY, offset_file=str(offset), perform_gate=True)
    try:
        assert read_json(owner) == {"performing": "r"}
        set_offset(offset, LATER)  # the page takes "hours": far past lease + settle
        # Wait until the owner's heartbeat has extended its lease at its new time.
        deadline = time.monotonic() + 30.0
        while _lease_end(world, "r") < time.time() + LATER:
            assert owner.poll() is None, "the owner died"
            assert time.monotonic() < deadline, (
                "the owner never extended its lease while it performed"
            )
            time.sleep(0.05)  # sync-ok: the pause of a poll on a condition, with a deadline
        with world.open(LATER, Policy(**POLICY)) as (ledger, provider):  # type: ignore[arg-type]
            report = ledger.reconcile()
            assert [r.status for r in report.results] in ([], [Status.EXECUTING])
            other = ledger.run(provider.effect("r", policy=Policy(**POLICY)))  # type: ignore[arg-type]
            assert not other.performed
            assert other.outcome is Outcome.DEFERRED, other
        assert owner.stdin is not None
        owner.stdin.write("\n")  # the page has loaded: the request goes out
        owner.stdin.flush()
        (result,) = finish(owner)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
    assert result["performed"] and result["outcome"] == "completed", result
    assert world.accepted() == {"r": 1}
    assert world.status("r") is Status.CONFIRMED
