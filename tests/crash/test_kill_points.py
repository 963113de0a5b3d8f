"""A real process SIGKILLed at every crash point, then recovered by the parent.

The child arms the point the ordinary way (``ACTONCE_CRASH_AT`` and
``ACTONCE_CRASH_MODE=kill``). The test checks that the child really died by
SIGKILL, that the ledger and the provider show exactly that point's state,
then reconciles and runs the intent again under a later clock: never more
than one accepted effect, and a conservative end when absence proves nothing.
"""

from __future__ import annotations

import signal

import pytest

from actonce import Policy, Status
from actonce.testing import POINTS

from .conftest import LATER, World, finish

#: What a crash at each point leaves behind: (ledger status, accepted effects).
LEFT_AT = {
    "before_claim": (None, 0),
    "after_claim": (Status.CLAIMED, 0),
    "before_mark_executing": (Status.CLAIMED, 0),
    "after_mark_executing": (Status.EXECUTING, 0),
    "provider_committed": (Status.EXECUTING, 1),
    "after_perform": (Status.EXECUTING, 1),
    "before_record": (Status.EXECUTING, 1),
    "after_record": (Status.CONFIRMED, 1),
}


def test_every_point_is_covered() -> None:
    assert set(LEFT_AT) == set(POINTS)


def _policy(authoritative: bool) -> dict[str, object]:
    return {
        "verify_after_claim": True,
        "absence_authoritative": authoritative,
        "settle_seconds": 5.0,
        "verify_attempts": 1,
    }


@pytest.mark.parametrize("authoritative", [True, False], ids=["authoritative", "conservative"])
@pytest.mark.parametrize("point", POINTS)
def test_sigkill_at_point_then_recover(world: World, point: str, authoritative: bool) -> None:
    policy = _policy(authoritative)
    proc = world.spawn(["r"], policy, env={"ACTONCE_CRASH_AT": point, "ACTONCE_CRASH_MODE": "kill"})
    printed = finish(proc)
    assert proc.returncode == -signal.SIGKILL, f"not killed at {point}: {printed}"
    assert printed == []  # it never finished a run
    status, accepted = LEFT_AT[point]
    assert world.status("r") is status
    assert world.accepted() == ({"r": 1} if accepted else {})

    with world.open(LATER, Policy(**policy)) as (ledger, provider):  # type: ignore[arg-type]
        report = ledger.reconcile()
        assert report.unresolved == []
        result = ledger.run(provider.effect("r", policy=Policy(**policy)))  # type: ignore[arg-type]

    final = world.status("r")
    assert world.accepted().get("r", 0) <= 1
    if status is Status.EXECUTING and accepted == 0 and not authoritative:
        # The mark was written, nothing was performed, and absence proves
        # nothing here: a human decides; the effect is never tried again.
        assert final is Status.NEEDS_REVIEW
        assert not result.performed
        assert world.accepted() == {}
    else:
        assert final is Status.CONFIRMED
        assert world.accepted() == {"r": 1}
        assert result.performed == (accepted == 0)


def test_nth_pass_of_a_point(world: World) -> None:
    """``ACTONCE_CRASH_AT=point:n`` kills at the n-th pass, not before."""
    proc = world.spawn(
        ["a", "b", "c"],
        _policy(True),
        env={"ACTONCE_CRASH_AT": "after_perform:2", "ACTONCE_CRASH_MODE": "kill"},
    )
    printed = finish(proc)
    assert proc.returncode == -signal.SIGKILL
    assert [p["ref"] for p in printed] == ["a"]
    assert world.status("a") is Status.CONFIRMED
    assert world.status("b") is Status.EXECUTING
    assert world.status("c") is None
    assert world.accepted() == {"a": 1, "b": 1}
