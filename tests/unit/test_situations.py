"""Where an effect stands for the one who asks, and what a verdict means then (issue 23).

``situation_of`` and ``observe`` at every flag that changes their answer:
a perform that ran (overtaken when the claim is no longer the caller's, or
its own mark was failed by someone else), one that declined, a clock that
cannot be trusted, and the settle window measured by the owner on its own
clock or by anyone else from the end of the owner's lease — exactly at its
end, and not at all on an untrusted clock.
"""

from __future__ import annotations

import pytest

from actonce._rules.decision import Observation, Situation, observe, situation_of
from actonce._rules.model import Absent, Confirmed, EffectRecord, Policy, Status

NOW = 1000.0
Sit, Obs = Situation, Observation


def record(status: Status, fence: int = 3, lease: float = NOW + 10,
           executing_at: float | None = None) -> EffectRecord:  # fmt: skip
    return EffectRecord("k", "post", status, fence, "w", lease, "{}", "h",
                        executing_at=executing_at)  # fmt: skip


SITUATIONS = [
    # (status, fence, lease, my fence, declined, performed, trusted, situation)
    (Status.EXECUTING, 3, NOW + 10, 3, False, True, True, Sit.PERFORMED),
    (Status.EXECUTING, 4, NOW + 10, 3, False, True, True, Sit.OVERTAKEN),
    (Status.FAILED, 3, NOW + 10, 3, False, True, True, Sit.OVERTAKEN),
    (Status.CONFIRMED, 4, NOW + 10, 3, False, True, True, Sit.OVERTAKEN),
    (Status.CONFIRMED, 3, NOW + 10, 3, False, True, True, Sit.DONE),
    (Status.EXECUTING, 3, NOW + 10, None, False, True, True, Sit.OVERTAKEN),
    (Status.EXECUTING, 3, NOW + 10, 3, True, True, True, Sit.DECLINED),
    (Status.EXECUTING, 4, NOW + 10, 3, True, True, True, Sit.BUSY),
    (Status.FAILED, 3, NOW + 10, 3, True, True, True, Sit.NEW),
    (Status.FAILED, 3, NOW + 10, 3, False, False, True, Sit.NEW),
    (Status.EXECUTING, 4, NOW - 1, 3, False, False, True, Sit.ORPHANED),
    (Status.EXECUTING, 4, NOW - 1, 3, False, False, False, Sit.BUSY),
    (Status.EXECUTING, 4, NOW, None, False, False, True, Sit.ORPHANED),
    (Status.CLAIMED, 4, NOW, 3, False, False, True, Sit.STALE_CLAIM),
    (Status.CLAIMED, 4, NOW, 3, False, False, False, Sit.BUSY),
    (Status.CLAIMED, 4, NOW + 0.5, None, False, False, True, Sit.BUSY),
    (Status.CLAIMED, 3, NOW - 1, 3, False, False, True, Sit.OWNED),
    (Status.EXECUTING, 3, NOW - 1, 3, False, False, True, Sit.PERFORMED),
    (Status.UNKNOWN, 3, NOW + 10, 3, False, False, False, Sit.UNKNOWN),
]


@pytest.mark.parametrize(
    ("status", "fence", "lease", "mine", "declined", "performed", "trusted", "expected"),
    SITUATIONS,
)
def test_the_situation_for_the_one_who_asks(
    status: Status, fence: int, lease: float, mine: int | None, declined: bool,
    performed: bool, trusted: bool, expected: Situation,
) -> None:  # fmt: skip
    got = situation_of(record(status, fence, lease), now=NOW, my_fence=mine, declined=declined,
                       performed=performed, trusted=trusted)  # fmt: skip
    assert got is expected


def test_the_situation_flags_default_to_a_run_that_has_not_performed() -> None:
    assert situation_of(record(Status.EXECUTING, 4), now=NOW, my_fence=3) is Sit.BUSY
    assert situation_of(record(Status.CLAIMED, 4, NOW - 1), now=NOW, my_fence=3) is (
        Sit.STALE_CLAIM
    )
    assert situation_of(record(Status.EXECUTING, 3), now=NOW, my_fence=3) is Sit.PERFORMED


AUTHORITATIVE = Policy(settle_seconds=5.0, absence_authoritative=True)


def test_the_settle_window_for_others_runs_from_the_later_of_the_mark_and_the_lease() -> None:
    # Executing at NOW - 20, the lease ended at NOW - 8: settled at NOW - 3.
    rec = record(Status.EXECUTING, 4, NOW - 8, executing_at=NOW - 20)
    assert observe(Absent(), rec, policy=AUTHORITATIVE, now=NOW - 3.01) is Obs.ABSENT_UNSETTLED
    assert observe(Absent(), rec, policy=AUTHORITATIVE, now=NOW - 3) is Obs.ABSENT
    # The lease ended before the mark (an owner that shortened it): the mark counts.
    early = record(Status.EXECUTING, 4, NOW - 30, executing_at=NOW - 20)
    assert observe(Absent(), early, policy=AUTHORITATIVE, now=NOW - 15.01) is (Obs.ABSENT_UNSETTLED)
    assert observe(Absent(), early, policy=AUTHORITATIVE, now=NOW - 15) is Obs.ABSENT
    # On an untrusted clock, no window has passed for anyone but the owner.
    assert observe(Absent(), early, policy=AUTHORITATIVE, now=NOW + 1e6, trusted=False) is (
        Obs.ABSENT_UNSETTLED
    )


def test_the_owner_counts_its_window_on_its_own_clock_and_only_with_it() -> None:
    rec = record(Status.EXECUTING, 3, NOW + 60, executing_at=NOW)
    owner = {"policy": AUTHORITATIVE, "now": NOW, "my_fence": 3}
    assert observe(Absent(), rec, since_perform=5.0, **owner) is Obs.ABSENT  # type: ignore[arg-type]
    assert observe(Absent(), rec, since_perform=4.99, **owner) is Obs.ABSENT_UNSETTLED  # type: ignore[arg-type]
    # Its own clock counts even when the ledger's cannot be trusted.
    assert observe(Absent(), rec, since_perform=5.0, trusted=False, **owner) is Obs.ABSENT  # type: ignore[arg-type]
    # Without the time of its perform it counts like anyone else: from the lease's end.
    assert observe(Absent(), rec, **owner) is Obs.ABSENT_UNSETTLED  # type: ignore[arg-type]
    assert observe(Absent(), rec, policy=AUTHORITATIVE, now=NOW + 65, my_fence=3) is Obs.ABSENT
    unproven = Policy(settle_seconds=5.0)
    assert observe(Absent(), rec, policy=unproven, now=NOW, my_fence=3, since_perform=9.0) is (
        Obs.ABSENT_UNPROVEN
    )


def test_a_confirmation_of_more_than_one_is_a_duplicate() -> None:
    rec = record(Status.EXECUTING, executing_at=NOW)
    assert observe(Confirmed("a", 2, ("a", "b")), rec, policy=Policy(), now=NOW) is (Obs.DUPLICATE)
    assert observe(Confirmed("a"), rec, policy=Policy(), now=NOW) is Obs.CONFIRMED
