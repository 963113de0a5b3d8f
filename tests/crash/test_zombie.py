"""Zombie workers: a real process stopped (SIGSTOP) mid-run, resumed after a takeover.

The worker stops itself at a crash point (a test hook in ``_proc.py`` that
prints ``{"stopped": point}`` and sends itself ``SIGSTOP``); the test waits
for the stop with ``waitpid(WUNTRACED)``. Its clock reads an offset from a
file, so the test moves the zombie's time on while it is stopped, exactly as
the wall clock would: its lease expires. Another worker takes over; then
``SIGCONT``. Fencing must reject every write of the zombie and it must never
perform after the takeover.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from actonce import Outcome, Policy, Status

from .conftest import LATER, World, finish, read_json

POLICY = {
    "settle_seconds": 5.0,
    "absence_authoritative": True,
    "lease_seconds": 60.0,
    "verify_attempts": 1,
}


def wait_stopped(proc: subprocess.Popen[str]) -> str:
    """Wait until the process has stopped itself; the point it stopped at."""
    point = read_json(proc)["stopped"]
    _, status = os.waitpid(proc.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), f"process {proc.pid} did not stop: status {status}"
    return str(point)


def set_offset(path: Path, offset: float) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(str(offset))
    os.replace(tmp, path)  # the zombie never reads half a number


@pytest.mark.parametrize(
    ("point", "verify_after_claim"),
    [
        ("before_claim", True),
        ("before_claim", False),
        ("after_claim", True),
        ("before_mark_executing", True),
        # Past the mark: the owner's lease check right before perform fences it.
        ("after_mark_executing", True),
        ("after_claim", False),
    ],
)
def test_zombie_is_fenced_after_takeover(
    world: World, tmp_path: Path, point: str, verify_after_claim: bool
) -> None:
    policy = {**POLICY, "verify_after_claim": verify_after_claim}
    offset = tmp_path / "offset"
    set_offset(offset, 0.0)
    zombie = world.spawn(["r"], policy, offset_file=str(offset), stop_at=[point], run_id="zombie")
    try:
        assert wait_stopped(zombie) == point
        set_offset(offset, LATER)  # it stays stopped for longer than its lease
        with world.open(LATER, Policy(**policy)) as (ledger, provider):  # type: ignore[arg-type]
            # An orphaned mark is first proven failed, then re-run (replannable).
            for _ in range(2):
                effect = provider.effect("r", policy=Policy(**policy))  # type: ignore[arg-type]
                taken = ledger.run(effect, run_id="taker")
                if taken.outcome is not Outcome.FAILED:
                    break
            assert taken.performed and taken.outcome is Outcome.COMPLETED
            record = ledger.get(taken.key)
            assert record is not None and record.status is Status.CONFIRMED
        zombie.send_signal(signal.SIGCONT)
        (result,) = finish(zombie)
    finally:
        if zombie.poll() is None:
            zombie.kill()
            zombie.wait()
    assert zombie.returncode == 0
    assert result["performed"] is False
    assert result["outcome"] in ("skipped", "deferred")
    assert world.accepted() == {"r": 1}
    with world.open(LATER) as (ledger, _):
        events = ledger.events(taken.key)
        record = ledger.get(taken.key)
    assert record is not None and record.status is Status.CONFIRMED and record.owner == "taker"
    first_taker = min(e.seq or 0 for e in events if e.run_id == "taker")
    late = [e for e in events if e.run_id == "zombie" and (e.seq or 0) > first_taker]
    # After the takeover the zombie may only note that it lost; it changes nothing.
    assert all(e.to_status is None for e in late), late


@pytest.mark.parametrize(
    ("pause_at", "verify_after_claim"),
    [("before_mark_executing", True), ("before_claim", False)],
)
def test_mark_written_after_a_pause_carries_the_time_of_the_write(
    world: World, tmp_path: Path, pause_at: str, verify_after_claim: bool
) -> None:
    """A worker paused past its lease *before* its executing mark, then resumed.

    Nobody took over meanwhile, so its mark is accepted. The mark must carry
    the time it was written: stamped with the time read before the pause, it
    is born with an expired lease and a settle window already over, and
    another worker treats it as orphaned, takes authoritative absence (the
    zombie has not performed yet) for proof of failure and performs again.
    """
    policy = {**POLICY, "verify_after_claim": verify_after_claim}
    offset = tmp_path / "offset"
    set_offset(offset, 0.0)
    zombie = world.spawn(
        ["r"],
        policy,
        offset_file=str(offset),
        stop_at=[pause_at, "after_mark_executing"],
        run_id="zombie",
    )
    try:
        assert wait_stopped(zombie) == pause_at
        set_offset(offset, LATER)
        zombie.send_signal(signal.SIGCONT)
        assert wait_stopped(zombie) == "after_mark_executing"  # marked, not yet performed
        with world.open(LATER, Policy(**policy)) as (ledger, provider):  # type: ignore[arg-type]
            key = provider.effect("r").key
            record = ledger.get(key if isinstance(key, str) else key.value)
            assert record is not None and record.status is Status.EXECUTING
            assert record.executing_at is not None
            now = time.time() + LATER
            assert record.lease_live(now), "the executing mark was born with an expired lease"
            assert now - record.executing_at < POLICY["settle_seconds"]
            # Other workers run the intent again as long as it is ``failed``
            # (replannable): a live mark must make them leave it alone.
            runs = []
            for _ in range(2):
                effect = provider.effect("r", policy=Policy(**policy))  # type: ignore[arg-type]
                runs.append(ledger.run(effect, run_id="other"))
                if runs[-1].outcome is not Outcome.FAILED:
                    break
        assert not any(r.performed for r in runs), runs
        zombie.send_signal(signal.SIGCONT)
        (result,) = finish(zombie)
    finally:
        if zombie.poll() is None:
            zombie.kill()
            zombie.wait()
    assert result["performed"] is True
    assert world.accepted() == {"r": 1}
